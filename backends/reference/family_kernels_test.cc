// The reference's loops for MatMul's family, judged by the exact oracle (engine/family) on worked
// examples and on random problems of every operator, form and type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mm/backends/reference/reference_backend.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/testing/problem_builder.h"

namespace mm {
namespace {

using family::ElementVerdict;
using family::Op;
using family::testing::ProblemBuilder;

// Y of `p` computed by the reference backend.
Tensor Computed(const ProblemBuilder& p) {
  ReferenceBackend reference;
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  StatusOr<Tensor> y = family::ComputeOp(reference, plan);
  EXPECT_TRUE(y.ok()) << y.status();
  return std::move(y).value();
}

// The judgement of the reference's Y for `p` against the exact answer.
family::FamilyJudgement Judged(const ProblemBuilder& p) {
  ReferenceBackend reference;
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  const family::OpDesc desc = family::DescOf(plan);
  const Tensor y = Computed(p);
  const family::FamilyOracle oracle =
      family::ExactFamily(plan, reference.family()->DeclaredArithmetic(desc)).value();
  return family::JudgeFamily(plan, oracle, y.view());
}

std::vector<double> Uniform(std::mt19937& rng, std::int64_t count, double lo, double hi,
                            bool integers) {
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<std::int64_t> whole(static_cast<std::int64_t>(lo),
                                                    static_cast<std::int64_t>(hi));
  std::vector<double> out(static_cast<std::size_t>(count));
  for (double& v : out) v = integers ? static_cast<double>(whole(rng)) : real(rng);
  return out;
}

TEST(ReferenceFamilyTest, SaysItComputesEveryOperatorOfTheFamily) {
  ReferenceBackend reference;
  for (const family::OpDesc& desc :
       {family::OpDesc{Op::kGemm, 13},
        family::OpDesc{Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32},
        family::OpDesc{Op::kQLinearMatMul, 21, DType::kInt8, DType::kInt8, DType::kInt8}}) {
    EXPECT_TRUE(family::SupportOf(reference, desc).supported()) << desc.ToString();
  }
}

// A problem of `op` at `version` with operands of `a` and `b` (Y of `y`, scales of `scale`), every
// other input of its simplest form: 2 x 3 by 3 x 2 of small values, zero points and scales per
// tensor, C [M, N].
ProblemBuilder SmallProblem(Op op, int version, DType a, DType b, DType y, DType scale) {
  ProblemBuilder p(op, version);
  const std::vector<double> a_values = {1, 2, 3, 0, 1, 2}, b_values = {2, 1, 0, 1, 3, 2};
  if (op == Op::kGemm) {
    p.Input("A", a, {2, 3}, a_values).Input("B", b, {3, 2}, b_values);
    p.Input("C", y, {2, 2}, {1, 0, 2, 1});
  } else if (op == Op::kMatMulInteger) {
    p.Input("A", a, {2, 3}, a_values).Input("B", b, {3, 2}, b_values);
    p.Filled("a_zero_point", a, {}, 1).Filled("b_zero_point", b, {}, 2);
  } else {
    p.Input("a", a, {2, 3}, a_values).Filled("a_scale", scale, {}, 0.5);
    p.Filled("a_zero_point", a, {}, 1);
    p.Input("b", b, {3, 2}, b_values).Filled("b_scale", scale, {}, 0.25);
    p.Filled("b_zero_point", b, {}, 2);
    p.Filled("y_scale", scale, {}, 0.125).Filled("y_zero_point", y, {}, 3);
  }
  return p;
}

// Issue 54: the reference computes every description the engine plans (each version of the three
// operators with every element type it takes), exactly, and says its arithmetic for each.
TEST(ReferenceFamilyTest, ComputesEveryDescriptionTheEnginePlansAndSaysItsArithmetic) {
  ReferenceBackend reference;
  const DType eight_bit[] = {DType::kUInt8, DType::kInt8};
  std::vector<ProblemBuilder> problems;
  for (int version : family::OpVersions(Op::kGemm)) {
    for (DType t : kAllDTypes) problems.push_back(SmallProblem(Op::kGemm, version, t, t, t, t));
  }
  for (DType a : eight_bit) {
    for (DType b : eight_bit) {
      problems.push_back(SmallProblem(Op::kMatMulInteger, 10, a, b, DType::kInt32, DType::kFloat));
      for (int version : family::OpVersions(Op::kQLinearMatMul)) {
        for (DType y : eight_bit) {
          for (DType scale : {DType::kFloat, DType::kFloat16, DType::kBFloat16}) {
            problems.push_back(SmallProblem(Op::kQLinearMatMul, version, a, b, y, scale));
          }
        }
      }
    }
  }
  int planned = 0;
  for (const ProblemBuilder& p : problems) {
    const StatusOr<family::Plan> plan = family::PlanProblem(p.problem());
    if (!plan.ok()) continue;  // A type the version does not take: not a description.
    ++planned;
    const family::OpDesc desc = family::DescOf(*plan);
    const Support support = family::SupportOf(reference, desc);
    EXPECT_EQ(support.level, Support::Level::kNative) << desc.ToString() << ": " << support.note;
    const std::string how = reference.family()->Implementation(desc);
    EXPECT_THAT(how, ::testing::AnyOf(::testing::HasSubstr("double accumulation"),
                                      ::testing::HasSubstr("wrap-around")))
        << desc.ToString();
    EXPECT_EQ(Judged(p).verdict(), ElementVerdict::kPass) << p.problem().ToString();
  }
  // Gemm: float16, float and double in its 6 versions, the 4 integer types in 9, 11 and 13,
  // bfloat16 in 13 (31); MatMulInteger: 4 pairs; QLinearMatMul: 8 type triples with float scales
  // at 10, with 3 scale types at 21 (the 67 the plugin loader asks a plugin about).
  EXPECT_EQ(planned, 6 * 3 + 3 * 4 + 1 + 4 + 8 + 24);
}

// The requantization is exact: a tie the double product misses (147 / 98 = 1.5 comes out
// 1.4999999999999998 in double) rounds to even, and a multiplier far beyond every output
// saturates instead of overflowing a conversion.
TEST(ReferenceFamilyTest, QLinearMatMulRoundsExactTiesToEvenAndSaturatesHugeValues) {
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {1, 1}, {147}).Filled("a_scale", DType::kFloat, {}, 1);
  p.Filled("a_zero_point", DType::kUInt8, {}, 0);
  p.Input("b", DType::kUInt8, {1, 1}, {1}).Filled("b_scale", DType::kFloat, {}, 1);
  p.Filled("b_zero_point", DType::kUInt8, {}, 0);
  p.Filled("y_scale", DType::kFloat, {}, 98).Filled("y_zero_point", DType::kUInt8, {}, 0);
  EXPECT_EQ(Computed(p).Values<std::uint8_t>()[0], 2);
  EXPECT_EQ(Judged(p).verdict(), ElementVerdict::kPass);
  p.Filled("a_scale", DType::kFloat, {}, 1e30).Filled("b_scale", DType::kFloat, {}, 1e30);
  p.Filled("y_scale", DType::kFloat, {}, 1e-30);
  EXPECT_EQ(Computed(p).Values<std::uint8_t>()[0], 255);
  EXPECT_EQ(Judged(p).verdict(), ElementVerdict::kPass);
}

TEST(ReferenceFamilyTest, MatMulIntegerNeverSaturatesAPairOfProducts) {
  // 255 * 127 twice: 64770, where x86's vpmaddubsw saturates the pair's sum to 32767.
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {1, 2}, {255, 255});
  p.Input("B", DType::kInt8, {2, 1}, {127, 127});
  EXPECT_EQ(Computed(p).Values<std::int32_t>()[0], 64770);
}

TEST(ReferenceFamilyTest, MatMulIntegerWrapsWhereTheExactSumLeavesInt32) {
  // 2^17 terms of 255 * 127 (after a zero point of 0): 4,244,766,720, which wraps to -50,200,576.
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Filled("A", DType::kUInt8, {1, 131072}, 255);
  p.Filled("B", DType::kInt8, {131072, 1}, 127);
  EXPECT_EQ(Computed(p).Values<std::int32_t>()[0], -50200576);
}

TEST(ReferenceFamilyTest, GemmTransposesAddsCAndScales) {
  // A' = [[1, 2], [3, 4]] given as A = its transpose; B' = I given transposed; C a row [10, 20].
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {2, 2}, {1, 3, 2, 4});
  p.Input("B", DType::kFloat, {2, 2}, {1, 0, 0, 1});
  p.Input("C", DType::kFloat, {2}, {10, 20});
  p.Int("transA", 1).Int("transB", 1).Float("alpha", 2).Float("beta", -1);
  const Tensor y = Computed(p);
  const std::vector<float> values(y.Values<float>().begin(), y.Values<float>().end());
  EXPECT_THAT(values, ::testing::ElementsAre(-8, -16, -4, -12));
}

TEST(ReferenceFamilyTest, RandomIntegerProblemsOfEveryFormPass) {
  std::mt19937 rng(7);
  const DType types[] = {DType::kUInt8, DType::kInt8};
  for (DType ta : types) {
    for (DType tb : types) {
      // Per tensor, per row of A and per column of B, over a batch of 2.
      ProblemBuilder p(Op::kMatMulInteger, 10);
      const double a_lo = ta == DType::kInt8 ? -128 : 0, b_lo = tb == DType::kInt8 ? -128 : 0;
      p.Input("A", ta, {2, 3, 40}, Uniform(rng, 240, a_lo, a_lo + 255, true));
      p.Input("B", tb, {40, 5}, Uniform(rng, 200, b_lo, b_lo + 255, true));
      p.Input("a_zero_point", ta, {2, 3, 1}, Uniform(rng, 6, a_lo, a_lo + 255, true));
      p.Input("b_zero_point", tb, {5}, Uniform(rng, 5, b_lo, b_lo + 255, true));
      const family::FamilyJudgement j = Judged(p);
      EXPECT_EQ(j.verdict(), ElementVerdict::kPass) << j.Describe();
    }
  }
}

TEST(ReferenceFamilyTest, RandomQLinearMatMulProblemsNeverFail) {
  std::mt19937 rng(11);
  for (int version : {10, 21}) {
    ProblemBuilder p(Op::kQLinearMatMul, version);
    p.Input("a", DType::kUInt8, {4, 16}, Uniform(rng, 64, 0, 255, true));
    p.Input("a_scale", DType::kFloat, {4, 1}, Uniform(rng, 4, 0.001, 0.1, false));
    p.Input("a_zero_point", DType::kUInt8, {4, 1}, Uniform(rng, 4, 100, 150, true));
    p.Input("b", DType::kInt8, {16, 3}, Uniform(rng, 48, -128, 127, true));
    p.Input("b_scale", DType::kFloat, {3}, Uniform(rng, 3, 0.001, 0.1, false));
    p.Input("b_zero_point", DType::kInt8, {3}, {0, -3, 5});
    p.Input("y_scale", DType::kFloat, {}, {0.05});
    p.Input("y_zero_point", DType::kUInt8, {}, {128});
    const family::FamilyJudgement j = Judged(p);
    EXPECT_EQ(j.fail, 0) << j.Describe();
    EXPECT_EQ(j.imprecise, 0) << j.Describe();
  }
}

TEST(ReferenceFamilyTest, RandomGemmProblemsOfEveryTransposeAndCFormPass) {
  std::mt19937 rng(3);
  const std::vector<Dims> c_forms = {{}, {1}, {4}, {1, 4}, {3, 1}, {3, 4}};
  for (DType t : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kInt32}) {
    const bool integers = t == DType::kInt32;
    for (int trans = 0; trans < 4; ++trans) {
      for (const Dims& c : c_forms) {
        const bool ta = trans & 1, tb = trans & 2;
        ProblemBuilder p(Op::kGemm, 13);
        p.Input("A", t, ta ? Dims{9, 3} : Dims{3, 9}, Uniform(rng, 27, -4, 4, integers));
        p.Input("B", t, tb ? Dims{4, 9} : Dims{9, 4}, Uniform(rng, 36, -4, 4, integers));
        std::int64_t c_count = 1;
        for (std::int64_t d : c) c_count *= d;
        p.Input("C", t, c, Uniform(rng, c_count, -4, 4, integers));
        p.Int("transA", ta).Int("transB", tb);
        p.Float("alpha", integers ? -3 : 0.75f).Float("beta", integers ? 2 : -1.5f);
        const family::FamilyJudgement j = Judged(p);
        EXPECT_EQ(j.verdict(), ElementVerdict::kPass) << DTypeName(t) << " trans " << trans << " C "
                                                      << DimsToString(c) << ": " << j.Describe();
      }
    }
  }
}

}  // namespace
}  // namespace mm
