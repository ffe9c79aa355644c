// One copy's table of entry points (oracle_kernels.h): the only symbol of the copy that the rest of
// the program sees. Compiled once per instruction-set level.
#include <cstdint>

#include "decision.h"
#include "kernels.h"
#include "oracle_kernels.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

namespace {

template <class T>
bool DecideRounding(double v, double r, T* y) {
  return Decide(v, r, y);
}

bool DecideDouble(double p11, double pc, double rr, double r, double* y) {
  return DecideNearest(p11, pc, rr, r, y);
}

constexpr CpuIsa kIsa = CpuIsa::MM_ISA_ENUM;

}  // namespace
}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

// The only symbol of this copy that the rest of the program sees.
extern "C" __attribute__((visibility("default"))) const mm::oracle_internal::OracleKernels*
MM_ISA_ENTRY() {
  using namespace mm::oracle_internal::MM_ISA_NAMESPACE;
  using mm::bfloat16, mm::float16;
  static constexpr mm::oracle_internal::OracleKernels kKernels = {
      .isa = kIsa,
      .fast_float = &FastFloatMatMul<float>,
      .fast_float16 = &FastFloatMatMul<float16>,
      .fast_bfloat16 = &FastFloatMatMul<bfloat16>,
      .fast_double = &FastDoubleMatMul,
      .fast_int32 = &FastIntegerMatMul<std::int32_t>,
      .fast_int64 = &FastIntegerMatMul<std::int64_t>,
      .fast_uint32 = &FastIntegerMatMul<std::uint32_t>,
      .fast_uint64 = &FastIntegerMatMul<std::uint64_t>,
      .exact_float = &ExactFloatMatMul<float>,
      .exact_float16 = &ExactFloatMatMul<float16>,
      .exact_bfloat16 = &ExactFloatMatMul<bfloat16>,
      .exact_double_any = &ExactFloatMatMul<double>,
      .exact_double = &ExactDoubleMatMul,
      .decide_float = &DecideRounding<float>,
      .decide_float16 = &DecideRounding<float16>,
      .decide_bfloat16 = &DecideRounding<bfloat16>,
      .decide_double = &DecideDouble,
  };
  return &kKernels;
}
