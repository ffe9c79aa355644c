// The double path's splitting (Ozaki's, the argument in mm/oracle/exact_matmul.h): each row of A
// and column of B cut exactly into three slices, the first two on grids coarse enough that their
// double GEMMs are exact.
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_SPLITTING_H_
#define MM_ORACLE_KERNELS_SPLITTING_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// Bits per slice: two slices' products summed over 2K terms stay within 53 bits.
inline int SliceBits(std::int64_t k) {
  const int log2_k = std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(k, 1) - 1));
  return (53 - log2_k) / 2;
}
// Row and column exponents the splitting handles (its powers of two stay normal).
constexpr int kMaxSplitExponent = 960;
// Fewer bits per slice (K beyond 2^37) would leave the remainder too coarse to decide anything.
constexpr int kMinSliceBits = 8;
// Element exponents e_i + f_j whose GEMMs neither underflow a slice's grid nor overflow.
constexpr int kMinElementExponent = -900, kMaxElementExponent = 960;

// x rounded to the nearest integer, for |x| < 2^51 (vectorises, unlike std::nearbyint).
inline double RoundToInteger(double x) {
  constexpr double kShifter = 0x1.8p52;
  return (x + kShifter) - kShifter;
}

// One row of A or column of B split: its exponent e (every |x| < 2^e), whether the fast path may
// use it (finite, no double subnormal, e in range), and the slices.
struct SplitLine {
  int exponent = 0;
  bool usable = true;
};

// Finds count values' (stride apart) exponent and usability.
inline SplitLine Examine(const double* from, std::int64_t stride, std::int64_t count) {
  double largest = 0;
  bool usable = true;
  for (std::int64_t p = 0; p < count; ++p) {
    const double magnitude = std::fabs(from[p * stride]);
    usable &= magnitude <= std::numeric_limits<double>::max() &&
              (magnitude == 0 || magnitude >= std::numeric_limits<double>::min());
    largest = std::max(largest, magnitude);
  }
  SplitLine line;
  line.exponent = usable && largest > 0 ? std::ilogb(largest) + 1 : 0;
  line.usable = usable && std::abs(line.exponent) <= kMaxSplitExponent;
  return line;
}

// Splits count values x (stride apart) of a usable line with exponent e, tau bits per slice:
// x = h1 + h2 + r3 exactly, h1 on the grid 2^(e - tau) (|h1| <= 2^e), h2 on 2^(e - 2 tau)
// (|h2| <= 2^(e - tau - 1)), |r3| <= 2^(e - 2 tau - 1). Writes h1, h2, h1 + h2 (exact: x on the
// finer grid), r3, x and |x| at `out[0..5]` (stride `out_stride` between values; x is written
// after h1 + h2 and before r3). An unusable line gets zeros: its elements take the exact path.
inline void SplitValues(const double* from, std::int64_t stride, std::int64_t count,
                        const SplitLine& line, int tau, double* const out[6],
                        std::int64_t out_stride) {
  const double p1 = std::ldexp(1.0, tau - line.exponent), q1 = std::ldexp(1.0, line.exponent - tau);
  const double p2 = std::ldexp(1.0, 2 * tau - line.exponent);
  const double q2 = std::ldexp(1.0, line.exponent - 2 * tau);
  for (std::int64_t p = 0; p < count; ++p) {
    const double x = line.usable ? from[p * stride] : 0.0;
    // Scaling by a power of two is exact unless it underflows, and then below 1/2 it rounds to 0
    // either way; the integer times the grid's power of two is exact (the grid is >= 2^-1074).
    const double h1 = RoundToInteger(x * p1) * q1;
    const double rest = x - h1;
    const double h2 = RoundToInteger(rest * p2) * q2;
    const std::int64_t at = p * out_stride;
    // In this order: a caller may point x's output at h1 + h2's or r3's (then not needed).
    out[0][at] = h1;
    out[1][at] = h2;
    out[2][at] = h1 + h2;
    out[4][at] = x;
    out[3][at] = rest - h2;
    out[5][at] = std::fabs(x);
  }
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_SPLITTING_H_
