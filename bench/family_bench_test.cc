// mm-bench --op: the family's problems it times, their plans, and a backend that refuses a
// problem's description reported with its reason and never timed.
#include "family_bench.h"

#include <benchmark/benchmark.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "matmul_bench.h"
#include "mm/family/testing/fake_family_backend.h"

namespace mm::bench {
namespace {

using family::Op;
using family::testing::FakeFamilyBackend;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::string> NamesOf(const std::vector<FamilyBenchProblem>& problems) {
  std::vector<std::string> names;
  for (const FamilyBenchProblem& p : problems) names.push_back(p.BenchmarkName("b"));
  return names;
}

TEST(FamilyBenchProblemsTest, TheQuickSetTimesTheScoreboardsProblems) {
  EXPECT_THAT(NamesOf(FamilyBenchProblems(Op::kGemm, ShapeSet::kQuick)),
              ElementsAre("gemm/b/float/256x256x256", "gemm/b/float/tiny_3x4x3"));
  EXPECT_THAT(NamesOf(FamilyBenchProblems(Op::kMatMulInteger, ShapeSet::kQuick)),
              ElementsAre("matmulinteger/b/uint8xint8/256x256x256",
                          "matmulinteger/b/uint8xint8/tiny_3x4x3"));
  EXPECT_THAT(NamesOf(FamilyBenchProblems(Op::kQLinearMatMul, ShapeSet::kQuick)),
              ElementsAre("qlinearmatmul/b/uint8xint8/256x256x256",
                          "qlinearmatmul/b/uint8xint8/tiny_3x4x3"));
  EXPECT_THAT(FamilyBenchProblems(Op::kMatMul, ShapeSet::kQuick), IsEmpty());
}

TEST(FamilyBenchProblemsTest, TheFullSetAddsTheLargeSquareAndTheOtherTypePairs) {
  const std::vector<std::string> names =
      NamesOf(FamilyBenchProblems(Op::kMatMulInteger, ShapeSet::kFull));
  EXPECT_THAT(names, ::testing::Contains("matmulinteger/b/uint8xint8/1024x1024x1024"));
  EXPECT_THAT(names, ::testing::Contains("matmulinteger/b/int8xint8/256x256x256"));
  EXPECT_THAT(names, ::testing::Contains("matmulinteger/b/uint8xuint8/tiny_3x4x3"));
  EXPECT_THAT(NamesOf(FamilyBenchProblems(Op::kGemm, ShapeSet::kFull)),
              ::testing::Contains("gemm/b/double/1024x1024x1024"));
}

TEST(FamilyBenchInputsTest, EveryProblemPlansAsItsChoiceDescribesIt) {
  FakeFamilyBackend any("any", Op::kGemm, nullptr);
  for (Op op : kFamilyOps) {
    for (const FamilyBenchChoice& choice :
         ChooseFamilyBenchmarks(any, "any", {op}, ShapeSet::kFull)) {
      if (choice.problem.Large()) continue;  // Planned the same way, only bigger.
      auto inputs = MakeFamilyBenchInputs(choice.problem);
      ASSERT_TRUE(inputs.ok()) << choice.benchmark << ": " << inputs.status();
      EXPECT_EQ(family::DescOf((*inputs)->plan), choice.desc) << choice.benchmark;
      EXPECT_EQ((*inputs)->plan.product.m, choice.problem.m) << choice.benchmark;
      EXPECT_EQ((*inputs)->plan.product.k, choice.problem.k) << choice.benchmark;
      EXPECT_EQ((*inputs)->plan.product.n, choice.problem.n) << choice.benchmark;
    }
  }
}

TEST(FamilyBenchInputsTest, GemmHasABiasOfNAndTheIntegerOperatorsZeroPoints) {
  FamilyBenchProblem gemm = FamilyBenchProblems(Op::kGemm, ShapeSet::kQuick).back();
  auto planned = MakeFamilyBenchInputs(gemm);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ((*planned)->plan.gemm.c_form, family::CForm::kRow);
  FamilyBenchProblem integer = FamilyBenchProblems(Op::kMatMulInteger, ShapeSet::kQuick).back();
  planned = MakeFamilyBenchInputs(integer);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_TRUE((*planned)->problem.FindInput("a_zero_point") != nullptr);
  EXPECT_TRUE((*planned)->problem.FindInput("b_zero_point") != nullptr);
}

// Collects the names of the benchmarks Google Benchmark ran.
class NameReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) ran.push_back(run.benchmark_name());
  }
  std::vector<std::string> ran;
};

// Runs the registered benchmarks Google Benchmark's `flags` select; the names of those that ran.
std::vector<std::string> RunBenchmarks(std::vector<std::string> flags) {
  flags.insert(flags.begin(), "mm_bench_cli_test");
  std::vector<char*> argv;
  for (std::string& flag : flags) argv.push_back(flag.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  NameReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  return reporter.ran;
}

TEST(RegisterFamilyBenchmarksTest, ARefusingBackendIsReportedWithItsReasonAndNeverTimed) {
  static int computed = 0;
  static int refused_computed = 0;
  BackendRegistry registry;
  ASSERT_TRUE(
      registry
          .Register("fake_gemm", "computes Gemm",
                    [] {
                      return std::unique_ptr<Backend>(std::make_unique<FakeFamilyBackend>(
                          "fake_gemm", Op::kGemm, [](const family::Plan&, MutableTensorView) {
                            ++computed;
                            return OkStatus();
                          }));
                    })
          .ok());
  ASSERT_TRUE(registry
                  .Register("refuser", "refuses float Gemm",
                            [] {
                              return std::unique_ptr<Backend>(std::make_unique<FakeFamilyBackend>(
                                  "refuser", Op::kGemm,
                                  [](const family::Plan&, MutableTensorView) {
                                    ++refused_computed;
                                    return OkStatus();
                                  },
                                  [](const family::OpDesc&) {
                                    return Support::No("refuser has no float Gemm");
                                  }));
                            })
                  .ok());
  std::ostringstream err;
  const std::vector<FamilyBenchChoice> choices = RegisterFamilyBenchmarks(
      registry, {"fake_gemm", "refuser"}, {Op::kGemm}, ShapeSet::kQuick, err);
  ASSERT_EQ(choices.size(), 4u);
  EXPECT_FALSE(choices[2].support.supported());
  EXPECT_EQ(choices[2].support.note, "refuser has no float Gemm");
  EXPECT_EQ(err.str(),
            "mm-bench: refuser refuses Gemm-13 float (not timed): refuser has no float Gemm\n");

  const std::vector<std::string> ran = RunBenchmarks(
      {"--benchmark_min_time=0.001", "--benchmark_filter=^gemm/(fake_gemm|refuser)/"});
  EXPECT_THAT(ran, ElementsAre(HasSubstr("gemm/fake_gemm/float/256x256x256"),
                               HasSubstr("gemm/fake_gemm/float/tiny_3x4x3")));
  EXPECT_THAT(ran, ::testing::Each(Not(HasSubstr("refuser"))));
  EXPECT_GT(computed, 0);
  EXPECT_EQ(refused_computed, 0);
}

// A runtime (a backend run only when named: a driver process per instance) is created once for
// all its family benchmarks and their repetitions, as its MatMul benchmarks are.
TEST(RegisterFamilyBenchmarksTest, ARuntimeIsCreatedOnceForEveryBenchmarkAndRepetition) {
  static int created = 0;
  static int computed = 0;
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register(
                      "fake_runtime", "a runtime behind a driver",
                      [] {
                        ++created;
                        return std::unique_ptr<Backend>(std::make_unique<FakeFamilyBackend>(
                            "fake_runtime", Op::kGemm, [](const family::Plan&, MutableTensorView) {
                              ++computed;
                              return OkStatus();
                            }));
                      },
                      BackendRegistry::Selection::kOnRequest)
                  .ok());
  ASSERT_TRUE(ChooseBenchBackends(registry, {"fake_runtime"}, {}).ok());
  ASSERT_TRUE(IsBenchRuntime("fake_runtime"));
  std::ostringstream err;
  RegisterFamilyBenchmarks(registry, {"fake_runtime"}, {Op::kGemm}, ShapeSet::kQuick, err);
  EXPECT_EQ(err.str(), "");
  const std::vector<std::string> ran =
      RunBenchmarks({"--benchmark_repetitions=3", "--benchmark_filter=^gemm/fake_runtime/"});
  EXPECT_THAT(ran, ::testing::Contains(HasSubstr("gemm/fake_runtime/float/tiny_3x4x3")));
  EXPECT_GE(computed, 2 * 3);  // Both problems, each repetition.
  EXPECT_EQ(created, 1);
}

TEST(DescribeFamilySupportTest, NamesEachDescriptionWithItsSupportAndReason) {
  FakeFamilyBackend gemm_only("gemm_only", Op::kGemm, nullptr);
  const nlohmann::json described = DescribeFamilySupport(gemm_only, kFamilyOps);
  ASSERT_FALSE(described.empty());
  EXPECT_EQ(described[0]["op"], "Gemm");
  EXPECT_EQ(described[0]["desc"], "Gemm-13 float");
  EXPECT_EQ(described[0]["level"], "native");
  EXPECT_EQ(described[0]["arithmetic"]["accumulation"], "float");
  const nlohmann::json& integer = described[2];
  EXPECT_EQ(integer["op"], "MatMulInteger");
  EXPECT_EQ(integer["types"], "uint8xint8");
  EXPECT_EQ(integer["level"], "no");
  EXPECT_EQ(integer["note"], "gemm_only computes Gemm only");
  EXPECT_FALSE(integer.contains("arithmetic"));
}

}  // namespace
}  // namespace mm::bench
