// The fuzzer finds the bugs a MatMul really has: each planted in a backend that wraps the correct
// reference backend, found with a fixed seed within a small budget, and shrunk to a small problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "conformance/fuzz/fuzzer.h"
#include "conformance/fuzz/tests/planted_backends.h"

namespace mm::fuzz {
namespace {

using ::testing::AnyOf;
using testing::Bug;
using ::testing::Eq;
using testing::PlantedBug;

// The dtypes each bug can show in (the rest would only spend the budget).
std::vector<DType> DTypesFor(Bug bug) {
  switch (bug) {
    case Bug::kTruncatedHalf:
    case Bug::kHalfAccumulation:
      return {DType::kFloat16, DType::kBFloat16};
    case Bug::kSaturatingInts:
      return {DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64};
    case Bug::kInt64ViaDouble:
      return {DType::kInt64, DType::kUInt64};
    case Bug::kDoubleInFloat:
      return {DType::kDouble};
    case Bug::kUninitialisedK0:
      return {kAllDTypes.begin(), kAllDTypes.end()};
    default:
      return {DType::kFloat, DType::kInt32};
  }
}

FuzzOptions PlantedOptions(const PlantedBug& bug) {
  FuzzOptions options;
  options.seed = 1;
  options.cases = 3000;
  options.generator.dtypes = DTypesFor(bug.bug);
  options.stop_after = 1;
  options.max_findings = 1;
  options.shrink_seconds = 3;
  return options;
}

class PlantedBugTest : public ::testing::TestWithParam<PlantedBug> {};

TEST_P(PlantedBugTest, IsFoundAndShrunk) {
  const PlantedBug& bug = GetParam();
  const FuzzReport report = RunFuzz(PlantedOptions(bug), testing::PlantedRegistry(bug), nullptr);
  ASSERT_TRUE(report.error.empty()) << report.error;
  ASSERT_EQ(report.findings.size(), 1u)
      << bug.why << ": not found in " << report.stats.problems << " problems";
  const Finding& f = report.findings[0];
  EXPECT_THAT(f.kind, AnyOf(Eq("FAIL"), Eq("IMPRECISE"))) << f.message;
  // Shrunk: at most 64 elements per operand, and the minimal problem still fails the same way.
  EXPECT_LE(f.a.NumElements(), 64) << f.minimal.ToString() << " from " << f.original.ToString();
  EXPECT_LE(f.b.NumElements(), 64) << f.minimal.ToString() << " from " << f.original.ToString();
  auto backend = testing::MakePlantedBackend(bug);
  const Outcome again = RunOne(*backend, f.a, f.b, backend->DeclaredArithmetic(f.dtype), {});
  EXPECT_EQ(VerdictName(again.verdict), f.kind) << again.message;
  // The report says where and by how much.
  ASSERT_TRUE(f.worst.has_value());
  EXPECT_FALSE(f.worst->expected.empty());
  EXPECT_THAT(f.replay,
              ::testing::HasSubstr("--seed 1 --first " + std::to_string(f.index) +
                                   " --cases 1 --dtype " + std::string(DTypeName(f.dtype))));
  std::cout << bug.why << ": " << f.kind << " at problem " << f.index << " "
            << f.original.ToString() << ", shrunk to " << f.minimal.ToString() << "\n  "
            << f.message << "\n";
}

// Every planted bug but K = 0's, which the engine makes unreachable (the next test).
std::vector<PlantedBug> ReachableBugs() {
  std::vector<PlantedBug> bugs;
  for (const PlantedBug& bug : testing::PlantedBugs()) {
    if (bug.bug != Bug::kUninitialisedK0) bugs.push_back(bug);
  }
  return bugs;
}

INSTANTIATE_TEST_SUITE_P(Issue9, PlantedBugTest, ::testing::ValuesIn(ReachableBugs()),
                         [](const auto& info) { return info.param.name; });

// The engine answers K = 0 above every backend (exact zeros), so a backend that would leave Y
// unwritten there never gets the chance: the fuzzer runs K = 0 problems on it and finds nothing.
TEST(PlantedBugTest, EngineAnswersKZeroSoItsBugCannotShow) {
  const PlantedBug& bug = testing::PlantedBugs()[static_cast<int>(Bug::kUninitialisedK0)];
  ASSERT_EQ(bug.bug, Bug::kUninitialisedK0);
  FuzzOptions options = PlantedOptions(bug);
  options.cases = 1500;
  std::int64_t k_zero = 0;
  for (std::int64_t i = 0; i < options.cases; ++i) {
    const Problem p = GenerateProblem(options.seed, i, options.generator);
    auto plan = PlanMatMul(p.desc());
    ASSERT_TRUE(plan.ok());
    if (plan->k == 0 && plan->y_elements > 0) ++k_zero;
  }
  ASSERT_GE(k_zero, 10) << "the budget must hold K = 0 problems with a non-empty Y";
  const FuzzReport report = RunFuzz(options, testing::PlantedRegistry(bug), nullptr);
  EXPECT_TRUE(report.findings.empty()) << report.findings[0].message;
  EXPECT_EQ(report.stats.backends[0].pass + report.stats.backends[0].bound, report.stats.problems);
}

}  // namespace
}  // namespace mm::fuzz
