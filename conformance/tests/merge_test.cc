// Sharded runs merged back: the same results in the same order, the same summary and exit code as
// the unsharded run; reports of other runs or an incomplete set of shards are refused.
#include "conformance/report/merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "conformance/report/json_report.h"
#include "conformance/report/report.h"
#include "conformance/result_json.h"
#include "conformance/tests/fake_backends.h"
#include "conformance/tests/onnx_fixtures.h"
#include "conformance/tools/cli.h"
#include "conformance/verdict.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// A result's JSON without its wall time, which differs from run to run.
std::vector<nlohmann::ordered_json> Comparable(const std::vector<Result>& results) {
  std::vector<nlohmann::ordered_json> out;
  for (const Result& r : results) {
    auto j = ResultToJson(r);
    j.erase("seconds");
    out.push_back(std::move(j));
  }
  return out;
}

class MergeTest : public ::testing::Test {
 protected:
  MergeTest() {
    // Enough cases that every one of 3 shards gets some; one that fails, one that crashes.
    for (int i = 0; i < 12; ++i) {
      testing::WriteFloatCase(root_.path(), "test_case_" + std::to_string(i), {2, i + 1},
                              {i + 1, 3});
    }
    testing::WriteFloatCase(root_.path(), "test_trigger", testing::kTriggerADims, {7, 2});
    catalog_ = Discover({{root_.path(), "--data-dir"}}, {.builtin = true, .select = {}});
  }

  // What the CLI does for one run: results, then the report written and read back as JSON.
  Report RunAndReadBack(const Shard& shard) {
    RunOptions options;
    options.backends = {"reference", "nudge", "segfault"};
    options.shard = shard;
    options.jobs = 2;
    Report report;
    report.version = "test";
    report.backends = options.backends;
    report.roots = catalog_.roots;
    report.shard = shard;
    report.results = RunConformance(catalog_, registry_, options);
    report.exit_code = ExitCodeOf(report, !catalog_.cases.empty());
    auto read = ReportFromJson(ToJson(report));
    EXPECT_TRUE(read.ok()) << read.status();
    return read.ok() ? *read : Report{};
  }

  TempDir root_;
  Catalog catalog_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

TEST_F(MergeTest, MergedShardsEqualTheUnshardedRun) {
  const Report whole = RunAndReadBack({1, 1});
  ASSERT_EQ(whole.results.size(), (13u + 9u) * 3u);
  std::vector<Report> shards;
  for (int i = 1; i <= 3; ++i) {
    shards.push_back(RunAndReadBack({i, 3}));
    EXPECT_LT(shards.back().results.size(), whole.results.size());
  }
  auto merged = MergeShardReports({shards[2], shards[0], shards[1]});  // Any order.
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(Comparable(merged->results), Comparable(whole.results));
  const Summary a = Summarize(merged->results), b = Summarize(whole.results);
  EXPECT_EQ(std::tie(a.pass, a.fail, a.unsupported, a.error),
            std::tie(b.pass, b.fail, b.unsupported, b.error));
  EXPECT_EQ(a.fail, 22);  // "nudge" fails everywhere...
  EXPECT_EQ(a.error, 1);  // ...and "segfault" crashes once.
  EXPECT_EQ(merged->exit_code, kExitFailed);
  EXPECT_EQ(merged->exit_code, whole.exit_code);
  EXPECT_EQ(merged->shard.count, 1);
}

TEST_F(MergeTest, AMissingOrRepeatedShardIsRefused) {
  const Report one = RunAndReadBack({1, 2}), two = RunAndReadBack({2, 2});
  auto missing = MergeShardReports({one});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("shard 2/2 is missing"));
  auto twice = MergeShardReports({one, one, two});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("shard 1/2 is given twice"));
}

TEST_F(MergeTest, ReportsOfAnotherRunAreRefused) {
  Report one = RunAndReadBack({1, 2}), two = RunAndReadBack({2, 2});
  two.backends = {"reference"};
  auto merged = MergeShardReports({one, two});
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(merged.status().message(), HasSubstr("not from the same run"));
  EXPECT_THAT(merged.status().message(), HasSubstr("backends differ"));
}

// The --tolerance rule travels in the report: merge keeps it, so a BOUND result decides the
// merged exit code as it did in the shard's run, and shards judged by different rules are refused.
TEST(MergeRuleTest, TheRuleIsReadBackAndDecidesTheMergedExitCode) {
  Report report;
  report.version = "test";
  report.backends = {"eigen"};
  Result bound;
  bound.case_name = "test_cancelling";
  bound.backend = "eigen";
  bound.verdict = Verdict::kBound;
  report.results = {bound};
  for (ToleranceRule rule : {ToleranceRule::kOnnx, ToleranceRule::kBound}) {
    report.rule = rule;
    auto read = ReportFromJson(ToJson(report));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->rule, rule);
    auto merged = MergeShardReports({*read});
    ASSERT_TRUE(merged.ok()) << merged.status();
    EXPECT_EQ(merged->rule, rule);
    // BOUND fails under ONNX's tolerance and passes under the bound.
    EXPECT_EQ(merged->exit_code, rule == ToleranceRule::kOnnx ? kExitFailed : kExitPassed);
  }
  report.shard = {1, 2};
  report.rule = ToleranceRule::kOnnx;
  Report other = report;
  other.shard = {2, 2};
  other.rule = ToleranceRule::kBound;
  auto mixed = MergeShardReports({report, other});
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(), HasSubstr("--tolerance rules differ"));
}

// The exit code follows the verdict table: a run holding one result of a verdict fails exactly
// when FailsUnder says that verdict fails under the run's rule (UNSUPPORTED: only with --strict).
TEST(ExitCodeTest, OneResultOfEachVerdictFailsTheRunExactlyWhenTheTableSaysSo) {
  for (ToleranceRule rule : {ToleranceRule::kOnnx, ToleranceRule::kBound}) {
    for (Verdict verdict : kAllVerdicts) {
      for (bool strict : {false, true}) {
        Report report;
        report.rule = rule;
        report.strict = strict;
        Summary summary;
        Count(summary, verdict);
        ASSERT_EQ(summary.Of(verdict), 1) << VerdictName(verdict);
        ASSERT_EQ(summary.total(), 1) << VerdictName(verdict);
        const bool fails =
            FailsUnder(verdict, rule) || (strict && verdict == Verdict::kUnsupported);
        EXPECT_EQ(ExitCodeOfSummary(report, summary, /*any_case=*/true),
                  fails ? kExitFailed : kExitPassed)
            << VerdictName(verdict) << " under --tolerance "
            << (rule == ToleranceRule::kOnnx ? "onnx" : "bound") << (strict ? " --strict" : "");
      }
    }
  }
}

TEST(ReportFromJsonTest, RefusesWhatIsNotAReportAndNamesTheBadKey) {
  EXPECT_FALSE(ReportFromJson("not json").ok());
  EXPECT_FALSE(ReportFromJson("[]").ok());
  Report report;
  report.results.push_back({});
  std::string json = ToJson(report);
  const std::string error = "\"verdict\":\"ERROR\"";  // A result is one line, without spaces.
  ASSERT_NE(json.find(error), std::string::npos) << json;
  json.replace(json.find(error), error.size(), "\"verdict\":\"MAYBE\"");
  auto read = ReportFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("results[0]"));
  EXPECT_THAT(read.status().message(), HasSubstr("unknown verdict 'MAYBE'"));
}

TEST(ResultJsonTest, EveryFieldReadsBackEqual) {
  Result r;
  r.case_name = "test_x";
  r.case_index = 7;
  r.source = "/data";
  r.data_set = "test_data_set_1";
  r.backend = "onednn";
  r.dtype = DType::kBFloat16;
  r.a_dims = {2, 0, 3};
  r.b_dims = {3};
  r.verdict = Verdict::kBound;  // A verdict of the error-bound rule, which merge must keep.
  r.message = "bad \xFF byte";
  r.support_note = "via f32";
  r.implementation = "oneDNN gemm:jit";
  r.expectation = "known (L1)";
  r.seconds = 1.25e-6;
  Comparison c;
  c.elements = 6;
  c.differing = 1;
  c.max_abs_error = std::numeric_limits<double>::infinity();
  c.max_rel_error = std::numeric_limits<double>::quiet_NaN();
  c.worst = WorstElement{3,
                         {1, 1},
                         "nan",
                         "1.5",
                         std::numeric_limits<double>::quiet_NaN(),
                         1.5,
                         std::numeric_limits<double>::infinity(),
                         0.1,
                         0.0};
  r.vs_expected = c;
  // The error-bound rule's outcome, whose worst element is written with "exact" and "bound".
  BoundCheck bound;
  bound.elements = 6;
  bound.outside = 0;
  bound.unbounded = 2;
  bound.worst = WorstElement{5, {1, 2}, "0.25", "0.2500001", 0.25, 0.2500001, 1e-7, 4e-7, 3e-6};
  r.vs_bound = bound;
  r.vs_reference = "differs: ...";
  r.vs_reference_comparison = c;
  // Invalid UTF-8 in a message becomes U+FFFD on the way out, as in every report.
  auto dump = [](const Result& result) {
    return ResultToJson(result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  auto back = ResultFromJson(nlohmann::json::parse(dump(r)));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(dump(*back), dump(r));
  EXPECT_EQ(back->a_dims, r.a_dims);
  EXPECT_EQ(back->dtype, r.dtype);
  EXPECT_TRUE(std::isnan(back->vs_expected->worst->expected_value));
  EXPECT_TRUE(std::isinf(back->vs_expected->max_abs_error));
  EXPECT_EQ(back->verdict, Verdict::kBound);
  EXPECT_EQ(back->implementation, r.implementation);
  EXPECT_EQ(back->expectation, r.expectation);
  ASSERT_TRUE(back->vs_bound.has_value());
  EXPECT_EQ(back->vs_bound->unbounded, 2);
  ASSERT_TRUE(back->vs_bound->worst.has_value());
  EXPECT_EQ(back->vs_bound->worst->allowed, 3e-6);
  EXPECT_EQ(back->vs_bound->worst->actual_value, 0.2500001);
  EXPECT_EQ(back->vs_bound->Describe(), r.vs_bound->Describe());
  const nlohmann::json json = nlohmann::json::parse(dump(r));
  EXPECT_EQ(json["vs_bound"]["worst"]["exact"], "0.25");
  EXPECT_EQ(json["vs_bound"]["worst"]["bound"], 3e-6);
}

}  // namespace
}  // namespace mm::conformance
