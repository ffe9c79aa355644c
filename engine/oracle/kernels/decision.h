// The certified decision of the fast paths (the argument is in mm/oracle/exact_matmul.h): whether
// every real within a radius of a computed value rounds to one output value, quickly for most
// elements (QuickValue, vectorised) and with directed sums for the rest; for double outputs,
// against the midpoints around one double. Part of the per-ISA kernels: included only by their
// sources, inside MM_ISA_NAMESPACE (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_DECISION_H_
#define MM_ORACLE_KERNELS_DECISION_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernel_support.h"
#include "mm/engine/dtype.h"
#include "oracle_internal.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// T's spacing: significand bits (with the implicit one), smallest normal exponent, largest value.
template <class T>
struct FloatFormat;
template <>
struct FloatFormat<float> {
  static constexpr int kDigits = 24, kMinExponent = -126;
  static constexpr double kMax = 0x1.fffffep127;
};
template <>
struct FloatFormat<float16> {
  static constexpr int kDigits = 11, kMinExponent = -14;
  static constexpr double kMax = 65504;
};
template <>
struct FloatFormat<bfloat16> {
  static constexpr int kDigits = 8, kMinExponent = -126;
  static constexpr double kMax = 0x1.fep127;
};

// 2^e as a double, for e within the normal range.
inline double PowerOfTwo(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// Decide's common case without its directed sums and two roundings: with q the spacing of T at v
// and n = v / q rounded to an integer, every real within r of v rounds to n q when the distance
// from v to the nearer midpoint, (1/2 - |v / q - n|) q, exceeds r (each step exact: powers of two
// and Sterbenz's lemma). Returns n q, or NaN for Decide to look further: at zero, beyond T's
// largest value and at the first value of a binade, where the spacing below is half the spacing
// above. Without branches, so that a row of them vectorises.
template <class T>
inline double QuickValue(double v, double r) {
  using Format = FloatFormat<T>;
  const double magnitude = std::fabs(v);
  const auto exponent =
      static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(magnitude) >> 52) - 1023;
  const std::int64_t scale =
      std::max<std::int64_t>(exponent, Format::kMinExponent) - (Format::kDigits - 1);
  const double unit = std::bit_cast<double>(static_cast<std::uint64_t>(scale + 1023) << 52);
  const double scaled = v * std::bit_cast<double>(static_cast<std::uint64_t>(1023 - scale) << 52);
  const double n = std::rint(scaled);
  const double value = n * unit;
  const bool first_of_binade =
      (std::fabs(n) == PowerOfTwo(Format::kDigits - 1)) & (exponent > Format::kMinExponent);
  const bool decided = (magnitude <= Format::kMax) & (n != 0) &
                       ((0.5 - std::fabs(scaled - n)) * unit > r) & !first_of_binade &
                       (std::fabs(value) <= Format::kMax);
  return decided ? value : std::numeric_limits<double>::quiet_NaN();
}

// Decide's common case: QuickValue's answer converted to T.
template <class T>
inline bool QuickDecide(double v, double r, T* y) {
  const double value = QuickValue<T>(v, r);
  if (std::isnan(value)) return false;
  *y = static_cast<T>(static_cast<float>(value));
  return true;
}

// DecideRounding, inlined into the tiles.
template <class T>
inline bool Decide(double v, double r, T* y) {
  if (QuickDecide(v, r, y)) return true;
  if (!(r < kInf) || std::isnan(v)) return false;
  const double lo = SumDown(v, -r), hi = SumUp(v, r);
  if (!(lo > 0 || hi < 0)) return false;
  const T y_lo = RoundFromDouble<T>(lo), y_hi = RoundFromDouble<T>(hi);
  if (ToDouble(y_lo) != ToDouble(y_hi)) return false;
  *y = y_lo;
  return true;
}

// Results the decision handles: their neighbours' gaps are normal and finite.
constexpr double kMinDecided = 0x1p-1000, kMaxDecided = 0x1p1000;

// Where [s2 + t + t_lo, s2 + t + t_hi] stands against the midpoints around the double y (exact:
// the gaps are normal): 0 strictly between them, -1 reaching below the lower one only, +1 above
// the upper one only, 2 both. Every step rounds towards failing.
inline int MidpointSide(double s2, double t, double t_lo, double t_hi, double y) {
  const double half_below = (y - NextDown(y)) * 0.5, half_above = (NextUp(y) - y) * 0.5;
  const bool above_lower = SumDown(SumDown(SumDown(SumDown(s2, -y), half_below), t), t_lo) > 0;
  const bool below_upper = SumDown(SumDown(SumDown(SumDown(y, -s2), half_above), -t), -t_hi) > 0;
  if (above_lower && below_upper) return 0;
  if (!above_lower && !below_upper) return 2;
  return above_lower ? 1 : -1;
}

// DecideDouble, inlined into the tiles: x lies within r of p11 + pc + rr (p11 and pc exact). True
// when every real in that interval lies strictly between the two midpoints around one double *y.
inline bool DecideNearest(double p11, double pc, double rr, double r, double* y) {
  double s1, e1, s2, e2;
  s1 = p11 + pc;
  {
    const double z = s1 - p11;
    e1 = (p11 - (s1 - z)) + (pc - z);
  }
  s2 = s1 + rr;
  {
    const double z = s2 - s1;
    e2 = (s1 - (s2 - z)) + (rr - z);
  }
  // x in s2 + t + [t_lo, t_hi] with t + te = e1 + e2 exactly.
  const double t = e1 + e2;
  const double z = t - e1, te = (e1 - (t - z)) + (e2 - z);
  const double t_lo = SumDown(te, -r), t_hi = SumUp(te, r);
  if (!(r < kInf)) return false;
  // s2 + t rounds twice: on a tie of the tail the nearest double is its neighbour.
  double candidate = s2 + t;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!(std::fabs(candidate) >= kMinDecided && std::fabs(candidate) <= kMaxDecided)) break;
    const int side = MidpointSide(s2, t, t_lo, t_hi, candidate);
    if (side == 0) {
      *y = candidate;
      return true;
    }
    if (side == 2) break;
    candidate = side > 0 ? NextUp(candidate) : NextDown(candidate);
  }
  return false;
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_DECISION_H_
