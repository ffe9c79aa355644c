// ONNX's tolerance rule, element by element, and what a comparison reports.
#include "mm/conformance/judging/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mm/engine/testing/test_names.h"
#include "mm/oracle/error_bound.h"
#include "mm/oracle/exact_matmul.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
Tensor Make(Dims dims, std::vector<T> values) {
  return Tensor::FromValues<T>(std::move(dims), std::span<const T>(values)).value();
}

struct RuleRow {
  std::string why;
  double expected;
  double actual;
  bool match;
};

class DoubleRuleTest : public ::testing::TestWithParam<RuleRow> {};

TEST_P(DoubleRuleTest, ElementPassesIffWithinAtolPlusRtolTimesExpected) {
  const RuleRow& row = GetParam();
  Tensor e = Make<double>({1}, {row.expected});
  Tensor a = Make<double>({1}, {row.actual});
  Comparison c = Compare(a.view(), e.view(), Tolerance{});
  EXPECT_EQ(c.match, row.match) << c.Describe();
  EXPECT_EQ(c.differing, row.match ? 0 : 1);
}

INSTANTIATE_TEST_SUITE_P(
    Onnx, DoubleRuleTest,
    ::testing::Values(
        RuleRow{"equal values pass", 2.5, 2.5, true},
        RuleRow{"error of 0.9 x tolerance passes", 100.0, 100.0 + 0.9 * (1e-7 + 0.1), true},
        RuleRow{"error of 1.1 x tolerance fails", 100.0, 100.0 + 1.1 * (1e-7 + 0.1), false},
        RuleRow{"one percent off fails", 3.0, 3.03, false},
        RuleRow{"near zero atol decides: 5e-8 passes", 0.0, 5e-8, true},
        RuleRow{"near zero atol decides: 2e-7 fails", 0.0, 2e-7, false},
        RuleRow{"NaN equals NaN", kNaN, kNaN, true},
        RuleRow{"NaN expected, number given fails", kNaN, 1.0, false},
        RuleRow{"number expected, NaN given fails", 1.0, kNaN, false},
        RuleRow{"inf equals the same inf", kInf, kInf, true},
        RuleRow{"inf against -inf fails", kInf, -kInf, false},
        RuleRow{"inf against a huge finite fails", kInf, 1e308, false},
        RuleRow{"finite expected, inf given fails", 1e308, kInf, false}),
    mm::testing::NameFromWhy());

TEST(CompareTest, IntegersMustBeExact) {
  Tensor e = Make<std::int64_t>({2}, {1000000000000, -5});
  Tensor off_by_one = Make<std::int64_t>({2}, {1000000000001, -5});
  Comparison c = Compare(off_by_one.view(), e.view(), Tolerance{.rtol = 1, .atol = 1});
  EXPECT_FALSE(c.match) << "integers ignore the float tolerance";
  EXPECT_EQ(c.worst->expected, "1000000000000");
  EXPECT_EQ(c.worst->actual, "1000000000001");

  // uint64 values beyond 2^53 differ by one yet map to the same double: still a mismatch.
  Tensor ue = Make<std::uint64_t>({1}, {(std::uint64_t{1} << 60) + 1});
  Tensor ua = Make<std::uint64_t>({1}, {std::uint64_t{1} << 60});
  EXPECT_FALSE(Compare(ua.view(), ue.view(), {}).match);
}

TEST(CompareTest, ExtremeSignedIntegersDoNotOverflow) {
  // INT32_MAX - INT32_MIN does not fit in int32: the error is formed without signed overflow
  // (UBSan checks this in the sanitizer build).
  Tensor e = Make<std::int32_t>({1}, {std::numeric_limits<std::int32_t>::min()});
  Tensor a = Make<std::int32_t>({1}, {std::numeric_limits<std::int32_t>::max()});
  Comparison c = Compare(a.view(), e.view(), {});
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.max_abs_error, 4294967295.0);
}

TEST(CompareTest, ShapeAndDTypeMustBeEqual) {
  Tensor e = Make<float>({2, 2}, {1, 2, 3, 4});
  Tensor other_shape = Make<float>({4}, {1, 2, 3, 4});
  Comparison shape = Compare(other_shape.view(), e.view(), {});
  EXPECT_FALSE(shape.match);
  EXPECT_EQ(shape.mismatch, "shape [4] != expected [2,2]");
  Tensor other_dtype = Make<double>({2, 2}, {1, 2, 3, 4});
  Comparison dtype = Compare(other_dtype.view(), e.view(), {});
  EXPECT_FALSE(dtype.match);
  EXPECT_EQ(dtype.mismatch, "dtype double != expected float");
}

TEST(CompareTest, ReportsTheWorstMismatchAndHowManyDiffer) {
  Tensor e = Make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor a = Make<float>({2, 3}, {1, 2.01f, 3, 4, 5.2f, 6});
  Comparison c = Compare(a.view(), e.view(), {});
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.differing, 2);
  ASSERT_TRUE(c.worst.has_value());
  EXPECT_EQ(c.worst->index, (Dims{1, 1}));  // 5 -> 5.2 misses by more than 2 -> 2.01.
  EXPECT_EQ(c.worst->expected, "5");
  EXPECT_NEAR(c.worst->abs_error, 0.2, 1e-6);
  EXPECT_NEAR(c.worst->rel_error, 0.04, 1e-6);
  EXPECT_NEAR(c.worst->allowed, 1e-7 + 5e-3, 1e-12);
  EXPECT_THAT(c.Describe(), HasSubstr("2 of 6 elements differ; worst at [1,1]: expected 5, got"));
}

TEST(CompareTest, RankZeroAndEmptyTensors) {
  Tensor e = Make<float>({}, {-0.44422f});
  Tensor a = Make<float>({}, {-0.44422f});
  Comparison c = Compare(a.view(), e.view(), {});
  EXPECT_TRUE(c.match);
  EXPECT_TRUE(c.bitwise_equal);
  EXPECT_EQ(c.worst->index, Dims{});

  Tensor empty = Tensor::Create(DType::kFloat, {0, 3}).value();
  Comparison ce = Compare(empty.view(), empty.view(), {});
  EXPECT_TRUE(ce.match);
  EXPECT_FALSE(ce.worst.has_value());
}

TEST(CompareTest, HalfPrecisionIsComparedInDouble) {
  Tensor e = Make<float16>({1}, {float16(1.0f)});
  Tensor a = Make<float16>({1}, {float16(1.0009765625f)});  // One float16 ulp above 1.
  EXPECT_TRUE(Compare(a.view(), e.view(), {}).match) << "1 ulp of f16 is 9.8e-4 < 1e-3";
  Tensor two_ulps = Make<float16>({1}, {float16(1.001953125f)});
  EXPECT_FALSE(Compare(two_ulps.view(), e.view(), {}).match);
}

TEST(CompareTest, CustomTolerance) {
  Tensor e = Make<float>({1}, {3.0f});
  Tensor a = Make<float>({1}, {3.03f});
  EXPECT_TRUE(Compare(a.view(), e.view(), {.rtol = 0.02, .atol = 0}).match);
}

// MatMul = numpy.matmul in double: -inf beside 1e200 x 1e200. The exact -inf PASSes; the NaN of an
// evaluation in double (that product overflows to +inf and meets -inf) is within the bound and
// outside ONNX's tolerance, BOUND, and the bound's description names why; +inf, or NaN where
// nothing can overflow (1e100 x 1e100), FAILs.
TEST(JudgeTest, ANaNBesideAnExactInfinityIsBoundWhereFiniteTermsOverflow) {
  const auto judge = [](double big, double got) {
    const Tensor a = Make<double>({1, 2}, {1, big});
    const Tensor b = Make<double>({2, 1}, {-kInf, big});
    const MatMulPlan plan = PlanMatMul({DType::kDouble, a.dims(), b.dims()}).value();
    const OracleResult oracle = ExactMatMul(plan, a.view(), b.view()).value();
    const OracleBounds bounds(oracle, Arithmetic{DType::kDouble, false}, plan.k);
    return Judge(Make<double>({1, 1}, {got}).view(), oracle.y.view(), bounds, Tolerance{});
  };
  EXPECT_EQ(judge(1e200, -kInf).verdict, Verdict::kPass);
  const Judgement nan = judge(1e200, kNaN);
  EXPECT_EQ(nan.verdict, Verdict::kBound);
  EXPECT_EQ(nan.bound.nan_beside_infinity, 1);
  EXPECT_THAT(nan.bound.Describe(), HasSubstr("1 NaN where the exact value is an infinity"));
  EXPECT_EQ(judge(1e200, kInf).verdict, Verdict::kFail);
  EXPECT_EQ(judge(1e100, kNaN).verdict, Verdict::kFail);
}

TEST(FormatDoubleTest, ShortestRoundTrip) {
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(1e-7), "1e-07");
  EXPECT_EQ(FormatDouble(kNaN), "nan");
  EXPECT_EQ(FormatDouble(-kInf), "-inf");
}

}  // namespace
}  // namespace mm::conformance
