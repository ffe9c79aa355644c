#include "backends/eigen/eigen_int32_native.h"

#include "backends/eigen/held_gemm.h"

namespace mm::eigen_internal {

void WrappingInt32Product(const std::int32_t* a, const std::int32_t* b, std::int32_t* y,
                          std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n) {
  HeldGemm(a, b, y, m, k, n);
}

}  // namespace mm::eigen_internal
