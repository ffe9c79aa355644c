// Gemm's exact answer, its bound and the standard's beta = 0 ambiguity, on hand-computed cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
using testing::kInf;
using testing::kNaN;
using testing::ProblemBuilder;
using testing::Values;

// Gemm-13, alpha 0.5, beta 2, transA, transB, C [N] = {1, 2}:
//   A = [[1, 2], [3, 4], [5, 6]] is [K=3, M=2]: A' = [[1, 3, 5], [2, 4, 6]].
//   B = [[1, 0, 1], [0, 1, 1]] is [N=2, K=3]: B' = [[1, 0], [0, 1], [1, 1]].
//   A'B' = [[1 + 5, 3 + 5], [2 + 6, 4 + 6]] = [[6, 8], [8, 10]].
//   Y = 0.5 A'B' + 2 C = [[3 + 2, 4 + 4], [4 + 2, 5 + 4]] = [[5, 8], [6, 9]].
ProblemBuilder AllAttributes() {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {3, 2}, {1, 2, 3, 4, 5, 6});
  p.Input("B", DType::kFloat, {2, 3}, {1, 0, 1, 0, 1, 1});
  p.Input("C", DType::kFloat, {2}, {1, 2});
  p.Float("alpha", 0.5f).Float("beta", 2).Int("transA", 1).Int("transB", 1);
  return p;
}

TEST(GemmExactTest, AllAttributesByHand) {
  const Judged j = JudgeValues<float>(AllAttributes(), {5, 8, 6, 9});
  EXPECT_THAT(Values<float>(j.oracle.y), ElementsAre(5, 8, 6, 9));
  EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kPass);
  EXPECT_TRUE(j.judgement.ambiguities.empty());
}

TEST(GemmExactTest, PlantedGemmFaultsFail) {
  // Ignoring beta (C added once): [[3 + 1, 4 + 2], [4 + 1, 5 + 2]].
  EXPECT_EQ(JudgeValues<float>(AllAttributes(), {4, 6, 5, 7}).judgement.verdict(),
            ElementVerdict::kFail);
  // The [N] bias read as [M, 1] (by row): [[3 + 2, 4 + 2], [4 + 4, 5 + 4]].
  EXPECT_EQ(JudgeValues<float>(AllAttributes(), {5, 6, 8, 9}).judgement.fail, 2);
  // Transposing when it should not: A [[1, 2], [3, 4]] times the identity, no transA, gives A;
  // a kernel that transposes A gives [[1, 3], [2, 4]].
  ProblemBuilder square(Op::kGemm, 13);
  square.Input("A", DType::kFloat, {2, 2}, {1, 2, 3, 4})
      .Input("B", DType::kFloat, {2, 2}, {1, 0, 0, 1});
  square.Filled("C", DType::kFloat, {}, 0);
  EXPECT_EQ(JudgeValues<float>(square, {1, 2, 3, 4}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<float>(square, {1, 3, 2, 4}).judgement.fail, 2);
}

TEST(GemmExactTest, EveryFormOfCIsBroadcast) {
  // B = 0, so Y = beta C broadcast to [M=2, N=3].
  struct Row {
    Dims dims;
    std::vector<double> c;
    std::vector<float> y;
  };
  const Row rows[] = {
      {{}, {7}, {7, 7, 7, 7, 7, 7}},
      {{1}, {4}, {4, 4, 4, 4, 4, 4}},
      {{3}, {1, 2, 3}, {1, 2, 3, 1, 2, 3}},
      {{1, 1}, {5}, {5, 5, 5, 5, 5, 5}},
      {{1, 3}, {1, 2, 3}, {1, 2, 3, 1, 2, 3}},
      {{2, 1}, {10, 20}, {10, 10, 10, 20, 20, 20}},
      {{2, 3}, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(DimsToString(row.dims));
    ProblemBuilder p(Op::kGemm, 13);
    p.Filled("A", DType::kFloat, {2, 4}, 1).Filled("B", DType::kFloat, {4, 3}, 0);
    p.Input("C", DType::kFloat, row.dims, row.c);
    const Judged j = JudgeValues<float>(p, row.y);
    EXPECT_THAT(Values<float>(j.oracle.y), ElementsAreArray(row.y));
    EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kPass);
  }
  ProblemBuilder absent(Op::kGemm, 11);
  absent.Filled("A", DType::kFloat, {2, 4}, 1).Filled("B", DType::kFloat, {4, 3}, 0.5);
  EXPECT_THAT(Values<float>(JudgeValues<float>(absent, std::vector<float>(6, 2)).oracle.y),
              ElementsAre(2, 2, 2, 2, 2, 2));
}

// beta = 0 and C = [NaN, 1]: Y[0] is NaN by the formula, 6 when C is left out.
ProblemBuilder BetaZeroNaN() {
  ProblemBuilder p(Op::kGemm, 13);
  p.Filled("A", DType::kFloat, {1, 3}, 2).Filled("B", DType::kFloat, {3, 2}, 1);
  p.Input("C", DType::kFloat, {2}, {kNaN, 1}).Float("beta", 0);
  return p;
}

TEST(GemmExactTest, BetaZeroWithANaNCAcceptsBothReadingsAndNamesTheOneFollowed) {
  const Judged blas = JudgeValues<float>(BetaZeroNaN(), {6, 6});
  EXPECT_TRUE(std::isnan(blas.oracle.y.Values<float>()[0]));  // The formula's answer first.
  EXPECT_EQ(blas.judgement.verdict(), ElementVerdict::kPass);
  ASSERT_EQ(blas.judgement.ambiguities.size(), 1u);
  EXPECT_EQ(blas.judgement.ambiguities[0].ambiguity, Ambiguity::kGemmBetaZeroNonFiniteC);
  EXPECT_EQ(blas.judgement.ambiguities[0].elements, 1);
  EXPECT_EQ(blas.judgement.ambiguities[0].followed(), Reading::kSkipped);
  EXPECT_THAT(blas.judgement.Describe(),
              HasSubstr("gemm-beta-zero-non-finite-c: 1 element; the result followed the other "
                        "reading: C left out when beta = 0"));

  const Judged formula = JudgeValues<float>(BetaZeroNaN(), {NAN, 6});
  EXPECT_EQ(formula.judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(formula.judgement.ambiguities[0].followed(), Reading::kFormula);

  const Judged neither = JudgeValues<float>(BetaZeroNaN(), {7, 6});
  EXPECT_EQ(neither.judgement.verdict(), ElementVerdict::kFail);
  EXPECT_EQ(neither.judgement.ambiguities[0].followed(), Reading::kNeither);
  // Element 1 (C finite) is not ambiguous: NaN there fails.
  EXPECT_EQ(JudgeValues<float>(BetaZeroNaN(), {6, NAN}).judgement.fail, 1);
}

TEST(GemmExactTest, AlphaZeroWithAnInfiniteInputIsTheSameKindOfAmbiguity) {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {1, 2}, {INFINITY, 1}).Filled("B", DType::kFloat, {2, 1}, 1);
  p.Input("C", DType::kFloat, {1}, {3}).Float("alpha", 0);
  const Judged j = JudgeValues<float>(p, {3});
  EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kPass);
  ASSERT_EQ(j.judgement.ambiguities.size(), 1u);
  EXPECT_EQ(j.judgement.ambiguities[0].ambiguity, Ambiguity::kGemmAlphaZeroNonFiniteProduct);
  EXPECT_EQ(j.judgement.ambiguities[0].followed(), Reading::kSkipped);
}

// Finite double inputs whose products overflow (found by mm-fuzz --op Gemm on the reference): the
// sum is unbounded (any value, as in MatMul's bound), its exact value beyond double +inf, never a
// NaN that nothing matches; alpha = 0 times that sum is 0; beside an infinite C, IEEE's evaluation
// may give NaN as well (BOUND).
TEST(GemmExactTest, AnOverflowingDoubleProductIsUnboundedAndAlphaZeroMakesItZero) {
  const double max = std::numeric_limits<double>::max();
  ProblemBuilder overflow(Op::kGemm, 13);
  overflow.Input("A", DType::kDouble, {1, 2}, {max, max});
  overflow.Input("B", DType::kDouble, {2, 1}, {max, -8e153});
  overflow.Input("C", DType::kDouble, {1}, {1}).Float("beta", -1);
  const double inf = std::numeric_limits<double>::infinity();
  // max^2 - 8e153 max - 1 is beyond double: +inf rounded; any value is within the bound.
  EXPECT_EQ(JudgeValues<double>(overflow, {inf}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<double>(overflow, {kNaN}).judgement.verdict(), ElementVerdict::kBound);
  ProblemBuilder alpha_zero(Op::kGemm, 13);
  alpha_zero.Input("A", DType::kDouble, {1, 1}, {max}).Input("B", DType::kDouble, {1, 1}, {2});
  alpha_zero.Input("C", DType::kDouble, {1}, {3}).Float("alpha", 0);
  const Judged zero = JudgeValues<double>(alpha_zero, {3});
  EXPECT_THAT(Values<double>(zero.oracle.y), ElementsAre(3));
  EXPECT_EQ(zero.judgement.verdict(), ElementVerdict::kPass);
  alpha_zero.Input("C", DType::kDouble, {1}, {inf});
  EXPECT_EQ(JudgeValues<double>(alpha_zero, {inf}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<double>(alpha_zero, {kNaN}).judgement.verdict(), ElementVerdict::kBound);
  EXPECT_EQ(JudgeValues<double>(alpha_zero, {3}).judgement.verdict(), ElementVerdict::kFail);
}

// float32 accumulation whose product sum passes float's largest value while alpha times it does
// not (found by mm-fuzz --op Gemm on eigen and every BLAS library): a kernel that sums before
// scaling overflows to an infinity, which is any value as in MatMul's bound, and beside an
// infinite C gives NaN, which IEEE's evaluation may give too.
TEST(GemmExactTest, AFloat32ProductSumThatOverflowsBeforeAlphaIsUnbounded) {
  const float inf = std::numeric_limits<float>::infinity();
  ProblemBuilder p(Op::kGemm, 13);
  // 2 x (1e19 x 2e19) = 4e38 > 3.4e38; alpha 0.25 brings the exact value to 1e38.
  p.Input("A", DType::kFloat, {1, 2}, {1e19, 1e19}).Input("B", DType::kFloat, {2, 1}, {2e19, 2e19});
  p.Input("C", DType::kFloat, {1}, {1}).Float("alpha", 0.25f);
  const Arithmetic float32{DType::kFloat, false};
  EXPECT_NE(JudgeValues<float>(p, {inf}, float32).judgement.verdict(), ElementVerdict::kFail);
  // In double the sum does not overflow: the reference's arithmetic keeps the finite bound.
  EXPECT_EQ(JudgeValues<float>(p, {inf}, Arithmetic{DType::kDouble, false}).judgement.verdict(),
            ElementVerdict::kFail);
  p.Input("C", DType::kFloat, {1}, {-inf});
  EXPECT_EQ(JudgeValues<float>(p, {-inf}, float32).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<float>(p, {kNaN}, float32).judgement.verdict(), ElementVerdict::kBound);
  EXPECT_EQ(JudgeValues<float>(p, {kNaN}, Arithmetic{DType::kDouble, false}).judgement.verdict(),
            ElementVerdict::kFail);
  // An infinite input beside finite products whose float32 sum overflows the other way: inf +
  // -inf is NaN in such a kernel, the exact value +inf.
  ProblemBuilder special(Op::kGemm, 13);
  special.Input("A", DType::kFloat, {1, 3}, {inf, 1e19, 1e19});
  special.Input("B", DType::kFloat, {3, 1}, {1, -2e19, -2e19}).Float("alpha", 0.25f);
  EXPECT_EQ(JudgeValues<float>(special, {inf}, float32).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<float>(special, {kNaN}, float32).judgement.verdict(),
            ElementVerdict::kBound);
  EXPECT_EQ(
      JudgeValues<float>(special, {kNaN}, Arithmetic{DType::kDouble, false}).judgement.verdict(),
      ElementVerdict::kFail);
}

// A double product sum past double's range (the oracle's x overflows) beside an infinite C: the
// exact value is C's infinity, which a kernel may give; NaN (the sum overflowing to the other
// infinity) is allowed; the other infinity is not. With beta 0 the BLAS reading (C not read)
// allows any value of the overflowing sum.
TEST(GemmExactTest, AnInfiniteCDecidesBesideAnOverflowingDoubleSum) {
  const double max = std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity();
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kDouble, {1, 2}, {max, max}).Input("B", DType::kDouble, {2, 1}, {max, 1});
  p.Input("C", DType::kDouble, {1}, {-inf});
  EXPECT_EQ(JudgeValues<double>(p, {-inf}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<double>(p, {kNaN}).judgement.verdict(), ElementVerdict::kBound);
  EXPECT_EQ(JudgeValues<double>(p, {inf}).judgement.verdict(), ElementVerdict::kFail);
  p.Float("beta", 0);
  EXPECT_NE(JudgeValues<double>(p, {inf}).judgement.verdict(), ElementVerdict::kFail);
}

TEST(GemmExactTest, AnUnscaledSumThatOverflowsIsUnboundedThoughAlphaBringsItBack) {
  // 4 x 1e38 x 1.03 overflows float32 (S > 3.4e38), alpha 1/3 brings it back (1.37e38): a kernel
  // that scales its sum by alpha afterwards (BLAS, oneDNN's output scale) returns inf, which is
  // what the formula alpha * (A'B') gives in float32 (found by mm-fuzz --op Gemm on onednn).
  ProblemBuilder p(Op::kGemm, 11);
  p.Filled("A", DType::kFloat, {1, 4}, 1e38).Filled("B", DType::kFloat, {4, 1}, 1.03);
  p.Float("alpha", 1.0f / 3);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(JudgeValues<float>(p, {inf}).judgement.verdict(), ElementVerdict::kBound);
  EXPECT_EQ(JudgeValues<float>(p, {1.3733333e38f}).judgement.verdict(), ElementVerdict::kPass);
  // alpha = 0: 0 times the overflowed sum is NaN in such a kernel.
  p.Float("alpha", 0);
  EXPECT_EQ(JudgeValues<float>(p, {kNaN}).judgement.verdict(), ElementVerdict::kBound);
  // alpha -2.5 times a finite product overflows float32 and meets C = -inf: NaN, as IEEE's
  // evaluation in float32 gives; exactly it is -inf (found by mm-fuzz, seed 2, on onednn).
  ProblemBuilder meets(Op::kGemm, 11);
  meets.Input("A", DType::kFloat, {1, 1}, {0.6888}).Input("B", DType::kFloat, {1, 1}, {-3e38});
  meets.Input("C", DType::kFloat, {1}, {-std::numeric_limits<double>::infinity()});
  meets.Float("alpha", -2.5f);
  EXPECT_EQ(JudgeValues<float>(meets, {kNaN}).judgement.verdict(), ElementVerdict::kBound);
  EXPECT_EQ(JudgeValues<float>(meets, {-inf}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<float>(meets, {1}).judgement.verdict(), ElementVerdict::kFail);
  // Under the overflow, the bound stays finite: a value far off still FAILs.
  ProblemBuilder small(Op::kGemm, 11);
  small.Filled("A", DType::kFloat, {1, 4}, 1e37).Filled("B", DType::kFloat, {4, 1}, 1.03);
  small.Float("alpha", 1.0f / 3);
  EXPECT_EQ(JudgeValues<float>(small, {inf}).judgement.verdict(), ElementVerdict::kFail);
}

// mm-fuzz --op Gemm --seed 3 --first 1003 --dtype double: an infinite input beside a finite product
// beyond double (1e200 x 1e200). Exactly -inf (a finite term is no infinity); IEEE's evaluation in
// double overflows that product to +inf, which meets -inf as NaN: within the bound, outside ONNX's
// tolerance (BOUND), and named. The other infinity, or a NaN nothing overflowing explains, FAILs.
TEST(GemmExactTest, AnInfiniteInputDecidesBesideAFiniteProductBeyondDouble) {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kDouble, {1, 2}, {1, 1e200})
      .Input("B", DType::kDouble, {2, 1}, {-kInf, 1e200});
  p.Input("C", DType::kDouble, {1}, {1});
  const Judged exact = JudgeValues<double>(p, {-kInf});
  EXPECT_THAT(Values<double>(exact.oracle.y), ElementsAre(-kInf));
  EXPECT_EQ(exact.judgement.verdict(), ElementVerdict::kPass);
  const Judged nan = JudgeValues<double>(p, {kNaN});
  EXPECT_EQ(nan.judgement.verdict(), ElementVerdict::kBound);
  EXPECT_EQ(nan.judgement.nan_beside_infinity, 1);
  EXPECT_THAT(nan.judgement.Describe(),
              HasSubstr("1 NaN where the exact value is an infinity: finite terms that overflow"));
  EXPECT_EQ(JudgeValues<double>(p, {kInf}).judgement.verdict(), ElementVerdict::kFail);
  // 1 x 1e200: nothing overflows, so NaN is no evaluation's answer.
  p.Input("B", DType::kDouble, {2, 1}, {-kInf, 1});
  const Judged wrong = JudgeValues<double>(p, {kNaN});
  EXPECT_EQ(wrong.judgement.verdict(), ElementVerdict::kFail);
  EXPECT_EQ(wrong.judgement.nan_beside_infinity, 0);
}

// beta c beyond double beside an infinite product: the product's infinity, as above; with
// beta c in range NaN FAILs.
TEST(GemmExactTest, AFiniteBetaCBeyondDoubleDoesNotMeetTheProductsInfinity) {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kDouble, {1, 1}, {2}).Input("B", DType::kDouble, {1, 1}, {-kInf});
  p.Input("C", DType::kDouble, {1}, {1e308}).Float("beta", 4);
  EXPECT_THAT(Values<double>(JudgeValues<double>(p, {-kInf}).oracle.y), ElementsAre(-kInf));
  EXPECT_EQ(JudgeValues<double>(p, {-kInf}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<double>(p, {kNaN}).judgement.verdict(), ElementVerdict::kBound);
  p.Float("beta", 1);
  EXPECT_EQ(JudgeValues<double>(p, {kNaN}).judgement.verdict(), ElementVerdict::kFail);
}

// Finite double terms whose doubles overflow though the formula's value does not: alpha brings a
// product sum beyond double back (2^-20 x 2^1040), alpha x and beta c beyond double cancel. The
// exact value, rounded, is Y (PASS); any value is within the infinite bound.
TEST(GemmExactTest, FiniteTermsBeyondDoubleGiveTheFormulasExactValue) {
  ProblemBuilder back(Op::kGemm, 13);
  back.Input("A", DType::kDouble, {1, 1}, {0x1p520}).Input("B", DType::kDouble, {1, 1}, {0x1p520});
  back.Float("alpha", 0x1p-20f);
  EXPECT_THAT(Values<double>(JudgeValues<double>(back, {0x1p1020}).oracle.y),
              ElementsAre(0x1p1020));
  EXPECT_EQ(JudgeValues<double>(back, {0x1p1020}).judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<double>(back, {kInf}).judgement.verdict(), ElementVerdict::kBound);
  ProblemBuilder cancel(Op::kGemm, 13);
  cancel.Input("A", DType::kDouble, {1, 1}, {0x1p1023}).Input("B", DType::kDouble, {1, 1}, {3});
  cancel.Input("C", DType::kDouble, {1}, {0x1p1023}).Float("alpha", 4).Float("beta", -12);
  EXPECT_THAT(Values<double>(JudgeValues<double>(cancel, {0}).oracle.y), ElementsAre(0));
  EXPECT_EQ(JudgeValues<double>(cancel, {0}).judgement.verdict(), ElementVerdict::kPass);
}

TEST(GemmExactTest, AFloatKernelIsWithinTheBoundAndFarOffIsImprecise) {
  // K = 1000 terms 1 + 2^-20 k-ish, alpha 0.1 (not a float16 value), C = 3: a float32 loop.
  constexpr std::int64_t k = 1000;
  std::vector<double> a(k), b(k);
  for (std::int64_t i = 0; i < k; ++i) {
    a[i] = 1 + std::ldexp(static_cast<double>(i), -12);
    b[i] = 1 - std::ldexp(static_cast<double>(i), -13);
  }
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {1, k}, a).Input("B", DType::kFloat, {k, 1}, b);
  p.Input("C", DType::kFloat, {1}, {3}).Float("alpha", 0.1f).Float("beta", 1.5f);
  float sum = 0;
  for (std::int64_t i = 0; i < k; ++i) sum += static_cast<float>(a[i]) * static_cast<float>(b[i]);
  const float naive = 0.1f * sum + 1.5f * 3.0f;
  const Judged ok = JudgeValues<float>(p, {naive});
  EXPECT_NE(ok.judgement.verdicts[0], ElementVerdict::kFail);
  EXPECT_NE(ok.judgement.verdicts[0], ElementVerdict::kImprecise);
  // 2^-12 relative off: within ONNX's 1e-3, far outside gamma_{K+2} S' for float32.
  const float off = naive * (1 + 0x1p-12f);
  EXPECT_EQ(JudgeValues<float>(p, {off}).judgement.verdict(), ElementVerdict::kImprecise);
}

TEST(GemmExactTest, AlphaNotInTheAccumulationTypeWidensTheBoundByOneRounding) {
  // float16 accumulation: alpha 0.1 is no float16 value (gamma_{K+3}), 0.125 is (gamma_{K+2}).
  ProblemBuilder p(Op::kGemm, 13);
  p.Filled("A", DType::kFloat16, {1, 8}, 1).Filled("B", DType::kFloat16, {8, 1}, 1);
  p.Filled("C", DType::kFloat16, {1}, 0);
  auto radius = [&](float alpha) {
    p.Float("alpha", alpha);
    const Plan plan = PlanProblem(p.problem()).value();
    return ExactFamily(plan, Arithmetic::OwnType(DType::kFloat16)).value().bounds[0].radius;
  };
  const double u = UnitRoundoff(DType::kFloat16);
  EXPECT_GE(radius(0.1f), Gamma(8 + 3, u) * 0.1f * 8);
  EXPECT_LT(radius(0.1f), Gamma(8 + 3, u) * 0.1f * 8 * 1.001 + 1e-6);
  EXPECT_GE(radius(0.125f), Gamma(8 + 2, u) * 0.125 * 8);
  EXPECT_LT(radius(0.125f), Gamma(8 + 2, u) * 0.125 * 8 * 1.001 + 1e-6);
}

TEST(GemmExactTest, IntegerGemmIsExactModulo2ToTheBits) {
  // 3 * 2^16 * 2^16 - 5 = 3 * 2^32 - 5, which is -5 modulo 2^32.
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kInt32, {1, 1}, {65536}).Input("B", DType::kInt32, {1, 1}, {65536});
  p.Input("C", DType::kInt32, {1}, {5}).Float("alpha", 3).Float("beta", -1);
  const Judged j = JudgeValues<std::int32_t>(p, {-5});
  EXPECT_THAT(Values<std::int32_t>(j.oracle.y), ElementsAre(-5));
  EXPECT_EQ(j.judgement.verdict(), ElementVerdict::kPass);
  EXPECT_EQ(JudgeValues<std::int32_t>(p, {-4}).judgement.verdict(), ElementVerdict::kFail);
  // uint64: alpha -1 is 2^64 - 1: -(2 * 3) + 0 = 2^64 - 6.
  ProblemBuilder u(Op::kGemm, 13);
  u.Input("A", DType::kUInt64, {1, 1}, {2}).Input("B", DType::kUInt64, {1, 1}, {3});
  u.Input("C", DType::kUInt64, {}, {9}).Float("alpha", -1).Float("beta", 0);
  EXPECT_THAT(Values<std::uint64_t>(JudgeValues<std::uint64_t>(u, {0}).oracle.y),
              ElementsAre(UINT64_MAX - 5));
}

}  // namespace
}  // namespace mm::family
