// mm-fuzz --op: family problems drawn, run on each backend through its family interface, judged
// exactly, shrunk and replayed. The targets of issue 52: a MatMulInteger kernel that saturates its
// pair sums (x86's vpmaddubsw) and a Gemm kernel that ignores beta fail within the default 10 s
// and shrink to K <= 4; the reference backend passes every operator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/family_fakes.h"
#include "mm/conformance/fuzz/family_problem.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/fuzz/fuzz_report_writer.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/judging/expectations.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/family/plan.h"
#include "mm/family/testing/fake_family_backend.h"

namespace mm::fuzz {
namespace {

using family::Op;
using family::Plan;
using family::testing::FakeFamilyBackend;
using ::testing::HasSubstr;
using ::testing::Not;

std::int64_t Int8At(TensorView t, std::int64_t i) {
  return t.dtype == DType::kInt8 ? std::int64_t{t.Data<std::int8_t>()[i]}
                                 : std::int64_t{t.Data<std::uint8_t>()[i]};
}

// MatMulInteger as ONNX Runtime computes it on x86 without VNNI: uint8 x int8 products added in
// pairs along K in saturating int16 (vpmaddubsw), the zero points' terms applied afterwards.
Status SaturatingPairs(const Plan& plan, MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const bool saturates = plan.a_dtype == DType::kUInt8 && plan.b_dtype == DType::kInt8;
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_off, b_off] = p.BatchOffsets(batch);
    const auto [a_mat, b_mat] = plan.OperandMatrices(batch);
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        const std::int64_t azp =
            plan.a_zero_point.ZeroPoint(plan.a_zero_point.Index(a_mat, i, p.m));
        const std::int64_t bzp =
            plan.b_zero_point.ZeroPoint(plan.b_zero_point.Index(b_mat, j, p.n));
        std::int64_t acc = 0, sum_a = 0, sum_b = 0;
        for (std::int64_t k = 0; k < p.k; k += 2) {
          std::int64_t pair = 0;
          for (std::int64_t q = k; q < std::min(k + 2, p.k); ++q) {
            const std::int64_t a = Int8At(plan.a, a_off + i * p.k + q);
            const std::int64_t b = Int8At(plan.b, b_off + q * p.n + j);
            pair += a * b;
            sum_a += a;
            sum_b += b;
          }
          acc += saturates ? std::clamp<std::int64_t>(pair, -32768, 32767) : pair;
        }
        acc += -bzp * sum_a - azp * sum_b + p.k * azp * bzp;
        y.Data<std::int32_t>()[(batch * p.m + i) * p.n + j] =
            static_cast<std::int32_t>(static_cast<std::uint32_t>(acc));
      }
    }
  }
  return OkStatus();
}

// Gemm in double, rounded once to float, with C added whatever beta is: beta ignored.
Status IgnoresBeta(const Plan& plan, MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const float* a = plan.a.Data<float>();
  const float* b = plan.b.Data<float>();
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < p.k; ++k) {
        sum += static_cast<double>(plan.gemm.trans_a ? a[k * p.m + i] : a[i * p.k + k]) *
               (plan.gemm.trans_b ? b[j * p.k + k] : b[k * p.n + j]);
      }
      double c = 0;
      if (plan.gemm.c_form != family::CForm::kAbsent) {
        c = plan.gemm.c.Data<float>()[plan.gemm.CIndex(i, j)];
      }
      y.Data<float>()[i * p.n + j] = static_cast<float>(plan.gemm.alpha * sum + c);
    }
  }
  return OkStatus();
}

Support FloatOnly(const family::OpDesc& desc) {
  return desc.y_dtype == DType::kFloat ? Support::Native() : Support::No("float only");
}

BackendRegistry RegistryWith(const std::string& name, Op op, FakeFamilyBackend::Kernel kernel,
                             FakeFamilyBackend::Accepts accepts = nullptr) {
  BackendRegistry registry;
  EXPECT_TRUE(registry
                  .Register(name, "planted",
                            [=]() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(
                                  std::make_unique<FakeFamilyBackend>(name, op, kernel, accepts));
                            })
                  .ok());
  EXPECT_TRUE(registry
                  .Register("reference", "reference",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
                            })
                  .ok());
  EXPECT_TRUE(registry
                  .Register("matmul-only", "MatMul only",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(
                                  std::make_unique<mm::testing::FakeBackend>("matmul-only"));
                            })
                  .ok());
  return registry;
}

// The default budget of issue 52's target: 10 s, stopped at the first finding.
FuzzOptions TargetOptions(Op op, const std::string& backend) {
  FuzzOptions options;
  options.op = op;
  options.seed = 1;
  options.cases = 20000;
  options.seconds = 10;
  options.stop_after = 1;
  options.backends = {backend};
  return options;
}

// A's K: its last dim (Gemm: the first when transposed, given by the minimal problem's text).
std::int64_t MinimalK(const Finding& f) {
  const Dims& a = f.a.dims();
  const bool trans_a = f.minimal_problem.find("transA=1") != std::string::npos;
  return f.op == Op::kGemm && trans_a ? a.front() : a.back();
}

// Runs the finding's replay (seed, --first, one case, its op, dtype and backend).
FuzzReport Replay(const Finding& f, FuzzOptions options, const BackendRegistry& registry) {
  options.first = f.index;
  options.cases = 1;
  options.seconds = 0;
  options.stop_after = 0;
  options.shrink = false;
  if (f.op == Op::kGemm) options.generator.dtypes = {f.dtype};
  return RunFuzz(options, registry, nullptr);
}

TEST(FamilyFuzzTest, APairSaturatingMatMulIntegerFailsAndShrinksToKAtMostFour) {
  const BackendRegistry registry = RegistryWith("saturating", Op::kMatMulInteger, SaturatingPairs);
  const FuzzOptions options = TargetOptions(Op::kMatMulInteger, "saturating");
  std::ostringstream log;
  const FuzzReport report = RunFuzz(options, registry, &log);
  ASSERT_EQ(report.findings.size(), 1u) << log.str();
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, "FAIL");
  EXPECT_EQ(f.op, Op::kMatMulInteger);
  EXPECT_LE(MinimalK(f), 4) << f.minimal_problem;
  EXPECT_LT(report.stats.seconds, 10.5);
  EXPECT_THAT(f.replay, HasSubstr("--op MatMulInteger --seed 1 --first "));
  EXPECT_THAT(f.replay, Not(HasSubstr("--dtype")));
  EXPECT_THAT(log.str(), HasSubstr("FAIL saturating MatMulInteger MatMulInteger-10 A uint8"));
  const FuzzReport again = Replay(f, options, registry);
  ASSERT_EQ(again.findings.size(), 1u);
  EXPECT_EQ(again.findings[0].kind, "FAIL");
  EXPECT_EQ(again.findings[0].problem, f.problem);
  // The JSON report names the operator of the run and of the finding, with both problems.
  const auto json = FuzzReportToJson(options, {}, report, report.ExitCode(options));
  EXPECT_EQ(json["options"]["op"], "MatMulInteger");
  EXPECT_EQ(json["findings"][0]["op"], "MatMulInteger");
  EXPECT_EQ(json["findings"][0]["minimal_problem"], f.minimal_problem);
  EXPECT_EQ(json["findings"][0]["outside_standard_range"], false);
  EXPECT_TRUE(json["stats"].contains("outside_standard_range"));
}

TEST(FamilyFuzzTest, AGemmThatIgnoresBetaFailsAndShrinksToKAtMostFour) {
  const BackendRegistry registry = RegistryWith("no-beta", Op::kGemm, IgnoresBeta, FloatOnly);
  FuzzOptions options = TargetOptions(Op::kGemm, "no-beta");
  options.generator.dtypes = {DType::kFloat};
  std::ostringstream log;
  const FuzzReport report = RunFuzz(options, registry, &log);
  ASSERT_EQ(report.findings.size(), 1u) << log.str();
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, "FAIL");
  EXPECT_LE(MinimalK(f), 4) << f.minimal_problem;
  EXPECT_THAT(f.minimal_problem, HasSubstr("beta="));
  EXPECT_THAT(f.replay, HasSubstr("--op Gemm --seed 1 --first "));
  EXPECT_THAT(f.replay, HasSubstr("--dtype float --backend no-beta"));
  const FuzzReport again = Replay(f, options, registry);
  ASSERT_EQ(again.findings.size(), 1u);
  EXPECT_EQ(again.findings[0].problem, f.problem);
}

class FamilyFuzzReferenceTest : public ::testing::TestWithParam<Op> {};

TEST_P(FamilyFuzzReferenceTest, PassesEveryProblemAndAMatMulOnlyBackendIsUnsupportedNeverDropped) {
  const BackendRegistry registry = RegistryWith("unused", GetParam(), nullptr);
  FuzzOptions options;
  options.op = GetParam();
  options.cases = 300;
  options.backends = {"reference", "matmul-only"};
  std::ostringstream log;
  const FuzzReport report = RunFuzz(options, registry, &log);
  EXPECT_EQ(report.error, "");
  EXPECT_EQ(report.ExitCode(options), 0) << log.str();
  EXPECT_EQ(report.stats.problems, 300);
  ASSERT_EQ(report.stats.backends.size(), 2u);
  // BOUND passes under the default rule: a float16 or bfloat16 Gemm of the reference's double
  // accumulation may round outside ONNX's tolerance, never outside the bound.
  const auto& reference = report.stats.backends[0].verdicts;
  EXPECT_EQ(reference[Verdict::kPass] + reference[Verdict::kBound], 300);
  EXPECT_EQ(report.stats.backends[1].verdicts[Verdict::kUnsupported], 300);
  EXPECT_GT(report.stats.elements, 0);
}

INSTANTIATE_TEST_SUITE_P(EveryOperator, FamilyFuzzReferenceTest,
                         ::testing::Values(Op::kGemm, Op::kMatMulInteger, Op::kQLinearMatMul));

TEST(FamilyGeneratorTest, AProblemDependsOnlyOnSeedIndexAndOperatorAndAlwaysPlans) {
  for (Op op : {Op::kGemm, Op::kMatMulInteger, Op::kQLinearMatMul}) {
    for (std::int64_t i = 0; i < 200; ++i) {
      const FamilyProblem p = GenerateFamilyProblem(3, i, op, {});
      EXPECT_EQ(p.ToString(), GenerateFamilyProblem(3, i, op, {}).ToString());
      const auto plan = family::PlanProblem(p.View());
      EXPECT_TRUE(plan.ok()) << p.ToString() << ": " << plan.status().ToString();
    }
  }
}

TEST(FamilyGeneratorTest, DrawsEveryFamilyAimedAtTheOperatorsFailureModes) {
  std::set<std::string> seen;
  std::int64_t outside = 0;
  for (Op op : {Op::kGemm, Op::kMatMulInteger, Op::kQLinearMatMul}) {
    for (std::int64_t i = 0; i < 600; ++i) {
      const FamilyProblem p = GenerateFamilyProblem(1, i, op, {});
      seen.insert(p.values.substr(0, p.values.find(',')));
      seen.insert(p.form);
      for (const auto& part :
           {"scales ties", "scales saturation", "scales extreme", "C [N]", "C [M,1]", "C [1,N]",
            "C absent", "beta 0", "alpha -2.5", "beta 0.1", "zero points ends"}) {
        if ((p.values + p.form).find(part) != std::string::npos) seen.insert(part);
      }
      const Plan plan = family::PlanProblem(p.View()).value();
      if (op != Op::kGemm && plan.product.k > 32768) ++outside;
    }
  }
  for (const char* family :
       {"saturating pairs", "outside int32", "extremes", "large K", "scales ties",
        "scales saturation", "scales extreme", "C [N]", "C [M,1]", "C [1,N]", "C absent", "beta 0",
        "alpha -2.5", "beta 0.1", "zero points ends", "broadcast A", "N-D x 1-D"}) {
    EXPECT_TRUE(seen.count(family)) << family;
  }
  EXPECT_GT(outside, 0);
}

// The vpmaddubsw target: in a "saturating pairs" problem of uint8 x int8, every pair (2j, 2j + 1)
// along K of every row of A and column of B sums to beyond int16.
TEST(FamilyGeneratorTest, SaturatingPairsLeaveInt16InEveryPair) {
  int checked = 0;
  for (std::int64_t i = 0; i < 400 && checked < 5; ++i) {
    const FamilyProblem p = GenerateFamilyProblem(1, i, Op::kMatMulInteger, {});
    const Tensor& a = *p.Find("A");
    const Tensor& b = *p.Find("B");
    if (!p.values.starts_with("saturating pairs") || a.dtype() != DType::kUInt8 ||
        b.dtype() != DType::kInt8 || p.form != "2-D") {
      continue;
    }
    const std::int64_t m = a.dims()[0], k = a.dims()[1], n = b.dims()[1];
    for (std::int64_t row = 0; row < m; ++row) {
      for (std::int64_t col = 0; col < n; ++col) {
        for (std::int64_t q = 0; q + 1 < k; q += 2) {
          std::int64_t pair = 0;
          for (std::int64_t e : {q, q + 1}) {
            pair += std::int64_t{a.Data<std::uint8_t>()[row * k + e]} *
                    b.Data<std::int8_t>()[e * n + col];
          }
          EXPECT_GT(std::abs(pair), 32767) << p.ToString() << " at " << row << "," << col;
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(FamilyFuzzTest, ProblemsOutsideTheStandardsRangeAreCountedAndPassOnTheReference) {
  const BackendRegistry registry = RegistryWith("unused", Op::kMatMulInteger, nullptr);
  FuzzOptions options;
  options.op = Op::kMatMulInteger;
  options.cases = 400;
  options.backends = {"reference"};
  const FuzzReport report = RunFuzz(options, registry, nullptr);
  EXPECT_EQ(report.ExitCode(options), 0);
  EXPECT_GT(report.stats.outside_standard_range, 0);
}

// Several backends at once: each is judged against the exact answer on its own (the reference
// passes every problem beside a kernel that fails many, a MatMul-only backend is UNSUPPORTED),
// the findings name the failing backend only, and the problems outside int32 are counted once
// each, as in a run of the reference alone.
TEST(FamilyFuzzTest, SeveralBackendsAreEachJudgedAgainstTheExactAnswer) {
  const BackendRegistry registry = RegistryWith("saturating", Op::kMatMulInteger, SaturatingPairs);
  FuzzOptions options;
  options.op = Op::kMatMulInteger;
  options.cases = 400;
  options.max_findings = 5;
  options.shrink = false;
  options.backends = {"reference", "saturating", "matmul-only"};
  const FuzzReport report = RunFuzz(options, registry, nullptr);
  ASSERT_EQ(report.stats.backends.size(), 3u);
  EXPECT_EQ(report.stats.results, 1200);
  EXPECT_EQ(report.stats.backends[0].verdicts[Verdict::kPass], 400);
  EXPECT_GT(report.stats.backends[1].verdicts[Verdict::kFail], 0);
  EXPECT_EQ(report.stats.backends[1].verdicts[Verdict::kFail],
            report.stats.failures);  // The reference and the UNSUPPORTED backend fail none.
  EXPECT_EQ(report.stats.backends[2].verdicts[Verdict::kUnsupported], 400);
  ASSERT_EQ(report.findings.size(), 5u);
  for (const Finding& f : report.findings) EXPECT_EQ(f.backend, "saturating");
  options.backends = {"reference"};
  const FuzzReport alone = RunFuzz(options, registry, nullptr);
  EXPECT_GT(alone.stats.outside_standard_range, 0);
  EXPECT_EQ(report.stats.outside_standard_range, alone.stats.outside_standard_range);
}

// A kernel that returns an error or throws is an ERROR result and a finding, never a crash.
TEST(FamilyFuzzTest, ABackendsErrorOrExceptionIsAnErrorFinding) {
  for (const bool throws : {false, true}) {
    const BackendRegistry registry = RegistryWith(
        "broken", Op::kMatMulInteger, [throws](const Plan&, MutableTensorView) -> Status {
          if (throws) throw std::runtime_error("kernel blew up");
          return InternalError("kernel refused");
        });
    FuzzOptions options;
    options.op = Op::kMatMulInteger;
    options.cases = 3;
    options.backends = {"broken"};
    const FuzzReport report = RunFuzz(options, registry, nullptr);
    EXPECT_EQ(report.stats.backends[0].verdicts[Verdict::kError], 3);
    ASSERT_FALSE(report.findings.empty());
    EXPECT_EQ(report.findings[0].kind, "ERROR");
    EXPECT_THAT(report.findings[0].message,
                HasSubstr(throws ? "broken: exception: kernel blew up" : "kernel refused"));
  }
}

// A backend writing outside Y or changing an input is an ERROR finding naming what it did, as in
// mm-conformance (the same write guard), although its Y is right: the write comes after the
// reference's answer.
TEST(FamilyFuzzTest, AWriteOutsideYOrIntoAnInputIsAnErrorFindingNamingIt) {
  struct Row {
    Op op;
    mm::testing::FamilyScribble scribble;
    const char* message;
  };
  const Row rows[] = {
      {Op::kGemm,
       [](const Plan& plan, MutableTensorView y) {
         static_cast<unsigned char*>(y.data)[plan.product.y_elements * DTypeSize(y.dtype)] ^= 1;
       },
       "wrote 1 byte past the end of Y"},
      {Op::kMatMulInteger, [](const Plan&, MutableTensorView y) { y.Data<std::int32_t>()[-1] = 7; },
       "wrote 4 bytes before the start of Y"},
      {Op::kQLinearMatMul,
       [](const Plan& plan, MutableTensorView) {
         mm::testing::FlipByte(plan.y_zero_point.tensor, 0);
       },
       "modified input y_zero_point (first changed byte 0 of 1)"}};
  for (const Row& row : rows) {
    BackendRegistry registry;
    ASSERT_TRUE(registry
                    .Register("scribbling", "planted",
                              [&row]() -> StatusOr<std::unique_ptr<Backend>> {
                                return mm::testing::MakeScribblingFamilyBackend(
                                    "scribbling", row.op, row.scribble);
                              })
                    .ok());
    FuzzOptions options;
    options.op = row.op;
    options.cases = 3;
    options.backends = {"scribbling"};
    const FuzzReport report = RunFuzz(options, registry, nullptr);
    EXPECT_EQ(report.stats.backends[0].verdicts[Verdict::kError], 3) << family::OpName(row.op);
    ASSERT_FALSE(report.findings.empty()) << family::OpName(row.op);
    EXPECT_EQ(report.findings[0].kind, "ERROR");
    EXPECT_THAT(report.findings[0].message, HasSubstr(row.message));
  }
}

// An expectations entry declares a family deviation by operator and types, as a MatMul entry
// declares a dtype (FuzzCaseName: fuzz/<op>/<types>/<form>/<values>): the saturating kernel's uint8
// x int8 failures are XFAIL (the run passes, each still a finding), an entry for uint8 x uint8 or
// for Gemm covers none of them, and one "unless_cpu_has" a feature this CPU has does not apply.
TEST(FamilyFuzzTest, AnExpectationsEntryDeclaresAFamilyDeviationByOperatorAndTypes) {
  const BackendRegistry registry = RegistryWith("saturating", Op::kMatMulInteger, SaturatingPairs);
  auto run = [&](const std::string& pattern, const std::set<std::string>& cpu) {
    const std::string text = R"({"expectations": [{"case": ")" + pattern +
                             R"(", "backend": "saturating", "expect": "XFAIL", "reason": "pair )"
                             R"(sums saturate", "link": "docs/family.md", "unless_cpu_has": )"
                             R"(["avx512_vnni"]}]})";
    const auto expectations = conformance::ParseExpectations(text, "test.json", &cpu);
    EXPECT_TRUE(expectations.ok()) << expectations.status().ToString();
    FuzzOptions options;
    options.op = Op::kMatMulInteger;
    options.cases = 60;
    options.max_findings = 3;
    options.backends = {"saturating"};
    options.expectations = &*expectations;
    return RunFuzz(options, registry, nullptr);
  };
  FuzzOptions options;
  const FuzzReport declared = run("fuzz/MatMulInteger/uint8/int8/*", {"avx2"});
  EXPECT_EQ(declared.ExitCode(options), 0);
  ASSERT_FALSE(declared.findings.empty());
  EXPECT_EQ(declared.findings[0].kind, "XFAIL");
  EXPECT_EQ(declared.findings[0].expectation, "pair sums saturate (docs/family.md)");
  ASSERT_EQ(declared.expectations.size(), 1u);
  EXPECT_GT(declared.expectations[0].failures, 0);
  EXPECT_EQ(declared.stats.failures, 0);
  // The finding's JSON names its minimal problem's types, for a runtime's fuzz declarations.
  const auto json = FuzzReportToJson(options, {}, declared, 0);
  EXPECT_EQ(json["findings"][0]["types"]["A"], "uint8");
  EXPECT_EQ(json["findings"][0]["types"]["B"], "int8");
  for (const std::string& other : {"fuzz/MatMulInteger/uint8/uint8/*", "fuzz/Gemm/*"}) {
    const FuzzReport undeclared = run(other, {"avx2"});
    EXPECT_EQ(undeclared.ExitCode(options), 1) << other;
    EXPECT_GT(undeclared.stats.failures, 0) << other;
  }
  const FuzzReport vnni = run("fuzz/MatMulInteger/uint8/int8/*", {"avx2", "avx512_vnni"});
  EXPECT_EQ(vnni.ExitCode(options), 1);
  ASSERT_FALSE(vnni.findings.empty());
  EXPECT_EQ(vnni.findings[0].kind, "FAIL");
}

TEST(FamilyProblemTest, TypesNameTheOperatorsTypeConstraintsInOrder) {
  std::set<std::string> seen;
  for (std::int64_t i = 0; i < 200; ++i) {
    const FamilyProblem integer = GenerateFamilyProblem(1, i, Op::kMatMulInteger, {});
    EXPECT_EQ(integer.Types(), std::string(DTypeName(integer.Find("A")->dtype())) + "/" +
                                   std::string(DTypeName(integer.Find("B")->dtype())));
    const FamilyProblem q = GenerateFamilyProblem(1, i, Op::kQLinearMatMul, {});
    EXPECT_EQ(q.Types(), std::string(DTypeName(q.Find("a")->dtype())) + "/" +
                             std::string(DTypeName(q.Find("b")->dtype())) + "/" +
                             std::string(DTypeName(q.Find("y_zero_point")->dtype())) + "/" +
                             std::string(DTypeName(q.Find("a_scale")->dtype())));
    seen.insert(integer.Types());
  }
  EXPECT_EQ(seen.size(), 4u);  // Every pair of int8 and uint8.
  FuzzOptions options;
  options.generator.dtypes = {DType::kDouble};
  EXPECT_EQ(GenerateFamilyProblem(1, 0, Op::kGemm, options.generator).Types(), "double");
  EXPECT_EQ(FuzzCaseName(Op::kMatMulInteger, "uint8/int8", "2-D", "uniform"),
            "fuzz/MatMulInteger/uint8/int8/2-D/uniform");
}

TEST(FamilyFuzzCliTest, OpIsCheckedAndItsConflictsAreUsageErrors) {
  std::ostringstream out, err;
  EXPECT_EQ(ParseFuzzCli({"--op", "Conv"}, {}, out, err).exit_code, kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("Conv"));
  EXPECT_EQ(ParseFuzzCli({"--op", "MatMulInteger", "--dtype", "float"}, {}, out, err).exit_code,
            kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("--op MatMulInteger with --dtype"));
  EXPECT_EQ(ParseFuzzCli({"--op", "Gemm", "--large"}, {}, out, err).exit_code, kExitUsage);
  const ParsedFuzzCli gemm = ParseFuzzCli({"--op", "Gemm", "--dtype", "float"}, {}, out, err);
  EXPECT_FALSE(gemm.exit_code.has_value());
  EXPECT_EQ(gemm.options.fuzz.op, Op::kGemm);
  EXPECT_EQ(ParseFuzzCli({}, {}, out, err).options.fuzz.op, Op::kMatMul);
}

}  // namespace
}  // namespace mm::fuzz
