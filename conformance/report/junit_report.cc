#include "mm/conformance/report/junit_report.h"

#include <algorithm>
#include <pugixml.hpp>
#include <sstream>

#include "junit_testcase.h"
#include "mm/conformance/report/escape.h"

namespace mm::conformance {
namespace {

// Sets attribute `name` to XML-safe `value`.
void Attr(pugi::xml_node node, const char* name, std::string_view value) {
  node.append_attribute(name) = XmlSafeText(value).c_str();
}
void Attr(pugi::xml_node node, const char* name, long long value) {
  node.append_attribute(name) = value;
}

void Property(pugi::xml_node properties, std::string_view name, std::string_view value) {
  pugi::xml_node p = properties.append_child("property");
  Attr(p, "name", name);
  Attr(p, "value", value);
}

// An element of `kind` ("failure", "error", "skipped") with a type, message and text.
void Outcome(pugi::xml_node testcase, const char* kind, std::string_view type,
             std::string_view message, std::string_view text) {
  pugi::xml_node node = testcase.append_child(kind);
  if (!type.empty()) Attr(node, "type", type);
  Attr(node, "message", message);
  if (!text.empty()) node.text() = XmlSafeText(text).c_str();
}

// The suite "resources": a test case per backend with figures (what its calls left behind, as
// properties); a backend with a finding is a failure under --strict, else the finding is in its
// <system-out>.
void AppendResourcesSuite(pugi::xml_node suites, const ReportHeader& h) {
  const Report& report = *h.run;
  const int findings = h.resource_findings;
  pugi::xml_node suite = suites.append_child("testsuite");
  Attr(suite, "name", "resources");
  Attr(suite, "tests", static_cast<long long>(report.resources.size()));
  Attr(suite, "failures", report.strict ? findings : 0);
  Attr(suite, "errors", 0);
  Attr(suite, "skipped", 0);
  for (const BackendResources& f : report.resources) {
    pugi::xml_node testcase = suite.append_child("testcase");
    Attr(testcase, "name", f.backend);
    Attr(testcase, "classname", "conformance.resources");
    pugi::xml_node properties = testcase.append_child("properties");
    Property(properties, "calls_after_warm_up", std::to_string(f.calls_after_warm_up));
    Property(properties, "processes", std::to_string(f.processes));
    Property(properties, "rss_growth_per_call", ByteSize(f.RssGrowthPerCall()));
    Property(properties, "fd_growth_per_call", FormatShort(f.FdGrowthPerCall()));
    Property(properties, "thread_growth_per_call", FormatShort(f.ThreadGrowthPerCall()));
    Property(properties, "spinning_threads", std::to_string(f.spinning_threads));
    if (f.findings.empty()) continue;
    std::string text;
    for (const std::string& finding : f.findings) text += (text.empty() ? "" : "\n") + finding;
    if (report.strict) {
      Outcome(testcase, "failure", "RESOURCES", "resources (--strict): " + f.findings.front(),
              text);
    } else {
      testcase.append_child("system-out").text() =
          XmlSafeText("resources (a failure under --strict): " + text).c_str();
    }
  }
}

// The counts of the whole document, on <testsuites>.
void AppendTotals(pugi::xml_node suites, const ReportHeader& h) {
  const Report& report = *h.run;
  const Summary& sum = h.summary;
  const int interrupted = report.interrupted ? 1 : 0;
  Attr(suites, "name", "mm-conformance");
  Attr(suites, "tests",
       sum.total() + static_cast<long long>(report.resources.size()) + 1 + interrupted);
  Attr(suites, "failures",
       sum[Verdict::kFail] + sum[Verdict::kXPass] + h.rule_failures + h.strict_failures +
           (h.official.failed ? 1 : 0));
  Attr(suites, "errors", sum[Verdict::kError] + interrupted);
  Attr(suites, "skipped",
       sum[Verdict::kUnsupported] - (report.strict ? sum[Verdict::kUnsupported] : 0) +
           sum[Verdict::kXFail] + sum[Verdict::kSkip]);
}

// The tripwire as a test of its own, so a CI dashboard shows a missing official case.
void AppendOfficialSuite(pugi::xml_node suites, const ReportHeader& h) {
  std::string problems;
  for (const OfficialStatus& s : h.run->official.cases) {
    if (s.state == OfficialStatus::State::kIntact) continue;
    problems += std::string(OfficialStateName(s.state)) + ": " + s.name;
    for (const std::string& p : s.problems) problems += "\n  " + p;
    problems += "\n";
  }
  const bool failed = h.official.failed;
  pugi::xml_node suite = suites.append_child("testsuite");
  Attr(suite, "name", "official-corpus");
  Attr(suite, "tests", 1);
  Attr(suite, "failures", failed ? 1 : 0);
  Attr(suite, "errors", 0);
  Attr(suite, "skipped", !h.official.complete && !failed ? 1 : 0);
  pugi::xml_node testcase = suite.append_child("testcase");
  Attr(testcase, "name", "official_corpus");
  Attr(testcase, "classname", "conformance.official");
  if (failed) {
    Outcome(testcase, "failure", "OFFICIAL", "official corpus incomplete or altered", problems);
  } else if (!h.official.complete) {
    Outcome(testcase, "skipped", "", "official corpus incomplete (not required): " + problems, "");
  }
}

// An interrupted run is an error a dashboard shows, with the cases it did not run. `text`:
// InterruptionText's.
void AppendInterruptedSuite(pugi::xml_node suites, const Interruption& i, std::string_view text) {
  std::string not_run;
  for (const std::string& c : i.incomplete) not_run += "incomplete: " + c + "\n";
  for (const std::string& c : i.not_run) not_run += "not run: " + c + "\n";
  pugi::xml_node run = suites.append_child("testsuite");
  Attr(run, "name", "interrupted");
  Attr(run, "tests", 1);
  Attr(run, "failures", 0);
  Attr(run, "errors", 1);
  Attr(run, "skipped", 0);
  pugi::xml_node tc = run.append_child("testcase");
  Attr(tc, "name", "run");
  Attr(tc, "classname", "conformance.interrupted");
  Outcome(tc, "error", "INTERRUPTED", text, not_run);
}

// The comment standing for suite `index`'s test cases until they are spliced in.
std::string SuiteMarkerText(std::size_t index) {
  return "@@mm-conformance-suite-" + std::to_string(index) + "@@";
}
std::string SuiteMarker(std::size_t index) { return "<!--" + SuiteMarkerText(index) + "-->"; }

// JUnit: one spool of <testcase> elements per backend, rendered as results arrive; the suites'
// counts are kept, and Finish writes the document around the spools. Results of backends not in
// the run's list are not in any suite (as before: suites are the run's backends).
class JUnitRenderer final : public ReportRenderer {
 public:
  JUnitRenderer(const std::vector<std::string>& backends, const Tolerance& tolerance,
                ToleranceRule rule, bool strict)
      : backends_(backends),
        tolerance_text_(ToleranceText(tolerance)),
        rule_(rule),
        strict_(strict) {
    for (std::size_t i = 0; i < backends.size(); ++i) {
      suites_.push_back(std::make_unique<Suite>());
    }
  }
  bool ok() const override {
    for (const auto& s : suites_) {
      if (!s->spool.ok()) return false;
    }
    return true;
  }
  void Add(const Result& r) override {
    const auto it = std::find(backends_.begin(), backends_.end(), r.backend);
    if (it == backends_.end()) return;
    Suite& suite = *suites_[static_cast<std::size_t>(it - backends_.begin())];
    ++suite.tests;
    suite.fail += (r.verdict != Verdict::kError && FailsUnder(r.verdict, rule_)) ||
                  (strict_ && r.verdict == Verdict::kUnsupported);
    suite.error += r.verdict == Verdict::kError;
    suite.skipped += (!strict_ && r.verdict == Verdict::kUnsupported) ||
                     r.verdict == Verdict::kXFail || r.verdict == Verdict::kSkip;
    text_.clear();
    AppendTestcase(text_, r, tolerance_text_, rule_, strict_);
    suite.spool.Write(text_);
  }
  void Finish(const ReportHeader& h, std::ostream& out) override {
    pugi::xml_document doc;
    pugi::xml_node decl = doc.append_child(pugi::node_declaration);
    decl.append_attribute("version") = "1.0";
    decl.append_attribute("encoding") = "UTF-8";
    pugi::xml_node suites = doc.append_child("testsuites");
    AppendTotals(suites, h);
    for (std::size_t i = 0; i < backends_.size(); ++i) AppendBackendSuite(suites, h, i);
    if (!h.run->resources.empty()) AppendResourcesSuite(suites, h);
    AppendOfficialSuite(suites, h);
    if (h.run->interrupted) AppendInterruptedSuite(suites, *h.run->interrupted, h.interruption);
    std::ostringstream text;
    doc.save(text, "  ", pugi::format_default, pugi::encoding_utf8);
    const std::string rendered = text.str();
    // Each suite's marker line is replaced by its spooled test cases.
    std::size_t from = 0;
    for (std::size_t i = 0; i < backends_.size(); ++i) {
      const std::string line = "    " + SuiteMarker(i) + "\n";
      const std::size_t at = rendered.find(line, from);
      if (at == std::string::npos) continue;
      out.write(rendered.data() + from, static_cast<std::streamsize>(at - from));
      suites_[i]->spool.CopyTo(out);
      from = at + line.size();
    }
    out.write(rendered.data() + from, static_cast<std::streamsize>(rendered.size() - from));
  }

 private:
  struct Suite {
    Spool spool;
    long long tests = 0;
    int fail = 0, error = 0, skipped = 0;
  };
  // The suite of backend `i`: its counts, its properties and the marker its test cases replace.
  void AppendBackendSuite(pugi::xml_node suites, const ReportHeader& h, std::size_t i) const {
    const Report& report = *h.run;
    const std::string& backend = backends_[i];
    const Suite& counts = *suites_[i];
    pugi::xml_node suite = suites.append_child("testsuite");
    Attr(suite, "name", "conformance." + backend);
    Attr(suite, "tests", counts.tests);
    Attr(suite, "failures", counts.fail);
    Attr(suite, "errors", counts.error);
    Attr(suite, "skipped", counts.skipped);
    pugi::xml_node properties = suite.append_child("properties");
    Property(properties, "machine", report.machine.ToString());
    Property(properties, "os", report.machine.os);
    for (const BackendInfo& info : report.backend_info) {
      if (info.name == backend) Property(properties, "runs_on", info.runs_on);
    }
    if (report.resumed) {
      Property(properties, "resumed_taken", std::to_string(report.resumed->taken));
      Property(properties, "resumed_rerun_inconsistent", std::to_string(report.resumed->rerun));
    }
    suite.append_child(pugi::node_comment).set_value(SuiteMarkerText(i).c_str());
  }
  std::vector<std::string> backends_;
  std::string tolerance_text_;
  ToleranceRule rule_;
  bool strict_;
  std::vector<std::unique_ptr<Suite>> suites_;
  std::string text_;  // Each result's text, in a buffer kept from result to result.
};

}  // namespace

std::unique_ptr<ReportRenderer> NewJUnitRenderer(const std::vector<std::string>& backends,
                                                 const Tolerance& tolerance, ToleranceRule rule,
                                                 bool strict) {
  return std::make_unique<JUnitRenderer>(backends, tolerance, rule, strict);
}

std::string ToJUnitXml(const Report& report) {
  JUnitRenderer renderer(report.backends, report.tolerance, report.rule, report.strict);
  for (const Result& r : report.results) renderer.Add(r);
  std::ostringstream out;
  renderer.Finish(MakeReportHeader(report, Summarize(report.results)), out);
  return out.str();
}

}  // namespace mm::conformance
