// The oracle's fast path gives the exact path's answer bit for bit, takes the exact path where its
// certificate does not decide, and its radius is a rigorous (and tight) bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mm/oracle/error_bound.h"
#include "oracle_internal.h"

namespace mm {
namespace {

using oracle_internal::DecideRounding;
using oracle_internal::FastRadius;

constexpr double kInf = std::numeric_limits<double>::infinity();

// R * (1 - 2 K u) >= K s u, evaluated exactly (the products fit quad's 113 bits).
bool CoversBound(double r, std::int64_t k, double s) {
  const __float128 u = 1.0 / 9007199254740992.0;  // 2^-53
  const __float128 d = 1 - 2 * static_cast<__float128>(k) * u;
  return static_cast<__float128>(r) * d >= static_cast<__float128>(k) * s * u;
}

// The first (k, s) where `radius` fails to be FastRadius's bound rounded up, "" if none: below the
// bound anywhere, or above it by an ULP where s is a power of two (there the radius is the bound
// rounded up once, so one ULP less no longer covers it).
std::string RadiusFailure(const std::function<double(std::int64_t, double)>& radius) {
  for (const std::int64_t k : {1, 3, 4, 7, 1000, 4096, 12345, 999999}) {
    for (const double s : {1.0, 0.75, 3.0, 1e-30, 5e20, 0.1, 0x1p-300, 0x1p100}) {
      const double r = radius(k, s);
      if (!CoversBound(r, k, s) ||
          (std::ilogb(s) == std::log2(s) && CoversBound(std::nextafter(r, 0.0), k, s))) {
        return std::to_string(k) + " " + std::to_string(s);
      }
    }
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1, 2);
  for (int i = 0; i < 10000; ++i) {
    const std::int64_t k = 1 + static_cast<std::int64_t>(rng() % 100000);
    const double s = std::ldexp(mantissa(rng), static_cast<int>(rng() % 600) - 300);
    if (!CoversBound(radius(k, s), k, s)) return std::to_string(k) + " " + std::to_string(s);
  }
  return "";
}

// The huge-page advice must never change a buffer: written data survives it (an advice such as
// MADV_DONTNEED or MADV_FREE would zero it), and so do the bytes around the advised range, however
// the range sits against 2 MiB boundaries.
TEST(AdviseHugePagesTest, KeepsEveryByteOfTheBufferAndAroundIt) {
  constexpr std::size_t kBytes = std::size_t{9} << 20;
  std::vector<std::uint8_t> buffer(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) buffer[i] = static_cast<std::uint8_t>(i * 131 + 7);
  const std::vector<std::uint8_t> before = buffer;
  for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{4097}}) {
    for (const std::size_t length : {std::size_t{0}, std::size_t{100}, std::size_t{5} << 20}) {
      oracle_internal::AdviseHugePages(buffer.data() + offset, length);
    }
  }
  oracle_internal::AdviseHugePages(nullptr, kBytes);
  EXPECT_TRUE(buffer == before);
}

TEST(FastRadiusTest, IsTheUpwardRoundingOfGammaOverOneMinusGamma) {
  EXPECT_EQ(RadiusFailure(FastRadius), "");
  // The tiles' form, with the factor computed once, is the same function.
  EXPECT_EQ(RadiusFailure([](std::int64_t k, double s) {
              return oracle_internal::RadiusFrom(oracle_internal::RadiusFactor(k), s);
            }),
            "");
  EXPECT_EQ(FastRadius(5, 0.0), 0.0);
  EXPECT_EQ(FastRadius(std::int64_t{1} << 52, 1.0), kInf);
  EXPECT_EQ(FastRadius(3, kInf), kInf);
}

TEST(FastRadiusTest, ARadiusOneUlpTooSmallIsCaught) {
  // The mutation the fast path's tests must catch: its bound made one ULP smaller.
  EXPECT_NE(
      RadiusFailure([](std::int64_t k, double s) { return std::nextafter(FastRadius(k, s), 0.0); }),
      "");
}

TEST(DecideDoubleTest, AMidpointAtTheIntervalsEndIsUndecidedAndOneUlpLessDecides) {
  using oracle_internal::DecideDouble;
  double y = 0;
  // x = 1 + 3 * 2^-56 within 5 * 2^-56: the upper end is the midpoint 1 + 2^-53.
  const double r_up = 5 * 0x1p-56;
  EXPECT_FALSE(DecideDouble(1, 0, 3 * 0x1p-56, r_up, &y));
  ASSERT_TRUE(DecideDouble(1, 0, 3 * 0x1p-56, std::nextafter(r_up, 0.0), &y));
  EXPECT_EQ(y, 1.0);
  // Below a power of two the gap halves: x = 1 - 2^-56 within 3 * 2^-56 reaches 1 - 2^-54.
  const double r_down = 3 * 0x1p-56;
  EXPECT_FALSE(DecideDouble(1, -0x1p-56, 0, r_down, &y));
  ASSERT_TRUE(DecideDouble(1, -0x1p-56, 0, std::nextafter(r_down, 0.0), &y));
  EXPECT_EQ(y, 1.0);
  // A tie, even with no radius.
  EXPECT_FALSE(DecideDouble(1, 0x1p-53, 0, 0, &y));
  // The three parts are summed exactly: 2^60 + 2^7 + 2^-60 is above the midpoint 2^60 + 2^7.
  ASSERT_TRUE(DecideDouble(0x1p60, 0x1p7, 0x1p-60, 0x1p-70, &y));
  EXPECT_EQ(y, 0x1p60 + 0x1p8);
  ASSERT_TRUE(DecideDouble(-0x1p60, -0x1p7, 0x1p-60, 0x1p-70, &y));
  EXPECT_EQ(y, -0x1p60);
  // Outside the range the decision handles, or an infinite radius.
  EXPECT_FALSE(DecideDouble(0x1p-1010, 0, 0, 0, &y));
  EXPECT_FALSE(DecideDouble(0x1p1010, 0, 0, 0, &y));
  EXPECT_FALSE(DecideDouble(1, 0, 0, kInf, &y));
}

TEST(DecideRoundingTest, AMidpointAtAnEndDecidesOnlyWhereBothEndsRoundAlike) {
  const double m = 1 + std::ldexp(1.0, -24);  // Between 1 and 1 + 2^-23; ties go to 1 (even).
  const double r = std::ldexp(1.0, -30);
  float y = 0;
  // [m, m + 2r]: m rounds to 1, the rest up.
  EXPECT_FALSE(DecideRounding<float>(m + r, r, &y));
  // [m - 2r, m]: all of it rounds to 1.
  ASSERT_TRUE(DecideRounding<float>(m - r, r, &y));
  EXPECT_EQ(y, 1.0f);
  // Above 1 + 2^-23 the tie at 1 + 3 * 2^-24 goes up, to the even 1 + 2^-22.
  const double up = 1 + 3 * std::ldexp(1.0, -24);
  ASSERT_TRUE(DecideRounding<float>(up + r, r, &y));
  EXPECT_EQ(y, static_cast<float>(1 + std::ldexp(1.0, -22)));
  EXPECT_FALSE(DecideRounding<float>(up - r, r, &y));
}

TEST(DecideRoundingTest, AtABinadesFirstValueTheSpacingBelowIsHalf) {
  // Above 1 the spacing is 2^-23, below it 2^-24: the midpoint under 1 is 1 - 2^-25.
  const double v = 1 + std::ldexp(1.0, -30);
  float y = 0;
  EXPECT_FALSE(DecideRounding<float>(v, std::ldexp(1.0, -25) + std::ldexp(1.0, -29), &y));
  ASSERT_TRUE(DecideRounding<float>(v, std::ldexp(1.0, -26), &y));
  EXPECT_EQ(y, 1.0f);
  ASSERT_TRUE(DecideRounding<float>(-v, std::ldexp(1.0, -26), &y));
  EXPECT_EQ(y, -1.0f);
  // The same in float16 (2^-10 above 1, 2^-11 below) and at bfloat16's smallest normal, where
  // the spacing below does not halve (subnormals continue it).
  float16 h;
  EXPECT_FALSE(DecideRounding<float16>(1 + std::ldexp(1.0, -20), std::ldexp(1.0, -12) * 1.01, &h));
  ASSERT_TRUE(DecideRounding<float16>(1 + std::ldexp(1.0, -20), std::ldexp(1.0, -13), &h));
  EXPECT_EQ(static_cast<float>(h), 1.0f);
  bfloat16 bf;
  const double min_normal = std::ldexp(1.0, -126), spacing = std::ldexp(1.0, -133);
  ASSERT_TRUE(DecideRounding<bfloat16>(min_normal, spacing * 0.4, &bf));
  EXPECT_EQ(static_cast<double>(static_cast<float>(bf)), min_normal);
  EXPECT_FALSE(DecideRounding<bfloat16>(min_normal, spacing * 0.6, &bf));
  // The largest float and the values between it and the overflow threshold.
  const double max = std::numeric_limits<float>::max(), ulp = std::ldexp(1.0, 104);
  ASSERT_TRUE(DecideRounding<float>(max + ulp / 4, ulp / 8, &y));
  EXPECT_EQ(y, std::numeric_limits<float>::max());
  EXPECT_FALSE(DecideRounding<float>(max + ulp / 4, ulp / 4, &y));
}

TEST(DecideRoundingTest, EndsAreRoundedOutward) {
  // v - r is just above the midpoint m when rounded to nearest, below it exactly.
  const double m = 1 + std::ldexp(1.0, -24);
  const double v = m + std::ldexp(1.0, -40);
  const double r = std::ldexp(1.0, -40) + std::ldexp(1.0, -95);
  float y = 0;
  EXPECT_FALSE(DecideRounding<float>(v, r, &y));
  EXPECT_TRUE(DecideRounding<float>(v, std::ldexp(1.0, -41), &y));
}

TEST(DecideRoundingTest, ZeroOverflowAndTheHalfTypes) {
  float y = 0;
  EXPECT_FALSE(DecideRounding<float>(std::ldexp(1.0, -200), std::ldexp(1.0, -199), &y));
  ASSERT_TRUE(DecideRounding<float>(std::ldexp(1.0, -200), std::ldexp(1.0, -201), &y));
  EXPECT_EQ(y, 0.0f);
  EXPECT_FALSE(std::signbit(y));
  ASSERT_TRUE(DecideRounding<float>(-std::ldexp(1.0, -200), std::ldexp(1.0, -201), &y));
  EXPECT_TRUE(std::signbit(y));
  ASSERT_TRUE(DecideRounding<float>(1e39, 1e30, &y));
  EXPECT_EQ(y, std::numeric_limits<float>::infinity());
  EXPECT_FALSE(DecideRounding<float>(1.0, kInf, &y));
  // Intervals whose end is exactly the tie (r a power of two, so v - r is exact).
  const double r = std::ldexp(1.0, -30);
  float16 h;
  const double hm = 1 + std::ldexp(1.0, -11);  // float16 tie between 1 and 1 + 2^-10.
  EXPECT_FALSE(DecideRounding<float16>(hm + r, r, &h));
  ASSERT_TRUE(DecideRounding<float16>(hm - r, r, &h));
  EXPECT_EQ(static_cast<float>(h), 1.0f);
  bfloat16 bf;
  const double bm = 1 + std::ldexp(1.0, -8);
  EXPECT_FALSE(DecideRounding<bfloat16>(bm + r, r, &bf));
  ASSERT_TRUE(DecideRounding<bfloat16>(bm - r, r, &bf));
  EXPECT_EQ(static_cast<float>(bf), 1.0f);
}

// Runs the oracle fast and exact; expects the same Y bit for bit, the same special flags, exact
// values within the fast one's stated error, and S within rounding. Returns the fast run.
OracleResult ExpectFastMatchesExact(const Tensor& a, const Tensor& b) {
  const MatMulPlan plan = PlanMatMul({a.dtype(), a.dims(), b.dims()}).value();
  OracleResult fast = ExactMatMul(plan, a.view(), b.view()).value();
  const OracleResult slow = ExactMatMul(plan, a.view(), b.view(), {.fast = false}).value();
  EXPECT_EQ(std::memcmp(fast.y.raw_data(), slow.y.raw_data(), slow.y.NumBytes()), 0)
      << plan.desc.ToString();
  EXPECT_EQ(fast.special, slow.special);
  EXPECT_EQ(fast.subnormal_abs_sum.size(), slow.subnormal_abs_sum.size());
  const bool subnormal_sums = !slow.subnormal_abs_sum.empty() && !fast.subnormal_abs_sum.empty();
  for (std::size_t i = 0; i < slow.exact.size(); ++i) {
    // Specials, and for double inputs sums beyond double's range (infinite or NaN exact values).
    if (slow.special[i] || !std::isfinite(slow.exact[i])) {
      EXPECT_TRUE(std::isnan(fast.exact[i]) ? std::isnan(slow.exact[i])
                                            : fast.exact[i] == slow.exact[i]);
      continue;
    }
    EXPECT_LE(std::fabs(fast.exact[i] - slow.exact[i]),
              (fast.exact_error.empty() ? 0 : fast.exact_error[i]) +
                  2 * std::ldexp(std::fabs(slow.exact[i]), -53) +
                  std::numeric_limits<double>::denorm_min())
        << i;
    // Equal, or within rounding (S may overflow where the value does not).
    const auto near = [](double x, double y) { return x == y || std::fabs(x - y) <= 1e-12 * y; };
    EXPECT_PRED2(near, fast.abs_sum[i], slow.abs_sum[i]) << i;
    if (subnormal_sums) {
      EXPECT_PRED2(near, fast.subnormal_abs_sum[i], slow.subnormal_abs_sum[i]) << i;
    }
  }
  return fast;
}

// For the elements `taken` (indices into Y), which the fast path cannot decide: the fast run's
// values and sums there are the exact-only run's bit for bit (the fast path computes such elements
// several at a time, or a row's whole chunk where they are dense). Returns the fast run.
OracleResult ExpectExactPathAt(const Tensor& a, const Tensor& b,
                               const std::vector<std::size_t>& taken) {
  const MatMulPlan plan = PlanMatMul({a.dtype(), a.dims(), b.dims()}).value();
  OracleResult fast = ExactMatMul(plan, a.view(), b.view()).value();
  const OracleResult slow = ExactMatMul(plan, a.view(), b.view(), {.fast = false}).value();
  EXPECT_GE(fast.exact_fallbacks, static_cast<std::int64_t>(taken.size()));
  for (const std::size_t i : taken) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(fast.exact[i]),
              std::bit_cast<std::uint64_t>(slow.exact[i]))
        << "element " << i;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(fast.abs_sum[i]),
              std::bit_cast<std::uint64_t>(slow.abs_sum[i]))
        << "element " << i;
  }
  return fast;
}

// The same for a problem whose every element takes the exact path.
void ExpectEveryElementOnTheExactPath(const Tensor& a, const Tensor& b) {
  std::vector<std::size_t> every(
      static_cast<std::size_t>(PlanMatMul({a.dtype(), a.dims(), b.dims()}).value().y_elements));
  std::iota(every.begin(), every.end(), std::size_t{0});
  EXPECT_EQ(ExpectExactPathAt(a, b, every).exact_fallbacks,
            static_cast<std::int64_t>(every.size()));
}

template <class T>
Tensor Random(Dims dims, std::mt19937_64& rng, double scale = 1, double spread = 1) {
  Tensor t = Tensor::Create(DTypeOf<T>(), dims).value();
  std::uniform_real_distribution<double> value(-1, 1);
  std::uniform_int_distribution<int> exponent(static_cast<int>(-spread), static_cast<int>(spread));
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    const double x = std::ldexp(value(rng) * scale, exponent(rng));
    if constexpr (std::is_integral_v<T>) {
      t.Data<T>()[i] = static_cast<T>(rng());
    } else {
      t.Data<T>()[i] = RoundFromDouble<T>(x);
    }
  }
  return t;
}

template <class T>
class FastOracleTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, float16, bfloat16, double>;
TYPED_TEST_SUITE(FastOracleTest, FloatTypes);

TYPED_TEST(FastOracleTest, RandomProblemsMatchAndRarelyFallBack) {
  std::mt19937_64 rng(1);
  for (const auto& [a_dims, b_dims] : std::vector<std::pair<Dims, Dims>>{
           {{300, 257}, {257, 301}},
           {{2, 1, 37, 90}, {3, 90, 45}},
           {{513}, {513, 7}},
           {{5, 64}, {64}},
           // Several panels of B (2^21 / K columns each), split across threads for a short A.
           {{3, 4000}, {4000, 1100}},
       }) {
    const OracleResult o = ExpectFastMatchesExact(Random<TypeParam>(a_dims, rng),
                                                  Random<TypeParam>(b_dims, rng, 1, 8));
    EXPECT_LT(o.exact_fallbacks, o.y.NumElements() / 50 + 1) << DimsToString(a_dims);
  }
}

TYPED_TEST(FastOracleTest, TiesCancellationAndSpecialsTakeTheExactPath) {
  // Row i of A: [c_i, h, big, -big, ...] and B's rows 0..3 all ones: Y = c_i + h exactly, a
  // midpoint of the output type (h = half an ULP of c_i in [1, 2)), reached through cancellation.
  const int p = std::is_same_v<TypeParam, double>    ? 53
                : std::is_same_v<TypeParam, float>   ? 24
                : std::is_same_v<TypeParam, float16> ? 11
                                                     : 8;
  const double h = std::ldexp(1.0, -p);
  std::mt19937_64 rng(2);
  const std::int64_t m = 40, k = 6, n = 30;
  Tensor a = Tensor::Create(DTypeOf<TypeParam>(), {m, k}).value();
  Tensor b = Tensor::Create(DTypeOf<TypeParam>(), {k, n}).value();
  for (std::int64_t i = 0; i < m; ++i) {
    const double c =
        1 + std::ldexp(static_cast<double>(rng() % (std::uint64_t{1} << (p - 1))), 1 - p);
    const double row[] = {c, h, 1024, -1024, 0, 0};
    for (std::int64_t q = 0; q < k; ++q)
      a.Data<TypeParam>()[i * k + q] = RoundFromDouble<TypeParam>(row[q]);
  }
  for (std::int64_t q = 0; q < k; ++q) {
    for (std::int64_t j = 0; j < n; ++j)
      b.Data<TypeParam>()[q * n + j] = RoundFromDouble<TypeParam>(q < 4 ? 1.0 : 0.0);
  }
  // Specials in a few places: inf, NaN, and inf - inf.
  a.Data<TypeParam>()[3 * k + 4] = RoundFromDouble<TypeParam>(kInf);
  a.Data<TypeParam>()[5 * k + 4] = RoundFromDouble<TypeParam>(std::nan(""));
  a.Data<TypeParam>()[7 * k + 4] = RoundFromDouble<TypeParam>(kInf);
  a.Data<TypeParam>()[7 * k + 5] = RoundFromDouble<TypeParam>(-kInf);
  b.Data<TypeParam>()[4 * n + 2] = RoundFromDouble<TypeParam>(1.0);
  b.Data<TypeParam>()[5 * n + 2] = RoundFromDouble<TypeParam>(1.0);
  const OracleResult o = ExpectFastMatchesExact(a, b);
  EXPECT_EQ(o.exact_fallbacks, m * n);
  EXPECT_TRUE(std::isnan(o.exact[7 * n + 2]));
  EXPECT_EQ(o.exact[3 * n + 2], kInf);
  ExpectEveryElementOnTheExactPath(a, b);
}

TYPED_TEST(FastOracleTest, SubnormalSumsAreStoredOnlyWhenAnInputIsSubnormal) {
  // Without a subnormal input every subnormal sum is 0: the oracle leaves the array empty (8 bytes
  // an element) and the bounds read 0, for an arithmetic that flushes subnormals too.
  const std::int64_t m = 6, k = 5, n = 7;
  Tensor a = Tensor::Create(DTypeOf<TypeParam>(), {m, k}).value();
  Tensor b = Tensor::Create(DTypeOf<TypeParam>(), {k, n}).value();
  for (std::int64_t i = 0; i < m * k; ++i)
    a.Data<TypeParam>()[i] = RoundFromDouble<TypeParam>(0.5 + 0.25 * static_cast<double>(i % 5));
  for (std::int64_t i = 0; i < k * n; ++i)
    b.Data<TypeParam>()[i] = RoundFromDouble<TypeParam>(i % 3 == 0 ? 0.0 : -0.75);
  const OracleResult normal = ExpectFastMatchesExact(a, b);
  EXPECT_TRUE(normal.subnormal_abs_sum.empty());
  const Arithmetic flushing{DType::kFloat, true};
  const OracleBounds bounds(normal, flushing, k);
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    EXPECT_EQ(bounds[i].radius, AccumulationError(flushing, k, normal.abs_sum[i], 0.0) +
                                    (normal.exact_error.empty() ? 0 : normal.exact_error[i]))
        << i;
  }

  // One subnormal input in B's column 4: every element of that column, and no other, has a
  // subnormal part (A has no zero).
  const double min_normal = std::is_same_v<TypeParam, double>    ? std::ldexp(1.0, -1022)
                            : std::is_same_v<TypeParam, float16> ? std::ldexp(1.0, -14)
                                                                 : std::ldexp(1.0, -126);
  b.Data<TypeParam>()[3 * n + 4] = RoundFromDouble<TypeParam>(min_normal / 2);
  const OracleResult one = ExpectFastMatchesExact(a, b);
  ASSERT_EQ(one.subnormal_abs_sum.size(), static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m * n; ++i) {
    EXPECT_EQ(one.subnormal_abs_sum[i] > 0, i % n == 4) << i;
  }
}

TYPED_TEST(FastOracleTest, SubnormalAndOverflowRangesMatch) {
  std::mt19937_64 rng(3);
  const double min_normal = std::is_same_v<TypeParam, double>    ? std::ldexp(1.0, -1022)
                            : std::is_same_v<TypeParam, float16> ? std::ldexp(1.0, -14)
                                                                 : std::ldexp(1.0, -126);
  const double max = std::is_same_v<TypeParam, double>    ? 1.7e308
                     : std::is_same_v<TypeParam, float16> ? 65504.0
                                                          : 3.0e38;
  // Products and results around the output's subnormals.
  const OracleResult tiny =
      ExpectFastMatchesExact(Random<TypeParam>({64, 100}, rng, min_normal * 4, 3),
                             Random<TypeParam>({100, 64}, rng, 0.25, 2));
  ASSERT_FALSE(tiny.subnormal_abs_sum.empty());
  EXPECT_GT(tiny.subnormal_abs_sum[0], 0);
  // Subnormals in B only (its shared panel) and in both.
  const OracleResult tiny_b = ExpectFastMatchesExact(
      Random<TypeParam>({64, 100}, rng, 0.25, 2), Random<TypeParam>({100, 64}, rng, min_normal, 3));
  ASSERT_FALSE(tiny_b.subnormal_abs_sum.empty());
  EXPECT_GT(tiny_b.subnormal_abs_sum[0], 0);
  ExpectFastMatchesExact(Random<TypeParam>({64, 100}, rng, min_normal * 4, 3),
                         Random<TypeParam>({100, 64}, rng, min_normal * 4, 3));
  // Sums beyond the largest finite value: infinities and values just below.
  // (Sums in double itself overflow for double inputs: smaller ones there.)
  const double big_scale = std::is_same_v<TypeParam, double> ? max / 64 : max / 16;
  const OracleResult big = ExpectFastMatchesExact(Random<TypeParam>({64, 100}, rng, big_scale, 1),
                                                  Random<TypeParam>({100, 64}, rng, 4, 1));
  std::int64_t infinite = 0;
  for (std::int64_t i = 0; i < big.y.NumElements(); ++i) {
    infinite += std::isinf(ToDouble(big.y.Data<TypeParam>()[i]));
  }
  EXPECT_GT(infinite, 0);
  EXPECT_LT(infinite, big.y.NumElements());
}

TYPED_TEST(FastOracleTest, ExactCancellationToZeroFallsBack) {
  // A's columns come in pairs x, -x against equal rows of B: every element is exactly 0. 37 x 29
  // elements: the exact path's groups of several elements end part-filled.
  std::mt19937_64 rng(4);
  const std::int64_t m = 37, k = 64, n = 29;
  Tensor a = Random<TypeParam>({m, k}, rng);
  Tensor b = Random<TypeParam>({k, n}, rng);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t q = 0; q < k; q += 2)
      a.Data<TypeParam>()[i * k + q + 1] = -a.Data<TypeParam>()[i * k + q];
  }
  for (std::int64_t q = 0; q < k; q += 2) {
    for (std::int64_t j = 0; j < n; ++j)
      b.Data<TypeParam>()[(q + 1) * n + j] = b.Data<TypeParam>()[q * n + j];
  }
  const OracleResult o = ExpectFastMatchesExact(a, b);
  EXPECT_EQ(o.exact_fallbacks, m * n);
  EXPECT_EQ(o.exact[0], 0.0);
  ExpectEveryElementOnTheExactPath(a, b);
}

TYPED_TEST(FastOracleTest, ScatteredAndDenseExactPathElementsAreTheExactPaths) {
  // A's columns in pairs x, -x; B's two rows of a pair equal in the columns that cancel (every
  // fifth of the first 256, all of the rest), independent elsewhere. The cancelling elements take
  // the exact path: scattered in the first chunk of each row's columns, dense in the second.
  std::mt19937_64 rng(5);
  const std::int64_t m = 23, k = 64, n = 300;
  Tensor a = Random<TypeParam>({m, k}, rng);
  Tensor b = Random<TypeParam>({k, n}, rng);
  const auto cancels = [](std::int64_t j) { return j >= 256 || j % 5 == 0; };
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t q = 0; q < k; q += 2)
      a.Data<TypeParam>()[i * k + q + 1] = -a.Data<TypeParam>()[i * k + q];
  }
  for (std::int64_t q = 0; q < k; q += 2) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (cancels(j)) b.Data<TypeParam>()[(q + 1) * n + j] = b.Data<TypeParam>()[q * n + j];
    }
  }
  std::vector<std::size_t> taken;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (cancels(j)) taken.push_back(static_cast<std::size_t>(i * n + j));
    }
  }
  const OracleResult o = ExpectExactPathAt(a, b, taken);
  // The other elements are decided but for a few at most.
  EXPECT_LE(o.exact_fallbacks, static_cast<std::int64_t>(taken.size()) + m * n / 50);
  ExpectFastMatchesExact(a, b);
}

template <class T>
class NarrowFastOracleTest : public ::testing::Test {};
using NarrowTypes = ::testing::Types<float, float16, bfloat16>;
TYPED_TEST_SUITE(NarrowFastOracleTest, NarrowTypes);

// A few subnormal inputs among normal ones (their terms of S are added one by one, where many
// go through a GEMM): S's subnormal part holds every term with a subnormal input once, and no
// other.
TYPED_TEST(NarrowFastOracleTest, AFewSubnormalInputsCountOnceInTheSubnormalPart) {
  using T = TypeParam;
  const double min_normal = std::is_same_v<T, float16> ? 0x1p-14 : 0x1p-126;
  std::mt19937_64 rng(5);
  const std::int64_t m = 70, k = 300, n = 90;
  Tensor a = Random<T>({m, k}, rng, 1, 1), b = Random<T>({k, n}, rng, 1, 1);
  for (Tensor* t : {&a, &b}) {
    for (std::int64_t i = 0; i < t->NumElements(); ++i) {
      if (std::fabs(ToDouble(t->Data<T>()[i])) < min_normal) t->Data<T>()[i] = T(1.0f);
    }
  }
  const auto set = [](Tensor& t, std::int64_t index, double x) {
    t.Data<T>()[index] = RoundFromDouble<T>(x);
  };
  set(a, 5 * k + 7, min_normal / 2);    // Row 5 of Y.
  set(b, 7 * n + 11, -min_normal / 4);  // Column 11, and (5, 11) through both.
  set(a, 9 * k + 100, -min_normal / 2);
  set(b, 100 * n + 20, min_normal / 8);  // (9, 20): a term of two subnormals, counted once.
  const OracleResult o = ExpectFastMatchesExact(a, b);
  ASSERT_EQ(o.subnormal_abs_sum.size(), static_cast<std::size_t>(m * n));
  const auto sub = [&](std::int64_t i, std::int64_t j) { return o.subnormal_abs_sum[i * n + j]; };
  EXPECT_GT(sub(5, 0), 0);
  EXPECT_GT(sub(0, 11), 0);
  EXPECT_GT(sub(9, 0), 0);
  EXPECT_GT(sub(0, 20), 0);
  EXPECT_EQ(sub(0, 0), 0);
  EXPECT_EQ(sub(69, 89), 0);
}

TEST(FastOracleIntegerTest, MatchesTheElementLoopModuloTwoToTheBits) {
  std::mt19937_64 rng(5);
  const auto check = [&](auto tag) {
    using T = decltype(tag);
    const Tensor a = Random<T>({2, 33, 70}, rng), b = Random<T>({70, 41}, rng);
    const MatMulPlan plan = PlanMatMul({a.dtype(), a.dims(), b.dims()}).value();
    const OracleResult fast = ExactMatMul(plan, a.view(), b.view()).value();
    const OracleResult slow = ExactMatMul(plan, a.view(), b.view(), {.fast = false}).value();
    EXPECT_EQ(std::memcmp(fast.y.raw_data(), slow.y.raw_data(), slow.y.NumBytes()), 0)
        << plan.desc.ToString();
  };
  check(std::int32_t{});
  check(std::uint32_t{});
  check(std::int64_t{});
  check(std::uint64_t{});
}

// Row i of A: [c_i, h, d, 2^8, -2^8] against rows of ones: Y = c_i + h + d with h half an ULP
// of c_i in [1, 2), a midpoint by d = +-2^-70 off, through cancellation (small enough that Dot2
// itself still rounds correctly).
Tensor NearTies(std::int64_t m, double d, std::mt19937_64& rng) {
  Tensor a = Tensor::Create(DType::kDouble, {m, 5}).value();
  for (std::int64_t i = 0; i < m; ++i) {
    const double c = 1 + std::ldexp(static_cast<double>(rng() % (std::uint64_t{1} << 52)), -52);
    const double row[] = {c, 0x1p-53, d, 0x1p8, -0x1p8};
    std::copy(row, row + 5, a.Data<double>() + i * 5);
  }
  return a;
}

TEST(FastOracleDoubleTest, NearTiesAreDecidedOnTheRightSideWithoutTheExactPath) {
  std::mt19937_64 rng(6);
  Tensor ones = Tensor::Create(DType::kDouble, {5, 3}).value();
  std::fill(ones.Data<double>(), ones.Data<double>() + 15, 1.0);
  for (const double d : {0x1p-70, -0x1p-70}) {
    const Tensor a = NearTies(50, d, rng);
    const OracleResult o = ExpectFastMatchesExact(a, ones);
    EXPECT_EQ(o.exact_fallbacks, 0) << d;
    for (std::int64_t i = 0; i < 50; ++i) {
      const double c = a.Data<double>()[i * 5];
      EXPECT_EQ(o.y.Data<double>()[i * 3], d > 0 ? std::nextafter(c, 2.0) : c) << i;
    }
  }
}

TEST(FastOracleDoubleTest, CancellationBeyondTheBoundTakesTheExactPath) {
  // [2^60, -2^60, small values] against ones: the remainder's bound exceeds Y's ULP, so no
  // element can be decided.
  std::mt19937_64 rng(8);
  Tensor a = Random<double>({30, 64}, rng);
  for (std::int64_t i = 0; i < 30; ++i) {
    a.Data<double>()[i * 64] = 0x1p60;
    a.Data<double>()[i * 64 + 1] = -0x1p60;
  }
  Tensor ones = Tensor::Create(DType::kDouble, {64, 20}).value();
  std::fill(ones.Data<double>(), ones.Data<double>() + 64 * 20, 1.0);
  EXPECT_EQ(ExpectFastMatchesExact(a, ones).exact_fallbacks, 600);
}

TEST(FastOracleDoubleTest, RowsAndColumnsOutsideTheSplittingsRangeTakeTheExactPath) {
  // Row 0 of A near 2^1000 and column 0 of B near 2^-1000 (their products are ordinary), row 1
  // with a double subnormal: the splitting cannot hold them, the rest is decided.
  std::mt19937_64 rng(9);
  Tensor a = Random<double>({4, 40}, rng), b = Random<double>({40, 5}, rng);
  for (std::int64_t q = 0; q < 40; ++q) {
    a.Data<double>()[q] *= 0x1p1000;
    b.Data<double>()[q * 5] *= 0x1p-1000;
  }
  a.Data<double>()[40 + 7] = 0x1p-1060;
  const OracleResult o = ExpectFastMatchesExact(a, b);
  EXPECT_EQ(o.exact_fallbacks, 5 + 5 + 2);
  ASSERT_FALSE(o.subnormal_abs_sum.empty());
  EXPECT_GT(o.subnormal_abs_sum[6], 0);
}

TEST(FastOracleDoubleTest, TheRowWiseExactPathIsTheExactPathBitForBit) {
  // ExactDoubleMatMul (the whole problem's exact path where K is too deep to split): rows of 300
  // columns, more than one chunk of them, against the exact-only run; a subnormal input sends it to
  // the element-wise path.
  std::mt19937_64 rng(10);
  for (const bool subnormal : {false, true}) {
    Tensor a = Random<double>({2, 7, 70}, rng, 1, 30), b = Random<double>({70, 300}, rng, 1, 30);
    if (subnormal) b.Data<double>()[5 * 300 + 9] = 0x1p-1060;
    const MatMulPlan plan = PlanMatMul({DType::kDouble, a.dims(), b.dims()}).value();
    const OracleResult slow = ExactMatMul(plan, a.view(), b.view(), {.fast = false}).value();
    OracleResult row_wise = ExactMatMul(plan, a.view(), b.view(), {.fast = false}).value();
    std::fill(row_wise.exact.begin(), row_wise.exact.end(), -1.0);
    std::fill(row_wise.abs_sum.begin(), row_wise.abs_sum.end(), -1.0);
    std::fill_n(row_wise.y.Data<double>(), row_wise.y.NumElements(), -1.0);
    ASSERT_TRUE(
        oracle_internal::ExactDoubleMatMul(plan, a.Data<double>(), b.Data<double>(), row_wise)
            .ok());
    EXPECT_EQ(row_wise.exact, slow.exact) << "subnormal " << subnormal;
    EXPECT_EQ(row_wise.abs_sum, slow.abs_sum) << "subnormal " << subnormal;
    EXPECT_EQ(std::memcmp(row_wise.y.raw_data(), slow.y.raw_data(), slow.y.NumBytes()), 0);
  }
}

TEST(FastOracleBoundsTest, TheOraclesOwnErrorWidensTheBound) {
  OracleResult o;
  o.exact = {1.0};
  o.exact_error = {1e-10};
  o.abs_sum = {1.0};
  o.subnormal_abs_sum = {0.0};
  o.special = {0};
  const auto bounds = OracleBounds(o, Arithmetic{DType::kFloat, false}, 4);
  EXPECT_EQ(bounds[0].radius, AccumulationError(DType::kFloat, 4, 1.0) + 1e-10);
}

}  // namespace
}  // namespace mm
