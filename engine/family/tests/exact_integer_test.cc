// MatMulInteger's and QLinearMatMul's exact answers and their judgement, on hand-computed cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "judge_values.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::family {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::Judged;
using testing::JudgeValues;
using testing::ProblemBuilder;
using testing::Values;

ProblemBuilder OfficialMatMulInteger() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  p.Input("B", DType::kUInt8, {3, 2}, {1, 4, 2, 5, 3, 6});
  p.Input("a_zero_point", DType::kUInt8, {1}, {12});
  p.Input("b_zero_point", DType::kUInt8, {1}, {0});
  return p;
}

TEST(MatMulIntegerExactTest, TheOfficialExample) {
  const ProblemBuilder p = OfficialMatMulInteger();
  const Plan plan = PlanProblem(p.problem()).value();
  const FamilyOracle oracle = ExactFamily(plan, Arithmetic::OwnType(DType::kInt32)).value();
  EXPECT_THAT(Values<std::int32_t>(oracle.y),
              ElementsAre(-38, -83, -44, -98, -50, -113, -56, -128));
  EXPECT_FALSE(oracle.outside_standard_range());
}

// uint8 255 against int8 127 in adjacent positions along K: each product 32385, the pair 64770.
ProblemBuilder SaturatingPair() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {1, 2}, {255, 255}).Input("B", DType::kInt8, {2, 1}, {127, 127});
  return p;
}

TEST(MatMulIntegerExactTest, ASaturatingPairIsExactAndAKernelSaturatingItFails) {
  const Judged exact = JudgeValues<std::int32_t>(SaturatingPair(), {64770});
  EXPECT_THAT(Values<std::int32_t>(exact.oracle.y), ElementsAre(64770));
  EXPECT_EQ(exact.judgement.verdict(), ElementVerdict::kPass);
  // x86's vpmaddubsw adds the pair in int16 with saturation: 32767.
  const Judged saturated = JudgeValues<std::int32_t>(SaturatingPair(), {32767});
  EXPECT_EQ(saturated.judgement.verdict(), ElementVerdict::kFail);
  EXPECT_THAT(saturated.judgement.Describe(), HasSubstr("exact 64770, got 32767"));
}

// A [2,2] uint8 with a per-row zero point [1, 2]; B [2,2] int8 with a per-column one [-1, 3]:
//   A - zp = [[3-1, 5-1], [7-2, 9-2]] = [[2, 4], [5, 7]]
//   B - zp = [[1+1, 4-3], [-2+1, 6-3]] = [[2, 1], [-1, 3]]
//   Y = [[2*2 + 4*-1, 2*1 + 4*3], [5*2 + 7*-1, 5*1 + 7*3]] = [[0, 14], [3, 26]].
ProblemBuilder PerRowAndColumn() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {2, 2}, {3, 5, 7, 9}).Input("B", DType::kInt8, {2, 2}, {1, 4, -2, 6});
  p.Input("a_zero_point", DType::kUInt8, {2}, {1, 2});
  p.Input("b_zero_point", DType::kInt8, {1, 2}, {-1, 3});
  return p;
}

TEST(MatMulIntegerExactTest, PerRowAndPerColumnZeroPoints) {
  const Judged right = JudgeValues<std::int32_t>(PerRowAndColumn(), {0, 14, 3, 26});
  EXPECT_THAT(Values<std::int32_t>(right.oracle.y), ElementsAre(0, 14, 3, 26));
  EXPECT_EQ(right.judgement.verdict(), ElementVerdict::kPass);
  // A kernel that ignores b's zero point: (A - zp) B = [[2*1 + 4*-2, 2*4 + 4*6], [5 - 14, 20 +
  // 42]].
  EXPECT_EQ(JudgeValues<std::int32_t>(PerRowAndColumn(), {-6, 32, -9, 62}).judgement.verdict(),
            ElementVerdict::kFail);
  // One that applies a_zero_point[0] to every row: row 1 is [6, 8] (B - zp) = [4, 30].
  const Judged per_tensor = JudgeValues<std::int32_t>(PerRowAndColumn(), {0, 14, 4, 30});
  EXPECT_EQ(per_tensor.judgement.fail, 2);
  EXPECT_EQ(per_tensor.judgement.verdicts[0], ElementVerdict::kPass);
}

TEST(MatMulIntegerExactTest, BatchedPerRowZeroPointsFollowAsOwnBatch) {
  // A [2,1,2] (two 1x2 matrices, zero points [2,1,1] = {1, 2}) times B [2,1]: K = 2.
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {2, 1, 2}, {3, 4, 3, 4}).Input("B", DType::kUInt8, {2, 1}, {1, 1});
  p.Input("a_zero_point", DType::kUInt8, {2, 1, 1}, {1, 2});
  const Judged j = JudgeValues<std::int32_t>(p, {5, 3});  // (3-1)+(4-1), (3-2)+(4-2).
  EXPECT_THAT(Values<std::int32_t>(j.oracle.y), ElementsAre(5, 3));
}

TEST(MatMulIntegerExactTest, ASumLeavingInt32IsJudgedAgainstTheWrappedValue) {
  // 255 * -128 = -32640; 65794 of them: -2147516160, below -2^31. Wrapped: 2147451136.
  constexpr std::int64_t k = 65794;
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Filled("A", DType::kUInt8, {1, k}, 255).Filled("B", DType::kInt8, {k, 1}, -128);
  const Judged wrapped = JudgeValues<std::int32_t>(p, {2147451136});
  EXPECT_THAT(Values<std::int32_t>(wrapped.oracle.y), ElementsAre(2147451136));
  EXPECT_EQ(wrapped.oracle.outside_int32_count, 1);
  EXPECT_TRUE(wrapped.judgement.outside_standard_range());
  EXPECT_EQ(wrapped.judgement.verdict(), ElementVerdict::kPass);
  EXPECT_THAT(wrapped.judgement.Describe(), HasSubstr("outside the standard's range: 1"));
  // A kernel that saturates its int32 sum is wrong by the standard's own words.
  EXPECT_EQ(JudgeValues<std::int32_t>(p, {INT32_MIN}).judgement.verdict(), ElementVerdict::kFail);
  // One element fewer stays inside int32: nothing marked.
  ProblemBuilder inside(Op::kMatMulInteger, 10);
  inside.Filled("A", DType::kUInt8, {1, k - 1}, 255).Filled("B", DType::kInt8, {k - 1, 1}, -128);
  EXPECT_FALSE(JudgeValues<std::int32_t>(inside, {-2147483520}).oracle.outside_standard_range());
}

TEST(MatMulIntegerExactTest, AWrongTypeOrShapeIsAMismatch) {
  const ProblemBuilder pair = SaturatingPair();  // Holds the tensors the plan views.
  const Plan plan = PlanProblem(pair.problem()).value();
  const FamilyOracle oracle = ExactFamily(plan, Arithmetic::OwnType(DType::kInt32)).value();
  const Tensor wrong = Tensor::Create(DType::kInt64, {1, 1}).value();
  const FamilyJudgement j = JudgeFamily(plan, oracle, wrong.view());
  EXPECT_EQ(j.verdict(), ElementVerdict::kFail);
  EXPECT_THAT(j.Describe(), HasSubstr("Y is int64[1,1] but MatMulInteger gives int32[1,1]"));
}

// The official QLinearMatMul example (test_qlinearmatmul_2D_*_float32), uint8 or int8.
ProblemBuilder OfficialQLinear(bool int8, int version = 21) {
  ProblemBuilder p(Op::kQLinearMatMul, version);
  const DType t = int8 ? DType::kInt8 : DType::kUInt8;
  const double shift = int8 ? 127 : 0;
  auto shifted = [&](std::vector<double> v) {
    for (double& x : v) {
      x -= shift;
      if (x > 127 && int8) x -= 256;  // numpy's astype(int8) wraps 128 to -128.
    }
    return v;
  };
  p.Input("a", t, {2, 4}, shifted({208, 236, 0, 238, 3, 214, 255, 29}));
  p.Filled("a_scale", DType::kFloat, {1}, 0.0066).Input("a_zero_point", t, {1}, shifted({113}));
  p.Input("b", t, {4, 3}, shifted({152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}));
  p.Filled("b_scale", DType::kFloat, {1}, 0.00705).Input("b_zero_point", t, {1}, shifted({114}));
  p.Filled("y_scale", DType::kFloat, {1}, 0.0107).Input("y_zero_point", t, {1}, shifted({118}));
  return p;
}

TEST(QLinearMatMulExactTest, TheOfficialExamplesOutputs) {
  const Judged u8 = JudgeValues<std::uint8_t>(OfficialQLinear(false), {168, 115, 255, 1, 66, 151});
  EXPECT_THAT(Values<std::uint8_t>(u8.oracle.y), ElementsAre(168, 115, 255, 1, 66, 151));
  EXPECT_EQ(u8.judgement.verdict(), ElementVerdict::kPass);
  const Judged i8 = JudgeValues<std::int8_t>(OfficialQLinear(true), {41, -12, -9, 1, -75, -128});
  EXPECT_THAT(Values<std::int8_t>(i8.oracle.y), ElementsAre(41, -12, -9, 1, -75, -128));
}

// a [1,1] uint8 = acc (zero points 0) times b [[1]]: y = requantize(acc * a_scale / y_scale).
ProblemBuilder OneElement(double a, double a_scale, double y_scale, DType y_type = DType::kInt8,
                          double y_zero = 0) {
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {1, 1}, {a}).Filled("a_scale", DType::kFloat, {}, a_scale);
  p.Filled("a_zero_point", DType::kUInt8, {}, 0);
  p.Input("b", DType::kInt8, {1, 1}, {1}).Filled("b_scale", DType::kFloat, {}, 1);
  p.Filled("b_zero_point", DType::kInt8, {}, 0);
  p.Filled("y_scale", DType::kFloat, {}, y_scale).Filled("y_zero_point", y_type, {}, y_zero);
  return p;
}

TEST(QLinearMatMulExactTest, TiesRoundToEvenAndOtherRoundingsFail) {
  // 2.5: to even 2. Half away from zero (3) and half up (3) fail.
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(5, 0.5, 1), {2}).judgement.verdict(),
            ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(5, 0.5, 1), {3}).judgement.verdict(),
            ElementVerdict::kFail);
  // 3.5: to even 4. Half down (3) fails.
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(7, 0.5, 1), {4}).judgement.verdict(),
            ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(7, 0.5, 1), {3}).judgement.verdict(),
            ElementVerdict::kFail);
}

TEST(QLinearMatMulExactTest, SaturationAtBothEnds) {
  EXPECT_THAT(Values<std::int8_t>(JudgeValues<std::int8_t>(OneElement(200, 1, 1), {0}).oracle.y),
              ElementsAre(127));
  // uint8 y with zero point 10: 200 * 2 + 10 saturates at 255; a_scale tiny and acc 0 gives 10.
  EXPECT_THAT(
      Values<std::uint8_t>(
          JudgeValues<std::uint8_t>(OneElement(200, 2, 1, DType::kUInt8, 10), {0}).oracle.y),
      ElementsAre(255));
  // int8 y, a negative product: b = -128 via the zero point of a.
  ProblemBuilder low = OneElement(0, 1, 1);
  low.Filled("a_zero_point", DType::kUInt8, {}, 200);  // a - zp = -200.
  EXPECT_THAT(Values<std::int8_t>(JudgeValues<std::int8_t>(low, {0}).oracle.y), ElementsAre(-128));
  ProblemBuilder zero = OneElement(0, 1, 1, DType::kUInt8, 3);
  zero.Filled("a_zero_point", DType::kUInt8, {}, 50);  // -50 + 3 saturates at 0.
  EXPECT_THAT(Values<std::uint8_t>(JudgeValues<std::uint8_t>(zero, {0}).oracle.y), ElementsAre(0));
}

TEST(QLinearMatMulExactTest, OneUnitOffIsBoundOnlyWhereFloat32CanCrossTheTie) {
  // 3 / 6 = 0.5 exactly: to even, 0; float32's 1/6 lands above the tie, giving 1: BOUND.
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(3, 1, 6), {0}).judgement.verdict(),
            ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(3, 1, 6), {1}).judgement.verdict(),
            ElementVerdict::kBound);
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(3, 1, 6), {-1}).judgement.verdict(),
            ElementVerdict::kFail);
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(3, 1, 6), {2}).judgement.verdict(),
            ElementVerdict::kFail);
  // 2.5 with exact float32 arithmetic: one unit off is FAIL (no evaluation reaches 3).
  EXPECT_EQ(JudgeValues<std::int8_t>(OneElement(5, 0.5, 1), {3}).judgement.bound, 0);
}

// ONNX's text rounds x / y_scale half to even and then adds y_zero_point; its reference evaluator
// (op_qlinear_matmul.py) adds and then rounds. 1 * 0.5 with zero point 1: 0 + 1 = 1, or
// rint(1.5) = 2. Both are accepted, and the judgement names the reading the output followed.
TEST(QLinearMatMulExactTest, ATieWithAnOddZeroPointAcceptsEitherReadingAndNamesIt) {
  const ProblemBuilder tie = OneElement(1, 0.5, 1, DType::kUInt8, 1);
  const Judged text = JudgeValues<std::uint8_t>(tie, {1});
  EXPECT_THAT(Values<std::uint8_t>(text.oracle.y), ElementsAre(1));  // The text's value first.
  EXPECT_EQ(text.judgement.verdict(), ElementVerdict::kPass);
  ASSERT_EQ(text.judgement.ambiguities.size(), 1u);
  EXPECT_EQ(text.judgement.ambiguities[0].ambiguity,
            Ambiguity::kQLinearMatMulZeroPointBeforeRounding);
  EXPECT_EQ(text.judgement.ambiguities[0].followed(), Reading::kFormula);

  const Judged evaluator = JudgeValues<std::uint8_t>(tie, {2});
  EXPECT_EQ(evaluator.judgement.verdict(), ElementVerdict::kPass);
  ASSERT_EQ(evaluator.judgement.ambiguities.size(), 1u);
  EXPECT_EQ(evaluator.judgement.ambiguities[0].followed(), Reading::kSkipped);
  EXPECT_THAT(evaluator.judgement.Describe(),
              HasSubstr("qlinearmatmul-zero-point-before-rounding: 1 element; the result followed "
                        "the other reading: round_half_even(acc a_scale b_scale / y_scale + "
                        "y_zero_point)"));

  // -2.5 with zero point 1 in int8: -2 + 1 = -1, or rint(-1.5) = -2.
  ProblemBuilder negative = OneElement(0, 0.5, 1, DType::kInt8, 1);
  negative.Filled("a_zero_point", DType::kUInt8, {}, 5);  // a - zp = -5.
  EXPECT_EQ(JudgeValues<std::int8_t>(negative, {-1}).judgement.verdict(), ElementVerdict::kPass);
  const Judged down = JudgeValues<std::int8_t>(negative, {-2});
  EXPECT_EQ(down.judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(down.judgement.ambiguities[0].followed(), Reading::kSkipped);
}

TEST(QLinearMatMulExactTest, AnAnswerOfNeitherReadingFails) {
  // The tie 0.5 with zero point 1: 0 and 3 are neither 1 nor 2.
  const ProblemBuilder tie = OneElement(1, 0.5, 1, DType::kUInt8, 1);
  for (const std::uint8_t wrong : {0, 3}) {
    const Judged j = JudgeValues<std::uint8_t>(tie, {wrong});
    EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kFail) << int{wrong};
    ASSERT_EQ(j.judgement.ambiguities.size(), 1u);
    EXPECT_EQ(j.judgement.ambiguities[0].followed(), Reading::kNeither);
  }
  // No tie (4 * 0.5 = 2, plus 1): one unit off either way fails and no ambiguity is reached.
  const ProblemBuilder exact = OneElement(4, 0.5, 1, DType::kUInt8, 1);
  for (const std::uint8_t wrong : {2, 4}) {
    const Judged j = JudgeValues<std::uint8_t>(exact, {wrong});
    EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kFail) << int{wrong};
    EXPECT_TRUE(j.judgement.ambiguities.empty());
  }
  // An even zero point keeps the half's even neighbour even: only 0 + 2 is accepted.
  EXPECT_EQ(
      JudgeValues<std::uint8_t>(OneElement(1, 0.5, 1, DType::kUInt8, 2), {3}).judgement.verdict(),
      ElementVerdict::kFail);
}

TEST(QLinearMatMulExactTest, EachReadingKeepsItsOneUnitRule) {
  // 3 / 6 = 0.5 exactly, float32's 1/6 above it; zero point 1. The text: 0 + 1 = 1, and 2 where
  // float32 crosses the tie (BOUND); the evaluator: rint(1.5) = 2, float32 too. 2 is the
  // evaluator's exact answer: PASS, following it; 3 is neither's.
  const ProblemBuilder p = OneElement(3, 1, 6, DType::kInt8, 1);
  const Judged two = JudgeValues<std::int8_t>(p, {2});
  EXPECT_EQ(two.judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(two.judgement.ambiguities[0].followed(), Reading::kSkipped);
  EXPECT_EQ(JudgeValues<std::int8_t>(p, {1}).judgement.ambiguities[0].followed(),
            Reading::kFormula);
  EXPECT_EQ(JudgeValues<std::int8_t>(p, {3}).judgement.verdict(), ElementVerdict::kFail);
}

TEST(QLinearMatMulExactTest, PerRowAndPerColumnScales) {
  // a [2,1] = {2, 3} with per-row scales {1, 0.5}; b [1,2] = {1, 1} with per-column {1, 2}:
  // y = [[2*1*1, 2*1*2], [3*0.5*1, 3*0.5*2]] = [[2, 4], [1.5 -> 2, 3]].
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {2, 1}, {2, 3}).Input("a_scale", DType::kFloat, {2}, {1, 0.5});
  p.Filled("a_zero_point", DType::kUInt8, {2}, 0);
  p.Input("b", DType::kUInt8, {1, 2}, {1, 1}).Input("b_scale", DType::kFloat, {1, 2}, {1, 2});
  p.Filled("b_zero_point", DType::kUInt8, {1, 2}, 0);
  p.Filled("y_scale", DType::kFloat, {}, 1).Filled("y_zero_point", DType::kUInt8, {}, 0);
  const Judged j = JudgeValues<std::uint8_t>(p, {2, 4, 2, 3});
  EXPECT_THAT(Values<std::uint8_t>(j.oracle.y), ElementsAre(2, 4, 2, 3));
  EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kPass);
}

}  // namespace
}  // namespace mm::family
