// QLinearMatMul's requantization: exact ties to even in both directions, saturation at both ends,
// the exact rational where a float shortcut rounds the other way, and the float32 range.
#include "mm/family/requantize.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mm::family {
namespace {

constexpr OutputRange kInt8{-128, 127};
constexpr OutputRange kUInt8{0, 255};

TEST(RequantizeTest, ExactTiesGoToEvenInBothDirections) {
  // a_scale 0.5: acc / 2 is an exact half for odd acc; every float evaluation is exact too.
  EXPECT_EQ(RequantizeExact(5, 0.5f, 1, 1, 0, kInt8), 2);    // 2.5 down to 2.
  EXPECT_EQ(RequantizeExact(7, 0.5f, 1, 1, 0, kInt8), 4);    // 3.5 up to 4.
  EXPECT_EQ(RequantizeExact(-5, 0.5f, 1, 1, 0, kInt8), -2);  // -2.5 to -2.
  EXPECT_EQ(RequantizeExact(-7, 0.5f, 1, 1, 0, kInt8), -4);  // -3.5 to -4.
  EXPECT_EQ(RequantizeExact(1, 3, 1, 2, 10, kUInt8), 12);    // 1.5 up to 2, plus 10.
  // Exact in float32 as well: no other value may be accepted.
  const RequantizedRange r = RequantizeFloat32Range(5, 0.5f, 1, 1, 0, kInt8);
  EXPECT_EQ(r.lo, 2);
  EXPECT_EQ(r.hi, 2);
}

TEST(RequantizeTest, TheZeroPointBeforeRoundingMovesOddTiesOnly) {
  constexpr auto kBefore = ZeroPointOrder::kBeforeRounding;
  // 0.5 + 1: rint(1.5) = 2, where the text gives round(0.5) + 1 = 1.
  EXPECT_EQ(RequantizeExact(1, 0.5f, 1, 1, 1, kUInt8), 1);
  EXPECT_EQ(RequantizeExact(1, 0.5f, 1, 1, 1, kUInt8, kBefore), 2);
  // 2.5 + 1 = 3.5 to 4 (text: 3); -2.5 + 1 = -1.5 to -2 (text: -1).
  EXPECT_EQ(RequantizeExact(5, 0.5f, 1, 1, 1, kInt8, kBefore), 4);
  EXPECT_EQ(RequantizeExact(-5, 0.5f, 1, 1, 1, kInt8, kBefore), -2);
  EXPECT_EQ(RequantizeExact(-5, 0.5f, 1, 1, 1, kInt8), -1);
  // An even zero point, or no half: the same value either way.
  EXPECT_EQ(RequantizeExact(5, 0.5f, 1, 1, 2, kInt8, kBefore), 4);
  EXPECT_EQ(RequantizeExact(5, 0.5f, 1, 1, 2, kInt8), 4);
  EXPECT_EQ(RequantizeExact(4, 0.5f, 1, 1, 1, kInt8, kBefore), 3);
  // Exact in float32 as well: the evaluations agree with the reading.
  const RequantizedRange r = RequantizeFloat32Range(1, 0.5f, 1, 1, 1, kUInt8, kBefore);
  EXPECT_EQ(r.lo, 2);
  EXPECT_EQ(r.hi, 2);
}

TEST(RequantizeTest, SaturatesAtBothEndsOfEachType) {
  EXPECT_EQ(RequantizeExact(1000, 1, 1, 1, 0, kInt8), 127);
  EXPECT_EQ(RequantizeExact(-1000, 1, 1, 1, 0, kInt8), -128);
  EXPECT_EQ(RequantizeExact(200, 1, 1, 1, 100, kUInt8), 255);
  EXPECT_EQ(RequantizeExact(-3, 1, 1, 1, 2, kUInt8), 0);
  EXPECT_EQ(RequantizeExact(154, 1, 1, 1, 100, kUInt8), 254);  // Just inside.
  // Far beyond: acc 2^31 - 1 times a huge multiplier, and a tiny one.
  EXPECT_EQ(RequantizeExact(2147483647, 0x1p127f, 0x1p127f, 0x1p-149f, 0, kInt8), 127);
  EXPECT_EQ(RequantizeExact(-2147483647, 0x1p-149f, 0x1p-149f, 0x1p127f, 3, kInt8), 3);
}

TEST(RequantizeTest, TheExactRationalIsNotTheFloatShortcut) {
  // 3 * 1/6 is exactly 0.5: to even, 0. float32's 1/6 is above 1/6, so 3 * (1/6) in float gives
  // 0.5000000149..., which rounds to 1: the one-unit rule accepts 1 here.
  EXPECT_EQ(RequantizeExact(3, 1, 1, 6, 0, kInt8), 0);
  const RequantizedRange r = RequantizeFloat32Range(3, 1, 1, 6, 0, kInt8);
  EXPECT_EQ(r.lo, 0);
  EXPECT_EQ(r.hi, 1);
}

TEST(RequantizeTest, TheOfficialCasesMultiplierIsExact) {
  // test_qlinearmatmul_2D_uint8_float32: acc 31402 saturates, -778 gives 115.
  EXPECT_EQ(RequantizeExact(-778, 0.0066f, 0.00705f, 0.0107f, 118, kUInt8), 115);
  EXPECT_EQ(RequantizeExact(31402, 0.0066f, 0.00705f, 0.0107f, 118, kUInt8), 255);
  EXPECT_EQ(RequantizeExact(-26914, 0.0066f, 0.00705f, 0.0107f, 118, kUInt8), 1);
}

TEST(RequantizeTest, AMultiplierBeyondFloat32LeavesNoNaNEvaluation) {
  // a * b overflows float32: every order gives infinity, and 0 * infinity is no evaluation.
  const RequantizedRange zero = RequantizeFloat32Range(0, 0x1p100f, 0x1p100f, 1, 5, kInt8);
  EXPECT_EQ(zero.lo, 5);
  EXPECT_EQ(zero.hi, 5);
  const RequantizedRange one = RequantizeFloat32Range(1, 0x1p100f, 0x1p100f, 1, 5, kInt8);
  EXPECT_EQ(one.lo, 127);
  EXPECT_EQ(one.hi, 127);
}

}  // namespace
}  // namespace mm::family
