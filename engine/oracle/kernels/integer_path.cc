// The integer oracle: Y = A x B modulo 2^bits through Eigen's uint64 GEMM, one product per thread
// or Eigen's own threads on each. Compiled once per instruction-set level.
#include <Eigen/Core>
#include <atomic>
#include <cstdint>
#include <new>
#include <type_traits>

#include "kernel_support.h"
#include "kernels.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

namespace {

// Integer tile buffers (32-bit inputs widened to uint64).
struct IntegerWorkspace {
  using Matrix64 = Eigen::Matrix<std::uint64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix64 a, b, y;
};

template <class T>
void IntegerProduct(const T* a, const T* b, T* y, std::int64_t m, std::int64_t k, std::int64_t n,
                    IntegerWorkspace& w) {
  using Matrix64 = IntegerWorkspace::Matrix64;
  using Map = Eigen::Map<const Matrix64>;
  if constexpr (sizeof(T) == 8) {
    // int64 and uint64 share their bits: the unsigned product wraps modulo 2^64 by definition.
    Eigen::Map<Matrix64> y_mat(reinterpret_cast<std::uint64_t*>(y), m, n);
    y_mat.noalias() = Map(reinterpret_cast<const std::uint64_t*>(a), m, k) *
                      Map(reinterpret_cast<const std::uint64_t*>(b), k, n);
  } else {
    using U = std::make_unsigned_t<T>;
    w.a =
        Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(a, m, k)
            .unaryExpr([](T x) { return static_cast<std::uint64_t>(x); });
    w.b =
        Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(b, k, n)
            .unaryExpr([](T x) { return static_cast<std::uint64_t>(x); });
    w.y.noalias() = w.a * w.b;
    for (std::int64_t i = 0; i < m * n; ++i) {
      y[i] = static_cast<T>(static_cast<U>(w.y.data()[i]));
    }
  }
}

}  // namespace

template <class T>
Status FastIntegerMatMul(const MatMulPlan& plan, const T* a, const T* b, T* y,
                         const std::atomic<bool>* cancel) {
  const std::int64_t m = plan.m, k = plan.k, n = plan.n;
  const double work = static_cast<double>(plan.y_elements) * static_cast<double>(k);
  const auto product = [&](std::int64_t batch, IntegerWorkspace& w) {
    if (Cancelled(cancel)) return;
    const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
    IntegerProduct(a + a_offset, b + b_offset, y + batch * m * n, m, k, n, w);
  };
  // Many products: one per thread; few: Eigen's own parallel GEMM on each.
  const int threads = Threads(plan.batch, work);
  if (threads > 1) {
    if (!Spread<IntegerWorkspace>(plan.batch, threads, product)) {
      return ResourceExhaustedError("ExactMatMul: out of memory for the integer product");
    }
    return Cancelled(cancel) ? CancelledStatus() : OkStatus();
  }
  try {
    IntegerWorkspace w;
    for (std::int64_t batch = 0; batch < plan.batch; ++batch) product(batch, w);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("ExactMatMul: out of memory for the integer product");
  }
  return Cancelled(cancel) ? CancelledStatus() : OkStatus();
}

#define MM_FAST_INTEGER(T)                                                        \
  template Status FastIntegerMatMul<T>(const MatMulPlan&, const T*, const T*, T*, \
                                       const std::atomic<bool>*);
MM_FAST_INTEGER(std::int32_t)
MM_FAST_INTEGER(std::int64_t)
MM_FAST_INTEGER(std::uint32_t)
MM_FAST_INTEGER(std::uint64_t)
#undef MM_FAST_INTEGER

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal
