// Reports: escaping for each format, and the contents CI systems and people read.
#include "conformance/report/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EscapeTest, Json) {
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\te\x01"), "a\\\"b\\\\c\\nd\\te\\u0001");
  EXPECT_EQ(JsonEscape("caf\xC3\xA9"), "caf\xC3\xA9");            // Valid UTF-8 kept.
  EXPECT_EQ(JsonEscape("bad\xFF"), "bad\xEF\xBF\xBD");            // Invalid byte -> U+FFFD.
  EXPECT_EQ(JsonEscape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // Overlong '/' refused.
}

TEST(EscapeTest, Xml) {
  EXPECT_EQ(XmlEscape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
  EXPECT_EQ(XmlEscape("line\nnext"), "line&#10;next");
  EXPECT_EQ(XmlEscape("bell\x07"), "bell\xEF\xBF\xBD");  // Not representable in XML 1.0.
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
  Result unsupported = pass;
  unsupported.case_name = "test_b";
  unsupported.backend = "other";
  unsupported.verdict = Verdict::kUnsupported;
  unsupported.message = "no f64 kernel";
  unsupported.vs_expected.reset();
  report.results = {pass, fail, unsupported};
  report.skipped = {{"test_add", "/data/test_add", "not a MatMul case: op Add"}};
  report.official.cases = {{"test_matmul_2d", OfficialStatus::State::kMissing, {}, {}}};
  report.exit_code = 1;
  return report;
}

TEST(JsonReportTest, HasTheFieldsToolsRead) {
  const std::string json = ToJson(SampleReport());
  for (const char* key :
       {"\"summary\": {\"total\": 3, \"PASS\": 1, \"FAIL\": 1, \"UNSUPPORTED\": 1, \"ERROR\": 0}",
        "\"case\": \"test_a\"", "\"data_set\": \"test_data_set_0\"", "\"backend\": \"other\"",
        "\"dtype\": \"float\"", "\"verdict\": \"FAIL\"", "\"max_abs_error\": 1",
        "\"max_rel_error\": \"inf\"", "\"vs_reference\": \"differs\"",
        "\"missing\": [\"test_matmul_2d\"]", "\"reason\": \"not a MatMul case: op Add\"",
        "\"exit_code\": 1"}) {
    EXPECT_THAT(json, HasSubstr(key));
  }
  EXPECT_THAT(json, HasSubstr("expected <1>, got \\\"2\\\""));
}

TEST(JUnitReportTest, FailuresAndSkips) {
  const std::string xml = ToJUnitXml(SampleReport());
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"conformance.other\" tests=\"2\" failures=\"1\" "
                             "errors=\"0\" skipped=\"1\">"));
  EXPECT_THAT(xml, HasSubstr("<testcase name=\"test_a/test_data_set_0\" "
                             "classname=\"conformance.other\" file=\"\" time=\"0.000250\">"));
  EXPECT_THAT(xml, HasSubstr("<failure type=\"FAIL\" message=\"1 of 2 elements differ; worst at "
                             "[1]: expected &lt;1&gt;, got &quot;2&quot; | x\">"));
  EXPECT_THAT(xml, HasSubstr("<skipped message=\"UNSUPPORTED: no f64 kernel\"/>"));
  // The official corpus is incomplete but not required: a skipped test, not a failure.
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"official-corpus\" tests=\"1\" failures=\"0\""));
}

TEST(JUnitReportTest, StrictTurnsUnsupportedIntoFailureAndRequiredOfficialFails) {
  Report report = SampleReport();
  report.strict = true;
  report.require_official = true;
  const std::string xml = ToJUnitXml(report);
  EXPECT_THAT(xml, HasSubstr("<failure type=\"UNSUPPORTED\""));
  EXPECT_THAT(xml, Not(HasSubstr("<skipped message=\"UNSUPPORTED")));
  EXPECT_THAT(xml, HasSubstr("<failure type=\"OFFICIAL\""));
}

TEST(MarkdownReportTest, MatrixAndEscapedDetails) {
  const std::string md = ToMarkdown(SampleReport());
  EXPECT_THAT(md, HasSubstr("| Case | dtype | A x B | reference | other |"));
  EXPECT_THAT(md, HasSubstr("| test\\_a | float | [2,3] x [3] | PASS | FAIL |"));
  EXPECT_THAT(md, HasSubstr("| test\\_b | float | [2,3] x [3] | - | UNSUPPORTED |"));
  EXPECT_THAT(md, HasSubstr("expected &lt;1&gt;, got \"2\" \\| x"));
  EXPECT_THAT(md, HasSubstr("| test\\_matmul\\_2d | missing |"));
}

TEST(ConsoleReportTest, OneLinePerCaseAndBackendAndASummary) {
  std::ostringstream out;
  WriteConsole(SampleReport(), out);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("PASS        test_a"));
  EXPECT_THAT(text, HasSubstr("FAIL        test_a"));
  EXPECT_THAT(text, HasSubstr("UNSUPPORTED test_b"));
  EXPECT_THAT(text, HasSubstr("official corpus: 0 of 1 intact, 1 missing"));
  EXPECT_THAT(text, HasSubstr("summary: 3 results (3 case x backend): 1 PASS, 1 FAIL, "
                              "1 UNSUPPORTED, 0 ERROR; exit 1"));
  std::ostringstream quiet;
  WriteConsole(SampleReport(), quiet, /*quiet=*/true);
  EXPECT_THAT(quiet.str(), Not(HasSubstr("PASS        test_a")));
  EXPECT_THAT(quiet.str(), ::testing::StartsWith("official corpus: 0 of 1 intact"));
}

}  // namespace
}  // namespace mm::conformance
