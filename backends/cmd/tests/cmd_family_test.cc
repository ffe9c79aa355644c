// The family's operators through a driver (runtime protocol 2): a driver that declares
// MatMulInteger computes it through the command backend and the exact judgement passes its
// results, wraps included; a wrong driver FAILs; one that dies, hangs or answers a wrong shape is
// an error of that call and the next call works; the shipped numpy driver computes them; drivers
// that declare MatMul only (a driver of protocol 1, a hello naming no operator) refuse the others
// with why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::runtime {
namespace {

using family::ElementVerdict;
using family::Op;
using family::OpDesc;
using family::testing::ProblemBuilder;
using ::testing::HasSubstr;

std::unique_ptr<Backend> StartDriver(const std::string& spec, DriverLimits limits = {}) {
  SetDriverLimits(limits);
  auto command = ParseBackendCmd(spec);
  EXPECT_TRUE(command.ok()) << command.status();
  auto backend = StartCommandBackend(*command);
  SetDriverLimits({});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

// The test driver of MatMulInteger (backends/runtimes/python/tests/matmulinteger_driver.py).
std::unique_ptr<Backend> StartMatMulInteger(const std::string& fault, DriverLimits limits = {}) {
  return StartDriver(std::string("mi=/usr/bin/python3 ") + MM_MATMULINTEGER_DRIVER + " " + fault,
                     limits);
}

constexpr OpDesc kGemm{Op::kGemm, 13, DType::kFloat, DType::kFloat, DType::kFloat};
constexpr OpDesc kMatMulInteger{Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32};
constexpr OpDesc kQLinear{Op::kQLinearMatMul, 21, DType::kUInt8, DType::kInt8, DType::kUInt8};

// `backend`'s Y for `p`, judged against the exact answer; the call's error when it fails.
StatusOr<family::FamilyJudgement> Judged(Backend& backend, const ProblemBuilder& p) {
  MM_ASSIGN_OR_RETURN(const family::Plan plan, family::PlanProblem(p.problem()));
  MM_ASSIGN_OR_RETURN(const Tensor y, family::ComputeOp(backend, plan));
  const Arithmetic declared = backend.family()->DeclaredArithmetic(family::DescOf(plan));
  MM_ASSIGN_OR_RETURN(const family::FamilyOracle oracle, family::ExactFamily(plan, declared));
  return family::JudgeFamily(plan, oracle, y.view());
}

std::vector<double> Random(std::mt19937& rng, std::size_t count, DType dtype) {
  const int lo = dtype == DType::kInt8 ? -128 : 0;
  std::uniform_int_distribution<int> value(lo, lo + 255);
  std::vector<double> out(count);
  for (double& v : out) v = value(rng);
  return out;
}

TEST(CmdFamilyTest, ADriverSupportsWhatItsHelloDeclaresAndRefusesTheRestInItsWords) {
  auto backend = StartMatMulInteger("none");
  ASSERT_NE(backend, nullptr);
  for (DType a : {DType::kUInt8, DType::kInt8}) {
    for (DType b : {DType::kUInt8, DType::kInt8}) {
      const OpDesc desc{Op::kMatMulInteger, 10, a, b, DType::kInt32};
      EXPECT_TRUE(family::SupportOf(*backend, desc).supported()) << desc.ToString();
    }
  }
  EXPECT_EQ(family::SupportOf(*backend, kGemm).note,
            "matmulinteger-test 1: Gemm: this test driver computes MatMulInteger only");
  // Not named by the driver: the SDK declares it refused.
  EXPECT_EQ(family::SupportOf(*backend, kQLinear).note,
            "matmulinteger-test 1: QLinearMatMul: the driver declares MatMul only");
  EXPECT_THAT(backend->family()->Implementation(kMatMulInteger),
              HasSubstr("matmulinteger-test 1 through driver 'mi'"));
}

TEST(CmdFamilyTest, MatMulIntegerThroughADriverPassesOnEveryFormAndTypePair) {
  auto backend = StartMatMulInteger("none");
  ASSERT_NE(backend, nullptr);
  std::mt19937 rng(52);
  for (DType ta : {DType::kUInt8, DType::kInt8}) {
    for (DType tb : {DType::kUInt8, DType::kInt8}) {
      ProblemBuilder per_row(Op::kMatMulInteger, 10);  // Per row of A, per column of B.
      per_row.Input("A", ta, {3, 20}, Random(rng, 60, ta));
      per_row.Input("B", tb, {20, 4}, Random(rng, 80, tb));
      per_row.Input("a_zero_point", ta, {3}, Random(rng, 3, ta));
      per_row.Input("b_zero_point", tb, {1, 4}, Random(rng, 4, tb));
      ProblemBuilder batched(Op::kMatMulInteger, 10);  // Broadcast batches, per-tensor points.
      batched.Input("A", ta, {2, 1, 3, 5}, Random(rng, 30, ta));
      batched.Input("B", tb, {3, 5, 2}, Random(rng, 30, tb));
      batched.Input("a_zero_point", ta, {}, Random(rng, 1, ta));
      batched.Input("b_zero_point", tb, {1}, Random(rng, 1, tb));
      ProblemBuilder vector(Op::kMatMulInteger, 10);  // 1-D A, no zero points.
      vector.Input("A", ta, {6}, Random(rng, 6, ta));
      vector.Input("B", tb, {6, 2}, Random(rng, 12, tb));
      for (const ProblemBuilder* p : {&per_row, &batched, &vector}) {
        StatusOr<family::FamilyJudgement> j = Judged(*backend, *p);
        ASSERT_TRUE(j.ok()) << j.status();
        EXPECT_EQ(j->verdict(), ElementVerdict::kPass) << p->problem().ToString() << j->Describe();
      }
    }
  }
}

TEST(CmdFamilyTest, DegenerateAndWrappingProblemsReachTheDriverAndPass) {
  auto backend = StartMatMulInteger("none");
  ASSERT_NE(backend, nullptr);
  ProblemBuilder k0(Op::kMatMulInteger, 10);  // K = 0: zeros.
  k0.Input("A", DType::kUInt8, {2, 0});
  k0.Input("B", DType::kInt8, {0, 3});
  ProblemBuilder empty(Op::kMatMulInteger, 10);  // M = 0: an empty Y.
  empty.Input("A", DType::kInt8, {0, 4});
  empty.Input("B", DType::kInt8, {4, 3});
  // 65,794 terms of 255 x -128 leave int32: the wrapped value is the standard's answer.
  ProblemBuilder wraps(Op::kMatMulInteger, 10);
  wraps.Filled("A", DType::kUInt8, {1, 65794}, 255);
  wraps.Filled("B", DType::kInt8, {65794, 1}, -128);
  for (const ProblemBuilder* p : {&k0, &empty, &wraps}) {
    StatusOr<family::FamilyJudgement> j = Judged(*backend, *p);
    ASSERT_TRUE(j.ok()) << j.status();
    EXPECT_EQ(j->verdict(), ElementVerdict::kPass) << j->Describe();
  }
  EXPECT_EQ(Judged(*backend, wraps)->outside_int32, 1);
}

TEST(CmdFamilyTest, ADriverThatSaturatesPairsOfProductsFails) {
  auto backend = StartMatMulInteger("saturate");
  ASSERT_NE(backend, nullptr);
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {1, 2}, {255, 255});
  p.Input("B", DType::kInt8, {2, 1}, {127, 127});
  StatusOr<family::FamilyJudgement> j = Judged(*backend, p);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->verdict(), ElementVerdict::kFail);
  EXPECT_EQ(j->worst_expected, "64770");
  EXPECT_EQ(j->worst_actual, "32767");
}

struct FamilyFault {
  const char* name;
  const char* message;
  int timeout_seconds = 60;
};

class CmdFamilyFaultTest : public ::testing::TestWithParam<FamilyFault> {};

// A [2,K] uint8 x [K,3] int8 problem, with all ones.
ProblemBuilder Ones(std::int64_t k) {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Filled("A", DType::kUInt8, {2, k}, 1);
  p.Filled("B", DType::kInt8, {k, 3}, 1);
  return p;
}

TEST_P(CmdFamilyFaultTest, IsAnErrorOfThatCallAndTheNextCallWorks) {
  DriverLimits limits;
  limits.timeout_seconds = GetParam().timeout_seconds;
  auto backend = StartMatMulInteger(GetParam().name, limits);
  ASSERT_NE(backend, nullptr);
  const ProblemBuilder seven = Ones(7);  // The plan's views point into it.
  const family::Plan bad = family::PlanProblem(seven.problem()).value();
  const StatusOr<Tensor> failed = family::ComputeOp(*backend, bad);
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr(GetParam().message));
  EXPECT_FALSE(IsConformanceGap(failed.status()));
  StatusOr<family::FamilyJudgement> next = Judged(*backend, Ones(3));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->verdict(), ElementVerdict::kPass);
}

INSTANTIATE_TEST_SUITE_P(
    EveryFault, CmdFamilyFaultTest,
    ::testing::Values(
        FamilyFault{"crash", "the driver ended before its answer was complete: crashed: SIGSEGV"},
        FamilyFault{"hang", "did not answer within 3 s (--timeout); it was killed", 3},
        FamilyFault{"wrong_shape", "Y of shape [6] where [2,3] is awaited"}),
    [](const ::testing::TestParamInfo<FamilyFault>& info) { return std::string(info.param.name); });

TEST(CmdFamilyTest, ARefusalOfADeclaredOperatorIsAConformanceGap) {
  auto backend = StartMatMulInteger("refuse");
  ASSERT_NE(backend, nullptr);
  const ProblemBuilder seven = Ones(7);
  const StatusOr<Tensor> refused =
      family::ComputeOp(*backend, family::PlanProblem(seven.problem()).value());
  EXPECT_TRUE(IsConformanceGap(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(),
              HasSubstr("refused the shape of MatMulInteger-10 uint8[2,7] x int8[7,3] -> "
                        "int32[2,3], a_zero_point absent, b_zero_point absent; its hello declares "
                        "that operator, version and element types supported: "
                        "NotImplementedError: K = 7 is unlucky"));
  EXPECT_TRUE(Judged(*backend, Ones(3)).ok());
}

TEST(CmdFamilyTest, TheShippedNumpyDriverComputesGemmAndRefusesBfloat16WithAReason) {
  BackendRegistry registry;
  ASSERT_TRUE(RegisterShippedDrivers(registry).ok());
  if (!registry.Contains("numpy")) GTEST_SKIP() << registry.UnavailableReason("numpy");
  auto numpy = registry.Create("numpy");
  ASSERT_TRUE(numpy.ok()) << numpy.status();
  EXPECT_TRUE(family::SupportOf(**numpy, kGemm).supported());
  EXPECT_TRUE(family::SupportOf(**numpy, kMatMulInteger).supported());
  EXPECT_TRUE(family::SupportOf(**numpy, kQLinear).supported());
  const OpDesc bf16{Op::kGemm, 13, DType::kBFloat16, DType::kBFloat16, DType::kBFloat16};
  EXPECT_THAT(family::SupportOf(**numpy, bf16).note, HasSubstr("has no bfloat16 dtype"));
  std::mt19937 rng(54);
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {3, 2}, Random(rng, 6, DType::kInt8));
  p.Input("B", DType::kFloat, {4, 3}, Random(rng, 12, DType::kInt8));
  p.Input("C", DType::kFloat, {4}, Random(rng, 4, DType::kInt8));
  p.Float("alpha", 0.5F).Float("beta", -2.0F).Int("transA", 1).Int("transB", 1);
  StatusOr<family::FamilyJudgement> j = Judged(**numpy, p);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->verdict(), ElementVerdict::kPass) << j->Describe();
}

std::string FaultDriver(const std::string& fault) {
  return std::string("fault=/usr/bin/python3 ") + MM_FAULT_DRIVER + " " + fault;
}

TEST(CmdFamilyTest, ADriverOfProtocolOneKeepsComputingMatMulAndRefusesTheFamily) {
  auto backend = StartDriver(FaultDriver("protocol_1"));
  ASSERT_NE(backend, nullptr);
  const std::vector<float> a_values = {1, 2}, b_values = {3, 4};
  const Tensor a = Tensor::FromValues<float>({1, 2}, a_values).value();
  const Tensor b = Tensor::FromValues<float>({2, 1}, b_values).value();
  StatusOr<Tensor> y = MatMul(*backend, a.view(), b.view());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->Data<float>()[0], 11);
  EXPECT_EQ(family::SupportOf(*backend, kMatMulInteger).note,
            "fault 1: MatMulInteger: the driver speaks runtime protocol 1, which carries MatMul "
            "only");
}

TEST(CmdFamilyTest, AHelloNamingNoOperatorDeclaresMatMulOnly) {
  auto backend = StartDriver(FaultDriver("none"));
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(family::SupportOf(*backend, kGemm).note,
            "fault 1: Gemm: not declared in the driver's hello (it declares MatMul only)");
}

}  // namespace
}  // namespace mm::runtime
