// Fair corpora (conformance/fuzz/fair.h): the correctly rounded expected output, and which
// problems a correct float32-accumulating implementation may fail under ONNX's rule.
#include "mm/conformance/fuzz/fair.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mm::fuzz {
namespace {

using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
Tensor Make(DType dtype, Dims dims, const std::vector<double>& values) {
  Tensor t = Tensor::Create(dtype, dims).value();
  for (std::size_t i = 0; i < values.size(); ++i) t.Data<T>()[i] = RoundFromDouble<T>(values[i]);
  return t;
}

// One problem, planned and run through the oracle, with its correctly rounded Y.
struct Checked {
  MatMulPlan plan;
  OracleResult oracle;
  Tensor y;
  std::string unfair;
};

template <class T>
Checked Check(DType dtype, Dims a_dims, const std::vector<double>& a, Dims b_dims,
              const std::vector<double>& b) {
  const Tensor ta = Make<T>(dtype, a_dims, a), tb = Make<T>(dtype, b_dims, b);
  Checked c;
  c.plan = PlanMatMul({dtype, a_dims, b_dims}).value();
  c.oracle = ExactMatMul(c.plan, ta.view(), tb.view()).value();
  c.y = CorrectlyRounded(c.plan, ta.view(), tb.view(), c.oracle).value();
  c.unfair = UnfairReason(c.plan, ta.view(), tb.view(), c.oracle, c.y.view(), {});
  return c;
}

// 1 + 2^-24 + 2^-70 lies just above the float midpoint 1 + 2^-24: correctly rounded it is
// 1 + 2^-23. Rounding through a double first (1 + 2^-24, a tie, then to even) gives 1.
TEST(CorrectlyRoundedTest, FloatResultIsRoundedOnceFromTheExactSum) {
  const Checked c = Check<float>(DType::kFloat, {3}, {1, 1, 1}, {3},
                                 {1, std::ldexp(1.0, -24), std::ldexp(1.0, -70)});
  EXPECT_EQ(c.y.Data<float>()[0], static_cast<float>(1 + std::ldexp(1.0, -23)));
}

// A double sum whose last bits lie far below double's precision: 1 + 2^-53 + 2^-100 rounds up.
TEST(CorrectlyRoundedTest, DoubleResultSeesBitsBelowDoublePrecision) {
  const Checked c = Check<double>(DType::kDouble, {3}, {1, 1, 1}, {3},
                                  {1, std::ldexp(1.0, -53), std::ldexp(1.0, -100)});
  EXPECT_EQ(c.y.Data<double>()[0], 1 + std::ldexp(1.0, -52));
}

// Products of doubles beyond double's range are exact in the accumulator: max * 2 - max * 2 +
// 1 is 1, where a double sum overflows.
TEST(CorrectlyRoundedTest, DoubleProductsBeyondTheRangeCancelExactly) {
  const double max = std::numeric_limits<double>::max();
  const Checked c = Check<double>(DType::kDouble, {3}, {max, -max, 1}, {3}, {2, 2, 1});
  EXPECT_EQ(c.y.Data<double>()[0], 1.0);
}

// Subnormal outputs: 2^-150 is half the smallest float subnormal (a tie: to even, 0), and
// 1.5 x 2^-150 rounds up to 2^-149.
TEST(CorrectlyRoundedTest, SubnormalResultsRoundToTheSubnormalGrid) {
  const double t = std::ldexp(1.0, -75);
  const Checked tie = Check<float>(DType::kFloat, {1}, {t}, {1}, {t});
  EXPECT_EQ(tie.y.Data<float>()[0], 0.0f);
  const Checked up = Check<float>(DType::kFloat, {1}, {t}, {1}, {1.5 * t});
  EXPECT_EQ(up.y.Data<float>()[0], std::ldexp(1.0f, -149));
}

// bfloat16 results round to 8 significant bits, ties to even: 1 + 2^-8 + 2^-16 goes up.
TEST(CorrectlyRoundedTest, BFloat16RoundsToItsOwnPrecision) {
  const Checked c = Check<bfloat16>(DType::kBFloat16, {3}, {1, 1, 1}, {3},
                                    {1, std::ldexp(1.0, -8), std::ldexp(1.0, -16)});
  EXPECT_EQ(ToDouble(c.y.Data<bfloat16>()[0]), 1 + std::ldexp(1.0, -7));
}

// Small integers sum exactly in any order: nothing for the rule to object to.
TEST(UnfairReasonTest, ExactSmallIntegerProblemIsFair) {
  EXPECT_EQ(Check<float>(DType::kFloat, {2, 2}, {1, 2, 3, 4}, {2, 2}, {5, 6, 7, 8}).unfair, "");
}

// NaN in every order (a NaN input, 0 x inf, +inf with -inf): fair, NaN equals NaN.
TEST(UnfairReasonTest, NaNInEveryOrderIsFair) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Check<float>(DType::kFloat, {2}, {nan, 1}, {2}, {1, 1}).unfair, "");
  EXPECT_EQ(Check<float>(DType::kFloat, {2}, {kInf, 1}, {2}, {0, 1}).unfair, "");
  EXPECT_EQ(Check<float>(DType::kFloat, {2}, {kInf, -kInf}, {2}, {1, 1}).unfair, "");
}

// (1e8 + 1) - 1e8 is 0 in float, 1 exactly: the bound (cancellation) exceeds the tolerance.
TEST(UnfairReasonTest, CancellationBeyondTheToleranceIsUnfair) {
  const Checked c = Check<float>(DType::kFloat, {3}, {1e8, 1, -1e8}, {3}, {1, 1, 1});
  EXPECT_EQ(c.y.Data<float>()[0], 1.0f);
  EXPECT_THAT(c.unfair, HasSubstr("a float sum in another order may give"));
}

// The double case: an intermediate sum overflows in some orders (numpy gives NaN where
// the oracle says inf or -inf).
TEST(UnfairReasonTest, PossibleOverflowIsUnfair) {
  const double max = std::numeric_limits<double>::max();
  EXPECT_THAT(Check<double>(DType::kDouble, {3}, {max, max, -max}, {3}, {1, 1, 1}).unfair,
              HasSubstr("a partial sum may overflow"));
  // With an infinity: -3e38 - 3e38 overflows float to -inf before or after meeting +inf.
  EXPECT_THAT(Check<float>(DType::kFloat, {3}, {kInf, -3e38, -3e38}, {3}, {1, 1, 1}).unfair,
              HasSubstr("opposite infinity"));
}

// bfloat16 inputs whose products overflow float (but not double): unfair for a float32 sum.
TEST(UnfairReasonTest, BFloat16ProductsBeyondFloatAreUnfair) {
  EXPECT_THAT(Check<bfloat16>(DType::kBFloat16, {1}, {1e30}, {1}, {1e30}).unfair,
              HasSubstr("largest float"));
}

// A subnormal times an infinity is the infinity, or NaN where subnormals are flushed.
TEST(UnfairReasonTest, SubnormalTimesInfinityIsUnfair) {
  EXPECT_THAT(Check<float>(DType::kFloat, {1}, {kInf}, {1}, {1e-40}).unfair, HasSubstr("flushed"));
}

// A product beyond the tolerance only through the flush allowance: a float32 subnormal times a
// large value is 0.1 or 0 (flushed).
TEST(UnfairReasonTest, FlushedSubnormalInputBeyondTheToleranceIsUnfair) {
  EXPECT_THAT(Check<float>(DType::kFloat, {1}, {1e-39}, {1}, {1e38}).unfair, HasSubstr("may give"));
}

}  // namespace
}  // namespace mm::fuzz
