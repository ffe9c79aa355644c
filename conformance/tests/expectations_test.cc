// Known failures, declared: XFAIL that fails is not a failure of the run, XFAIL that passes is
// XPASS and is one, SKIP is never run (so a hang can be declared), an entry that matches nothing
// is counted as such, and a malformed file is refused with the entry named.
#include "mm/conformance/judging/expectations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "fake_backends.h"
#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/json_report.h"
#include "mm/conformance/report/junit_report.h"
#include "mm/conformance/report/markdown_report.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/session/run.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/io/text.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

Expectations Parse(const std::string& text) {
  auto parsed = ParseExpectations(text, "known.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : Expectations{};
}

TEST(ParseExpectationsTest, EveryEntryNeedsAReasonAndALink) {
  struct Row {
    const char* why;
    std::string text;
    const char* message;
  };
  const std::string ok_entry =
      R"("case": "test_a", "backend": "onednn", "expect": "XFAIL", "reason": "r", "link": "l")";
  for (const Row& row : std::vector<Row>{
           {"not JSON", "{", "known.json: not valid JSON"},
           {"no list", R"({"entries": []})", "expected an object {\"expectations\": [...]}"},
           {"no reason", R"({"expectations": [{"case": "test_a", "backend": "*",
              "expect": "SKIP", "link": "l"}]})",
            "entry 0 (case \"test_a\"): \"reason\" must be a non-empty string"},
           {"empty link", R"({"expectations": [{"case": "test_a", "backend": "*",
              "expect": "SKIP", "reason": "r", "link": ""}]})",
            "\"link\" must be a non-empty string"},
           {"unknown verdict", R"({"expectations": [{"case": "test_a", "backend": "*",
              "expect": "FLAKY", "reason": "r", "link": "l"}]})",
            "\"expect\" is \"FLAKY\"; it must be \"XFAIL\" or \"SKIP\""},
           {"typo in a key", "{\"expectations\": [{" + ok_entry + ", \"bakend\": \"x\"}]}",
            "unknown key \"bakend\""},
       }) {
    auto parsed = ParseExpectations(row.text, "known.json");
    ASSERT_FALSE(parsed.ok()) << row.why;
    EXPECT_THAT(parsed.status().message(), HasSubstr(row.message)) << row.why;
  }
  Expectations fine = Parse("{\"expectations\": [{" + ok_entry + "}]}");
  ASSERT_EQ(fine.entries.size(), 1u);
  EXPECT_EQ(fine.entries[0].kind, Expectation::Kind::kXFail);
}

TEST(ParseExpectationsTest, PatternsAreGlobsOverTheWholeName) {
  Expectations e = Parse(R"({"expectations": [
      {"case": "test_matmul_*d", "backend": "one*", "expect": "XFAIL",
       "reason": "r", "link": "l"}]})");
  EXPECT_NE(e.Find("test_matmul_2d", "onednn"), nullptr);
  EXPECT_EQ(e.Find("test_matmul_2d_x", "onednn"), nullptr);  // Whole name, not a substring.
  EXPECT_EQ(e.Find("test_matmul_2d", "eigen"), nullptr);
}

// A NUL would cut a glob short where fnmatch reads it ("*\u0000name" became "*" and skipped every
// result); an escape or a C1 control would drive the terminal of whoever reads the error.
TEST(ParseExpectationsTest, APatternWithAControlCharacterIsRefusedNamingItsCode) {
  struct Row {
    const char* key;
    const char* pattern;  // JSON text.
    const char* code;
  };
  for (const Row& row :
       std::vector<Row>{{"case", R"(*\u0000name)", "U+0000 at byte 1"},
                        {"case", R"(test\u001b[2J)", "U+001B at byte 4"},
                        {"backend", R"(one\u007fdnn)", "U+007F at byte 3"},
                        {"backend", R"(one\u009bdnn)", "U+009B at byte 3"},
                        {"data_set", R"(test_data_set_\n0)", "U+000A at byte 14"}}) {
    std::string entry = R"({"case": "test_a", "backend": "onednn", "data_set": "*",)"
                        R"( "expect": "SKIP", "reason": "r", "link": "l"})";
    const std::string key = std::string("\"") + row.key + "\": \"";
    const std::size_t at = entry.find(key) + key.size();
    entry.replace(at, entry.find('"', at) - at, row.pattern);
    auto parsed = ParseExpectations(
        "{\"expectations\": [{\"case\": \"fine\", \"backend\": "
        "\"*\", \"expect\": \"SKIP\", \"reason\": \"r\", "
        "\"link\": \"l\"}, " +
            entry + "]}",
        "known.json");
    ASSERT_FALSE(parsed.ok()) << row.pattern;
    const std::string& message = parsed.status().message();
    EXPECT_THAT(message, HasSubstr("known.json: entry 1 (case \""));
    EXPECT_THAT(message, HasSubstr(std::string(": the \"") + row.key + "\" pattern \""));
    EXPECT_THAT(message, HasSubstr(std::string("holds the control character ") + row.code));
    // The error itself carries no control character to the console.
    EXPECT_EQ(io::FirstControlCharacter(message), std::nullopt) << message;
  }
}

// A sequence case whose later problem alone fails is declared for that data set: its first one,
// which passes, must not be XPASS.
TEST(ParseExpectationsTest, ADataSetPatternNarrowsAnEntryToThoseDataSets) {
  Expectations e = Parse(R"({"expectations": [
      {"case": "mm_shape_seq_*", "backend": "rt", "data_set": "test_data_set_[1-9]",
       "expect": "XFAIL", "reason": "r", "link": "l"},
      {"case": "test_a", "backend": "*", "expect": "XFAIL", "reason": "r", "link": "l"}]})");
  EXPECT_EQ(e.Find("mm_shape_seq_k0", "rt", "test_data_set_0"), nullptr);
  EXPECT_NE(e.Find("mm_shape_seq_k0", "rt", "test_data_set_1"), nullptr);
  EXPECT_EQ(e.Find("mm_shape_seq_k0", "rt"), nullptr);  // No data set known: not this entry.
  EXPECT_NE(e.Find("test_a", "rt", "test_data_set_7"), nullptr);  // Default: every data set.
  EXPECT_NE(e.Find("test_a", "rt"), nullptr);
  auto empty = ParseExpectations(R"({"expectations": [{"case": "a", "backend": "*",
      "data_set": "", "expect": "XFAIL", "reason": "r", "link": "l"}]})",
                                 "known.json");
  EXPECT_THAT(empty.status().message(), HasSubstr("\"data_set\" must be a non-empty string"));
}

// A deviation of a code path some CPUs leave (torch 1.13's bfloat16 GEMM without AVX512BW/VL/DQ)
// applies on a CPU lacking any of the features named, and on one with all of them matches nothing,
// saying why.
TEST(ParseExpectationsTest, AnEntryUnlessTheCpuHasFeaturesAppliesOnlyWhereOneIsMissing) {
  const std::string text = R"({"expectations": [
      {"case": "test_big", "backend": "torch", "unless_cpu_has": ["avx512bw", "avx512dq"],
       "expect": "XFAIL", "reason": "r", "link": "l"},
      {"case": "test_small", "backend": "torch", "expect": "XFAIL", "reason": "r", "link": "l"}]})";
  const std::set<std::string> avx2 = {"avx", "avx2"}, skx = {"avx2", "avx512bw", "avx512dq"},
                              half = {"avx2", "avx512bw"};
  for (const auto* cpu : {&avx2, &half}) {
    const Expectations e = ParseExpectations(text, "known.json", cpu).value();
    EXPECT_NE(e.Find("test_big", "torch"), nullptr);
    EXPECT_TRUE(e.entries[0].not_here.empty());
  }
  const Expectations e = ParseExpectations(text, "known.json", &skx).value();
  EXPECT_EQ(e.Find("test_big", "torch"), nullptr);
  EXPECT_EQ(e.entries[0].not_here, "this CPU has avx512bw, avx512dq");
  EXPECT_EQ(e.entries[0].unless_cpu_has, (std::vector<std::string>{"avx512bw", "avx512dq"}));
  EXPECT_NE(e.Find("test_small", "torch"), nullptr);  // An entry without a condition: every CPU.
  for (const char* bad : {R"([])", R"("avx512bw")", R"([""])", R"([1])"}) {
    auto parsed = ParseExpectations(R"({"expectations": [{"case": "a", "backend": "*",
        "unless_cpu_has": )" + std::string(bad) +
                                        R"(, "expect": "XFAIL", "reason": "r",
        "link": "l"}]})",
                                    "known.json");
    EXPECT_THAT(parsed.status().message(),
                HasSubstr("\"unless_cpu_has\" must be a non-empty array"))
        << bad;
  }
}

// Every report says which entries are not for this CPU, never counting them as matching nothing.
TEST(ExpectationsReportTest, AnEntryNotForThisCpuIsReportedSo) {
  Report report;
  Expectations e;
  e.source = "known.json";
  e.entries.push_back({.case_pattern = "test_big",
                       .backend_pattern = "torch",
                       .reason = "sums in bfloat16",
                       .link = "l",
                       .unless_cpu_has = {"avx512bw"},
                       .not_here = "this CPU has avx512bw"});
  report.expectations = e;
  std::ostringstream console;
  WriteConsole(report, console);
  EXPECT_THAT(console.str(), HasSubstr("0 matching nothing, 1 not for this CPU"));
  EXPECT_THAT(console.str(), HasSubstr("not for this CPU: XFAIL case test_big backend torch (this "
                                       "CPU has avx512bw; sums in bfloat16)"));
  EXPECT_THAT(ToJson(report), HasSubstr(R"("not_here": "this CPU has avx512bw")"));
  EXPECT_THAT(ToMarkdown(report), HasSubstr("not for this CPU (this CPU has avx512bw)"));
}

class ExpectationsRunTest : public ::testing::Test {
 protected:
  ExpectationsRunTest() {
    testing::WriteFloatCase(root_.path(), "test_before", {2, 3}, {3, 4});
    testing::WriteFloatCase(root_.path(), "test_trigger", testing::kTriggerADims, {7, 2});
    catalog_ = Discover({{root_.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  }
  std::vector<Result> Run(const Expectations& expectations, std::vector<std::string> backends) {
    RunOptions options = testing::OnBackends(std::move(backends));
    options.expectations = &expectations;
    return RunConformance(catalog_, registry_, options);
  }
  TempDir root_;
  Catalog catalog_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

// Expectations are applied in one place (RunConformanceStreaming), which both paths go through: a
// declared result gets the declared verdict, its message saying so once, whether the run is
// in-process or isolated.
TEST_F(ExpectationsRunTest, AnEntryDecidesAResultOnceInProcessAndIsolated) {
  const Expectations e = Parse(R"({"expectations": [
      {"case": "test_before", "backend": "nudge", "expect": "XFAIL", "reason": "off", "link": "L1"},
      {"case": "test_before", "backend": "good", "expect": "XFAIL", "reason": "rot", "link": "L2"},
      {"case": "test_trigger", "backend": "*", "expect": "SKIP", "reason": "hangs", "link": "L3"}]})");
  auto count = [](const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  for (const bool isolate : {false, true}) {
    RunOptions options = testing::OnBackends({"nudge", "good"});
    options.isolate = isolate;
    options.jobs = 1;
    options.expectations = &e;
    const std::vector<Result> results = RunConformance(catalog_, registry_, options);
    ASSERT_EQ(results.size(), 4u) << "isolate " << isolate;
    EXPECT_EQ(results[0].verdict, Verdict::kXFail) << "isolate " << isolate;
    EXPECT_EQ(count(results[0].message, "expected failure ("), 1u) << results[0].message;
    EXPECT_EQ(results[1].verdict, Verdict::kXPass) << "isolate " << isolate;
    EXPECT_EQ(count(results[1].message, "declared an expected failure"), 1u) << results[1].message;
    EXPECT_EQ(results[2].verdict, Verdict::kSkip) << "isolate " << isolate;
    EXPECT_EQ(results[3].verdict, Verdict::kSkip) << "isolate " << isolate;
  }
}

TEST_F(ExpectationsRunTest, XFailThatFailsIsXFailAndThatPassesIsXPass) {
  Expectations e = Parse(R"({"expectations": [
      {"case": "*", "backend": "nudge", "expect": "XFAIL", "reason": "off by 1 %", "link": "L1"},
      {"case": "test_trigger", "backend": "segfault", "expect": "XFAIL", "reason": "null write",
       "link": "L2"},
      {"case": "test_before", "backend": "good", "expect": "XFAIL", "reason": "was broken",
       "link": "L3"},
      {"case": "test_gone", "backend": "*", "expect": "XFAIL", "reason": "old", "link": "L4"}]})");
  const std::vector<Result> results = Run(e, {"nudge", "segfault", "good"});
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[0].verdict, Verdict::kXFail);  // nudge fails as declared.
  EXPECT_THAT(results[0].message,
              HasSubstr("expected failure (off by 1 % (L1)): 1 of 8 elements differ"));
  EXPECT_EQ(results[1].verdict, Verdict::kPass);   // segfault is fine on test_before.
  EXPECT_EQ(results[2].verdict, Verdict::kXPass);  // good passes: the entry has rotted.
  EXPECT_THAT(results[2].message, HasSubstr("remove the entry"));
  EXPECT_EQ(results[4].verdict, Verdict::kXFail);  // The crash, declared.
  EXPECT_THAT(results[4].message, HasSubstr("crashed: "));

  Report report;
  report.backends = {"nudge", "segfault", "good"};
  report.results = results;
  report.expectations = e;
  CountMatches(*report.expectations, results);
  EXPECT_EQ(report.expectations->entries[0].matched, 2);
  EXPECT_EQ(report.expectations->entries[3].matched, 0);
  EXPECT_EQ(ExitCodeOf(report, true), kExitFailed);  // Because of the XPASS alone.
  std::ostringstream console;
  WriteConsole(report, console);
  EXPECT_THAT(console.str(), HasSubstr("1 matching nothing"));
  EXPECT_THAT(console.str(), HasSubstr("matches nothing: XFAIL case test_gone backend *"));
  EXPECT_THAT(console.str(), HasSubstr("3 XFAIL, 1 XPASS"));
  EXPECT_THAT(ToJUnitXml(report), HasSubstr("<failure type=\"XPASS\""));
  EXPECT_THAT(ToMarkdown(report), HasSubstr("**matches nothing**"));
  auto read = ReportFromJson(ToJson(report));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->expectations.has_value());
  EXPECT_EQ(read->expectations->entries[3].matched, 0);
  EXPECT_EQ(read->results[2].verdict, Verdict::kXPass);

  report.results.erase(report.results.begin() + 2);  // Without the XPASS the run passes.
  EXPECT_EQ(ExitCodeOf(report, true), kExitPassed);
}

TEST_F(ExpectationsRunTest, SkipIsNeverRunSoAHangCanBeDeclared) {
  Expectations e = Parse(R"({"expectations": [
      {"case": "test_trigger", "backend": "endless_loop", "expect": "SKIP",
       "reason": "hangs", "link": "L"}]})");
  const std::vector<Result> results = Run(e, {"endless_loop"});  // Default timeout: 60 s.
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].verdict, Verdict::kPass);
  EXPECT_EQ(results[1].verdict, Verdict::kSkip);
  EXPECT_EQ(results[1].message, "skipped as declared: hangs (L)");
  EXPECT_EQ(results[1].seconds, 0);
}

}  // namespace
}  // namespace mm::conformance
