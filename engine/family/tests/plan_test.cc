// PlanProblem read as the specification of what a valid family problem is: each malformed problem
// of the list below is refused with an error naming its input, each valid form is planned.
#include "mm/family/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "judge_values.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::family {
namespace {

using ::testing::HasSubstr;
using testing::kInf;
using testing::kNaN;
using testing::ProblemBuilder;

// Gemm-13: A [3,5] x B [5,4] + C [1,4], float.
ProblemBuilder Gemm(int version = 13, DType t = DType::kFloat) {
  ProblemBuilder p(Op::kGemm, version);
  p.Filled("A", t, {3, 5}, 1).Filled("B", t, {5, 4}, 1).Filled("C", t, {1, 4}, 1);
  return p;
}

// MatMulInteger-10: uint8 A [4,3] x int8 B [3,2], scalar zero points.
ProblemBuilder MatMulInteger() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Filled("A", DType::kUInt8, {4, 3}, 1).Filled("B", DType::kInt8, {3, 2}, 1);
  p.Filled("a_zero_point", DType::kUInt8, {}, 0).Filled("b_zero_point", DType::kInt8, {}, 0);
  return p;
}

// QLinearMatMul: uint8 a [2,4] x int8 b [4,3] -> uint8 y, scales of `scale`.
ProblemBuilder QLinear(int version = 10, DType scale = DType::kFloat) {
  ProblemBuilder p(Op::kQLinearMatMul, version);
  p.Filled("a", DType::kUInt8, {2, 4}, 1).Filled("a_scale", scale, {}, 0.5);
  p.Filled("a_zero_point", DType::kUInt8, {}, 0);
  p.Filled("b", DType::kInt8, {4, 3}, 1).Filled("b_scale", scale, {}, 0.25);
  p.Filled("b_zero_point", DType::kInt8, {}, 0);
  p.Filled("y_scale", scale, {}, 1).Filled("y_zero_point", DType::kUInt8, {}, 0);
  return p;
}

struct BadProblem {
  const char* what;
  std::function<ProblemBuilder()> make;
  StatusCode code;
  const char* message;  // A substring of the error, which names the input.
};

constexpr auto kInvalid = StatusCode::kInvalidArgument;
constexpr auto kNotJudged = StatusCode::kUnimplemented;

const Dims kNegative = {-1, 5};

std::vector<BadProblem> BadProblems() {
  return {
      // Versions and inputs.
      {"a version the operator lacks", [] { return Gemm().Version(8); }, kInvalid,
       "Gemm has no version 8 (versions: 1, 6, 7, 9, 11, 13)"},
      {"an input the operator lacks", [] { return Gemm().Filled("D", DType::kFloat, {1}, 0); },
       kInvalid, "Gemm-13 D: not an input of Gemm-13 (its inputs: A, B, C)"},
      {"Gemm-9 without C", [] { return Gemm(9).Remove("C"); }, kInvalid,
       "Gemm-9 C: missing; C is optional from Gemm-11 only"},
      {"QLinearMatMul without y_scale", [] { return QLinear().Remove("y_scale"); }, kInvalid,
       "QLinearMatMul-10 y_scale: missing; QLinearMatMul-10 requires it"},
      {"an input without data",
       [] {
         auto p = Gemm();
         p.mutable_problem().inputs[0].tensor.data = nullptr;
         return p;
       },
       kInvalid, "Gemm-13 A: has no data"},
      {"an input with a negative dim",
       [] {
         auto p = Gemm();
         p.mutable_problem().inputs[1].tensor.dims = kNegative;
         return p;
       },
       kInvalid, "Gemm-13 B: "},
      {"an input given twice",
       [] {
         auto p = Gemm();
         p.mutable_problem().inputs.push_back(p.problem().inputs[0]);
         return p;
       },
       kInvalid, "Gemm-13 A: given twice"},
      // Attributes.
      {"Gemm-13 with Gemm-6's broadcast", [] { return Gemm().Int("broadcast", 1); }, kInvalid,
       "Gemm-13 broadcast: not an attribute of Gemm-13 (Gemm-7 replaced it"},
      {"alpha given as INT", [] { return Gemm().Int("alpha", 2); }, kInvalid,
       "Gemm-13 alpha: attribute of type INT; Gemm-13 defines it as FLOAT"},
      {"transA given as FLOAT", [] { return Gemm().Float("transA", 1); }, kInvalid,
       "Gemm-13 transA: attribute of type FLOAT; Gemm-13 defines it as INT"},
      {"an attribute Gemm lacks", [] { return Gemm().Float("gamma", 1); }, kInvalid,
       "Gemm-13 gamma: not an attribute of Gemm-13 (its attributes: alpha, beta, transA, transB)"},
      {"an attribute of MatMulInteger", [] { return MatMulInteger().Float("alpha", 1); }, kInvalid,
       "MatMulInteger-10 alpha: not an attribute of MatMulInteger-10 (it has none)"},
      {"an attribute given twice",
       [] {
         auto p = Gemm();
         p.mutable_problem().attributes = {Attribute::Float("alpha", 1),
                                           Attribute::Float("alpha", 2)};
         return p;
       },
       kInvalid, "Gemm-13 alpha: attribute given twice"},
      // Types.
      {"Gemm-7 int32", [] { return Gemm(7, DType::kInt32); }, kInvalid,
       "Gemm-7 A: int32 is not a type of Gemm-7 (float16, float, double)"},
      {"Gemm-11 bfloat16", [] { return Gemm(11, DType::kBFloat16); }, kInvalid,
       "Gemm-11 A: bfloat16 is not a type of Gemm-11"},
      {"Gemm with int8", [] { return Gemm(13, DType::kInt8); }, kInvalid,
       "Gemm-13 A: int8 is not a type of Gemm-13"},
      {"Gemm A float, B double",
       [] {
         return Gemm().Filled("B", DType::kDouble, {5, 4}, 1);
       },
       kInvalid, "Gemm-13 B: double but A is float"},
      {"Gemm C of another type",
       [] {
         return Gemm().Filled("C", DType::kDouble, {1, 4}, 1);
       },
       kInvalid, "Gemm-13 C: double but A and B are float"},
      {"MatMulInteger of floats",
       [] {
         return MatMulInteger().Filled("A", DType::kFloat, {4, 3}, 1);
       },
       kInvalid, "MatMulInteger-10 A: float is not a type of MatMulInteger-10 (int8, uint8)"},
      {"a zero point of another type than A",
       [] { return MatMulInteger().Filled("a_zero_point", DType::kInt8, {}, 0); }, kInvalid,
       "MatMulInteger-10 a_zero_point: int8 but A is uint8 (a zero point has its input's type)"},
      {"a zero point of b's type for a",
       [] { return QLinear().Filled("b_zero_point", DType::kUInt8, {}, 0); }, kInvalid,
       "QLinearMatMul-10 b_zero_point: uint8 but b is int8"},
      {"float16 scales in QLinearMatMul-10", [] { return QLinear(10, DType::kFloat16); }, kInvalid,
       "QLinearMatMul-10 a_scale: float16 is not a scale type of QLinearMatMul-10 (float)"},
      {"QLinearMatMul-21 scales of two types",
       [] { return QLinear(21).Filled("b_scale", DType::kFloat16, {}, 0.25); }, kInvalid,
       "QLinearMatMul-21 b_scale: float16 but a_scale is float (one type TS for the 3 scales)"},
      {"double scales in QLinearMatMul-21", [] { return QLinear(21, DType::kDouble); }, kInvalid,
       "a_scale: double is not a scale type of QLinearMatMul-21 (float, float16, bfloat16)"},
      {"an int32 y zero point",
       [] { return QLinear().Filled("y_zero_point", DType::kInt32, {}, 0); }, kInvalid,
       "QLinearMatMul-10 y_zero_point: int32 is not a type of QLinearMatMul-10 (int8, uint8)"},
      // Shapes.
      {"Gemm with a 3-D A",
       [] {
         return Gemm().Filled("A", DType::kFloat, {2, 3, 5}, 1);
       },
       kInvalid, "Gemm-13 A: [2,3,5] is not 2-D; Gemm multiplies matrices"},
      {"Gemm whose transA breaks K", [] { return Gemm().Int("transA", 1); }, kInvalid,
       "Gemm-13 B: K mismatch: A [3,5] (transA) has K=3, B [5,4] has K=5"},
      {"C [3] for N = 4", [] { return Gemm().Filled("C", DType::kFloat, {3}, 1); }, kInvalid,
       "Gemm-13 C: [3] does not broadcast unidirectionally to [M,N] = [3,4]"},
      {"C [2,4] for M = 3",
       [] {
         return Gemm().Filled("C", DType::kFloat, {2, 4}, 1);
       },
       kInvalid, "Gemm-13 C: [2,4] does not broadcast unidirectionally to [M,N] = [3,4]"},
      {"C of rank 3",
       [] {
         return Gemm().Filled("C", DType::kFloat, {1, 3, 4}, 1);
       },
       kInvalid, "Gemm-13 C: [1,3,4] does not broadcast unidirectionally"},
      {"Gemm-6 broadcast = 0 with C [1,4]", [] { return Gemm(6).Int("broadcast", 0); }, kInvalid,
       "Gemm-6 C: [1,4] is not [M,N] = [3,4], and Gemm-6's broadcast attribute is 0"},
      {"MatMulInteger K mismatch",
       [] {
         return MatMulInteger().Filled("B", DType::kInt8, {4, 2}, 1);
       },
       kInvalid, "MatMulInteger-10: K mismatch"},
      {"a zero point of M's wrong length",
       [] { return MatMulInteger().Filled("a_zero_point", DType::kUInt8, {2}, 0); }, kInvalid,
       "MatMulInteger-10 a_zero_point: [2] does not fit A [4,3] (per tensor [] or [1], per row "
       "[4] or [4,1])"},
      {"b's zero point per row instead of per column",
       [] { return MatMulInteger().Filled("b_zero_point", DType::kInt8, {3}, 0); }, kInvalid,
       "MatMulInteger-10 b_zero_point: [3] does not fit B [3,2] (per tensor [] or [1], per "
       "column [2] or [1,2])"},
      {"a 2-D per-row zero point for an N-D A",
       [] {
         return MatMulInteger()
             .Filled("A", DType::kUInt8, {2, 4, 3}, 1)
             .Filled("a_zero_point", DType::kUInt8, {4, 1}, 0);
       },
       kInvalid,
       "a_zero_point: [4,1] does not fit A [2,4,3] (per tensor [] or [1], per row [2,4,1])"},
      {"a per-column zero point for a 1-D B",
       [] {
         return MatMulInteger()
             .Filled("B", DType::kInt8, {3}, 1)
             .Filled("b_zero_point", DType::kInt8, {2}, 0);
       },
       kInvalid,
       "b_zero_point: [2] does not fit B [3] (per tensor [] or [1] only: B [3] is 1-D "
       "and has no columns)"},
      {"a scale of another shape than its zero point",
       [] { return QLinear().Filled("a_scale", DType::kFloat, {2}, 0.5); }, kInvalid,
       "QLinearMatMul-10 a_scale: [2] but its zero point is [] (a scale and its zero point have "
       "the same shape)"},
      {"y's zero point per column",
       [] {
         return QLinear()
             .Filled("y_zero_point", DType::kUInt8, {3}, 0)
             .Filled("y_scale", DType::kFloat, {3}, 1);
       },
       kInvalid, "QLinearMatMul-10 y_zero_point: [3] is not per tensor ([] or [1])"},
      // Values.
      {"a zero scale", [] { return QLinear().Filled("a_scale", DType::kFloat, {}, 0); }, kInvalid,
       "QLinearMatMul-10 a_scale: element 0 is zero"},
      {"a negative scale", [] { return QLinear().Filled("b_scale", DType::kFloat, {}, -1); },
       kInvalid, "QLinearMatMul-10 b_scale: element 0 is negative"},
      {"a NaN scale", [] { return QLinear().Filled("y_scale", DType::kFloat, {}, kNaN); }, kInvalid,
       "QLinearMatMul-10 y_scale: element 0 is NaN"},
      {"an infinite scale", [] { return QLinear().Filled("y_scale", DType::kFloat, {}, kInf); },
       kInvalid, "QLinearMatMul-10 y_scale: element 0 is infinite"},
      {"the bad element of a per-row scale",
       [] {
         return QLinear()
             .Filled("a_zero_point", DType::kUInt8, {2}, 0)
             .Input("a_scale", DType::kFloat, {2}, {0.5, 0});
       },
       kInvalid, "QLinearMatMul-10 a_scale: element 1 is zero"},
      {"a NaN alpha", [] { return Gemm().Float("alpha", NAN); }, kNotJudged,
       "Gemm-13 alpha: nan is a valid attribute, but mm judges finite alpha and beta only"},
      {"an int32 Gemm with beta 0.5", [] { return Gemm(13, DType::kInt32).Float("beta", 0.5f); },
       kNotJudged,
       "Gemm-13 beta: 0.500000 scales an int32 Gemm, but the standard gives no rounding"},
  };
}

TEST(FamilyPlanTest, EveryMalformedProblemIsAnErrorNamingTheInput) {
  for (const BadProblem& bad : BadProblems()) {
    SCOPED_TRACE(bad.what);
    const ProblemBuilder builder = bad.make();
    const StatusOr<Plan> plan = PlanProblem(builder.problem());
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), bad.code) << plan.status();
    EXPECT_THAT(plan.status().message(), HasSubstr(bad.message));
  }
}

TEST(FamilyPlanTest, TheValidBaseProblemsArePlanned) {
  // The table above breaks these; unbroken, each plans (so every error is the row's own).
  for (const ProblemBuilder& p :
       {Gemm(), Gemm(6).Int("broadcast", 1), Gemm(9, DType::kInt32), Gemm(13, DType::kBFloat16),
        Gemm(11).Remove("C"), MatMulInteger(), MatMulInteger().Remove("a_zero_point"), QLinear(10),
        QLinear(21, DType::kFloat16), QLinear(21, DType::kBFloat16)}) {
    const StatusOr<Plan> plan = PlanProblem(p.problem());
    EXPECT_TRUE(plan.ok()) << p.problem().ToString() << ": " << plan.status();
  }
}

TEST(FamilyPlanTest, Float8OfQLinearMatMul21IsRefusedWithAReason) {
  const auto v21 = InputElementType(Op::kQLinearMatMul, 21, "a", 17);
  EXPECT_EQ(v21.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(v21.status().message(),
              HasSubstr("a: FLOAT8E4M3FN (17) is a QLinearMatMul-21 type mm does not judge: mm "
                        "has no float8 element type"));
  EXPECT_THAT(InputElementType(Op::kQLinearMatMul, 10, "a", 17).status().message(),
              HasSubstr("a: FLOAT8E4M3FN (17) is not a type of QLinearMatMul-10 (int8, uint8)"));
  EXPECT_EQ(*InputElementType(Op::kQLinearMatMul, 21, "y_scale", 16), DType::kBFloat16);
  EXPECT_EQ(*InputElementType(Op::kMatMulInteger, 10, "A", 2), DType::kUInt8);
  EXPECT_EQ(*InputElementType(Op::kMatMulInteger, 10, "B", 3), DType::kInt8);
  EXPECT_THAT(InputElementType(Op::kMatMulInteger, 10, "A", 6).status().message(),
              HasSubstr("A: INT32 (6) is not a type of MatMulInteger-10 (int8, uint8)"));
}

TEST(FamilyPlanTest, GemmTransposesGiveMKN) {
  ProblemBuilder p =
      Gemm().Filled("A", DType::kFloat, {5, 3}, 1).Filled("B", DType::kFloat, {4, 5}, 1);
  p.Int("transA", 1).Int("transB", 7);  // Any non-zero value transposes.
  const Plan plan = PlanProblem(p.problem()).value();
  EXPECT_TRUE(plan.gemm.trans_a);
  EXPECT_TRUE(plan.gemm.trans_b);
  EXPECT_EQ(plan.product.m, 3);
  EXPECT_EQ(plan.product.k, 5);
  EXPECT_EQ(plan.product.n, 4);
  EXPECT_EQ(plan.y_dims(), (Dims{3, 4}));
  EXPECT_EQ(plan.gemm.alpha, 1.0f);  // The defaults.
  EXPECT_EQ(plan.gemm.beta, 1.0f);
}

TEST(FamilyPlanTest, EveryFormOfCBroadcastsToMN) {
  struct Row {
    Dims c;  // Y is [3, 4].
    CForm form;
    std::int64_t index_of_2_3;  // C's element for Y[2, 3].
  };
  const Row rows[] = {{{}, CForm::kScalar, 0},     {{1}, CForm::kOne, 0},
                      {{4}, CForm::kRow, 3},       {{1, 1}, CForm::kOneByOne, 0},
                      {{1, 4}, CForm::kOneByN, 3}, {{3, 1}, CForm::kMByOne, 2},
                      {{3, 4}, CForm::kMByN, 11}};
  for (const Row& row : rows) {
    SCOPED_TRACE(DimsToString(row.c));
    ProblemBuilder p = Gemm().Filled("C", DType::kFloat, row.c, 1);
    const Plan plan = PlanProblem(p.problem()).value();
    EXPECT_EQ(plan.gemm.c_form, row.form);
    EXPECT_EQ(plan.gemm.CIndex(2, 3), row.index_of_2_3);
    EXPECT_EQ(plan.gemm.CIndex(0, 0), 0);
  }
  const Plan absent = PlanProblem(Gemm(11).Remove("C").problem()).value();
  EXPECT_EQ(absent.gemm.c_form, CForm::kAbsent);
}

TEST(FamilyPlanTest, ZeroPointFormsOfEveryRank) {
  struct Row {
    Dims a, b, a_zp, b_zp;
    QuantForm a_form, b_form;
  };
  const Row rows[] = {
      {{4, 3}, {3, 2}, {}, {1}, QuantForm::kPerTensor, QuantForm::kPerTensor},
      {{4, 3}, {3, 2}, {4}, {2}, QuantForm::kPerRow, QuantForm::kPerColumn},
      {{4, 3}, {3, 2}, {4, 1}, {1, 2}, QuantForm::kPerRow, QuantForm::kPerColumn},
      {{5, 4, 3}, {5, 3, 2}, {5, 4, 1}, {5, 1, 2}, QuantForm::kPerRow, QuantForm::kPerColumn},
      {{2, 5, 4, 3}, {3, 2}, {2, 5, 4, 1}, {2}, QuantForm::kPerRow, QuantForm::kPerColumn},
      {{3}, {3}, {1}, {}, QuantForm::kPerTensor, QuantForm::kPerTensor},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(DimsToString(row.a_zp) + " " + DimsToString(row.b_zp));
    ProblemBuilder p = MatMulInteger();
    p.Filled("A", DType::kUInt8, row.a, 1).Filled("B", DType::kInt8, row.b, 1);
    p.Filled("a_zero_point", DType::kUInt8, row.a_zp, 0);
    p.Filled("b_zero_point", DType::kInt8, row.b_zp, 0);
    const StatusOr<Plan> plan = PlanProblem(p.problem());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->a_zero_point.form, row.a_form);
    EXPECT_EQ(plan->b_zero_point.form, row.b_form);
    EXPECT_EQ(plan->y_dtype, DType::kInt32);
  }
}

TEST(FamilyPlanTest, PerRowParametersFollowTheirOperandsOwnBatch) {
  // A [2,1,4,3] broadcasts against B [3,3,2]: Y is [2,3,4,2]. A's per-row zero point [2,1,4,1]
  // holds 8 values; Y's batch entry (1, 2) uses A's matrix 1, so row 3 reads value 1 * 4 + 3.
  ProblemBuilder p = MatMulInteger();
  p.Filled("A", DType::kUInt8, {2, 1, 4, 3}, 1).Filled("B", DType::kInt8, {3, 3, 2}, 1);
  p.Filled("a_zero_point", DType::kUInt8, {2, 1, 4, 1}, 0);
  p.Filled("b_zero_point", DType::kInt8, {3, 1, 2}, 0);
  const Plan plan = PlanProblem(p.problem()).value();
  const auto [a_matrix, b_matrix] = plan.OperandMatrices(1 * 3 + 2);
  EXPECT_EQ(a_matrix, 1);
  EXPECT_EQ(b_matrix, 2);
  EXPECT_EQ(plan.a_zero_point.Index(a_matrix, 3, plan.product.m), 7);
  EXPECT_EQ(plan.b_zero_point.Index(b_matrix, 1, plan.product.n), 5);
}

TEST(FamilyPlanTest, QLinearMatMulOutputTypeIsTheOutputZeroPointsType) {
  // "Scale and zero point must have same shape": y's two are [1] here.
  ProblemBuilder p = QLinear(21, DType::kBFloat16).Filled("y_zero_point", DType::kInt8, {1}, 0);
  p.Filled("y_scale", DType::kBFloat16, {1}, 1);
  const StatusOr<Plan> planned = PlanProblem(p.problem());
  ASSERT_TRUE(planned.ok()) << planned.status();
  const Plan& plan = *planned;
  EXPECT_EQ(plan.y_dtype, DType::kInt8);
  EXPECT_EQ(plan.scale_dtype, DType::kBFloat16);
  EXPECT_EQ(plan.a_scale.Scale(0), 0.5);
}

}  // namespace
}  // namespace mm::family
