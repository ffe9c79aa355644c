// The radius of a double element of the fast path: how far the exact value may lie from the
// three GEMMs' sum (the float path's radius is RadiusFromRow, oracle_internal.h).
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_RADIUS_H_
#define MM_ORACLE_KERNELS_RADIUS_H_

#include <cstdint>
#include <limits>

#include "mm/oracle/error_bound.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// The radius of a double element (mm/oracle/exact_matmul.h): the remainder GEMM's error plus the
// exact path's own, both rounded up, with an allowance for products that underflow.
struct DoubleRadius {
  double remainder_factor;  // Times 2^(e_i + f_j - 2 tau).
  double dot2_factor;       // Times s.
  double underflow;
};

inline DoubleRadius MakeDoubleRadius(std::int64_t k) {
  const double u = 0x1p-53, kd = static_cast<double>(k);
  // The remainder sums 3K terms of magnitude at most 1.25 * 2^(e_i + f_j - 2 tau) in all.
  const double remainder = Gamma(3 * k, u) * 1.25 * kd * (1 + 0x1p-40);
  // Dot2's sum before its last rounding is within gamma_2K^2 S of x (Ogita, Rump, Oishi); with
  // margin, over s (S <= s / (1 - gamma_K)).
  const double g = Gamma(2 * k + 2, u);
  return {remainder, 2 * g * g * (1 + 0x1p-40), 8 * kd * std::numeric_limits<double>::denorm_min()};
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_RADIUS_H_
