// mm's float16 and bfloat16 (float16.h) against a reference built from first principles: every bit
// pattern widens to the value its fields define (exhaustively), and every double rounds to the
// nearest of the format's values, found by search among all of them, ties to the even pattern:
// each value, each midpoint and its neighbours, subnormals, the overflow threshold, random doubles;
// float16 also against the compiler's _Float16 where it has one.
#include "mm/engine/float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "mm/engine/dtype.h"

namespace mm {
namespace {

// The value of a 16-bit pattern with `fraction_bits` fraction bits, from its fields (NaN for NaN).
double FieldValue(std::uint16_t bits, int fraction_bits) {
  const int exponent_bits = 15 - fraction_bits, bias = (1 << (exponent_bits - 1)) - 1;
  const int exponent = (bits >> fraction_bits) & ((1 << exponent_bits) - 1);
  const int fraction = bits & ((1 << fraction_bits) - 1);
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == (1 << exponent_bits) - 1) {
    return fraction == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(fraction, 1 - bias - fraction_bits);
  return sign * std::ldexp(fraction + (1 << fraction_bits), exponent - bias - fraction_bits);
}

template <class T>
constexpr int kFractionBits = std::is_same_v<T, float16> ? 10 : 7;

template <class T>
class Float16Test : public ::testing::Test {};
using Types = ::testing::Types<float16, bfloat16>;
TYPED_TEST_SUITE(Float16Test, Types);

TYPED_TEST(Float16Test, EveryPatternWidensToTheValueItsFieldsDefine) {
  using T = TypeParam;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double expected = FieldValue(bits, kFractionBits<T>);
    const float widened = T::FromBits(bits);
    ASSERT_EQ(T::FromBits(bits).bits(), bits);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(widened)) << std::hex << b;
      continue;
    }
    // Bit for bit: the sign of zero too.
    ASSERT_EQ(std::bit_cast<std::uint64_t>(static_cast<double>(widened)),
              std::bit_cast<std::uint64_t>(expected))
        << std::hex << b;
    ASSERT_EQ(ToDouble(T::FromBits(bits)), expected);
  }
}

// The reference rounding: the nearest of the format's finite values by search (ties to the even
// pattern), infinity from the midpoint between the largest value and the next power of two on.
template <class T>
std::uint16_t ReferenceRound(double x, const std::vector<double>& values) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double magnitude = std::fabs(x);
  const double largest = values.back();
  const double overflow = largest + (largest - values[values.size() - 2]) / 2;
  const auto infinity =
      static_cast<std::uint16_t>(((1u << (15 - kFractionBits<T>)) - 1) << kFractionBits<T>);
  if (magnitude >= overflow) return sign | infinity;
  const auto above = std::lower_bound(values.begin(), values.end(), magnitude);
  // Above the largest value, below the overflow threshold: the largest value.
  if (above == values.end()) return sign | static_cast<std::uint16_t>(values.size() - 1);
  if (*above == magnitude) return sign | static_cast<std::uint16_t>(above - values.begin());
  const auto below = above - 1;
  const double to_below = magnitude - *below, to_above = *above - magnitude;
  auto pick = to_below < to_above ? below : above;
  if (to_below == to_above) pick = (below - values.begin()) % 2 == 0 ? below : above;
  return sign | static_cast<std::uint16_t>(pick - values.begin());
}

// The format's nonnegative finite values in order: pattern p is values[p].
template <class T>
std::vector<double> FiniteValues() {
  std::vector<double> values;
  for (std::uint32_t b = 0; b < 0x8000; ++b) {
    const double v = FieldValue(static_cast<std::uint16_t>(b), kFractionBits<T>);
    if (!std::isfinite(v)) break;
    values.push_back(v);
  }
  return values;
}

// Doubles where a rounding to T can go wrong: each finite value, each midpoint between neighbours
// and the doubles either side of it, subnormals and extremes of double, random bit patterns.
std::vector<double> RoundingCases(const std::vector<double>& values) {
  std::vector<double> cases;
  for (std::size_t i = 0; i < values.size(); ++i) {
    cases.push_back(values[i]);
    const double next = i + 1 < values.size() ? values[i + 1] : 2 * values[i] - values[i - 1];
    const double mid = values[i] + (next - values[i]) / 2;  // Exact in double.
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 2 * mid)}) {
      cases.push_back(x);
    }
  }
  for (double x : {0x1p-1074, 0x1p-1022, 1e-300, 1e300, std::numeric_limits<double>::max(), 0x1p-25,
                   0x1p-134, 0x1.8p-25, 0x1.8p-134, 0x1p-26, 0x1p-135}) {
    cases.push_back(x);
  }
  std::mt19937_64 rng(53);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::bit_cast<double>(rng());
    if (!std::isnan(x)) cases.push_back(x);
  }
  return cases;
}

TYPED_TEST(Float16Test, DoublesRoundToTheNearestValueTiesToEven) {
  using T = TypeParam;
  const std::vector<double> values = FiniteValues<T>();
  for (double magnitude : RoundingCases(values)) {
    for (double x : {magnitude, -magnitude}) {
      const std::uint16_t expected = ReferenceRound<T>(x, values);
      ASSERT_EQ(T(x).bits(), expected) << std::hexfloat << x;
      // From float: the same rounding, wherever the float is the same value.
      const float f = static_cast<float>(x);
      if (static_cast<double>(f) == x) ASSERT_EQ(T(f).bits(), expected) << std::hexfloat << x;
      // Round to odd in float, then to T: the double's rounding again (dtype.h's second route).
      if (std::isfinite(x)) ASSERT_EQ(T(RoundToOddFloat(x)).bits(), expected) << std::hexfloat << x;
    }
  }
}

#if defined(__FLT16_MAX__)
// A second reference: the compiler's own binary16 (_Float16, converted by libgcc's soft-float
// routines), on every bit pattern and on every rounding case of the test above.
TEST(Float16CompilerReferenceTest, AgreesWithTheCompilersFloat16) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float expected = static_cast<float>(std::bit_cast<_Float16>(bits));
    const float widened = float16::FromBits(bits);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(widened)) << std::hex << b;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(widened), std::bit_cast<std::uint32_t>(expected))
          << std::hex << b;
    }
  }
  for (double magnitude : RoundingCases(FiniteValues<float16>())) {
    for (double x : {magnitude, -magnitude}) {
      ASSERT_EQ(float16(x).bits(), std::bit_cast<std::uint16_t>(static_cast<_Float16>(x)))
          << std::hexfloat << x;
      const float f = static_cast<float>(x);
      ASSERT_EQ(float16(f).bits(), std::bit_cast<std::uint16_t>(static_cast<_Float16>(f)))
          << std::hexfloat << f;
    }
  }
}
#endif

TYPED_TEST(Float16Test, InfinityStaysAndNaNStaysNaNQuietedWithItsSign) {
  using T = TypeParam;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(T(inf).bits(), std::numeric_limits<T>::infinity().bits());
  EXPECT_EQ(T(-inf).bits(), std::numeric_limits<T>::infinity().bits() | 0x8000);
  const std::uint16_t quiet = 1u << (kFractionBits<T> - 1);
  for (double nan :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::signaling_NaN(),
        -std::numeric_limits<double>::quiet_NaN(),
        std::bit_cast<double>(std::uint64_t{0x7ff0000000000001}),
        std::bit_cast<double>(std::uint64_t{0xfff4000000000000})}) {
    const T narrowed(nan);
    EXPECT_TRUE(std::isnan(static_cast<float>(narrowed))) << std::hex << narrowed.bits();
    EXPECT_NE(narrowed.bits() & quiet, 0) << "quieted";
    EXPECT_EQ((narrowed.bits() & 0x8000) != 0, std::signbit(nan)) << "sign kept";
    const T from_float(static_cast<float>(nan));
    EXPECT_TRUE(std::isnan(static_cast<float>(from_float)));
  }
}

TYPED_TEST(Float16Test, LimitsAreTheFormatsValues) {
  using T = TypeParam;
  using Limits = std::numeric_limits<T>;
  const std::vector<double> values = FiniteValues<T>();
  EXPECT_EQ(ToDouble(Limits::max()), values.back());
  EXPECT_EQ(ToDouble(Limits::lowest()), -values.back());
  EXPECT_EQ(ToDouble(Limits::denorm_min()), values[1]);
  EXPECT_EQ(ToDouble(Limits::min()), std::ldexp(1.0, Limits::min_exponent - 1));
  EXPECT_EQ(ToDouble(Limits::epsilon()), std::ldexp(1.0, 1 - Limits::digits));
  EXPECT_EQ(Limits::digits, kFractionBits<T> + 1);
  EXPECT_TRUE(std::isinf(static_cast<float>(Limits::infinity())));
  EXPECT_TRUE(std::isnan(static_cast<float>(Limits::quiet_NaN())));
  EXPECT_TRUE(std::isnan(static_cast<float>(Limits::signaling_NaN())));
  EXPECT_EQ(static_cast<float>(T()), 0.0f);
  EXPECT_FALSE(std::signbit(static_cast<float>(T())));
}

}  // namespace
}  // namespace mm
