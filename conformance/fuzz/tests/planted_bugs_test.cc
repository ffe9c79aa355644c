// The fuzzer finds the bugs a MatMul really has: each planted in a backend that wraps the correct
// reference backend (the planted backends of the self-check, conformance/self_check/), found with
// a fixed seed within a small budget, and shrunk to a small problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/self_check/planted_backends.h"

namespace mm::fuzz {
namespace {

using self_check::Fault;
using self_check::PlantedBackend;
using self_check::PlantedBackendOf;
using ::testing::AnyOf;
using ::testing::Eq;

// The dtypes each bug can show in (the rest would only spend the budget).
std::vector<DType> DTypesFor(Fault fault) {
  switch (fault) {
    case Fault::kTruncatedHalfResult:
    case Fault::kHalfAccumulation:
      return {DType::kFloat16, DType::kBFloat16};
    case Fault::kSaturatingInts:
      return {DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64};
    case Fault::kInt64ViaDouble:
      return {DType::kInt64, DType::kUInt64};
    case Fault::kDoubleInFloat:
      return {DType::kDouble};
    case Fault::kUnwrittenK0:
      return {kAllDTypes.begin(), kAllDTypes.end()};
    default:
      return {DType::kFloat, DType::kInt32};
  }
}

FuzzOptions PlantedOptions(const PlantedBackend& bug) {
  FuzzOptions options;
  options.seed = 1;
  options.cases = 3000;
  options.generator.dtypes = DTypesFor(bug.fault);
  options.stop_after = 1;
  options.max_findings = 1;
  options.shrink_seconds = 3;
  return options;
}

class PlantedBugTest : public ::testing::TestWithParam<PlantedBackend> {};

TEST_P(PlantedBugTest, IsFoundAndShrunk) {
  const PlantedBackend& bug = GetParam();
  const FuzzReport report = RunFuzz(PlantedOptions(bug), self_check::PlantedRegistry(bug), nullptr);
  ASSERT_TRUE(report.error.empty()) << report.error;
  ASSERT_EQ(report.findings.size(), 1u)
      << bug.why << ": not found in " << report.stats.problems << " problems";
  const Finding& f = report.findings[0];
  EXPECT_THAT(f.kind, AnyOf(Eq("FAIL"), Eq("IMPRECISE"))) << f.message;
  // Shrunk: at most 64 elements per operand, and the minimal problem still fails the same way.
  EXPECT_LE(f.a.NumElements(), 64) << f.minimal.ToString() << " from " << f.original.ToString();
  EXPECT_LE(f.b.NumElements(), 64) << f.minimal.ToString() << " from " << f.original.ToString();
  auto backend = self_check::MakePlantedBackend(bug);
  const Outcome again = RunOne(*backend, f.a, f.b, backend->DeclaredArithmetic(f.dtype), {});
  EXPECT_EQ(VerdictName(again.verdict), f.kind) << again.message;
  // The report says where and by how much.
  ASSERT_TRUE(f.worst.has_value());
  EXPECT_FALSE(f.worst->expected.empty());
  EXPECT_THAT(f.replay,
              ::testing::HasSubstr("--seed 1 --first " + std::to_string(f.index) +
                                   " --cases 1 --dtype " + std::string(DTypeName(f.dtype))));
  RecordProperty("finding", bug.why + ": " + f.kind + " at problem " + std::to_string(f.index) +
                                " " + f.original.ToString() + ", shrunk to " +
                                f.minimal.ToString() + ": " + f.message);
}

// The bugs the fuzzer must find and shrink within the budget: every planted kind a problem of at
// most 64 elements per operand shows (the bug of K = 0, which the engine makes unreachable, and the
// one above 65,536 elements have tests of their own below).
std::vector<PlantedBackend> ReachableBugs() {
  std::vector<PlantedBackend> bugs;
  for (Fault fault : {Fault::kTransposedB, Fault::kWrongBatchOffset, Fault::kDroppedTerm,
                      Fault::kUnwrittenNonzero, Fault::kTruncatedHalfResult, Fault::kSaturatingInts,
                      Fault::kInt64ViaDouble, Fault::kHalfAccumulation, Fault::kDoubleInFloat}) {
    bugs.push_back(PlantedBackendOf(fault));
  }
  return bugs;
}

INSTANTIATE_TEST_SUITE_P(ReachableBugs, PlantedBugTest, ::testing::ValuesIn(ReachableBugs()),
                         [](const auto& info) { return info.param.name; });

// The engine answers K = 0 above every backend (exact zeros), so a backend that would leave Y
// unwritten there never gets the chance: the fuzzer runs K = 0 problems on it and finds nothing.
TEST(PlantedBugTest, EngineAnswersKZeroSoItsBugCannotShow) {
  const PlantedBackend& bug = PlantedBackendOf(Fault::kUnwrittenK0);
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
  const FuzzReport report = RunFuzz(options, self_check::PlantedRegistry(bug), nullptr);
  EXPECT_TRUE(report.findings.empty()) << report.findings[0].message;
  EXPECT_EQ(report.stats.backends[0].verdicts[Verdict::kPass] +
                report.stats.backends[0].verdicts[Verdict::kBound],
            report.stats.problems);
}

// The gate's fuzz pass (scripts/conformance.sh and ctest differential.fixed_seed: seed 1, every
// dtype, at most 20000 problems, 10 s) finds a bug that only a tensor above 65,536 elements shows,
// the size of eigen's chunked conversions, through the size-threshold family; without that family
// the same budget never makes such a tensor and passes the bug.
TEST(PlantedBugTest, TheGatesFuzzPassFindsABugOnlyAbove65536Elements) {
  const PlantedBackend& bug = PlantedBackendOf(Fault::kWrongAbove64K);
  FuzzOptions options;  // The gate's settings: every dtype, default limits.
  options.seed = 1;
  options.cases = 20000;
  options.seconds = 10;
  options.stop_after = 1;
  options.max_findings = 1;
  options.shrink_seconds = 2;
  const FuzzReport report = RunFuzz(options, self_check::PlantedRegistry(bug), nullptr);
  ASSERT_TRUE(report.error.empty()) << report.error;
  ASSERT_EQ(report.findings.size(), 1u)
      << bug.why << ": not found in " << report.stats.problems << " problems";
  const Finding& f = report.findings[0];
  EXPECT_GT(std::max({f.a.NumElements(), f.b.NumElements(),
                      PlanMatMul({f.dtype, f.a.dims(), f.b.dims()})->y_elements}),
            std::int64_t{1} << 16)
      << f.minimal.ToString();
  RecordProperty("finding", bug.why + ": " + f.kind + " at problem " + std::to_string(f.index) +
                                " of " + std::to_string(report.stats.problems) + ", " +
                                f.original.ToString());

  // Without the family, none of the budget's problems (all of them, not only those a machine
  // reaches in its seconds) has a tensor over max_elements, so nothing could reach the bug.
  options.generator.threshold_chance = 0;
  for (std::int64_t i = 0; i < options.cases; ++i) {
    const Problem p = GenerateProblem(options.seed, i, options.generator);
    const std::int64_t y_elements = PlanMatMul(p.desc())->y_elements;
    ASSERT_LE(std::max({p.a.NumElements(), p.b.NumElements(), y_elements}),
              options.generator.max_elements)
        << "problem " << i << " (" << p.form << ")";
  }
}

// The size-threshold family crosses every declared path threshold within seed 1's first 5000
// problems (the gate runs up to 20000), on A, on B and on Y, and each such problem stays within 4
// products per element.
TEST(GeneratorTest, TheSizeThresholdFamilyCrossesEveryPathThreshold) {
  const GeneratorOptions options;
  std::map<std::int64_t, int> crossed;
  std::map<char, int> by_operand;
  for (std::int64_t i = 0; i < 5000; ++i) {
    const Problem p = GenerateProblem(1, i, options);
    if (p.form != "size threshold") continue;
    const MatMulPlan plan = PlanMatMul(p.desc()).value();
    const std::int64_t largest = std::max({plan.a_elements, plan.b_elements, plan.y_elements});
    for (std::int64_t threshold : PathThresholds()) {
      if (largest > threshold && largest <= threshold + 64 + 512) ++crossed[threshold];
    }
    by_operand[plan.a_elements == largest ? 'A' : plan.b_elements == largest ? 'B' : 'Y']++;
    EXPECT_LE(plan.batch * plan.m * plan.n * plan.k, 4 * (largest + 1024)) << p.desc().ToString();
  }
  for (std::int64_t threshold : PathThresholds()) {
    EXPECT_GE(crossed[threshold], 5) << "threshold " << threshold;
  }
  for (char operand : {'A', 'B', 'Y'}) EXPECT_GE(by_operand[operand], 5) << operand;
}

// The large-shape family (mm-fuzz --large) stays within its limits, has every form, and keeps K
// large while the product budget allows: the split-K and accumulation-width shapes it is for.
TEST(GeneratorTest, TheLargeFamilyStaysWithinItsBudgetAndKeepsKLarge) {
  GeneratorOptions options;
  options.large_products = std::int64_t{1} << 20;
  std::map<std::string, int> forms;
  std::int64_t widest_k = 0;
  for (std::int64_t i = 0; i < 100; ++i) {
    const Problem p = GenerateProblem(3, i, options);
    const MatMulPlan plan = PlanMatMul(p.desc()).value();
    ++forms[p.form];
    widest_k = std::max(widest_k, plan.k);
    EXPECT_LE(plan.k, kLargeMaxK) << p.desc().ToString();
    EXPECT_LE(std::max({plan.a_elements, plan.b_elements, plan.y_elements}), kLargeMaxElements);
    EXPECT_LE(plan.batch * plan.m * plan.n * plan.k, options.large_products) << p.desc().ToString();
    EXPECT_GE(plan.batch * plan.m * plan.n * plan.k, options.large_products / 64)
        << "the budget is used: " << p.desc().ToString();
  }
  for (const char* form : {"large 2-D", "large square", "large batched", "large broadcast A",
                           "large broadcast B", "large N-D x 1-D", "large 1-D x 2-D"}) {
    EXPECT_GE(forms[form], 5) << form;
  }
  EXPECT_GE(widest_k, 4096);
}

// The default budget is a float 4096^3 product; a time budget sizes it down, by powers of two.
TEST(GeneratorTest, LargeProductsFollowTheTimeBudget) {
  EXPECT_EQ(LargeProductsFor(0, 2), std::int64_t{1} << 36);
  EXPECT_EQ(LargeProductsFor(8, 2), std::int64_t{1} << 32);  // 8 / 4 * 2 * 2^30.
  EXPECT_EQ(LargeProductsFor(8, 1), std::int64_t{1} << 31);
  EXPECT_EQ(LargeProductsFor(1e-9, 1), std::int64_t{1} << 24);
  EXPECT_EQ(LargeProductsFor(1e9, 64), std::int64_t{1} << 36);
}

}  // namespace
}  // namespace mm::fuzz
