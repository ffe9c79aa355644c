// The fast oracle's decisions are certified only when every rounding that must go up goes up: the
// double path's radius (the last rounding, which no earlier one masks) and the ends of the float
// path's interval. Each test builds a value whose distance to a rounding midpoint is within one ULP
// of the radius or of an end, where a rounding to nearest decides and the certified one does not.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mm/engine/matmul_plan.h"
#include "mm/engine/tensor.h"
#include "mm/oracle/error_bound.h"
#include "oracle_internal.h"

namespace mm {
namespace {

using oracle_internal::DecideRounding;

// The bits per slice of the double path for `k` (kernels/splitting.h's SliceBits, error_bound.h).
int RadiusTestSliceBits(std::int64_t k) {
  const int log2_k = std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(k, 1) - 1));
  return (53 - log2_k) / 2;
}

// The double path's radius before its last rounding, A + B, as error_bound.h defines it for an
// element of row and column exponents e and f: A the remainder GEMM's error over its grid,
// B Dot2's own error over s. Both products are exact here (a power of two; s = 2).
struct DoubleRadiusParts {
  double remainder;  // A = remainder factor x 2^(e + f - 2 tau).
  double dot2;       // B = Dot2 factor x s.
};

DoubleRadiusParts PartsFor(std::int64_t k, int e, int f, double s) {
  const double u = 0x1p-53, kd = static_cast<double>(k);
  const double remainder_factor = Gamma(3 * k, u) * 1.25 * kd * (1 + 0x1p-40);
  const double g = Gamma(2 * k + 2, u);
  const double dot2_factor = 2 * g * g * (1 + 0x1p-40);
  const int tau = RadiusTestSliceBits(k);
  return {std::ldexp(remainder_factor, e + f - 2 * tau), dot2_factor * s};
}

// A 1 x K times K x 1 double product x = 1 + 2^-53 - d whose fast path sees x exactly: p11 = 1
// (1 + c - c), the cross GEMM 2^-53 (an A2 slice times a B1 slice), the remainder -d; an element
// 2^(e - 1) times 0 sets A's row exponent e without changing x or s = |1| + 2 c + ... = 2.
// Returns the oracle's answer.
OracleResult MidpointProduct(std::int64_t k, int e, double d) {
  const int tau = RadiusTestSliceBits(k), f = 1;
  std::vector<double> a(static_cast<std::size_t>(k), 0.0), b(static_cast<std::size_t>(k), 0.0);
  a[0] = 1, b[0] = 1;
  a[1] = 0.5, b[1] = 1;
  a[2] = -0.5, b[2] = 1;
  a[3] = std::ldexp(1.0, -53 - f + tau), b[3] = std::ldexp(1.0, f - tau);
  a[4] = -d, b[4] = 1;
  a[5] = std::ldexp(1.0, e - 1), b[5] = 0;
  const Tensor ta = Tensor::FromValues<double>({1, k}, a).value();
  const Tensor tb = Tensor::FromValues<double>({k, 1}, b).value();
  const MatMulPlan plan = PlanMatMul({DType::kDouble, {1, k}, {k, 1}}).value();
  return ExactMatMul(plan, ta.view(), tb.view()).value();
}

// The double radius's last rounding (adding the underflow allowance) must go up. Where the
// remainder's and Dot2's errors add up exactly, that rounding alone separates the certified radius
// from one rounded to nearest, one ULP short of the bound: a midpoint at exactly the certified
// radius is then undecided (the exact path computes the element), one ULP further decides.
TEST(OracleRadiusTest, ADoubleMidpointAtTheRadiusRoundedUpIsLeftToTheExactPath) {
  // A K and row exponent whose two error terms sum exactly (same binade, even sum), found here
  // rather than hard-coded, so the construction stays exact if the factors change.
  std::int64_t k = 0;
  int e = 0;
  double sum = 0;
  for (std::int64_t kk = 6; kk < 400 && k == 0; ++kk) {
    for (int ee = 1; ee <= 3 * RadiusTestSliceBits(kk) - 55 && k == 0; ++ee) {
      const DoubleRadiusParts p = PartsFor(kk, ee, 1, 2.0);
      const __float128 exact = static_cast<__float128>(p.remainder) + p.dot2;
      if (static_cast<__float128>(static_cast<double>(exact)) == exact) {
        k = kk, e = ee, sum = static_cast<double>(exact);
      }
    }
  }
  ASSERT_GT(k, 0) << "no K below 400 where the radius's terms add exactly";
  // The bound is A + B plus a positive allowance far below one ULP: rounded up, the next double.
  const double radius = std::nextafter(sum, std::numeric_limits<double>::infinity());
  const OracleResult at = MidpointProduct(k, e, radius);
  EXPECT_EQ(at.exact_fallbacks, 1)
      << "K = " << k << ", e = " << e << ": a midpoint at the radius " << radius << " was decided";
  EXPECT_EQ(at.y.Data<double>()[0], 1.0);
  double further = radius;
  for (int i = 0; i < 8; ++i) further = std::nextafter(further, 1.0);
  const OracleResult beyond = MidpointProduct(k, e, further);
  EXPECT_EQ(beyond.exact_fallbacks, 0) << "K = " << k << ": the construction never decides";
  EXPECT_EQ(beyond.y.Data<double>()[0], 1.0);
}

// The float path's interval [v - r, v + r] has its ends rounded outward. An end that rounds to
// nearest lands on a float's rounding midpoint it lies just past, where the tie goes to the even
// neighbour, the same as the other end: decided, though part of the interval rounds elsewhere.
TEST(OracleRadiusTest, AFloatIntervalsEndsAreRoundedOutwardPastAMidpoint) {
  const double r = 0x1p-25 + 0x1p-60;
  float y = 0;
  // Upper end 1 + 2^-24 + 2^-60: just above the midpoint between 1 and 1 + 2^-23.
  const double below_tie = 1 + 0x1p-25;
  EXPECT_FALSE(DecideRounding<float>(below_tie, r, &y)) << y;
  EXPECT_TRUE(DecideRounding<float>(below_tie, 0x1p-25 - 0x1p-60, &y));
  EXPECT_EQ(y, 1.0f);
  // Lower end 1 + 3 x 2^-24 - 2^-60: just below the midpoint between 1 + 2^-23 and 1 + 2^-22.
  const double above_tie = 1 + 3 * 0x1p-24 + 0x1p-25;
  EXPECT_FALSE(DecideRounding<float>(above_tie, r, &y)) << y;
  EXPECT_TRUE(DecideRounding<float>(above_tie, 0x1p-25 - 0x1p-60, &y));
  EXPECT_EQ(y, static_cast<float>(1 + 0x1p-22));
  // The same at negative values.
  EXPECT_FALSE(DecideRounding<float>(-below_tie, r, &y)) << y;
  EXPECT_FALSE(DecideRounding<float>(-above_tie, r, &y)) << y;
}

}  // namespace
}  // namespace mm
