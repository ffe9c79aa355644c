// The eigen backend's MatMul family (eigen_family.h), judged by the exact oracle: Gemm of every
// type, transpose pair and form of C over products large enough to be split into row blocks on
// two threads, the integer operators' zero points and requantization, what it supports and
// declares. The whole built-in catalogue (saturating pairs, K past int32's range among its
// classes) is judged in conformance/tests/family/eigen_blas_family_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mm/backends/eigen/eigen_backend.h"
#include "mm/family/backend.h"
#include "mm/family/testing/judge_on.h"
#include "mm/family/testing/problem_builder.h"

namespace mm {
namespace {

using family::ElementVerdict;
using family::Op;
using family::OpDesc;
using family::testing::JudgeOn;
using family::testing::ProblemBuilder;

// `count` values: integers in [lo, hi] or reals in [lo, hi).
std::vector<double> Values(std::mt19937& rng, std::int64_t count, double lo, double hi,
                           bool integers) {
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<std::int64_t> whole(static_cast<std::int64_t>(lo),
                                                    static_cast<std::int64_t>(hi));
  std::vector<double> out(static_cast<std::size_t>(count));
  for (double& v : out) v = integers ? static_cast<double>(whole(rng)) : real(rng);
  return out;
}

std::int64_t Count(const Dims& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// M = 100 rows, K = 64, N = 48: 307,200 multiply-adds, which two threads split into row blocks.
TEST(EigenFamilyTest, GemmOfEveryTypeTransposeAndFormOfCPassesAcrossRowBlocks) {
  constexpr std::int64_t m = 100, k = 64, n = 48;
  std::mt19937 rng(5);
  const std::vector<Dims> c_forms = {{}, {n}, {m, 1}, {m, n}};
  for (DType t : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                  DType::kUInt32, DType::kInt64, DType::kUInt64}) {
    const bool integers = !IsFloat(t), is_unsigned = t == DType::kUInt32 || t == DType::kUInt64;
    const double lo = is_unsigned ? 0 : integers ? -8 : -1, hi = integers ? 8 : 1;
    for (int trans = 0; trans < 4; ++trans) {
      for (const Dims& c : c_forms) {
        const bool ta = trans & 1, tb = trans & 2;
        ProblemBuilder p(Op::kGemm, 13);
        p.Input("A", t, ta ? Dims{k, m} : Dims{m, k}, Values(rng, m * k, lo, hi, integers));
        p.Input("B", t, tb ? Dims{n, k} : Dims{k, n}, Values(rng, k * n, lo, hi, integers));
        p.Input("C", t, c, Values(rng, Count(c), lo, hi, integers));
        p.Int("transA", ta).Int("transB", tb);
        p.Float("alpha", integers ? (is_unsigned ? 3 : -3) : 0.75f);
        p.Float("beta", integers ? 2 : -1.5f);
        EigenBackend eigen;
        const family::FamilyJudgement j = JudgeOn(eigen, p.problem()).value();
        // float32 accumulation (float and the 16-bit floats) may leave ONNX's tolerance where
        // terms cancel (BOUND), never the bound of its declared arithmetic; double and the
        // integers are PASS.
        const bool float32 = IsFloat(t) && t != DType::kDouble;
        EXPECT_TRUE(j.verdict() == ElementVerdict::kPass ||
                    (float32 && j.verdict() == ElementVerdict::kBound))
            << DTypeName(t) << " transA " << ta << " transB " << tb << " C " << DimsToString(c)
            << ": " << j.Describe();
      }
    }
  }
}

// Y is the caller's buffer, which the harness poisons: Gemm without C must not add to it, and
// with K = 0 it is beta C exactly.
TEST(EigenFamilyTest, GemmNeverReadsWhatYHeldBefore) {
  EigenBackend eigen;
  for (const bool with_c : {false, true}) {
    for (const std::int64_t k : {0, 2}) {
      ProblemBuilder p(Op::kGemm, 13);
      p.Filled("A", DType::kFloat, {3, k}, 1).Filled("B", DType::kFloat, {k, 4}, 1);
      if (with_c) p.Filled("C", DType::kFloat, {4}, 5);
      p.Float("beta", 2);
      const family::Plan plan = family::PlanProblem(p.problem()).value();
      Tensor y = Tensor::Create(DType::kFloat, plan.y_dims()).value();
      std::fill_n(y.Data<float>(), y.NumElements(), std::numeric_limits<float>::quiet_NaN());
      ASSERT_TRUE(eigen.family()->Compute(plan, y.mutable_view()).ok());
      for (const float v : y.Values<float>()) {
        EXPECT_EQ(v, (with_c ? 10 : 0) + k) << "C " << with_c << ", K " << k;
      }
    }
  }
}

// alpha times the largest float overflows, and the zeros of the other operand then make NaN if
// alpha scales an operand (as Eigen's matrix-vector and coefficient-based products do): alpha
// must scale the sums only. M = 1, N = 1 and a tiny product each take such a path.
TEST(EigenFamilyTest, AlphaNeverScalesAnOperandBeforeTheProduct) {
  EigenBackend eigen;
  const float max = std::numeric_limits<float>::max();
  for (const Dims& mkn : {Dims{1, 15, 4}, Dims{4, 15, 1}, Dims{2, 2, 2}, Dims{1, 1, 1}}) {
    for (const bool a_is_max : {false, true}) {
      for (const bool trans_b : {false, true}) {
        const std::int64_t m = mkn[0], k = mkn[1], n = mkn[2];
        ProblemBuilder p(Op::kGemm, 13);
        p.Filled("A", DType::kFloat, {m, k}, a_is_max ? max : 0);
        p.Filled("B", DType::kFloat, trans_b ? Dims{n, k} : Dims{k, n}, a_is_max ? 0 : max);
        p.Filled("C", DType::kFloat, {n}, 1).Float("alpha", -2.5f).Int("transB", trans_b);
        const Tensor y = family::ComputeOp(eigen, family::PlanProblem(p.problem()).value()).value();
        for (const float v : y.Values<float>()) {
          EXPECT_EQ(v, 1) << DimsToString(mkn) << (a_is_max ? " A max" : " B max") << " transB "
                          << trans_b;
        }
      }
    }
  }
}

TEST(EigenFamilyTest, MatMulIntegerSubtractsEachOperandsOwnZeroPointsOverABroadcastBatch) {
  std::mt19937 rng(9);
  for (const DType ta : {DType::kUInt8, DType::kInt8}) {
    for (const DType tb : {DType::kUInt8, DType::kInt8}) {
      const double a_lo = ta == DType::kInt8 ? -128 : 0, b_lo = tb == DType::kInt8 ? -128 : 0;
      // A [2, 1, 3, 40] x B [4, 40, 5]: Y [2, 4, 3, 5], each A matrix met by four B matrices.
      ProblemBuilder p(Op::kMatMulInteger, 10);
      p.Input("A", ta, {2, 1, 3, 40}, Values(rng, 240, a_lo, a_lo + 255, true));
      p.Input("B", tb, {4, 40, 5}, Values(rng, 800, b_lo, b_lo + 255, true));
      p.Input("a_zero_point", ta, {2, 1, 3, 1}, Values(rng, 6, a_lo, a_lo + 255, true));
      p.Input("b_zero_point", tb, {4, 1, 5}, Values(rng, 20, b_lo, b_lo + 255, true));
      EigenBackend eigen;
      const family::FamilyJudgement j = JudgeOn(eigen, p.problem()).value();
      EXPECT_EQ(j.verdict(), ElementVerdict::kPass)
          << DTypeName(ta) << " x " << DTypeName(tb) << ": " << j.Describe();
    }
  }
}

// Y of `p` on the eigen backend.
Tensor Computed(const ProblemBuilder& p) {
  EigenBackend eigen;
  StatusOr<Tensor> y = family::ComputeOp(eigen, family::PlanProblem(p.problem()).value());
  EXPECT_TRUE(y.ok()) << y.status();
  return std::move(y).value();
}

TEST(EigenFamilyTest, QLinearMatMulRoundsExactTiesToEven) {
  // acc * 0.5: 0.5, 1.5, 2.5, 3.5 and their negatives give 0, 2, 2, 4 and 0, -2, -2, -4.
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {4, 1}, {1, 3, 5, 7});
  p.Filled("a_scale", DType::kFloat, {}, 0.5).Filled("a_zero_point", DType::kUInt8, {}, 0);
  p.Input("b", DType::kInt8, {1, 2}, {1, -1});
  p.Filled("b_scale", DType::kFloat, {}, 1).Filled("b_zero_point", DType::kInt8, {}, 0);
  p.Filled("y_scale", DType::kFloat, {}, 1).Filled("y_zero_point", DType::kInt8, {}, 0);
  const Tensor y = Computed(p);
  const std::vector<std::int8_t> got(y.Values<std::int8_t>().begin(),
                                     y.Values<std::int8_t>().end());
  EXPECT_EQ(got, (std::vector<std::int8_t>{0, 0, 2, -2, 2, -2, 4, -4}));
}

TEST(EigenFamilyTest, QLinearMatMulIsExactWithPerRowAndPerColumnScales) {
  std::mt19937 rng(13);
  for (const DType scales : {DType::kFloat, DType::kFloat16, DType::kBFloat16}) {
    ProblemBuilder p(Op::kQLinearMatMul, 21);
    p.Input("a", DType::kUInt8, {2, 6, 32}, Values(rng, 384, 0, 255, true));
    p.Input("a_scale", scales, {2, 6, 1}, Values(rng, 12, 0.001, 0.05, false));
    p.Input("a_zero_point", DType::kUInt8, {2, 6, 1}, Values(rng, 12, 100, 150, true));
    p.Input("b", DType::kInt8, {32, 7}, Values(rng, 224, -128, 127, true));
    p.Input("b_scale", scales, {7}, Values(rng, 7, 0.001, 0.05, false));
    p.Input("b_zero_point", DType::kInt8, {7}, Values(rng, 7, -5, 5, true));
    p.Filled("y_scale", scales, {}, 0.0625).Filled("y_zero_point", DType::kUInt8, {}, 128);
    EigenBackend eigen;
    const family::FamilyJudgement j = JudgeOn(eigen, p.problem()).value();
    // Exact requantization: equal to the exact y everywhere, never one unit off (BOUND).
    EXPECT_EQ(j.pass, 84) << DTypeName(scales) << ": " << j.Describe();
  }
}

TEST(EigenFamilyTest, ComputesEveryOperatorAndTypeAndSaysHow) {
  EigenBackend eigen;
  for (const DType t : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
                        DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64}) {
    const Support s = family::SupportOf(eigen, OpDesc{Op::kGemm, 13, t, t, t});
    EXPECT_TRUE(s.supported()) << DTypeName(t);
    EXPECT_EQ(s.level == Support::Level::kNative, t == DType::kFloat || t == DType::kDouble)
        << DTypeName(t) << ": " << s.ToString();
  }
  EXPECT_TRUE(
      family::SupportOf(eigen, {Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32})
          .supported());
  EXPECT_TRUE(family::SupportOf(eigen, {Op::kQLinearMatMul, 21, DType::kInt8, DType::kUInt8,
                                        DType::kUInt8, DType::kBFloat16})
                  .supported());
  EXPECT_EQ(eigen.family()->Implementation({Op::kGemm, 13}),
            "Eigen GEMM in float, Y preset to beta C, transposes read in place");
}

TEST(EigenFamilyTest, RefusesWhatIsNoOperatorOfTheFamilyWithTheReason) {
  EigenBackend eigen;
  const Support matmul = family::SupportOf(eigen, {Op::kMatMul, 13});
  EXPECT_FALSE(matmul.supported());
  const Support int8_gemm =
      family::SupportOf(eigen, {Op::kGemm, 13, DType::kInt8, DType::kInt8, DType::kInt8});
  EXPECT_FALSE(int8_gemm.supported());
  EXPECT_EQ(int8_gemm.note, "Gemm-13 int8 has types its operator does not take");
  const Support float_y = family::SupportOf(
      eigen, {Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kFloat});
  EXPECT_FALSE(float_y.supported());
  EXPECT_EQ(float_y.note,
            "MatMulInteger-10 uint8 x int8 -> float has types its operator does not take");
}

TEST(EigenFamilyTest, DeclaresGemmsAccumulationPerType) {
  EigenBackend eigen;
  const family::FamilyBackend& f = *eigen.family();
  const auto gemm = [&](DType t) { return f.DeclaredArithmetic({Op::kGemm, 13, t, t, t}); };
  EXPECT_EQ(gemm(DType::kFloat), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(gemm(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(gemm(DType::kBFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(gemm(DType::kDouble), (Arithmetic{DType::kDouble, false}));
  EXPECT_EQ(gemm(DType::kInt32), Arithmetic::OwnType(DType::kInt32));
  EXPECT_EQ(gemm(DType::kUInt64), Arithmetic::OwnType(DType::kUInt64));
}

}  // namespace
}  // namespace mm
