// mm-fuzz's seams: arguments -> FuzzCliOptions (ParseFuzzCli), options -> run (BuildFuzzRun),
// report -> JSON (FuzzReportToJson) and the run's end (FinishFuzzReport).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>
#include <sstream>
#include <thread>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/fuzz/fuzz_report_writer.h"

namespace mm::fuzz {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Parsed {
  ParsedFuzzCli parsed;
  std::string out, err;
};

Parsed Parse(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  ParsedFuzzCli parsed = ParseFuzzCli(args, {"reference"}, out, err);
  return {std::move(parsed), out.str(), err.str()};
}

// The words of `lines`, split at spaces.
std::vector<std::string> Words(const std::vector<std::string>& lines) {
  std::vector<std::string> words;
  for (const std::string& line : lines) {
    std::istringstream in(line);
    for (std::string word; in >> word;) words.push_back(word);
  }
  return words;
}

TEST(FuzzOptionsTest, EachOptionGroupFillsItsFields) {
  // One or more options of each group: problems, campaign, backends, judging, findings, output.
  const std::vector<std::string> args = {
      "--seed 7 --first 3 --dtype float --dtype int32 --dtype float",
      "--cases 10 --shard 2/3",
      "--backend reference",
      "--tolerance onnx --rtol 0.01",
      "--max-findings 4 --no-shrink",
      "--json r.json --quiet",
  };
  const Parsed p = Parse(Words(args));
  ASSERT_FALSE(p.parsed.exit_code) << p.err;
  const FuzzCliOptions& o = p.parsed.options;
  EXPECT_EQ(o.command, FuzzCommand::kRun);
  EXPECT_EQ(o.fuzz.seed, 7u);
  EXPECT_EQ(o.fuzz.first, 3);
  EXPECT_EQ(o.fuzz.cases, 10);
  EXPECT_THAT(o.dtypes, ElementsAre("float", "int32"));  // Each once, in order given.
  EXPECT_THAT(o.fuzz.backends, ElementsAre("reference"));
  EXPECT_EQ(o.tolerance, "onnx");
  EXPECT_DOUBLE_EQ(o.fuzz.tolerance.rtol, 0.01);
  EXPECT_TRUE(o.sharded);
  EXPECT_EQ(o.fuzz.shard.index, 2);
  EXPECT_EQ(o.fuzz.shard.count, 3);
  EXPECT_EQ(o.fuzz.max_findings, 4);
  EXPECT_TRUE(o.no_shrink);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.json, "r.json");
}

TEST(FuzzOptionsTest, SubcommandsAreNamedByTheCommand) {
  const Parsed generate = Parse({"generate", "--out", "corpus", "--cases", "5", "--seed", "2"});
  ASSERT_FALSE(generate.parsed.exit_code) << generate.err;
  EXPECT_EQ(generate.parsed.options.command, FuzzCommand::kGenerate);
  EXPECT_EQ(generate.parsed.options.out_dir, "corpus");
  EXPECT_EQ(generate.parsed.options.generate_cases, 5);
  EXPECT_EQ(generate.parsed.options.fuzz.seed, 2u);

  const Parsed merge = Parse({"merge", "--json", "m.json", "s1.json", "s2.json"});
  ASSERT_FALSE(merge.parsed.exit_code) << merge.err;
  EXPECT_EQ(merge.parsed.options.command, FuzzCommand::kMerge);
  EXPECT_THAT(merge.parsed.options.merge_inputs, ElementsAre("s1.json", "s2.json"));

  const Parsed exported = Parse({"export-builtin", "--out", "builtin"});
  ASSERT_FALSE(exported.parsed.exit_code) << exported.err;
  EXPECT_EQ(exported.parsed.options.command, FuzzCommand::kExportBuiltin);
}

TEST(FuzzOptionsTest, ABadValueIsAUsageErrorNamingTheOption) {
  for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--cases", "-3"}, "--cases"},
           {{"--seed", "010x"}, "--seed"},
           {{"--tolerance", "exact"}, "--tolerance"},
           {{"--dtype", "float17"}, "--dtype"},
           {{"--time", "-1"}, "--time"},
           {{"--shard", "4/3"}, "--shard"},
           {{"--large-products", "5"}, "--large-products"},
           {{"generate", "--cases-per-dtype", "0", "--out", "d"}, "--cases-per-dtype"}}) {
    const Parsed p = Parse(args);
    ASSERT_TRUE(p.parsed.exit_code) << args[0];
    EXPECT_EQ(*p.parsed.exit_code, kExitUsage) << args[0];
    EXPECT_THAT(p.err, HasSubstr(option)) << args[0];
    EXPECT_THAT(p.err, HasSubstr("Try 'mm-fuzz --help'.")) << args[0];
  }
}

TEST(FuzzOptionsTest, HelpAndVersionEndTheCommandCleanly) {
  const Parsed help = Parse({"generate", "--help"});
  ASSERT_TRUE(help.parsed.exit_code);
  EXPECT_EQ(*help.parsed.exit_code, kExitClean);
  EXPECT_THAT(help.out, HasSubstr("--cases-per-dtype"));  // generate's help, not the run's.
  const Parsed version = Parse({"--version"});
  ASSERT_TRUE(version.parsed.exit_code);
  EXPECT_EQ(*version.parsed.exit_code, kExitClean);
  EXPECT_THAT(version.out, HasSubstr("mm-fuzz "));
}

TEST(FuzzRunTest, BuildsTheJudgingRuleReplayWordsAndDtypes) {
  const Parsed p = Parse({"--backend", "reference", "--dtype", "float", "--tolerance", "onnx",
                          "--rtol", "0.01", "--no-shrink", "--shard", "1/2"});
  ASSERT_FALSE(p.parsed.exit_code) << p.err;
  auto run = BuildFuzzRun(p.parsed.options, BuiltinBackends());
  ASSERT_TRUE(run.ok()) << run.status();
  const FuzzOptions& o = (*run)->options;
  EXPECT_EQ(o.rule, Rule::kOnnx);
  EXPECT_FALSE(o.shrink);
  EXPECT_THAT(o.generator.dtypes, ElementsAre(DType::kFloat));
  EXPECT_EQ(o.replay_options, "--tolerance onnx --rtol 0.01");
  // A shard keeps every per-problem record, so merged percentiles use them all.
  EXPECT_EQ(o.max_error_records, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(o.expectations, nullptr);
}

TEST(FuzzRunTest, AnUnknownBackendIsAUsageErrorNamingIt) {
  const Parsed p = Parse({"--backend", "nope"});
  ASSERT_FALSE(p.parsed.exit_code) << p.err;
  auto run = BuildFuzzRun(p.parsed.options, BuiltinBackends());
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("unknown backend 'nope'"));
  EXPECT_THAT(run.status().message(), HasSubstr("Try 'mm-fuzz --help'."));
}

TEST(FuzzRunTest, UnreadableExpectationsAreAUsageErrorNamingTheFile) {
  const Parsed p = Parse({"--backend", "reference", "--expectations", "/nonexistent/exp.json"});
  ASSERT_FALSE(p.parsed.exit_code) << p.err;
  auto run = BuildFuzzRun(p.parsed.options, BuiltinBackends());
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.status().message(), HasSubstr("/nonexistent/exp.json"));
}

// A report with one backend, as a run would make it.
FuzzReport OneBackendReport() {
  FuzzReport report;
  report.stats.problems = 3;
  report.stats.results = 3;
  BackendStats b;
  b.name = "reference";
  b.verdicts[Verdict::kPass] = 2;
  b.verdicts[Verdict::kFail] = 1;
  b.by_dtype[DType::kFloat][Verdict::kPass] = 2;
  b.by_dtype[DType::kFloat][Verdict::kFail] = 1;
  report.stats.backends.push_back(b);
  report.stats.failures = 1;
  report.errors.push_back({5, "reference", DType::kFloat, 16, {HUGE_VAL, std::nullopt}});
  return report;
}

TEST(FuzzReportJsonTest, SectionsInOrderWithNonFiniteNumbersSpelled) {
  FuzzOptions options;
  options.backends = {"reference"};
  const nlohmann::ordered_json j =
      FuzzReportToJson(options, {{"float"}, "bound", false}, OneBackendReport(), 1);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAre("tool", "version", "options", "stats", "statistics", "problems",
                                "problems_capped", "problems_limit", "findings", "expectations",
                                "exit_code"));
  EXPECT_EQ(j["stats"]["backends"]["reference"]["FAIL"], 1);
  EXPECT_EQ(j["stats"]["by_dtype"]["reference"]["float"]["PASS"], 2);
  EXPECT_EQ(j["problems"][0]["max_ulp"], "inf");
  EXPECT_TRUE(j["problems"][0]["bound_fraction"].is_null());
  EXPECT_EQ(j["options"]["dtypes"], nlohmann::ordered_json::array({"float"}));
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(JsonNumber(std::nan("")), "nan");
  EXPECT_EQ(JsonNumber(-HUGE_VAL), "-inf");
}

TEST(FuzzReportJsonTest, AShardAndAnInterruptionAreSaid) {
  FuzzOptions options;
  options.cases = 100;
  options.shard = {2, 4};
  FuzzReport report = OneBackendReport();
  report.interrupted_by = 15;
  const nlohmann::ordered_json j = FuzzReportToJson(options, {{}, "onnx", true}, report, 143);
  EXPECT_EQ(j["shard"]["index"], 2);
  EXPECT_EQ(j["shard"]["count"], 4);
  EXPECT_EQ(j["interrupted"]["signal_number"], 15);
  EXPECT_EQ(j["interrupted"]["problems"], 3);
  EXPECT_EQ(j["interrupted"]["of"], 100);
  EXPECT_EQ(j["options"]["tolerance"], "onnx");
}

TEST(FuzzFinishTest, AnInterruptedRunExitsWith128PlusTheSignalAndSaysHowFarItGot) {
  const Parsed p = Parse({"--backend", "reference", "--cases", "100", "--quiet"});
  ASSERT_FALSE(p.parsed.exit_code) << p.err;
  auto run = BuildFuzzRun(p.parsed.options, BuiltinBackends());
  ASSERT_TRUE(run.ok()) << run.status();
  FuzzReport report = OneBackendReport();
  report.interrupted_by = 2;
  std::ostringstream out, err;
  const int code = FinishFuzzReport(p.parsed.options, **run, report, "LOGGED\n", out, err);
  EXPECT_EQ(code, 130);
  EXPECT_THAT(err.str(), HasSubstr("interrupted by signal 2 after 3 of 100 problems"));
  EXPECT_THAT(out.str(), HasSubstr("LOGGED\n"));
  EXPECT_THAT(out.str(), HasSubstr("exit 130"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("problems by dtype")));  // --quiet.
}

TEST(FuzzCampaignTest, ASignalStopsTheRunBeforeItsNextProblemAndTheReportSaysSo) {
  const Parsed p = Parse({"--backend", "reference", "--cases", "100000000"});
  ASSERT_FALSE(p.parsed.exit_code) << p.err;
  auto run = BuildFuzzRun(p.parsed.options, BuiltinBackends());
  ASSERT_TRUE(run.ok()) << run.status();
  std::thread signaller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::raise(SIGTERM);
  });
  const FuzzReport report = RunFuzzCampaign(**run, nullptr);
  signaller.join();
  EXPECT_EQ(report.interrupted_by, SIGTERM);
  EXPECT_GT(report.stats.problems, 0);
  EXPECT_LT(report.stats.problems, 100000000);
  EXPECT_EQ(FuzzExitCode(**run, report), 128 + SIGTERM);
  EXPECT_EQ((*run)->options.stop, nullptr);  // The handler's flag is not left behind.
}

}  // namespace
}  // namespace mm::fuzz
