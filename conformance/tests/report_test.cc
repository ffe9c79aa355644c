// Reports: the contents CI systems and people read, checked by parsing what was written (JSON with
// nlohmann-json, XML with pugixml), and text that no format may be broken by.
#include "mm/conformance/report/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/escape.h"
#include "mm/conformance/report/json_report.h"
#include "mm/conformance/report/junit_report.h"
#include "mm/conformance/report/markdown_report.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report_files.h"
#include "mm/conformance/results/result_json.h"
#include "mm/conformance/tools/cli.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EscapeTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");            // Valid UTF-8 kept.
  EXPECT_EQ(ValidUtf8("bad\xFF"), "bad\xEF\xBF\xBD");            // Invalid byte -> U+FFFD.
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // Overlong '/' refused.
}

TEST(EscapeTest, XmlSafeTextDropsWhatXml10CannotHold) {
  EXPECT_EQ(XmlSafeText("<a href=\"x\">&'</a>"), "<a href=\"x\">&'</a>");  // pugixml escapes.
  EXPECT_EQ(XmlSafeText("line\nnext\ttab"), "line\nnext\ttab");
  EXPECT_EQ(XmlSafeText("bell\x07"), "bell\xEF\xBF\xBD");  // Not representable in XML 1.0.
  EXPECT_EQ(XmlSafeText("bad\xFF"), "bad\xEF\xBF\xBD");
}

TEST(EscapeTest, Markdown) {
  EXPECT_EQ(MarkdownEscape("a|b"), "a\\|b");
  EXPECT_EQ(MarkdownEscape("x_y*z`"), "x\\_y\\*z\\`");
  EXPECT_EQ(MarkdownEscape("one\ntwo"), "one<br>two");
  EXPECT_EQ(MarkdownEscape("<script>"), "&lt;script&gt;");
}

TEST(EscapeTest, PrintableForLogs) {
  EXPECT_EQ(PrintableText("op\nAdd\x1b[31m"),
            "op\xEF\xBF\xBD"
            "Add\xEF\xBF\xBD[31m");
  EXPECT_EQ(PrintableText("caf\xC3\xA9"), "caf\xC3\xA9");
}

Report SampleReport() {
  Report report;
  report.version = "0.1.0";
  report.backends = {"reference", "other"};
  Result pass;
  pass.case_name = "test_a";
  pass.data_set = "test_data_set_0";
  pass.backend = "reference";
  pass.dtype = DType::kFloat;
  pass.a_dims = {2, 3};
  pass.b_dims = {3};
  pass.verdict = Verdict::kPass;
  pass.message = "all 2 elements bit-identical";
  pass.vs_expected = Comparison{.match = true,
                                .mismatch = {},
                                .elements = 2,
                                .differing = 0,
                                .bitwise_equal = true,
                                .max_abs_error = 0,
                                .max_rel_error = 0,
                                .worst = {}};
  pass.vs_reference = "is reference";
  pass.implementation = "reference i-k-j loops, double accumulation, one rounding to float";
  pass.seconds = 0.00025;
  Result fail = pass;
  fail.backend = "other";
  fail.verdict = Verdict::kFail;
  fail.message = "1 of 2 elements differ; worst at [1]: expected <1>, got \"2\" | x";
  fail.vs_expected = Comparison{.match = false,
                                .mismatch = {},
                                .elements = 2,
                                .differing = 1,
                                .bitwise_equal = false,
                                .max_abs_error = 1,
                                .max_rel_error = std::numeric_limits<double>::infinity(),
                                .worst = {}};
  fail.vs_reference = "differs";
  fail.implementation = "oneDNN gemm:jit (ISA avx2)";
  fail.support_note = "bf16 via f32: no bf16 matmul on this CPU (avx2)";
  Result unsupported = pass;
  unsupported.case_name = "test_b";
  unsupported.backend = "other";
  unsupported.verdict = Verdict::kUnsupported;
  unsupported.message = "no f64 kernel";
  unsupported.vs_expected.reset();
  unsupported.implementation.clear();
  unsupported.support_note.clear();
  Result error = unsupported;
  error.case_name = "test_c";
  error.verdict = Verdict::kError;
  error.message = "invalid case: bad\xFF byte and a bell\x07 in model.onnx";
  report.results = {pass, fail, unsupported, error};
  report.backend_info = {{"reference", "the oracle", "mm reference: scalar loops"},
                         {"other", "test", "oneDNN 2.6.3, effective ISA avx2"}};
  report.machine = {.cpu_model = "AMD EPYC",
                    .logical_cpus = 2,
                    .cpu_features = "sse4_1 avx avx2 fma",
                    .omp_num_threads = "2",
                    .kernel_variables = {{"ONEDNN_MAX_CPU_ISA", "AVX2"}},
                    .os = "Linux 6.1 x86_64",
                    .compiler = "g++ 12"};
  report.loader_versions = "protobuf 3.21.12, ONNX schemas up to opset 17";
  report.skipped = {{"test_add", "/data/test_add", "not a MatMul case: op Add"}};
  report.official.cases = {{"test_matmul_2d", OfficialStatus::State::kMissing, {}, {}}};
  report.exit_code = 1;
  return report;
}

TEST(JsonReportTest, HasTheFieldsToolsRead) {
  const nlohmann::json json = nlohmann::json::parse(ToJson(SampleReport()));
  EXPECT_EQ(json["summary"], nlohmann::json::parse(
                                 R"({"total": 4, "PASS": 1, "FAIL": 1, "UNSUPPORTED": 1, "ERROR": 1,
                    "BOUND": 0, "IMPRECISE": 0, "XFAIL": 0, "XPASS": 0, "SKIP": 0,
                    "conformance_gaps": 0})"));
  EXPECT_EQ(json["exit_code"], 1);
  ASSERT_EQ(json["results"].size(), 4u);
  const nlohmann::json& fail = json["results"][1];
  EXPECT_EQ(fail["case"], "test_a");
  EXPECT_EQ(fail["data_set"], "test_data_set_0");
  EXPECT_EQ(fail["backend"], "other");
  EXPECT_EQ(fail["dtype"], "float");
  EXPECT_EQ(fail["verdict"], "FAIL");
  EXPECT_EQ(fail["max_abs_error"], 1);
  EXPECT_EQ(fail["max_rel_error"], "inf");
  EXPECT_EQ(fail["vs_reference"], "differs");
  EXPECT_EQ(fail["implementation"], "oneDNN gemm:jit (ISA avx2)");
  EXPECT_EQ(fail["support_note"], "bf16 via f32: no bf16 matmul on this CPU (avx2)");
  // Quotes and markup come back exactly as they were.
  EXPECT_EQ(fail["message"], "1 of 2 elements differ; worst at [1]: expected <1>, got \"2\" | x");
  EXPECT_TRUE(json["results"][2]["implementation"].is_null());
  // Invalid UTF-8 from a file never makes the report unreadable.
  EXPECT_EQ(json["results"][3]["message"],
            "invalid case: bad\xEF\xBF\xBD byte and a bell\x07 in model.onnx");
  EXPECT_EQ(json["official"]["missing"], nlohmann::json::parse(R"(["test_matmul_2d"])"));
  EXPECT_EQ(json["skipped"][0]["reason"], "not a MatMul case: op Add");
  EXPECT_EQ(json["machine"]["cpu_model"], "AMD EPYC");
  EXPECT_EQ(json["machine"]["logical_cpus"], 2);
  EXPECT_EQ(json["machine"]["onednn_max_cpu_isa"], "AVX2");
  EXPECT_EQ(json["machine"]["loader"], "protobuf 3.21.12, ONNX schemas up to opset 17");
  EXPECT_EQ(json["runs_on"]["other"], "oneDNN 2.6.3, effective ISA avx2");
  EXPECT_EQ(json["backends"], nlohmann::json::parse(R"(["reference", "other"])"));
}

// The JSON report writes each result without building its JSON (ResultJsonWriter): the text must
// be exactly what nlohmann's dump of ResultToJson gives, indented or on one line, for every shape
// of result, or a report written as results arrive would differ from the same report rendered
// whole.
TEST(JsonReportTest, AResultIsWrittenAsItsJsonDumps) {
  std::vector<Result> results = SampleReport().results;
  // Every optional part set, non-finite numbers, escapes and invalid UTF-8.
  Result full = results[1];
  full.case_index = 7;
  full.expectation = "XFAIL: tracked";
  full.seconds = std::numeric_limits<double>::quiet_NaN();
  full.vs_expected->worst = WorstElement{.flat_index = 5,
                                         .index = {1, 2},
                                         .expected = "1.5",
                                         .actual = "nan",
                                         .expected_value = 1.5,
                                         .actual_value = std::numeric_limits<double>::quiet_NaN(),
                                         .abs_error = std::numeric_limits<double>::infinity(),
                                         .rel_error = -std::numeric_limits<double>::infinity(),
                                         .allowed = 1e-05};
  full.vs_bound = BoundCheck{.elements = 2, .outside = 1, .unbounded = 0, .worst = {}};
  full.vs_bound->worst = full.vs_expected->worst;
  full.vs_bound->worst->index.clear();  // A scalar: "index": [].
  full.vs_reference_comparison = full.vs_expected;
  full.vs_reference_comparison->mismatch = "shape [2] vs [3]";
  full.message = "tab\there, quote \" backslash \\ newline\n control \x01 del \x7F bad \xC3(";
  full.source = "/data/\xFF\xFE";
  full.resources = CallResources{.process = 77,
                                 .call = 3,
                                 .rss_bytes = 1LL << 40,
                                 .rss_growth_bytes = -4096,
                                 .fds = 9,
                                 .fd_growth = 1,
                                 .threads = 3,
                                 .thread_growth = 0,
                                 .spinning_threads = 0};
  results.push_back(full);
  full.resources->spinning_threads = -1;  // Not looked: null.
  results.push_back(full);
  Result bare;  // Nothing but the defaults: no dtype, no data set, no comparisons.
  results.push_back(bare);
  ResultJsonWriter writer;
  for (const Result& r : results) {
    EXPECT_EQ(
        writer.Render(r, ResultJsonWriter::kOneLine),
        ResultToJson(r).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace))
        << r.case_name << " on one line";
    for (int indent : {0, 4}) {
      const std::string expected =
          ResultToJson(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      std::string dumped;
      nlohmann::detail::serializer<nlohmann::ordered_json> serializer(
          nlohmann::detail::output_adapter<char>(dumped), ' ',
          nlohmann::ordered_json::error_handler_t::replace);
      serializer.dump(ResultToJson(r), true, false, 2, static_cast<unsigned>(indent));
      if (indent == 0) {
        EXPECT_EQ(dumped, expected);
      }
      EXPECT_EQ(writer.Render(r, indent), dumped) << r.case_name << " at indent " << indent;
    }
  }
}

// The XML document of `text`, failing the test when it does not parse.
pugi::xml_document ParseXml(const std::string& text) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_string(text.c_str());
  EXPECT_TRUE(parsed) << parsed.description() << " at offset " << parsed.offset;
  return doc;
}

TEST(JUnitReportTest, FailuresSkipsErrorsAndWhatRan) {
  const pugi::xml_document doc = ParseXml(ToJUnitXml(SampleReport()));
  const pugi::xml_node suites = doc.child("testsuites");
  EXPECT_EQ(suites.attribute("tests").as_int(), 5);
  EXPECT_EQ(suites.attribute("errors").as_int(), 1);
  const pugi::xml_node other =
      suites.find_child_by_attribute("testsuite", "name", "conformance.other");
  ASSERT_TRUE(other);
  EXPECT_EQ(other.attribute("tests").as_int(), 3);
  EXPECT_EQ(other.attribute("failures").as_int(), 1);
  EXPECT_EQ(other.attribute("errors").as_int(), 1);
  EXPECT_EQ(other.attribute("skipped").as_int(), 1);
  EXPECT_STREQ(other.child("properties")
                   .find_child_by_attribute("property", "name", "runs_on")
                   .attribute("value")
                   .value(),
               "oneDNN 2.6.3, effective ISA avx2");
  EXPECT_THAT(other.child("properties")
                  .find_child_by_attribute("property", "name", "machine")
                  .attribute("value")
                  .value(),
              HasSubstr("AMD EPYC, 2 logical CPUs"));
  const pugi::xml_node failed =
      other.find_child_by_attribute("testcase", "name", "test_a/test_data_set_0");
  ASSERT_TRUE(failed);
  EXPECT_STREQ(failed.attribute("classname").value(), "conformance.other");
  EXPECT_STREQ(failed.attribute("time").value(), "0.000250");
  EXPECT_STREQ(failed.child("failure").attribute("message").value(),
               "1 of 2 elements differ; worst at [1]: expected <1>, got \"2\" | x");
  EXPECT_STREQ(failed.child("properties")
                   .find_child_by_attribute("property", "name", "implementation")
                   .attribute("value")
                   .value(),
               "oneDNN gemm:jit (ISA avx2)");
  EXPECT_THAT(failed.child("failure").text().get(), HasSubstr("computed by: oneDNN gemm:jit"));
  const pugi::xml_node skipped =
      other.find_child_by_attribute("testcase", "name", "test_b/test_data_set_0");
  EXPECT_STREQ(skipped.child("skipped").attribute("message").value(), "UNSUPPORTED: no f64 kernel");
  // A bell character cannot be in XML 1.0: replaced, so the document still parses.
  const pugi::xml_node errored =
      other.find_child_by_attribute("testcase", "name", "test_c/test_data_set_0");
  EXPECT_STREQ(errored.child("error").attribute("message").value(),
               "invalid case: bad\xEF\xBF\xBD byte and a bell\xEF\xBF\xBD in model.onnx");
  // The official corpus is incomplete but not required: a skipped test, not a failure.
  const pugi::xml_node official =
      suites.find_child_by_attribute("testsuite", "name", "official-corpus");
  EXPECT_EQ(official.attribute("failures").as_int(), 0);
  EXPECT_TRUE(official.child("testcase").child("skipped"));
}

// Test cases are written as text, not through pugixml's nodes: what a reader parses back must be
// every character of the result's texts, markup characters, tabs and line ends included (an
// attribute's literal tab or line end would be read as a space, a text's carriage return as a
// line feed).
TEST(JUnitReportTest, AReaderReadsBackEveryCharacterOfAResultsTexts) {
  const std::string hostile = "amp & lt < gt > quote \" apos ' tab\t lf\n cr\r crlf\r\n end";
  Report report = SampleReport();
  Result r = report.results[0];
  r.case_name = "test_" + hostile;
  r.source = hostile;
  r.message = hostile;
  r.implementation = hostile;
  r.support_note = hostile;
  r.verdict = Verdict::kFail;
  report.results = {r};
  const pugi::xml_document doc = ParseXml(ToJUnitXml(report));
  const pugi::xml_node testcase =
      doc.child("testsuites")
          .find_child_by_attribute("testsuite", "name", ("conformance." + r.backend).c_str())
          .child("testcase");
  ASSERT_TRUE(testcase);
  EXPECT_EQ(std::string(testcase.attribute("name").value()), r.case_name + "/" + r.data_set);
  EXPECT_EQ(std::string(testcase.attribute("file").value()), hostile);
  for (const char* property : {"implementation", "by_conversion"}) {
    EXPECT_EQ(std::string(testcase.child("properties")
                              .find_child_by_attribute("property", "name", property)
                              .attribute("value")
                              .value()),
              hostile)
        << property;
  }
  EXPECT_EQ(std::string(testcase.child("failure").attribute("message").value()), hostile);
  const std::string text = testcase.child("failure").text().get();
  EXPECT_EQ(text.substr(0, hostile.size()), hostile);
  EXPECT_THAT(text, HasSubstr("\ncomputed by: " + hostile + "\n"));
}

TEST(JUnitReportTest, StrictTurnsUnsupportedIntoFailureAndRequiredOfficialFails) {
  Report report = SampleReport();
  report.strict = true;
  report.require_official = true;
  const pugi::xml_document doc = ParseXml(ToJUnitXml(report));
  const pugi::xml_node suites = doc.child("testsuites");
  const pugi::xml_node other =
      suites.find_child_by_attribute("testsuite", "name", "conformance.other");
  const pugi::xml_node unsupported =
      other.find_child_by_attribute("testcase", "name", "test_b/test_data_set_0");
  EXPECT_STREQ(unsupported.child("failure").attribute("type").value(), "UNSUPPORTED");
  EXPECT_FALSE(unsupported.child("skipped"));
  const pugi::xml_node official =
      suites.find_child_by_attribute("testsuite", "name", "official-corpus");
  EXPECT_STREQ(official.child("testcase").child("failure").attribute("type").value(), "OFFICIAL");
  EXPECT_EQ(suites.attribute("failures").as_int(), 3);  // FAIL + strict UNSUPPORTED + official.
}

TEST(MarkdownReportTest, MatrixAndEscapedDetails) {
  const std::string md = ToMarkdown(SampleReport());
  EXPECT_THAT(md, HasSubstr("| Case | dtype | A x B | reference | other |"));
  EXPECT_THAT(md, HasSubstr("| test\\_a | float | [2,3] x [3] | PASS | FAIL |"));
  EXPECT_THAT(md, HasSubstr("| test\\_b | float | [2,3] x [3] | - | UNSUPPORTED |"));
  EXPECT_THAT(md, HasSubstr("expected &lt;1&gt;, got \"2\" \\| x"));
  EXPECT_THAT(md, HasSubstr("| test\\_matmul\\_2d | missing |"));
  EXPECT_THAT(md, HasSubstr("| CPU | AMD EPYC, 2 logical CPUs |"));
  EXPECT_THAT(md, HasSubstr("| other runs on | oneDNN 2.6.3, effective ISA avx2 |"));
  EXPECT_THAT(md, HasSubstr("| oneDNN gemm:jit (ISA avx2) |"));
}

TEST(ConsoleReportTest, OneLinePerCaseAndBackendAndASummary) {
  std::ostringstream out;
  WriteConsole(SampleReport(), out);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("PASS        test_a"));
  EXPECT_THAT(text, HasSubstr("FAIL        test_a"));
  EXPECT_THAT(text, HasSubstr("UNSUPPORTED test_b"));
  EXPECT_THAT(text, HasSubstr("[ran: oneDNN gemm:jit (ISA avx2)]"));
  EXPECT_THAT(text, HasSubstr("machine: AMD EPYC, 2 logical CPUs (sse4_1 avx avx2 fma), "
                              "OMP_NUM_THREADS=2, ONEDNN_MAX_CPU_ISA=AVX2"));
  EXPECT_THAT(text, HasSubstr("  other: oneDNN 2.6.3, effective ISA avx2"));
  EXPECT_THAT(text, HasSubstr("summary: 4 results (4 case x backend): 1 PASS, 1 FAIL, "
                              "1 UNSUPPORTED, 1 ERROR, 0 BOUND, 0 IMPRECISE (BOUND fails under "
                              "--tolerance onnx); exit 1"));
  std::ostringstream quiet;
  WriteConsole(SampleReport(), quiet, /*quiet=*/true);
  EXPECT_THAT(quiet.str(), Not(HasSubstr("PASS        test_a")));
  EXPECT_THAT(quiet.str(), ::testing::StartsWith("1 model(s) skipped"));
}

// The console is one renderer of the run's fan-out (ReportFiles), as the files are: results given
// one at a time write what WriteConsole writes for the whole report, and the fan-out counts the
// summary and the expectations' matches the report ends with, each result once.
TEST(ReportFilesTest, TheConsoleIsARendererOfTheFanOutAndEachResultIsCountedOnce) {
  Report report = SampleReport();
  auto expectations = ParseExpectations(R"({"expectations": [{"case": "test_c", "backend": "*",
      "expect": "XFAIL", "reason": "r", "link": "l"}]})",
                                        "known.json");
  ASSERT_TRUE(expectations.ok()) << expectations.status();
  report.expectations = *expectations;
  Report header = report;
  header.results.clear();
  CountMatches(*report.expectations, report.results);
  std::ostringstream whole;
  WriteConsole(report, whole);

  std::ostringstream streamed;
  ReportFiles reports;
  ASSERT_TRUE(reports.Open("", "", "", report).ok());
  reports.AddStream(std::make_unique<ConsoleWriter>(streamed, false, report.tolerance, 6, 9),
                    streamed);
  reports.CountMatches(&*header.expectations);
  for (const Result& r : report.results) reports.Add(r);
  EXPECT_EQ(reports.summary().total(), 4);
  EXPECT_EQ(reports.summary()[Verdict::kFail], 1);
  EXPECT_EQ(header.expectations->entries[0].matched, 1);
  bool after_streams_called = false;
  ASSERT_TRUE(reports.Finish(header, [&] { after_streams_called = true; }).ok());
  EXPECT_TRUE(after_streams_called);
  EXPECT_EQ(streamed.str(), whole.str());
}

// A conformance gap (a refusal of a declared dtype's problem) is an ERROR every format shows as
// such, and every summary counts; an ERROR that merely mentions the words is not one.
TEST(ConformanceGapReportTest, EveryFormatShowsAndCountsTheGap) {
  Report report = SampleReport();
  Result gap = report.results.back();
  gap.case_name = "test_d";
  gap.message = "conformance gap: driver 'x' refused the shape of float [3] x [3,4]: rank < 2";
  Result not_gap = gap;
  not_gap.case_name = "test_e";
  not_gap.message = "backend failed: no conformance gap: here";
  report.results.push_back(gap);
  report.results.push_back(not_gap);
  std::ostringstream console;
  WriteConsole(report, console);
  EXPECT_THAT(console.str(), HasSubstr(", 3 ERROR (1 conformance gap), 0 BOUND"));
  EXPECT_EQ(nlohmann::json::parse(ToJson(report))["summary"]["conformance_gaps"], 1);
  EXPECT_EQ(nlohmann::json::parse(ToJson(SampleReport()))["summary"]["conformance_gaps"], 0);
  const pugi::xml_document doc = ParseXml(ToJUnitXml(report));
  const auto errors = doc.select_nodes("//error[@type='CONFORMANCE GAP']");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors.first().node().attribute("message").as_string(),
              ::testing::StartsWith("conformance gap: driver 'x'"));
  const std::string md = ToMarkdown(report);
  EXPECT_THAT(md,
              HasSubstr("| test\\_d | test\\_data\\_set\\_0 | other | ERROR (conformance gap) |"));
  EXPECT_THAT(md, HasSubstr("| test\\_e | test\\_data\\_set\\_0 | other | ERROR |"));
  EXPECT_THAT(md, HasSubstr("3 ERROR (1 conformance gap), 0 BOUND"));
  // Without a gap, the summaries read as they always did.
  std::ostringstream plain;
  WriteConsole(SampleReport(), plain);
  EXPECT_THAT(plain.str(), HasSubstr(", 1 ERROR, 0 BOUND"));
}

// The official corpus gets a verdict on the console when the run requires it or holds one of its
// cases; a run over other data (none of them there, not required) is not told "0 intact".
TEST(ConsoleReportTest, TheOfficialCorpusIsJudgedOnlyWhereTheRunHasItOrRequiresIt) {
  Report report = SampleReport();
  std::ostringstream other_data;
  WriteConsole(report, other_data);
  EXPECT_THAT(other_data.str(), Not(HasSubstr("official corpus")));
  report.require_official = true;
  std::ostringstream required;
  WriteConsole(report, required);
  EXPECT_THAT(required.str(), HasSubstr("official corpus: 0 of 1 intact, 1 missing (required)"));
  report.require_official = false;
  report.official.cases[0].state = OfficialStatus::State::kAltered;
  std::ostringstream altered;
  WriteConsole(report, altered);
  EXPECT_THAT(altered.str(), HasSubstr("official corpus: 0 of 1 intact, 1 ALTERED"));
}

// A passing run in which "other" leaked 64 MiB on each of its 10 calls (in 2 processes) and the
// reference left nothing behind.
Report LeakingReport(bool strict) {
  Report report = SampleReport();
  report.strict = strict;
  const Result pass = report.results[0];
  report.results.clear();
  for (int i = 0; i < 10; ++i) {
    for (const char* backend : {"reference", "other"}) {
      Result r = pass;
      r.case_name = "test_" + std::to_string(i);
      r.backend = backend;
      r.vs_reference = r.backend == "reference" ? "is reference" : "bit-identical";
      const bool leaks = r.backend == "other";
      r.resources = CallResources{.process = 100 + i / 5,
                                  .call = i % 5 + 1,
                                  .rss_bytes = (i % 5 + 1) * (leaks ? 64 : 0) * (1LL << 20),
                                  .rss_growth_bytes = leaks ? 64LL << 20 : 0};
      report.results.push_back(r);
    }
  }
  report.resources = TallyResources(report.results, report.backends);
  report.exit_code = ExitCodeOfSummary(report, Summarize(report.results), true);
  return report;
}

TEST(ResourceReportTest, ALeakIsAFindingWithItsFigureInEveryReportAndFailsUnderStrict) {
  const Report lenient = LeakingReport(false), strict = LeakingReport(true);
  const std::string finding =
      "resident memory grows by 64.0 MiB per call (mean of 8 calls after warm-up, in 2 "
      "processes)";
  EXPECT_EQ(lenient.exit_code, kExitPassed);
  EXPECT_EQ(strict.exit_code, kExitFailed);
  EXPECT_EQ(ExitCodeOf(strict, true), kExitFailed);  // Tallied from the results alone too.

  std::ostringstream console;
  WriteConsole(strict, console, /*quiet=*/true);
  EXPECT_THAT(console.str(),
              HasSubstr("resources: other: " + finding + " (fails under --strict)\n"));
  EXPECT_THAT(console.str(), Not(HasSubstr("resources: reference")));

  const nlohmann::json json = nlohmann::json::parse(ToJson(strict));
  const nlohmann::json& other = json["resources"]["backends"]["other"];
  EXPECT_EQ(other["rss_growth_per_call_bytes"], 64 << 20);
  EXPECT_EQ(other["calls_after_warm_up"], 8);
  EXPECT_EQ(other["processes"], 2);
  EXPECT_EQ(other["findings"], nlohmann::json::array({finding}));
  EXPECT_EQ(json["resources"]["backends"]["reference"]["findings"], nlohmann::json::array());
  EXPECT_EQ(json["resources"]["backends_with_findings"], 1);
  EXPECT_EQ(json["resources"]["thresholds"]["rss_growth_per_call_bytes"], 1 << 20);
  EXPECT_EQ(json["results"][1]["resources"]["rss_growth_bytes"], 64 << 20);

  for (const Report* report : {&lenient, &strict}) {
    const pugi::xml_document doc = ParseXml(ToJUnitXml(*report));
    const pugi::xml_node suites = doc.child("testsuites");
    const pugi::xml_node suite = suites.find_child_by_attribute("testsuite", "name", "resources");
    EXPECT_EQ(suite.attribute("tests").as_int(), 2);
    const pugi::xml_node leaky = suite.find_child_by_attribute("testcase", "name", "other");
    EXPECT_STREQ(leaky.child("properties")
                     .find_child_by_attribute("property", "name", "rss_growth_per_call")
                     .attribute("value")
                     .value(),
                 "64.0 MiB");
    const pugi::xml_node clean = suite.find_child_by_attribute("testcase", "name", "reference");
    EXPECT_FALSE(clean.child("failure"));
    EXPECT_FALSE(clean.child("system-out"));
    if (report->strict) {
      EXPECT_STREQ(leaky.child("failure").attribute("type").value(), "RESOURCES");
      EXPECT_EQ(std::string(leaky.child("failure").text().get()), finding);
      EXPECT_EQ(suite.attribute("failures").as_int(), 1);
      EXPECT_EQ(suites.attribute("failures").as_int(), 1);
    } else {
      EXPECT_FALSE(leaky.child("failure"));
      EXPECT_THAT(leaky.child("system-out").text().get(), HasSubstr(finding));
      EXPECT_EQ(suites.attribute("failures").as_int(), 0);
    }
    EXPECT_EQ(suites.attribute("tests").as_int(), 20 + 2 + 1);  // Results, resources, official.
  }

  const std::string md = ToMarkdown(strict);
  EXPECT_THAT(md, HasSubstr("**Resources: 1 backend past a threshold (failures under --strict); "
                            "see Resources.**"));
  EXPECT_THAT(md, HasSubstr("\n## Resources\n"));
  EXPECT_THAT(md, HasSubstr("| other | 8 | 2 | 64.0 MiB | 0 | 0 | 0 (0 look-outs) | **" +
                            MarkdownEscape(finding) + "** |"));
  EXPECT_THAT(md, HasSubstr("| reference | 8 | 2 | 0 B | 0 | 0 | 0 (0 look-outs) | - |"));
}

TEST(ResourceReportTest, ReportsWithoutFiguresHaveNoResourcesSection) {
  const Report report = SampleReport();  // No result carries figures (an older mm's, say).
  EXPECT_THAT(ToMarkdown(report), Not(HasSubstr("## Resources")));
  const pugi::xml_document doc = ParseXml(ToJUnitXml(report));
  EXPECT_FALSE(doc.child("testsuites").find_child_by_attribute("testsuite", "name", "resources"));
  EXPECT_EQ(nlohmann::json::parse(ToJson(report))["resources"]["backends"],
            nlohmann::json::object());
}

}  // namespace
}  // namespace mm::conformance
