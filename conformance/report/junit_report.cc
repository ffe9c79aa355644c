#include "conformance/report/junit_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <pugixml.hpp>
#include <sstream>

#include "conformance/report/escape.h"

namespace mm::conformance {
namespace {

// JUnit's time attribute is an xs:decimal for some readers: no exponent.
std::string JUnitSeconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6f", std::isfinite(seconds) ? seconds : 0.0);
  return buffer;
}

}  // namespace

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

// Appends the <testcase> of `r` to `suite`.
void AppendTestcase(pugi::xml_node suite, const Result* r, const std::string& backend,
                    const Tolerance& tolerance, ToleranceRule rule, bool strict) {
  pugi::xml_node testcase = suite.append_child("testcase");
  Attr(testcase, "name", r->case_name + "/" + (r->data_set.empty() ? "-" : r->data_set));
  Attr(testcase, "classname", "conformance." + backend);
  Attr(testcase, "file", r->source);
  Attr(testcase, "time", JUnitSeconds(r->seconds));
  if (!r->implementation.empty() || !r->support_note.empty()) {
    pugi::xml_node props = testcase.append_child("properties");
    if (!r->implementation.empty()) Property(props, "implementation", r->implementation);
    if (!r->support_note.empty()) Property(props, "by_conversion", r->support_note);
  }
  const std::string detail =
      r->message + "\nvs reference: " + r->vs_reference +
      (r->support_note.empty() ? "" : "\nby conversion: " + r->support_note) +
      (r->implementation.empty() ? "" : "\ncomputed by: " + r->implementation) +
      "\ntolerance: " + ToleranceText(tolerance);
  switch (r->verdict) {
    case Verdict::kPass:
      testcase.append_child("system-out").text() = XmlSafeText(detail).c_str();
      break;
    case Verdict::kFail:
      Outcome(testcase, "failure", "FAIL", r->message, detail);
      break;
    case Verdict::kBound:
    case Verdict::kImprecise:
      // A failure under the rule in force; otherwise a pass that says which rule it broke.
      if (FailsUnder(r->verdict, rule)) {
        Outcome(testcase, "failure", std::string(VerdictName(r->verdict)), r->message, detail);
      } else {
        testcase.append_child("system-out").text() =
            XmlSafeText(std::string(VerdictName(r->verdict)) + ": " + detail).c_str();
      }
      break;
    case Verdict::kError:
      Outcome(testcase, "error", "ERROR", r->message, detail);
      break;
    case Verdict::kXPass:
      Outcome(testcase, "failure", "XPASS", r->message, detail);
      break;
    case Verdict::kXFail:
    case Verdict::kSkip:
      Outcome(testcase, "skipped", "", std::string(VerdictName(r->verdict)) + ": " + r->message,
              "");
      break;
    case Verdict::kUnsupported:
      if (strict) {
        Outcome(testcase, "failure", "UNSUPPORTED", "unsupported (--strict): " + r->message, "");
      } else {
        Outcome(testcase, "skipped", "", "UNSUPPORTED: " + r->message, "");
      }
      break;
  }
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
      : backends_(backends), tolerance_(tolerance), rule_(rule), strict_(strict) {
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
    // One scratch document for every result: a document per result costs an allocation of its
    // first page each time.
    pugi::xml_node holder = scratch_.first_child();
    if (!holder) holder = scratch_.append_child("testsuite");
    AppendTestcase(holder, &r, r.backend, tolerance_, rule_, strict_);
    text_.text.clear();
    // Depth 2: a <testcase> inside <testsuites><testsuite>.
    holder.first_child().print(text_, "  ", pugi::format_default, pugi::encoding_utf8, 2);
    holder.remove_child(holder.first_child());
    suite.spool.Write(text_.text);
  }
  void Finish(const Report& report, const Summary& sum, std::ostream& out) override {
    const int strict_failures = report.strict ? sum.unsupported : 0;
    const bool official_failed = report.require_official && !report.official.complete();
    pugi::xml_document doc;
    pugi::xml_node decl = doc.append_child(pugi::node_declaration);
    decl.append_attribute("version") = "1.0";
    decl.append_attribute("encoding") = "UTF-8";
    pugi::xml_node suites = doc.append_child("testsuites");
    const int interrupted = report.interrupted ? 1 : 0;
    Attr(suites, "name", "mm-conformance");
    Attr(suites, "tests", sum.total() + 1 + interrupted);
    const int rule_failures = report.rule == ToleranceRule::kOnnx ? sum.bound : sum.imprecise;
    Attr(suites, "failures",
         sum.fail + sum.xpass + rule_failures + strict_failures + (official_failed ? 1 : 0));
    Attr(suites, "errors", sum.error + interrupted);
    Attr(suites, "skipped", sum.unsupported - strict_failures + sum.xfail + sum.skip);
    for (std::size_t i = 0; i < backends_.size(); ++i) {
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
      suite.append_child(pugi::node_comment).set_value(SuiteMarkerText(i).c_str());
    }
    // The tripwire as a test of its own, so a CI dashboard shows a missing official case.
    std::string problems;
    for (const OfficialStatus& s : report.official.cases) {
      if (s.state == OfficialStatus::State::kIntact) continue;
      problems += std::string(OfficialStateName(s.state)) + ": " + s.name;
      for (const std::string& p : s.problems) problems += "\n  " + p;
      problems += "\n";
    }
    pugi::xml_node suite = suites.append_child("testsuite");
    Attr(suite, "name", "official-corpus");
    Attr(suite, "tests", 1);
    Attr(suite, "failures", official_failed ? 1 : 0);
    Attr(suite, "errors", 0);
    Attr(suite, "skipped", !report.official.complete() && !official_failed ? 1 : 0);
    pugi::xml_node testcase = suite.append_child("testcase");
    Attr(testcase, "name", "official_corpus");
    Attr(testcase, "classname", "conformance.official");
    if (official_failed) {
      Outcome(testcase, "failure", "OFFICIAL", "official corpus incomplete or altered", problems);
    } else if (!report.official.complete()) {
      Outcome(testcase, "skipped", "", "official corpus incomplete (not required): " + problems,
              "");
    }
    // An interrupted run is an error a dashboard shows, with the cases it did not run.
    if (report.interrupted) {
      const Interruption& i = *report.interrupted;
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
      Outcome(tc, "error", "INTERRUPTED", InterruptionText(i), not_run);
    }
    std::ostringstream text;
    doc.save(text, "  ", pugi::format_default, pugi::encoding_utf8);
    std::string rendered = text.str();
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
  std::vector<std::string> backends_;
  Tolerance tolerance_;
  ToleranceRule rule_;
  bool strict_;
  std::vector<std::unique_ptr<Suite>> suites_;
  pugi::xml_document scratch_;
  // Each result's text, in a buffer kept from result to result.
  struct TextWriter final : pugi::xml_writer {
    void write(const void* data, std::size_t size) override {
      text.append(static_cast<const char*>(data), size);
    }
    std::string text;
  } text_;
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
  renderer.Finish(report, Summarize(report.results), out);
  return out.str();
}

}  // namespace mm::conformance
