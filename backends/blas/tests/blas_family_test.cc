// The BLAS backends' Gemm (blas_family.h): one sgemm_/dgemm_ per Gemm with the transposes, alpha
// and beta passed through and C copied into Y (the fake OpenBLAS, which implements the interface
// naively), every other type and operator refused with the reason, the 32-bit limit, and Gemm on
// every real library installed here, judged by the exact oracle. The whole built-in catalogue is
// judged in conformance/tests/family/eigen_blas_family_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fake_blas.h"
#include "mm/backends/blas/blas_backend.h"
#include "mm/family/backend.h"
#include "mm/family/testing/judge_on.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::blas {
namespace {

using fake::Describe;
using fake::FakeCalls;
using fake::FakeOpenBlas;
using family::ElementVerdict;
using family::Op;
using family::OpDesc;
using family::testing::JudgeOn;
using family::testing::ProblemBuilder;

std::vector<double> Values(std::mt19937& rng, std::int64_t count, bool integers) {
  std::uniform_real_distribution<double> real(-1, 1);
  std::uniform_int_distribution<int> whole(-3, 3);
  std::vector<double> out(static_cast<std::size_t>(count));
  for (double& v : out) v = integers ? whole(rng) : real(rng);
  return out;
}

std::int64_t Count(const Dims& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// A Gemm [m, k] x [k, n] of `t` with the transposes of `trans` (bit 0 A, bit 1 B), C of `c`
// (absent when null), alpha 0.75 and beta -1.5.
ProblemBuilder RandomGemm(std::mt19937& rng, DType t, std::int64_t m, std::int64_t k,
                          std::int64_t n, int trans, const Dims* c, bool integers) {
  const bool ta = trans & 1, tb = trans & 2;
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", t, ta ? Dims{k, m} : Dims{m, k}, Values(rng, m * k, integers));
  p.Input("B", t, tb ? Dims{n, k} : Dims{k, n}, Values(rng, k * n, integers));
  if (c != nullptr) p.Input("C", t, *c, Values(rng, Count(*c), integers));
  p.Int("transA", ta).Int("transB", tb).Float("alpha", 0.75f).Float("beta", -1.5f);
  return p;
}

// Small integers: every GEMM gives the exact answer, so a transpose or C misread is a FAIL.
TEST(BlasFamilyTest, OneGemmCallWithTransposesAlphaBetaAndCPassedThrough) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  std::mt19937 rng(17);
  const std::vector<Dims> c_forms = {{}, {1}, {4}, {1, 4}, {3, 1}, {3, 4}};
  for (DType t : {DType::kFloat, DType::kDouble}) {
    for (int trans = 0; trans < 4; ++trans) {
      for (std::size_t form = 0; form <= c_forms.size(); ++form) {
        const Dims* c = form < c_forms.size() ? &c_forms[form] : nullptr;
        const ProblemBuilder p = RandomGemm(rng, t, 3, 5, 4, trans, c, true);
        const int before = FakeCalls();
        const family::FamilyJudgement j = JudgeOn(*backend, p.problem()).value();
        EXPECT_EQ(j.verdict(), ElementVerdict::kPass)
            << DTypeName(t) << " trans " << trans << " C "
            << (c ? DimsToString(*c) : std::string("absent")) << ": " << j.Describe();
        EXPECT_EQ(FakeCalls() - before, 1);
      }
    }
  }
}

// Y is the caller's buffer, which the harness poisons: without C beta is 0, so it is not read.
TEST(BlasFamilyTest, WithoutCYsPriorContentsAreNeverRead) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  ProblemBuilder p(Op::kGemm, 13);
  p.Filled("A", DType::kFloat, {2, 3}, 1).Filled("B", DType::kFloat, {3, 2}, 1);
  p.Float("alpha", 2).Float("beta", 5);
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  Tensor y = Tensor::Create(DType::kFloat, plan.y_dims()).value();
  std::fill_n(y.Data<float>(), y.NumElements(), std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(backend->family()->Compute(plan, y.mutable_view()).ok());
  for (const float v : y.Values<float>()) EXPECT_EQ(v, 6);
}

TEST(BlasFamilyTest, KZeroGivesBetaCAndAnEmptyYCallsNothing) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  ProblemBuilder k0(Op::kGemm, 13);
  k0.Filled("A", DType::kDouble, {0, 3}, 0).Filled("B", DType::kDouble, {0, 2}, 0);
  k0.Input("C", DType::kDouble, {2}, {1, -2}).Int("transA", 1).Float("beta", 3);
  const Tensor y = family::ComputeOp(*backend, family::PlanProblem(k0.problem()).value()).value();
  EXPECT_THAT(std::vector<double>(y.Values<double>().begin(), y.Values<double>().end()),
              ::testing::ElementsAre(3, -6, 3, -6, 3, -6));
  ProblemBuilder m0(Op::kGemm, 13);
  m0.Filled("A", DType::kFloat, {0, 3}, 0).Filled("B", DType::kFloat, {3, 2}, 1);
  const int before = FakeCalls();
  ASSERT_TRUE(family::ComputeOp(*backend, family::PlanProblem(m0.problem()).value()).ok());
  EXPECT_EQ(FakeCalls(), before);
}

TEST(BlasFamilyTest, RefusesEveryOtherTypeAndOperatorWithTheReason) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(family::SupportOf(*backend, {Op::kGemm, 13}).level, Support::Level::kNative);
  EXPECT_EQ(
      family::SupportOf(*backend, {Op::kGemm, 13, DType::kDouble, DType::kDouble, DType::kDouble})
          .level,
      Support::Level::kNative);
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kUInt32,
                  DType::kUInt64}) {
    const Support s = family::SupportOf(*backend, {Op::kGemm, 13, t, t, t});
    EXPECT_FALSE(s.supported()) << DTypeName(t);
    EXPECT_EQ(s.note, "BLAS Gemm is sgemm_/dgemm_ (float, double); OpenBLAS has no " +
                          std::string(DTypeName(t)) + " Gemm here");
  }
  const Support integer = family::SupportOf(
      *backend, {Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32});
  EXPECT_EQ(integer.note, "the BLAS interface has no 8-bit integer GEMM (MatMulInteger)");
  const Support quantized = family::SupportOf(
      *backend, {Op::kQLinearMatMul, 10, DType::kUInt8, DType::kUInt8, DType::kUInt8});
  EXPECT_EQ(quantized.note, "the BLAS interface has no 8-bit integer GEMM (QLinearMatMul)");
  EXPECT_FALSE(quantized.supported());
}

// A plan beyond the 32-bit Fortran integer (made by hand: nothing that size is allocated) is a
// conformance gap, never a truncated GEMM.
TEST(BlasFamilyTest, DimensionsBeyondTheFortranIntegerAreAConformanceGap) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  family::Plan plan;
  plan.op = Op::kGemm;
  plan.version = 13;
  plan.product.m = plan.product.n = 1;
  plan.product.k = std::int64_t{1} << 31;
  plan.product.y_elements = 1;
  float y = 0;
  const int before = FakeCalls();
  const Status status = backend->family()->Compute(plan, {DType::kFloat, {}, &y});
  EXPECT_TRUE(IsConformanceGap(status)) << status;
  EXPECT_THAT(status.message(), ::testing::HasSubstr("32-bit Fortran integer"));
  EXPECT_EQ(FakeCalls(), before);
}

TEST(BlasFamilyTest, DeclaresTheOperandsPrecisionAndSaysWhatRuns) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  const family::FamilyBackend& f = *backend->family();
  EXPECT_EQ(f.DeclaredArithmetic({Op::kGemm, 13}), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(f.DeclaredArithmetic({Op::kGemm, 13, DType::kDouble, DType::kDouble, DType::kDouble}),
            (Arithmetic{DType::kDouble, false}));
  EXPECT_EQ(f.Implementation({Op::kGemm, 13}),
            "OpenBLAS sgemm_ (FakeCore kernel), alpha, beta and the transposes passed through, C "
            "copied into Y");
}

// Every real library installed here, at sizes past its kernels' register blocks (odd M, K, N),
// every transpose pair and C [N] or [M, N]; reals, so float32 may leave ONNX's tolerance where
// terms cancel (BOUND), never its declared bound.
class RealBlasGemmTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RealBlasGemmTest, EveryTransposeAndFormOfCIsWithinTheDeclaredBound) {
  const BlasLibraryDescription& d = Describe(GetParam());
  auto library = BlasLibrary::Load(d, BlasLibraryPath(d, BlasLibDir()));
  if (!library.ok()) GTEST_SKIP() << GetParam() << " is not installed here: " << library.status();
  BlasBackend backend(*library);
  std::mt19937 rng(23);
  const std::vector<Dims> c_forms = {{71}, {67, 71}};
  for (DType t : {DType::kFloat, DType::kDouble}) {
    for (int trans = 0; trans < 4; ++trans) {
      for (const Dims& c : c_forms) {
        const ProblemBuilder p = RandomGemm(rng, t, 67, 130, 71, trans, &c, false);
        const family::FamilyJudgement j = JudgeOn(backend, p.problem()).value();
        EXPECT_TRUE(j.verdict() == ElementVerdict::kPass ||
                    (t == DType::kFloat && j.verdict() == ElementVerdict::kBound))
            << DTypeName(t) << " trans " << trans << " C " << DimsToString(c) << ": "
            << j.Describe();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, RealBlasGemmTest,
                         ::testing::Values("openblas", "blis", "atlas", "netlib"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mm::blas
