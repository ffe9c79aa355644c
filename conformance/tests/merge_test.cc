// Sharded runs merged back: the same results in the same order, the same summary and exit code as
// the unsharded run; reports of other runs or an incomplete set of shards are refused.
#include "mm/conformance/report/merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_backends.h"
#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/report/json_report.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/results/result_json.h"
#include "mm/conformance/session/run.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// A result's JSON without its wall time and what its call left behind, which differ from run to
// run.
std::vector<nlohmann::ordered_json> Comparable(const std::vector<Result>& results) {
  std::vector<nlohmann::ordered_json> out;
  for (const Result& r : results) {
    auto j = ResultToJson(r);
    j.erase("seconds");
    j.erase("resources");
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
    catalog_ = Discover({{root_.path(), "--data-dir"}},
                        {.builtin = true, .shape_classes = false, .select = {}});
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
    report.selection = SelectionOf(catalog_, CasesInShard(catalog_, shard), 3);
    report.run_selection = SelectionOf(catalog_, CasesInShard(catalog_, {}), 3);
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
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a[Verdict::kFail], 22);  // "nudge" fails everywhere...
  EXPECT_EQ(a[Verdict::kError], 1);  // ...and "segfault" crashes once.
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

// `mm-conformance merge` takes nothing on trust: a result whose verdict does not follow from its
// own fields, a result given twice, and shards of different selections refuse the merge, naming
// the shard file (and the result).
class MergeCliTest : public ::testing::Test {
 protected:
  MergeCliTest() {
    for (int i = 0; i < 8; ++i) {
      testing::WriteFloatCase(root_.path(), "test_case_" + std::to_string(i), {2, i + 1},
                              {i + 1, 3});
    }
  }
  // Runs shard `shard` ("1/2") of the cases matching `filter` on reference and "nudge" (which
  // fails every case), writing its JSON report to `name`; returns the report's path.
  std::string RunShard(const std::string& shard, const std::string& name,
                       const std::string& filter = ".") {
    const std::string json = (out_.path() / name).string();
    const testing::CliRun run = testing::ConformanceCli(
        {"--data-dir", root_.path().string(), "--no-builtin", "--backend", "reference", "--backend",
         "nudge", "--no-isolate", "--quiet", "--filter", filter, "--shard", shard, "--json", json},
        registry_);
    EXPECT_EQ(run.code, kExitFailed) << run.err;
    return json;
  }
  struct Merged {
    int code;
    std::string err;
  };
  Merged Merge(const std::vector<std::string>& shards) {
    std::vector<std::string> args = {"merge", "--quiet", "--json",
                                     (out_.path() / "merged.json").string()};
    args.insert(args.end(), shards.begin(), shards.end());
    const testing::CliRun run = testing::ConformanceCli(args, registry_);
    return {run.code, run.err};
  }
  static nlohmann::json Read(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }
  static void Write(const std::string& path, const nlohmann::json& report) {
    std::ofstream(path, std::ios::trunc) << report.dump(2);
  }

  TempDir root_, out_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

TEST_F(MergeCliTest, AForgedResultRefusesTheMergeNamingTheShardAndTheResult) {
  const std::string a = RunShard("1/2", "a.json"), b = RunShard("2/2", "b.json");
  nlohmann::json forged = Read(b);
  // Every FAIL made a PASS, its comparison left saying an element differs: no failure is left.
  std::string forged_case;
  for (auto& r : forged["results"]) {
    if (r["verdict"] != "FAIL") continue;
    r["verdict"] = "PASS";
    if (forged_case.empty()) forged_case = r["case"].get<std::string>();
  }
  ASSERT_FALSE(forged_case.empty());
  Write(b, forged);
  const Merged m = Merge({a, b});
  EXPECT_EQ(m.code, kExitUsage);
  EXPECT_THAT(m.err, HasSubstr("'" + b + "' (shard 2/2): the result of case '" + forged_case +
                               "', data set 'test_data_set_0', backend 'nudge'"));
  EXPECT_THAT(m.err, HasSubstr("not consistent with itself: PASS, but its own comparison"));
  EXPECT_FALSE(std::filesystem::exists(out_.path() / "merged.json"));
}

TEST_F(MergeCliTest, AResultGivenTwiceRefusesTheMerge) {
  const std::string a = RunShard("1/2", "a.json"), b = RunShard("2/2", "b.json");
  nlohmann::json twice = Read(a);
  ASSERT_FALSE(twice["results"].empty());
  twice["results"].insert(twice["results"].begin() + 1, twice["results"][0]);
  Write(a, twice);
  const Merged m = Merge({a, b});
  EXPECT_EQ(m.code, kExitUsage);
  EXPECT_THAT(m.err, HasSubstr("'" + a + "' (shard 1/2): the result of case"));
  EXPECT_THAT(m.err, HasSubstr("is given twice"));
}

TEST_F(MergeCliTest, ShardsOfAnotherSelectionAreRefused) {
  const std::string a = RunShard("1/2", "a.json");
  const Merged same = Merge({a, RunShard("2/2", "same.json")});
  EXPECT_EQ(same.code, kExitFailed) << same.err;
  EXPECT_EQ(Read((out_.path() / "merged.json").string())["summary"]["total"], 16);
  // Shard 2 of a run of fewer cases: complete for its own run, not for the run of shard 1.
  const std::string b = RunShard("2/2", "b.json", "test_case_[0-5]");
  const Merged m = Merge({a, b});
  EXPECT_EQ(m.code, kExitUsage);
  EXPECT_THAT(m.err, HasSubstr("'" + b + "' (shard 2/2) is a shard of another selection"));
  // A shard with a result taken out no longer holds its selection's results.
  const std::string whole_b = RunShard("2/2", "b2.json");
  nlohmann::json fewer = Read(whole_b);
  fewer["results"].erase(fewer["results"].begin());
  Write(whole_b, fewer);
  const Merged short_one = Merge({a, whole_b});
  EXPECT_EQ(short_one.code, kExitUsage);
  EXPECT_THAT(short_one.err, HasSubstr("but its selection has"));
}

TEST_F(MergeCliTest, AReportOfAnOlderMmWithoutTheRunsSelectionIsRefused) {
  const std::string a = RunShard("1/2", "a.json"), b = RunShard("2/2", "b.json");
  nlohmann::json old = Read(a);
  ASSERT_TRUE(old["selection"].contains("run"));
  old["selection"].erase("run");
  Write(a, old);
  const Merged m = Merge({a, b});
  EXPECT_EQ(m.code, kExitUsage);
  EXPECT_THAT(m.err, HasSubstr("Run the shards again with this mm"));
}

// The rule of conformance/judging/result_check.h, one stored field at a time: a verdict is taken
// only when its own fields give it under this run's tolerance and expectations.
TEST(ResultCheckTest, AVerdictIsTakenOnlyWhenItsOwnFieldsGiveIt) {
  Result judged;
  judged.case_name = "test_x";
  judged.data_set = "test_data_set_0";
  judged.backend = "eigen";
  judged.dtype = DType::kFloat;
  judged.verdict = Verdict::kPass;
  judged.message = "0 of 1 elements differ";
  judged.vs_expected.emplace();
  judged.vs_expected->match = true;
  judged.vs_expected->elements = 1;
  judged.vs_expected->worst = WorstElement{0, {0}, "1", "1.0005", 1, 1.0005, 0.0005, 0.0005, 0};
  judged.vs_bound.emplace();
  judged.vs_bound->elements = 1;
  const ResultRules onnx;  // rtol 1e-3: |1.0005 - 1| is within it.
  EXPECT_TRUE(CheckResultConsistent(judged, onnx).ok());

  // Its worst element is outside a tighter tolerance, though nothing is said to differ.
  ResultRules tight;
  tight.tolerance.rtol = 1e-4;
  EXPECT_THAT(CheckResultConsistent(judged, tight).message(), HasSubstr("is outside"));
  // A match that counts a differing element.
  Result counted = judged;
  counted.vs_expected->differing = 1;
  EXPECT_THAT(CheckResultConsistent(counted, onnx).message(), HasSubstr("says match true"));
  // Outside the bound: IMPRECISE, not PASS.
  Result imprecise = judged;
  imprecise.vs_bound->outside = 1;
  EXPECT_THAT(CheckResultConsistent(imprecise, onnx).message(),
              HasSubstr("PASS, but its own comparison (0 of 1 elements differ, 1 outside the "
                        "bound) makes it IMPRECISE"));
  imprecise.verdict = Verdict::kImprecise;
  EXPECT_TRUE(CheckResultConsistent(imprecise, onnx).ok());
  // A comparison without its bound check.
  Result half = judged;
  half.vs_bound.reset();
  EXPECT_FALSE(CheckResultConsistent(half, onnx).ok());

  // Without a comparison: UNSUPPORTED needs the backend's reason, ERROR what went wrong, and
  // nothing else can be derived.
  Result bare = judged;
  bare.vs_expected.reset();
  bare.vs_bound.reset();
  EXPECT_THAT(CheckResultConsistent(bare, onnx).message(),
              HasSubstr("without a comparison it can only be ERROR"));
  for (Verdict v : {Verdict::kUnsupported, Verdict::kError}) {
    bare.verdict = v;
    bare.message = "";
    EXPECT_FALSE(CheckResultConsistent(bare, onnx).ok()) << VerdictName(v);
    bare.message = "why";
    EXPECT_TRUE(CheckResultConsistent(bare, onnx).ok()) << VerdictName(v);
  }

  // Expectations: an XFAIL entry makes this PASS an XPASS, with the entry's text; XFAIL is never
  // what a passing comparison gives, and without the entry neither is XPASS.
  auto expectations = ParseExpectations(
      R"({"expectations": [{"case": "test_x", "backend": "eigen", "expect": "XFAIL",
          "reason": "r", "link": "l"}]})",
      "known.json");
  ASSERT_TRUE(expectations.ok()) << expectations.status();
  ResultRules declared;
  declared.expectations = &*expectations;
  Result xpass = judged;
  xpass.verdict = Verdict::kXPass;
  xpass.expectation = "r (l)";
  EXPECT_TRUE(CheckResultConsistent(xpass, declared).ok());
  EXPECT_THAT(CheckResultConsistent(xpass, onnx).message(),
              HasSubstr("this run has no expectations file to declare it"));
  Result xfail = xpass;
  xfail.verdict = Verdict::kXFail;
  EXPECT_THAT(CheckResultConsistent(xfail, declared).message(),
              HasSubstr("makes it PASS, which the current expectations make XPASS"));
  EXPECT_THAT(CheckResultConsistent(judged, declared).message(), HasSubstr("XPASS"));
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
  bound.dtype = DType::kFloat;
  bound.verdict = Verdict::kBound;
  bound.message = "1 of 1 elements differ";
  // Its own fields say BOUND: outside the tolerance, within the bound.
  bound.vs_expected.emplace();
  bound.vs_expected->elements = 1;
  bound.vs_expected->differing = 1;
  bound.vs_bound.emplace();
  bound.vs_bound->elements = 1;
  report.results = {bound};
  report.selection = report.run_selection = {1, 1, "0123456789abcdef"};
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
        ASSERT_EQ(summary[verdict], 1) << VerdictName(verdict);
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

// Every field is typed: a report edited by hand or by an attacker is an error naming the field
// and what was expected, never an exception, and nesting too deep is refused before parsing.
TEST(ReportFromJsonTest, AFieldOfTheWrongTypeIsNamedWithWhatWasExpected) {
  Report report;
  report.results.push_back({});
  nlohmann::json j = nlohmann::json::parse(ToJson(report));
  j["strict"] = "yes";
  EXPECT_EQ(ReportFromJson(j.dump(), "shard.json").status().message(),
            "shard.json: strict: expected a boolean, found a string");
  j = nlohmann::json::parse(ToJson(report));
  j["official"]["missing"] = {1};
  EXPECT_EQ(ReportFromJson(j.dump(), "r").status().message(),
            "r: official.missing[0]: expected a string, found a number");
  j = nlohmann::json::parse(ToJson(report));
  j["exit_code"] = 1e300;
  EXPECT_THAT(ReportFromJson(j.dump(), "r").status().message(),
              HasSubstr("r: exit_code: expected an integer in ["));
  EXPECT_EQ(
      ReportFromJson(std::string(100000, '[') + std::string(100000, ']'), "r").status().message(),
      "r: JSON nested deeper than 64 levels at byte 64");
  // What the report wrote reads back.
  EXPECT_TRUE(ReportFromJson(ToJson(report), "r").ok());
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
  r.resources = CallResources{.process = 12,
                              .call = 6,
                              .rss_bytes = 5LL << 32,
                              .rss_growth_bytes = 64LL << 20,
                              .fds = 10,
                              .fd_growth = 1,
                              .threads = 4,
                              .thread_growth = -1,
                              .spinning_threads = 2};
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
  ASSERT_TRUE(back->resources.has_value());
  EXPECT_EQ(back->resources->rss_bytes, 5LL << 32);
  EXPECT_EQ(back->resources->thread_growth, -1);
  EXPECT_EQ(back->resources->spinning_threads, 2);
  // Not looked: null, and back to -1; a report of an older mm has no "resources" at all.
  r.resources->spinning_threads = -1;
  EXPECT_TRUE(nlohmann::json::parse(dump(r))["resources"]["spinning_threads"].is_null());
  EXPECT_EQ(ResultFromJson(nlohmann::json::parse(dump(r)))->resources->spinning_threads, -1);
  nlohmann::json older = nlohmann::json::parse(dump(r));
  older.erase("resources");
  ASSERT_TRUE(ResultFromJson(older).ok());
  EXPECT_FALSE(ResultFromJson(older)->resources.has_value());
  older["resources"] = {{"process", 1}};
  EXPECT_THAT(ResultFromJson(older).status().message(),
              HasSubstr("key \"resources\": missing key \"call\""));
}

}  // namespace
}  // namespace mm::conformance
