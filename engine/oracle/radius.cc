// The float fast path's radius (oracle_internal.h: FastRadius, RadiusFactor, RadiusFrom): how far
// the exact dot product may lie from the double GEMM's value, every step rounded upward.
#include <cmath>
#include <cstdint>
#include <limits>

#include "oracle_internal.h"

namespace mm::oracle_internal {

double RadiusFrom(double factor, double s) { return RadiusFromRow(factor, s); }

double RadiusFactor(std::int64_t k) {
  const double kd = static_cast<double>(k);
  const double two_ku = 2 * kd * 0x1p-53;
  if (!(two_ku < 1)) return std::numeric_limits<double>::infinity();
  // K u is exact, and so is 1 - 2 K u (a multiple of 2^-52 in (0, 1)); the quotient is rounded up.
  const double ku = kd * 0x1p-53, d = 1 - two_ku;
  const double q = ku / d;
  return std::fma(q, d, -ku) < 0 ? NextUp(q) : q;
}

double FastRadius(std::int64_t k, double s) { return RadiusFrom(RadiusFactor(k), s); }

}  // namespace mm::oracle_internal
