// mm-conformance end to end, in-process: exit codes, --list, reports, and the harness's acceptance
// checks (an official case with one expected value changed by 1 % FAILs; bad inputs never pass).
#include "mm/conformance/tools/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>

#include "bad_cases.h"
#include "fake_backends.h"
#include "mm/backends/backend_list.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/io/names.h"
#include "mm/engine/testing/files.h"
#include "mm/engine/testing/test_names.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using mm::testing::ReadFile;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

using testing::CliRun;
using testing::ConformanceCli;

TEST(CliTest, HelpTeachesOptionsAndExitCodes) {
  CliRun r = ConformanceCli({"--help"});
  EXPECT_EQ(r.code, kExitPassed);
  for (const char* text : {"--data-dir DIR", "MM_ONNX_DATA", "--require-official", "--junit FILE",
                           "Exit codes:", "3  --require-official", "reference"}) {
    EXPECT_THAT(r.out, HasSubstr(text));
  }
  EXPECT_THAT(ConformanceCli({"--version"}).out, HasSubstr("mm-conformance "));
}

TEST(CliTest, UsageErrorsExitTwo) {
  TempDir dir;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--frobnicate"},
                                             {"--backend", "nonesuch"},
                                             {"--filter", "("},
                                             {"--rtol", "-1"},
                                             {"--atol", "abc"},
                                             {"--data-dir"},
                                             {"--data-dir", (dir.path() / "absent").string()},
                                             {"--strict=yes"},
                                             {"--json", ""},
                                             {"--list", "--list-tests"},
                                             {"positional"},
                                             {"--skip-exit-code", "1"}}) {
    CliRun r = ConformanceCli(args);
    EXPECT_EQ(r.code, kExitUsage) << ::testing::PrintToString(args);
    EXPECT_THAT(r.err, HasSubstr("mm-conformance: ")) << ::testing::PrintToString(args);
  }
}

TEST(CliTest, HelpIsGeneratedFromTheOneDefinitionWithEveryOption) {
  const std::string help = ConformanceCli({"--help"}).out;
  for (const char* option :
       {"--data-dir DIR", "--backend NAME", "--case NAME", "--filter REGEX", "--exclude REGEX",
        "--no-builtin", "--rtol X", "--atol X", "--strict", "--require-official", "--list",
        "--list-tests", "--json FILE", "--junit FILE", "--markdown FILE", "-q,--quiet",
        "--skip-exit-code N", "--version", "-h,--help"}) {
    EXPECT_THAT(help, HasSubstr(std::string("\n  ") + option + " ")) << option;
  }
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 100u) << "help lines wrap at 100 columns: " << line;
  }
}

TEST(CliTest, AnOptionGivenTwiceKeepsItsLastValue) {
  TempDir root, out;
  testing::WriteFloatCase(root.path(), "test_one", {2}, {2});
  const fs::path first = out.path() / "first.json", last = out.path() / "last.json";
  CliRun r =
      ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--backend", "reference",
                      "--json", first.string(), "--json", last.string(), "--quiet"});
  EXPECT_EQ(r.code, kExitPassed) << r.err;
  EXPECT_FALSE(fs::exists(first));
  EXPECT_TRUE(fs::exists(last));
}

TEST(CliTest, NoMatMulCaseExitsTwo) {
  TempDir empty;
  CliRun r = ConformanceCli({"--data-dir", empty.path().string(), "--no-builtin"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("no MatMul case found"));
}

TEST(CliTest, BuiltinsPassOnTheReference) {
  TempDir empty;
  CliRun r = ConformanceCli({"--data-dir", empty.path().string(), "--backend", "reference"});
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("PASS        test_cc_matmul_2d"));
  // The 9 examples, the shape-class catalogue (a sequence case gives a result per data set) and the
  // family's catalogue (one data set each).
  std::size_t results = 9 + BuiltinFamilyCatalogue().size();
  for (const ShapeCase& c : ShapeCases()) results += c.shape_class->problems.size();
  EXPECT_THAT(r.out, HasSubstr(std::to_string(results) + " PASS, 0 FAIL, 0 UNSUPPORTED, 0 ERROR"));
}

TEST(CliTest, EnvironmentSuppliesRootsWhenNoDataDirIsGiven) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_from_env", {2, 2}, {2, 2});
  CliRun r = ConformanceCli({"--list", "--no-builtin"}, BuiltinBackends(), root.path().c_str());
  EXPECT_EQ(r.code, kExitPassed) << r.err;
  EXPECT_THAT(r.out, HasSubstr(root.path().string() + " (MM_ONNX_DATA)"));
  EXPECT_THAT(r.out, HasSubstr("test_from_env"));
}

TEST(CliTest, ListShowsCasesSkippedShadowedAndRunsNothing) {
  TempDir a, b;
  testing::WriteFloatCase(a.path(), "test_dup", {2}, {2});
  testing::WriteFloatCase(b.path(), "test_dup", {2}, {2});
  const fs::path add = testing::WriteFloatCase(b.path(), "test_add", {2}, {2});
  auto model = testing::MatMulModel(onnx::TensorProto::FLOAT, {2}, {2}, {});
  model.mutable_graph()->mutable_node(0)->set_op_type("Add");
  testing::WriteMessage(add / "model.onnx", model);
  CliRun r =
      ConformanceCli({"--list", "--data-dir", a.path().string(), "--data-dir", b.path().string()});
  EXPECT_EQ(r.code, kExitPassed) << r.err;
  EXPECT_THAT(r.out, HasSubstr("test_add: not a MatMul case: op Add"));
  EXPECT_THAT(r.out, HasSubstr("test_dup at " + (b.path() / "test_dup").string()));
  EXPECT_THAT(r.out, HasSubstr("test_cc_matmul_bcast"));
  EXPECT_THAT(r.out, Not(HasSubstr("PASS")));
}

// The backends' part of --list: each name, available or not, is followed by at least one space
// before its description, however long the name (onnxruntime-web, a plugin's 64 characters).
TEST(CliTest, ListKeepsASpaceAfterEveryBackendName) {
  BackendRegistry registry = BuiltinBackends();
  const std::string longest(io::kMaxNameLength, 'n');
  ASSERT_TRUE(registry
                  .Register(longest, "longest description",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return InternalError("never created");
                            })
                  .ok());
  ASSERT_TRUE(
      registry
          .RegisterUnavailable(std::string(io::kMaxNameLength, 'u'), "absent description", "why")
          .ok());
  CliRun r = ConformanceCli({"--list", "--no-builtin"}, registry, "");
  const std::string listing = r.out.substr(r.out.find("backends (selected:"));
  std::vector<std::string> names = registry.Names();
  for (const std::string& name : registry.UnavailableNames()) names.push_back(name);
  ASSERT_THAT(names, ::testing::Contains("onnxruntime-web"));
  for (const std::string& name : names) {
    EXPECT_THAT(listing, HasSubstr("\n  " + name + " ")) << name << " in\n" << listing;
    EXPECT_THAT(listing, Not(HasSubstr("\n  " + name + registry.Description(name))));
  }
}

TEST(CliTest, ListTestsIsOneLinePerCaseAndBackend) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_one", {2}, {2});
  CliRun r = ConformanceCli({"--list-tests", "--data-dir", root.path().string(), "--no-builtin"},
                            testing::FakeRegistry());
  EXPECT_EQ(r.code, kExitPassed);
  EXPECT_THAT(r.out, HasSubstr("test_one\treference\ntest_one\tgood\n"));
}

TEST(CliTest, FilterExcludeAndCaseSelectByName) {
  TempDir empty;  // Built-ins only, whatever data this machine has.
  const std::vector<std::string> base = {"--list-tests", "--backend", "reference", "--data-dir",
                                         empty.path().string()};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return ConformanceCli(extra).out;
  };
  EXPECT_EQ(with({"--filter", "bcast|4d", "--exclude", "4d_1d"}),
            "test_cc_matmul_4d\treference\ntest_cc_matmul_bcast\treference\n");
  EXPECT_EQ(with({"--case", "test_cc_matmul_2d"}), "test_cc_matmul_2d\treference\n");
  EXPECT_EQ(with({"--case", "test_cc_matmul_2d", "--backend", "reference"}),
            "test_cc_matmul_2d\treference\n")
      << "a backend named twice runs once";
}

// --filter and --exclude match in linear time: nested quantifiers over a long name end at once
// (std::regex, backtracking, took seconds at 16 characters and twice as long with each more).
TEST(CliTest, APathologicalPatternOverALongNameEndsAtOnce) {
  TempDir root;
  const std::string name = "test_" + std::string(64, 'a');
  testing::WriteFloatCase(root.path(), name, {2}, {2});
  auto listed = [&](const std::string& option, const std::string& pattern) {
    return ConformanceCli({"--list-tests", "--data-dir", root.path().string(), "--no-builtin",
                           "--backend", "reference", option, pattern},
                          testing::FakeRegistry())
        .out;
  };
  EXPECT_EQ(listed("--filter", "(a*)*b|a$"), name + "\treference\n");
  EXPECT_EQ(listed("--exclude", "(a*)*b"), name + "\treference\n");
}

// What RE2 does not have (backreferences, lookaround) is refused like any invalid pattern, naming
// it, rather than matched otherwise than the user meant.
TEST(CliTest, PatternsRe2CannotMatchAreUsageErrorsNamingThem) {
  for (const std::string pattern : {"(a)\\1", "(?=x)", "a(?!b)", "(?<=a)b", "(", "a{2,1}"}) {
    for (const char* option : {"--filter", "--exclude"}) {
      CliRun r = ConformanceCli({"--list-tests", option, pattern});
      EXPECT_EQ(r.code, kExitUsage) << option << " " << pattern;
      EXPECT_THAT(r.err, HasSubstr("invalid regular expression '" + pattern + "'"));
    }
  }
}

TEST(CliTest, UnsupportedIsAllowedUnlessStrict) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_one", {2, 3}, {3});
  const std::vector<std::string> base = {"--data-dir", root.path().string(), "--no-builtin",
                                         "--backend", "unsupported"};
  CliRun lenient = ConformanceCli(base, testing::FakeRegistry());
  EXPECT_EQ(lenient.code, kExitPassed) << lenient.out;
  EXPECT_THAT(lenient.out, HasSubstr("UNSUPPORTED test_one"));
  auto strict_args = base;
  strict_args.push_back("--strict");
  EXPECT_EQ(ConformanceCli(strict_args, testing::FakeRegistry()).code, kExitFailed);
  auto skip_args = base;
  skip_args.insert(skip_args.end(), {"--skip-exit-code", "77"});
  EXPECT_EQ(ConformanceCli(skip_args, testing::FakeRegistry()).code, 77);
}

TEST(CliTest, BrokenBackendExitsOne) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_one", {2, 3}, {3});
  for (const char* backend : {"nudge", "throws", "prepare_fails", "cannot_start"}) {
    CliRun r =
        ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--backend", backend},
                       testing::FakeRegistry());
    EXPECT_EQ(r.code, kExitFailed) << backend << "\n" << r.out;
  }
}

TEST(CliTest, RequireOfficialExitsThreeWhenMissing) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_one", {2}, {2});
  // Without the built-in cases, on one backend: what is judged does not change the exit code.
  CliRun r = ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--backend",
                             "reference", "--require-official"});
  EXPECT_EQ(r.code, kExitOfficial);
  EXPECT_THAT(r.out, HasSubstr("missing: test_matmul_2d"));
  EXPECT_EQ(
      ConformanceCli({"--list", "--data-dir", root.path().string(), "--require-official"}).code,
      kExitOfficial);
}

// A run that finds only some of the official cases says how to get the others, on the run and in
// --list, not only that they are missing. Here one of the 7 is present (a test_matmul_2d made here,
// so altered: present, not missing).
TEST(CliTest, MissingOfficialCasesSayHowToGetThem) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_matmul_2d", {3, 4}, {4, 3});
  CliRun r = ConformanceCli(
      {"--data-dir", root.path().string(), "--no-builtin", "--backend", "reference"});
  EXPECT_THAT(r.out, HasSubstr("missing: test_matmul_3d"));
  EXPECT_THAT(r.err, HasSubstr("mm-conformance: 6 of the 7 official ONNX MatMul node tests are "
                               "missing"));
  EXPECT_THAT(r.err, HasSubstr("scripts/fetch-onnx-testdata.sh"));
  CliRun list = ConformanceCli({"--list", "--data-dir", root.path().string(), "--no-builtin"});
  EXPECT_THAT(list.out, HasSubstr("6 of the 7 official ONNX MatMul node tests are missing"));
  EXPECT_THAT(list.out, HasSubstr("scripts/fetch-onnx-testdata.sh"));
}

// A run over a folder of one's own cases, none of them official, is not told on every run that it
// lacks ONNX's; --list still says so.
TEST(CliTest, ARunOverOnesOwnCasesIsNotToldItLacksTheOfficialOnes) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_mine", {3, 4}, {4, 3});
  CliRun r = ConformanceCli(
      {"--data-dir", root.path().string(), "--no-builtin", "--backend", "reference"});
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("official ONNX MatMul node tests are missing")));
  CliRun list = ConformanceCli({"--list", "--data-dir", root.path().string(), "--no-builtin"});
  EXPECT_THAT(list.out, HasSubstr("7 of the 7 official ONNX MatMul node tests are missing"));
}

TEST(CliTest, WritesEveryReport) {
  TempDir root, out;
  testing::WriteFloatCase(root.path(), "test_one", {2, 3}, {3, 2});
  const fs::path json = out.path() / "r.json", xml = out.path() / "r.xml", md = out.path() / "r.md";
  CliRun r = ConformanceCli({"--data-dir", root.path().string(), "--backend", "reference",
                             "--exclude", "^mm_(shape|family)_", "--json", json.string(), "--junit",
                             xml.string(), "--markdown", md.string()});
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(report["summary"]["total"], 10);
  EXPECT_EQ(report["summary"]["PASS"], 10);
  EXPECT_EQ(report["results"][0]["case"], "test_one");
  EXPECT_FALSE(report["results"][0]["implementation"].get<std::string>().empty());
  EXPECT_FALSE(report["runs_on"]["reference"].get<std::string>().empty());
  EXPECT_GT(report["machine"]["logical_cpus"].get<int>(), 0);
  pugi::xml_document junit;
  ASSERT_TRUE(junit.load_file(xml.c_str()));
  EXPECT_TRUE(junit.child("testsuites")
                  .find_child_by_attribute("testsuite", "name", "conformance.reference")
                  .find_child_by_attribute("testcase", "name", "test_one/test_data_set_0"));
  EXPECT_THAT(ReadFile(md), HasSubstr("| test\\_one | float | [2,3] x [3,2] | PASS |"));
  CliRun unwritable = ConformanceCli({"--data-dir", root.path().string(), "--json",
                                      (out.path() / "no" / "such" / "dir.json").string()});
  EXPECT_EQ(unwritable.code, kExitUsage);
  EXPECT_THAT(unwritable.err, HasSubstr("cannot create a file in"));
}

// Finds the official test_matmul_2d where this machine has it.
std::optional<fs::path> OfficialMatMul2d() {
  auto dir = LocateCase(testing::OfficialDataRootsForTests(), "test_matmul_2d");
  if (dir && fs::exists(*dir / "test_data_set_0" / "output_0.pb")) return dir;
  return std::nullopt;
}

// A run over a corpus of generated cases (as the gate's deviations run) gets no verdict on the
// official corpus, on stdout or stderr: it holds none of it and did not ask for it. A run over the
// official root gets the line.
TEST(CliTest, OnlyARunOverTheOfficialRootGetsAnOfficialCorpusVerdict) {
  TempDir generated;
  testing::WriteFloatCase(generated.path(), "test_mm_fuzz_s1_float_0", {2, 3}, {3, 2});
  testing::WriteFloatCase(generated.path(), "test_mm_fuzz_s1_float_4", {3}, {3, 5});
  CliRun own = ConformanceCli({"--data-dir", generated.path().string(), "--backend", "reference"});
  EXPECT_EQ(own.code, kExitPassed) << own.out << own.err;
  EXPECT_THAT(own.out + own.err, Not(HasSubstr("official corpus")));
  EXPECT_THAT(own.out + own.err, Not(HasSubstr("official")));
  const std::optional<fs::path> official = OfficialMatMul2d();
  if (!official) GTEST_SKIP() << "the official ONNX node tests are not on this machine";
  CliRun with_official =
      ConformanceCli({"--data-dir", official->parent_path().string(), "--data-dir",
                      generated.path().string(), "--backend", "reference", "--quiet"});
  // Debian's copy may be of another ONNX version than the SHA-256 sums: intact or not, it is said.
  EXPECT_THAT(with_official.out, ::testing::ContainsRegex("official corpus: [0-7] of 7 intact"));
}

// The harness's acceptance check: a copy of case `source` (written by `write_case` into the copy's
// root) with one expected value changed by 1 % FAILs with exit 1 on every backend.
void ExpectOnePercentChangeFails(const std::function<void(const fs::path& root)>& write_case) {
  TempDir root;
  write_case(root.path());
  const fs::path copy = root.path() / "test_matmul_2d";
  for (auto& entry : fs::recursive_directory_iterator(copy)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  const fs::path output = copy / "test_data_set_0" / "output_0.pb";

  // Sanity: unaltered, the copy passes (so the FAIL below is caused by the change alone).
  CliRun before = ConformanceCli(
      {"--data-dir", root.path().string(), "--no-builtin", "--backend", "reference"});
  ASSERT_EQ(before.code, kExitPassed) << before.out << before.err;

  onnx::TensorProto expected;
  {
    std::ifstream in(output, std::ios::binary);
    ASSERT_TRUE(expected.ParseFromIstream(&in));
  }
  ASSERT_EQ(expected.data_type(), onnx::TensorProto::FLOAT);
  ASSERT_GE(expected.raw_data().size(), 2 * sizeof(float));
  float value;
  std::memcpy(&value, expected.raw_data().data() + sizeof(float), sizeof(float));
  value *= 1.01f;
  std::memcpy(expected.mutable_raw_data()->data() + sizeof(float), &value, sizeof(float));
  testing::WriteMessage(output, expected);

  // ONNX's rule fails every backend; the bound, around the exact product of the case's own A and
  // B, holds: BOUND, and the data, not the backends, is named as suspect.
  CliRun after = ConformanceCli({"--data-dir", root.path().string(), "--no-builtin"});
  EXPECT_EQ(after.code, kExitFailed) << after.out;
  EXPECT_THAT(after.out, HasSubstr("BOUND       test_matmul_2d"));
  EXPECT_THAT(after.out, HasSubstr("1 of 9 elements differ; worst at [0,1]"));
  EXPECT_THAT(after.out, HasSubstr("suspect data: the expected Y of test_data_set_0 is not the "
                                   "product of its inputs computed in float: 1 of 9 elements "
                                   "outside; worst at [0,1]"));
  EXPECT_THAT(after.out, Not(HasSubstr("PASS        test_matmul_2d")))
      << "no backend may pass a wrong expected value";
}

TEST(CliTest, OfficialCaseWithOneExpectedValueOffByOnePercentFails) {
  const auto official = OfficialMatMul2d();
  if (!official) GTEST_SKIP() << "no official test_matmul_2d here; the next test covers the rule";
  SCOPED_TRACE("altering a copy of " + official->string());
  ExpectOnePercentChangeFails([&](const fs::path& root) {
    fs::copy(*official, root / "test_matmul_2d", fs::copy_options::recursive);
  });
  // The tripwire sees the change too.
  TempDir root;
  fs::copy(*official, root.path() / "test_matmul_2d", fs::copy_options::recursive);
  for (auto& entry : fs::recursive_directory_iterator(root.path())) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  testing::WriteBytes(root.path() / "test_matmul_2d" / "test_data_set_0" / "output_0.pb", "x");
  CliRun required =
      ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--require-official"});
  EXPECT_EQ(required.code, kExitOfficial);
  EXPECT_THAT(required.out, HasSubstr("test_data_set_0/output_0.pb: SHA-256"));
}

// The same check on an equivalent case built here (same name and shapes as the official one), so
// it runs on every machine, with or without the official data.
TEST(CliTest, EquivalentCaseWithOneExpectedValueOffByOnePercentFails) {
  ExpectOnePercentChangeFails([](const fs::path& root) {
    testing::WriteFloatCase(root, "test_matmul_2d", {3, 4}, {4, 3});
  });
}

class CliBadInputTest : public ::testing::TestWithParam<testing::BadCase> {};

// Every kind of bad input: a clear message naming the file, exit 1, no PASS, no crash.
TEST_P(CliBadInputTest, ExitsOneWithAClearMessage) {
  const testing::BadCase& row = GetParam();
  TempDir root;
  row.write(root.path(), "test_broken");
  CliRun r = ConformanceCli({"--data-dir", root.path().string(), "--no-builtin"});
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ERROR       test_broken"));
  EXPECT_THAT(r.out, HasSubstr(row.expected_message));
  EXPECT_THAT(r.out, HasSubstr(": 0 PASS, 0 FAIL, 0 UNSUPPORTED, "));
}

INSTANTIATE_TEST_SUITE_P(MalformedCases, CliBadInputTest, ::testing::ValuesIn(testing::BadCases()),
                         mm::testing::NameFromWhy());

// The acceptance test of isolation, end to end: broken backends registered only here crash or
// hang on one case; exactly those results are ERROR, every other result passes, and every report
// is written.
TEST(CliIsolationTest, CrashesAndHangsCostTheirResultsAndEveryReportIsWritten) {
  TempDir root, out;
  testing::WriteFloatCase(root.path(), "test_before", {2, 3}, {3, 4});
  testing::WriteFloatCase(root.path(), "test_trigger", testing::kTriggerADims, {7, 2});
  testing::WriteFloatCase(root.path(), "test_zafter", {4, 5}, {5, 1});
  const fs::path json = out.path() / "r.json", xml = out.path() / "r.xml", md = out.path() / "r.md";
  const BackendRegistry registry = testing::FakeRegistry();
  CliRun r = ConformanceCli({"--data-dir",
                             root.path().string(),
                             "--no-builtin",
                             "--timeout",
                             "0.5",
                             "-j",
                             "2",
                             "--backend",
                             "reference",
                             "--backend",
                             "segfault",
                             "--backend",
                             "divide_by_zero",
                             "--backend",
                             "abort",
                             "--backend",
                             "endless_loop",
                             "--json",
                             json.string(),
                             "--junit",
                             xml.string(),
                             "--markdown",
                             md.string()},
                            registry);
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_THAT(r.out, HasSubstr("summary: 15 results (15 case x backend): 11 PASS, 0 FAIL, "
                               "0 UNSUPPORTED, 4 ERROR"));
  EXPECT_THAT(r.out, HasSubstr(testing::CrashedBy("SIGFPE (signal 8)")));
  EXPECT_THAT(r.out, HasSubstr("in backend divide_by_zero"));
  EXPECT_THAT(r.out, HasSubstr("crashed: SIGABRT (signal 6) in backend abort"));
  EXPECT_THAT(r.out, HasSubstr("timed out after 0.5 s in backend endless_loop"));
  for (const char* line :
       {"ERROR       test_trigger  segfault", "ERROR       test_trigger  abort",
        "PASS        test_zafter   endless_loop", "PASS        test_before   segfault"}) {
    EXPECT_THAT(r.out, HasSubstr(line));
  }
  EXPECT_THAT(ReadFile(json), HasSubstr("\"ERROR\": 4"));
  EXPECT_THAT(ReadFile(xml), HasSubstr("timed out after 0.5 s"));
  EXPECT_THAT(ReadFile(md), HasSubstr(testing::CrashedBy("SIGFPE (signal 8)")));
}

TEST(CliShardTest, MergedShardReportsEqualTheUnshardedRun) {
  TempDir root, out;
  for (int i = 0; i < 10; ++i) {
    testing::WriteFloatCase(root.path(), "test_case_" + std::to_string(i), {i + 1, 2}, {2, 3});
  }
  const BackendRegistry registry = testing::FakeRegistry();
  const std::vector<std::string> common = {
      "--data-dir", root.path().string(), "--backend", "reference", "--backend",
      "nudge",      "--backend",          "good"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return ConformanceCli(args, registry);
  };
  const fs::path whole = out.path() / "whole.json";
  const CliRun unsharded = run({"--json", whole.string()});
  std::vector<std::string> merge_args = {"merge"};
  for (int i = 1; i <= 3; ++i) {
    const fs::path shard = out.path() / ("shard" + std::to_string(i) + ".json");
    const CliRun r = run({"--shard", std::to_string(i) + "/3", "--json", shard.string()});
    EXPECT_EQ(r.code, unsharded.code);
    merge_args.push_back(shard.string());
  }
  const fs::path merged = out.path() / "merged.json";
  merge_args.insert(merge_args.end(), {"--json", merged.string()});
  const CliRun m = ConformanceCli(merge_args, registry);
  EXPECT_EQ(m.code, unsharded.code);
  EXPECT_EQ(m.code, kExitFailed);  // "nudge" fails.

  // Equal but for wall times and what the calls left behind (measured afresh in every run).
  auto comparable = [](const fs::path& path) {
    nlohmann::json j = nlohmann::json::parse(ReadFile(path));
    for (auto& r : j["results"]) {
      r.erase("seconds");
      r.erase("resources");
    }
    j.erase("resources");
    return j;
  };
  const nlohmann::json difference = nlohmann::json::diff(comparable(whole), comparable(merged));
  EXPECT_TRUE(difference.empty()) << difference.dump(1);
  // The console summary line is the same too.
  auto summary = [](const std::string& text) { return text.substr(text.rfind("summary: ")); };
  EXPECT_EQ(summary(m.out), summary(unsharded.out));

  // A missing shard is an error, never a smaller report.
  const CliRun partial = ConformanceCli({"merge", (out.path() / "shard1.json").string()}, registry);
  EXPECT_EQ(partial.code, kExitUsage);
  EXPECT_THAT(partial.err, HasSubstr("shard 2/3 is missing"));
}

TEST(CliShardTest, BadShardsAndJobsAreUsageErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--shard", "0/3"},
                                             {"--shard", "4/3"},
                                             {"--shard", "1"},
                                             {"--shard", "a/b"},
                                             {"--jobs", "0"},
                                             {"--timeout", "0"},
                                             {"--timeout", "-1"},
                                             {"merge"}}) {
    CliRun r = ConformanceCli(args);
    EXPECT_EQ(r.code, kExitUsage) << ::testing::PrintToString(args);
  }
}

TEST(CliExpectationsTest, FileFromTheOptionOrTheEnvironment) {
  TempDir root, out;
  testing::WriteFloatCase(root.path(), "test_a", {2, 3}, {3, 4});
  const fs::path file = out.path() / "known.json";
  std::ofstream(file) << R"({"expectations": [
      {"case": "test_a", "backend": "nudge", "expect": "XFAIL", "reason": "r", "link": "l"},
      {"case": "test_gone", "backend": "*", "expect": "SKIP", "reason": "r", "link": "l"}]})";
  const BackendRegistry registry = testing::FakeRegistry();
  const std::vector<std::string> args = {"--data-dir", root.path().string(), "--no-builtin",
                                         "--backend", "nudge"};
  CliRun plain = ConformanceCli(args, registry);
  EXPECT_EQ(plain.code, kExitFailed);
  std::vector<std::string> with = args;
  with.insert(with.end(), {"--expectations", file.string()});
  CliRun declared = ConformanceCli(with, registry);
  EXPECT_EQ(declared.code, kExitPassed) << declared.out;
  EXPECT_THAT(declared.out, HasSubstr("1 XFAIL"));
  EXPECT_THAT(declared.out, HasSubstr("matches nothing: SKIP case test_gone"));
  EXPECT_EQ(ConformanceCli(args, registry, nullptr, file.c_str()).code, kExitPassed);
  CliRun missing =
      ConformanceCli({"--expectations", (out.path() / "nope.json").string()}, registry);
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("nope.json': no such file"));
}

// Every file the command line names is read by one rule: a FIFO, a device or a directory is a
// usage error naming the option and the file, at once (a FIFO used to block the run for ever and
// /dev/zero to read until memory ran out); so is a file nested too deep to be a real one.
TEST(CliFilesTest, AFileThatIsNotARegularFileIsAUsageErrorAtOnce) {
  TempDir root, dir;
  testing::WriteFloatCase(root.path(), "test_a", {2, 3}, {3, 4});
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path deep = dir.path() / "deep.json";
  std::ofstream(deep) << std::string(100000, '[') << std::string(100000, ']');
  const std::vector<std::string> run = {"--data-dir", root.path().string(), "--no-builtin",
                                        "--backend", "reference"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  struct Row {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Row> rows = {
      {with({"--expectations", fifo.string()}),
       "--expectations '" + fifo.string() + "': a FIFO (named pipe), not a regular file"},
      {with({"--expectations", "/dev/zero"}),
       "--expectations '/dev/zero': a character device, not a regular file"},
      {with({"--expectations", dir.path().string()}), "': a directory, not a regular file"},
      {with({"--expectations", deep.string()}), "JSON nested deeper than 64 levels at byte 64"},
      {with({"--resume", fifo.string()}),
       "--resume JSON report '" + fifo.string() + "': a FIFO (named pipe), not a regular file"},
      {with({"--resume", "/dev/zero"}), "a character device, not a regular file"},
      {with({"--resume", deep.string()}), "nested deeper than 64 levels"},
      {{"merge", fifo.string()}, "a FIFO (named pipe), not a regular file"},
      {{"merge", dir.path().string()}, "is actually a directory"},
      {{"merge", deep.string()}, "nested deeper than 64 levels"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::PrintToString(row.args));
    const auto start = std::chrono::steady_clock::now();
    const CliRun r = ConformanceCli(row.args);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_THAT(r.err, HasSubstr(row.says));
  }
}

// An ONNX file that is a FIFO (a model or an input) is the case's ERROR at once, not a hang.
TEST(CliFilesTest, AFifoInADataRootIsAnErrorOfItsCaseAtOnce) {
  TempDir root;
  const fs::path input = testing::WriteFloatCase(root.path(), "test_a", {2, 3}, {3, 4}) /
                         "test_data_set_0" / "input_0.pb";
  fs::remove(input);
  ASSERT_EQ(::mkfifo(input.c_str(), 0600), 0);
  const CliRun r = ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--backend",
                                   "reference", "--no-isolate"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.out, HasSubstr(input.string() + "': a FIFO (named pipe), not a regular file"));
}

// A data root is never left through a link: a case folder or a data set linked to a folder
// elsewhere is an ERROR naming the link, never a case read from there.
TEST(CliFilesTest, LinksLeadingOutOfADataRootAreErrors) {
  TempDir root, elsewhere;
  const fs::path real = testing::WriteFloatCase(elsewhere.path(), "test_far", {2, 3}, {3, 4});
  fs::create_directory_symlink(real, root.path() / "test_far");
  const fs::path near = testing::WriteFloatCase(root.path(), "test_near", {2, 3}, {3, 4});
  fs::rename(near / "test_data_set_0", elsewhere.path() / "set");
  fs::create_directory_symlink(elsewhere.path() / "set", near / "test_data_set_0");
  const CliRun r = ConformanceCli(
      {"--data-dir", root.path().string(), "--no-builtin", "--backend", "reference"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.out, HasSubstr("'" + (root.path() / "test_far").string() +
                               "' leads outside the data root"));
  EXPECT_THAT(r.out, HasSubstr("'" + (near / "test_data_set_0").string() +
                               "' leads outside the data root"));
  EXPECT_THAT(r.out,
              HasSubstr("2 results (2 case x backend): 0 PASS, 0 FAIL, 0 UNSUPPORTED, 2 ERROR"));
}

// --resume takes nothing that claims a verdict on trust: a result is taken only when its verdict
// follows from its own comparison under this run's rule and expectations; any other runs again,
// and the reports say how many results were taken and how many ran again.
class CliResumeTest : public ::testing::Test {
 protected:
  CliResumeTest() {
    for (int i = 0; i < 3; ++i) {
      testing::WriteFloatCase(root_.path(), "test_case_" + std::to_string(i), {i + 1, 2}, {2, 3});
    }
  }
  // A run of the three cases on "nudge" (which fails every one), with `extra` options.
  CliRun Run(const fs::path& json, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--data-dir", root_.path().string(), "--no-builtin", "--backend",
        "nudge",      "--no-isolate",        "--quiet",      "--json",
        json.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return ConformanceCli(args, registry_);
  }
  static nlohmann::json Read(const fs::path& path) { return nlohmann::json::parse(ReadFile(path)); }
  static void Write(const fs::path& path, const nlohmann::json& report) {
    std::ofstream(path, std::ios::trunc) << report.dump(2);
  }

  TempDir root_, out_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

TEST_F(CliResumeTest, AForgedPassIsRunAgainAndFailsLikeAFreshRun) {
  const fs::path first = out_.path() / "first.json", resumed = out_.path() / "resumed.json";
  ASSERT_EQ(Run(first).code, kExitFailed);
  nlohmann::json report = Read(first);
  ASSERT_EQ(report["results"].size(), 3u);
  // Each result's own comparison still says an element differs; only the verdict is changed.
  for (auto& r : report["results"]) {
    ASSERT_EQ(r["verdict"], "FAIL");
    ASSERT_GT(r["vs_expected"]["differing"].get<int>(), 0);
    r["verdict"] = "PASS";
  }
  report["exit_code"] = 0;
  Write(first, report);
  const CliRun again = Run(resumed, {"--resume", first.string()});
  EXPECT_EQ(again.code, kExitFailed) << again.out << again.err;
  EXPECT_THAT(again.err, HasSubstr("3 result(s) not consistent"));
  EXPECT_THAT(again.out, HasSubstr("0 results taken from " + first.string() +
                                   "; 3 run again (not consistent with themselves)"));
  const nlohmann::json written = Read(resumed);
  EXPECT_EQ(written["summary"]["FAIL"], 3);
  EXPECT_EQ(written["resumed"]["taken"], 0);
  EXPECT_EQ(written["resumed"]["rerun_inconsistent"], 3);
}

TEST_F(CliResumeTest, AnXFailNoEntryOfTheCurrentExpectationsDeclaresIsRunAgain) {
  const fs::path known = out_.path() / "known.json";
  auto declare = [&](const std::string& case_pattern) {
    std::ofstream(known, std::ios::trunc)
        << R"({"expectations": [{"case": ")" << case_pattern
        << R"(", "backend": "nudge", "expect": "XFAIL", "reason": "r", "link": "l"}]})";
  };
  declare("test_case_*");
  const fs::path first = out_.path() / "first.json";
  ASSERT_EQ(Run(first, {"--expectations", known.string()}).code, kExitPassed);
  // The entry now declares one case only: the other two XFAILs are declared by nothing.
  declare("test_case_0");
  const fs::path resumed = out_.path() / "resumed.json";
  const CliRun again = Run(resumed, {"--expectations", known.string(), "--resume", first.string()});
  EXPECT_EQ(again.code, kExitFailed) << again.out << again.err;
  const nlohmann::json written = Read(resumed);
  EXPECT_EQ(written["summary"]["XFAIL"], 1);
  EXPECT_EQ(written["summary"]["FAIL"], 2);
  EXPECT_EQ(written["resumed"]["taken"], 1);
  EXPECT_EQ(written["resumed"]["rerun_inconsistent"], 2);

  // An XFAIL written into a report of a run without expectations is declared by nothing either.
  const fs::path plain = out_.path() / "plain.json";
  ASSERT_EQ(Run(plain).code, kExitFailed);
  nlohmann::json report = Read(plain);
  for (auto& r : report["results"]) r["verdict"] = "XFAIL";
  Write(plain, report);
  const CliRun forged = Run(out_.path() / "forged.json", {"--resume", plain.string()});
  EXPECT_EQ(forged.code, kExitFailed) << forged.out << forged.err;
  EXPECT_EQ(Read(out_.path() / "forged.json")["resumed"]["rerun_inconsistent"], 3);
}

TEST_F(CliResumeTest, TheReportsSayHowManyResultsWereTaken) {
  const fs::path full = out_.path() / "full.json", resumed = out_.path() / "resumed.json";
  const fs::path md = out_.path() / "resumed.md", xml = out_.path() / "resumed.xml";
  ASSERT_EQ(Run(full).code, kExitFailed);
  nlohmann::json report = Read(full);
  report["results"].erase(report["results"].begin() + 2);  // As if interrupted before the last.
  const fs::path partial = out_.path() / "partial.json";
  Write(partial, report);
  const CliRun again = Run(
      resumed, {"--resume", partial.string(), "--markdown", md.string(), "--junit", xml.string()});
  EXPECT_EQ(again.code, kExitFailed) << again.err;
  const nlohmann::json written = Read(resumed);
  EXPECT_EQ(written["resumed"]["files"], nlohmann::json::array({partial.string()}));
  EXPECT_EQ(written["resumed"]["taken"], 2);
  EXPECT_EQ(written["resumed"]["rerun_inconsistent"], 0);
  EXPECT_EQ(written["results"].size(), 3u);
  EXPECT_THAT(again.out, HasSubstr("resumed: 2 results taken from " + partial.string()));
  EXPECT_THAT(ReadFile(md), HasSubstr("Resumed: 2 results taken from"));
  EXPECT_THAT(ReadFile(xml), HasSubstr(R"(<property name="resumed_taken" value="2")"));
  // A fresh run says nothing of the kind.
  EXPECT_FALSE(Read(full).contains("resumed"));
}

}  // namespace
}  // namespace mm::conformance
