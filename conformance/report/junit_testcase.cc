#include "junit_testcase.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "mm/conformance/report/escape.h"

namespace mm::conformance {
namespace {

// JUnit's time attribute is an xs:decimal for some readers: no exponent.
std::string JUnitSeconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6f", std::isfinite(seconds) ? seconds : 0.0);
  return buffer;
}

// Appends `text`, made XML-safe (XmlSafeText) and escaped for an attribute value in double quotes
// (tabs and line ends as character references, which survive a reader's attribute normalization)
// or for character data (a carriage return as a reference, which survives its line-end
// normalization).
void AppendXml(std::string& out, std::string_view text, bool attribute) {
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n' || c == '\r';
  });
  if (printable &&
      text.find_first_of(attribute ? "&<>\"\t\n\r" : "&<>\r") == std::string_view::npos) {
    out += text;
    return;
  }
  const std::string safe = printable ? std::string() : XmlSafeText(text);
  for (const char c : printable ? text : std::string_view(safe)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\r':
        out += "&#13;";
        break;
      case '"':
        out += attribute ? "&quot;" : "\"";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      default:
        out += c;
    }
  }
}

// ` name="value"`, the value made XML-safe and escaped; a value in several pieces is their
// concatenation.
void AppendAttr(std::string& out, std::string_view name,
                std::initializer_list<std::string_view> value) {
  out += ' ';
  out += name;
  out += "=\"";
  for (const std::string_view piece : value) AppendXml(out, piece, /*attribute=*/true);
  out += '"';
}

// The parts of one result's <testcase>, written to `out`.
class TestcaseWriter {
 public:
  TestcaseWriter(std::string& out, const Result& r, std::string_view tolerance)
      : out_(out), r_(r), tolerance_(tolerance) {}

  // The opening tag and, when there are any, the properties (operator for a result of MatMul's
  // family, implementation, by_conversion).
  void Open() {
    out_ += "    <testcase";
    AppendAttr(out_, "name", {r_.case_name, "/", r_.data_set.empty() ? "-" : r_.data_set});
    AppendAttr(out_, "classname", {"conformance.", r_.backend});
    AppendAttr(out_, "file", {r_.source});
    AppendAttr(out_, "time", {JUnitSeconds(r_.seconds)});
    out_ += ">\n";
    const bool family = r_.op != "MatMul";
    if (!family && r_.implementation.empty() && r_.support_note.empty()) return;
    out_ += "      <properties>\n";
    if (family) Property("operator", r_.op);
    if (!r_.implementation.empty()) Property("implementation", r_.implementation);
    if (!r_.support_note.empty()) Property("by_conversion", r_.support_note);
    out_ += "      </properties>\n";
  }
  void Close() { out_ += "    </testcase>\n"; }

  // <system-out> with the detail after `prefix`.
  void SystemOut(std::string_view prefix) {
    out_ += "      <system-out>";
    Detail(prefix);
    out_ += "</system-out>\n";
  }

  // An element of `kind` ("failure", "error", "skipped") with a type, a message and the detail.
  void Outcome(std::string_view kind, std::string_view type,
               std::initializer_list<std::string_view> message, bool with_detail) {
    out_ += "      <";
    out_ += kind;
    if (!type.empty()) AppendAttr(out_, "type", {type});
    AppendAttr(out_, "message", message);
    if (!with_detail) {
      out_ += " />\n";
      return;
    }
    out_ += '>';
    Detail("");
    out_ += "</";
    out_ += kind;
    out_ += ">\n";
  }

 private:
  void Property(std::string_view name, std::string_view value) {
    out_ += "        <property";
    AppendAttr(out_, "name", {name});
    AppendAttr(out_, "value", {value});
    out_ += " />\n";
  }

  // What a reader of the test case wants to see: the message, then how it was judged and computed.
  void Detail(std::string_view prefix) {
    for (const std::string_view piece :
         {prefix, std::string_view(r_.message), std::string_view("\nvs reference: "),
          std::string_view(r_.vs_reference)}) {
      AppendXml(out_, piece, /*attribute=*/false);
    }
    Line("\nby conversion: ", r_.support_note);
    Line("\nsuspect data: ", r_.data_suspect);
    Line("\ncomputed by: ", r_.implementation);
    AppendXml(out_, "\ntolerance: ", false);
    AppendXml(out_, tolerance_, false);
  }
  // `label` and `text` when `text` is not empty.
  void Line(std::string_view label, std::string_view text) {
    if (text.empty()) return;
    AppendXml(out_, label, false);
    AppendXml(out_, text, false);
  }

  std::string& out_;
  const Result& r_;
  std::string_view tolerance_;
};

}  // namespace

void AppendTestcase(std::string& out, const Result& r, std::string_view tolerance,
                    ToleranceRule rule, bool strict) {
  TestcaseWriter testcase(out, r, tolerance);
  testcase.Open();
  switch (r.verdict) {
    case Verdict::kPass:
      testcase.SystemOut("");
      break;
    case Verdict::kFail:
      testcase.Outcome("failure", "FAIL", {r.message}, true);
      break;
    case Verdict::kBound:
    case Verdict::kImprecise:
      // A failure under the rule in force; otherwise a pass that says which rule it broke.
      if (FailsUnder(r.verdict, rule)) {
        testcase.Outcome("failure", VerdictName(r.verdict), {r.message}, true);
      } else {
        testcase.SystemOut(std::string(VerdictName(r.verdict)) + ": ");
      }
      break;
    case Verdict::kError:
      testcase.Outcome("error", IsConformanceGap(r) ? "CONFORMANCE GAP" : "ERROR", {r.message},
                       true);
      break;
    case Verdict::kXPass:
      testcase.Outcome("failure", "XPASS", {r.message}, true);
      break;
    case Verdict::kXFail:
    case Verdict::kSkip:
      testcase.Outcome("skipped", "", {VerdictName(r.verdict), ": ", r.message}, false);
      break;
    case Verdict::kUnsupported:
      if (strict) {
        testcase.Outcome("failure", "UNSUPPORTED", {"unsupported (--strict): ", r.message}, false);
      } else {
        testcase.Outcome("skipped", "", {"UNSUPPORTED: ", r.message}, false);
      }
      break;
  }
  testcase.Close();
}

}  // namespace mm::conformance
