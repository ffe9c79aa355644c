#include "conformance/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

namespace mm::conformance {
namespace {

// Splits `text` into code points, replacing each byte of an invalid UTF-8 sequence with U+FFFD.
template <class Emit>
void ForEachCodePoint(std::string_view text, Emit emit) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    int length = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool valid = length > 0 && i + length <= text.size();
    char32_t cp = length == 1   ? c
                  : length == 2 ? (c & 0x1F)
                  : length == 3 ? (c & 0x0F)
                                : (c & 0x07);
    for (int k = 1; valid && k < length; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      valid = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values beyond U+10FFFF are invalid too.
    if (valid &&
        ((length == 2 && cp < 0x80) || (length == 3 && cp < 0x800) ||
         (length == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))) {
      valid = false;
    }
    if (!valid) {
      emit(U'\uFFFD', std::string_view("\xEF\xBF\xBD"));
      ++i;
      continue;
    }
    emit(cp, text.substr(i, length));
    i += length;
  }
}

std::string JsonString(std::string_view text) { return "\"" + JsonEscape(text) + "\""; }

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return JsonString(FormatDouble(value));
  return FormatDouble(value);
}

// JUnit's time attribute is an xs:decimal for some readers: no exponent.
std::string JUnitSeconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6f", std::isfinite(seconds) ? seconds : 0.0);
  return buffer;
}

std::string DescOf(const Result& r) {
  if (!r.dtype) return "-";
  return DimsToString(r.a_dims) + " x " + DimsToString(r.b_dims);
}

struct Row {
  std::string case_name;
  std::string backend;
  Verdict verdict = Verdict::kPass;
  std::vector<const Result*> results;
};

// Groups results by (case, backend) in order of first appearance.
std::vector<Row> Rows(const std::vector<Result>& results) {
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (const Result& r : results) {
    auto key = std::pair{r.case_name, r.backend};
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, rows.size()).first;
      rows.push_back({r.case_name, r.backend, r.verdict, {}});
    }
    Row& row = rows[it->second];
    row.verdict = WorseVerdict(row.verdict, r.verdict);
    row.results.push_back(&r);
  }
  return rows;
}

std::string ErrorsText(const Result& r) {
  if (!r.vs_expected || !r.vs_expected->mismatch.empty()) return "";
  return "max abs " + FormatShort(r.vs_expected->max_abs_error) + ", max rel " +
         FormatShort(r.vs_expected->max_rel_error);
}

std::string ToleranceText(const Tolerance& t) {
  return "rtol " + FormatDouble(t.rtol) + ", atol " + FormatDouble(t.atol);
}

void ComparisonJson(std::ostringstream& out, const Comparison& c) {
  out << "{\"match\": " << (c.match ? "true" : "false") << ", \"elements\": " << c.elements
      << ", \"differing\": " << c.differing
      << ", \"bitwise_equal\": " << (c.bitwise_equal ? "true" : "false")
      << ", \"max_abs_error\": " << JsonNumber(c.max_abs_error)
      << ", \"max_rel_error\": " << JsonNumber(c.max_rel_error);
  if (!c.mismatch.empty()) out << ", \"mismatch\": " << JsonString(c.mismatch);
  if (c.worst) {
    const WorstElement& w = *c.worst;
    out << ", \"worst\": {\"index\": [";
    for (std::size_t i = 0; i < w.index.size(); ++i) out << (i ? ", " : "") << w.index[i];
    out << "], \"flat_index\": " << w.flat_index << ", \"expected\": " << JsonString(w.expected)
        << ", \"actual\": " << JsonString(w.actual)
        << ", \"abs_error\": " << JsonNumber(w.abs_error)
        << ", \"rel_error\": " << JsonNumber(w.rel_error)
        << ", \"allowed\": " << JsonNumber(w.allowed) << "}";
  }
  out << "}";
}

}  // namespace

std::string JsonEscape(std::string_view text) {
  std::string out;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    switch (cp) {
      case U'"':
        out += "\\\"";
        return;
      case U'\\':
        out += "\\\\";
        return;
      case U'\n':
        out += "\\n";
        return;
      case U'\r':
        out += "\\r";
        return;
      case U'\t':
        out += "\\t";
        return;
      default:
        break;
    }
    if (cp < 0x20 || cp == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(cp));
      out += buffer;
    } else {
      out += bytes;
    }
  });
  return out;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    switch (cp) {
      case U'&':
        out += "&amp;";
        return;
      case U'<':
        out += "&lt;";
        return;
      case U'>':
        out += "&gt;";
        return;
      case U'"':
        out += "&quot;";
        return;
      case U'\'':
        out += "&apos;";
        return;
      case U'\n':
        out += "&#10;";
        return;
      case U'\t':
        out += "&#9;";
        return;
      case U'\r':
        out += "&#13;";
        return;
      default:
        break;
    }
    // XML 1.0 cannot hold other control characters, even as references.
    if (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF) {
      out += "\xEF\xBF\xBD";
    } else {
      out += bytes;
    }
  });
  return out;
}

std::string MarkdownEscape(std::string_view text) {
  std::string out;
  char32_t previous = 0;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    if (cp == U'\n' || cp == U'\r') {
      out += "<br>";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += ' ';
    } else if (cp == U'<') {
      out += "&lt;";
    } else if (cp == U'>') {
      out += "&gt;";
    } else if (cp == U'&') {
      out += "&amp;";
    } else if (cp < 0x80 &&
               std::string_view("|\\`*_").find(static_cast<char>(cp)) != std::string_view::npos) {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == U'(' && previous == U']') {
      out += "\\(";  // "](" would start a link.
    } else {
      out += bytes;
    }
    previous = cp;
  });
  return out;
}

std::string PrintableText(std::string_view text) {
  std::string out;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    out += (cp < 0x20 || cp == 0x7F) ? std::string_view("\xEF\xBF\xBD") : bytes;
  });
  return out;
}

Summary Summarize(const std::vector<Result>& results) {
  Summary s;
  for (const Result& r : results) {
    switch (r.verdict) {
      case Verdict::kPass:
        ++s.pass;
        break;
      case Verdict::kFail:
        ++s.fail;
        break;
      case Verdict::kUnsupported:
        ++s.unsupported;
        break;
      case Verdict::kError:
        ++s.error;
        break;
    }
  }
  return s;
}

void WriteConsole(const Report& report, std::ostream& out, bool quiet) {
  std::size_t name_width = 4, backend_width = 7;
  const auto rows = Rows(report.results);
  for (const Row& row : rows) {
    name_width = std::max(name_width, row.case_name.size());
    backend_width = std::max(backend_width, row.backend.size());
  }
  for (const Row& row : quiet ? std::vector<Row>() : rows) {
    const Result& first = *row.results.front();
    // The line shows the data set that decided the verdict (the first with the worst verdict).
    const Result* decisive = row.results.front();
    for (const Result* r : row.results) {
      if (r->verdict == row.verdict) {
        decisive = r;
        break;
      }
    }
    out << std::left << std::setw(12) << VerdictName(row.verdict) << std::setw(name_width + 2)
        << PrintableText(row.case_name) << std::setw(backend_width + 2) << row.backend
        << std::setw(9) << (first.dtype ? std::string(DTypeName(*first.dtype)) : std::string("-"))
        << std::setw(22) << DescOf(first);
    if (row.results.size() > 1) out << "[" << row.results.size() << " data sets] ";
    switch (row.verdict) {
      case Verdict::kPass:
        out << ErrorsText(*decisive) << "; vs reference: " << decisive->vs_reference;
        break;
      case Verdict::kFail:
        out << PrintableText(decisive->data_set) << ": " << PrintableText(decisive->message) << " ["
            << ToleranceText(report.tolerance) << "]; vs reference: " << decisive->vs_reference;
        break;
      case Verdict::kUnsupported:
      case Verdict::kError:
        out << PrintableText(decisive->message);
        break;
    }
    if (!decisive->support_note.empty())
      out << " (by conversion: " << decisive->support_note << ")";
    out << "\n";
  }

  const OfficialReport& official = report.official;
  out << (quiet ? "" : "\n")
      << "official corpus: " << official.Count(OfficialStatus::State::kIntact) << " of "
      << official.cases.size() << " intact";
  if (const int missing = official.Count(OfficialStatus::State::kMissing)) {
    out << ", " << missing << " missing";
  }
  if (const int altered = official.Count(OfficialStatus::State::kAltered)) {
    out << ", " << altered << " ALTERED";
  }
  out << (report.require_official ? " (required)" : "") << "\n";
  for (const OfficialStatus& s : official.cases) {
    if (s.state == OfficialStatus::State::kIntact) continue;
    out << "  " << OfficialStateName(s.state) << ": " << s.name;
    if (!s.dir.empty()) out << " at " << PrintableText(s.dir.string());
    for (const std::string& p : s.problems) out << "\n    " << PrintableText(p);
    out << "\n";
  }
  if (!report.skipped.empty()) {
    out << report.skipped.size() << " model(s) skipped (not MatMul cases); --list shows them\n";
  }
  for (const ShadowedCase& s : report.shadowed) {
    out << "shadowed: " << PrintableText(s.name) << " at " << PrintableText(s.dir.string()) << " ("
        << PrintableText(s.winner) << " wins)\n";
  }
  const Summary sum = Summarize(report.results);
  out << "summary: " << sum.total() << " results (" << rows.size()
      << " case x backend): " << sum.pass << " PASS, " << sum.fail << " FAIL, " << sum.unsupported
      << " UNSUPPORTED" << (report.strict && sum.unsupported ? " (failures under --strict)" : "")
      << ", " << sum.error << " ERROR; exit " << report.exit_code << "\n";
}

std::string ToJson(const Report& report) {
  std::ostringstream out;
  const Summary sum = Summarize(report.results);
  out << "{\n  \"tool\": \"mm-conformance\",\n  \"version\": " << JsonString(report.version)
      << ",\n  \"tolerance\": {\"rtol\": " << JsonNumber(report.tolerance.rtol)
      << ", \"atol\": " << JsonNumber(report.tolerance.atol)
      << "},\n  \"strict\": " << (report.strict ? "true" : "false")
      << ",\n  \"require_official\": " << (report.require_official ? "true" : "false")
      << ",\n  \"backends\": [";
  for (std::size_t i = 0; i < report.backends.size(); ++i) {
    out << (i ? ", " : "") << JsonString(report.backends[i]);
  }
  out << "],\n  \"data_roots\": [";
  for (std::size_t i = 0; i < report.roots.size(); ++i) {
    out << (i ? ", " : "") << "{\"path\": " << JsonString(report.roots[i].path.string())
        << ", \"origin\": " << JsonString(report.roots[i].origin) << "}";
  }
  out << "],\n  \"summary\": {\"total\": " << sum.total() << ", \"PASS\": " << sum.pass
      << ", \"FAIL\": " << sum.fail << ", \"UNSUPPORTED\": " << sum.unsupported
      << ", \"ERROR\": " << sum.error << "},\n  \"exit_code\": " << report.exit_code
      << ",\n  \"results\": [";
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const Result& r = report.results[i];
    out << (i ? "," : "") << "\n    {\"case\": " << JsonString(r.case_name)
        << ", \"source\": " << JsonString(r.source)
        << ", \"data_set\": " << (r.data_set.empty() ? "null" : JsonString(r.data_set))
        << ", \"backend\": " << JsonString(r.backend)
        << ", \"dtype\": " << (r.dtype ? JsonString(DTypeName(*r.dtype)) : "null")
        << ", \"a_shape\": " << (r.dtype ? JsonString(DimsToString(r.a_dims)) : "null")
        << ", \"b_shape\": " << (r.dtype ? JsonString(DimsToString(r.b_dims)) : "null")
        << ", \"verdict\": " << JsonString(VerdictName(r.verdict))
        << ", \"message\": " << JsonString(r.message)
        << ", \"support_note\": " << (r.support_note.empty() ? "null" : JsonString(r.support_note))
        << ", \"seconds\": " << JsonNumber(r.seconds);
    out << ", \"max_abs_error\": "
        << (r.vs_expected && r.vs_expected->mismatch.empty()
                ? JsonNumber(r.vs_expected->max_abs_error)
                : "null")
        << ", \"max_rel_error\": "
        << (r.vs_expected && r.vs_expected->mismatch.empty()
                ? JsonNumber(r.vs_expected->max_rel_error)
                : "null");
    out << ", \"vs_expected\": ";
    if (r.vs_expected) {
      ComparisonJson(out, *r.vs_expected);
    } else {
      out << "null";
    }
    out << ", \"vs_reference\": " << JsonString(r.vs_reference) << ", \"vs_reference_detail\": ";
    if (r.vs_reference_comparison) {
      ComparisonJson(out, *r.vs_reference_comparison);
    } else {
      out << "null";
    }
    out << "}";
  }
  out << "\n  ],\n  \"official\": {\"complete\": "
      << (report.official.complete() ? "true" : "false") << ", \"found\": [";
  bool first = true;
  for (const OfficialStatus& s : report.official.cases) {
    if (s.state != OfficialStatus::State::kIntact) continue;
    out << (first ? "" : ", ") << "{\"case\": " << JsonString(s.name)
        << ", \"dir\": " << JsonString(s.dir.string()) << "}";
    first = false;
  }
  out << "], \"missing\": [";
  first = true;
  for (const OfficialStatus& s : report.official.cases) {
    if (s.state != OfficialStatus::State::kMissing) continue;
    out << (first ? "" : ", ") << JsonString(s.name);
    first = false;
  }
  out << "], \"altered\": [";
  first = true;
  for (const OfficialStatus& s : report.official.cases) {
    if (s.state != OfficialStatus::State::kAltered) continue;
    out << (first ? "" : ", ") << "{\"case\": " << JsonString(s.name)
        << ", \"dir\": " << JsonString(s.dir.string()) << ", \"problems\": [";
    for (std::size_t i = 0; i < s.problems.size(); ++i) {
      out << (i ? ", " : "") << JsonString(s.problems[i]);
    }
    out << "]}";
    first = false;
  }
  out << "]},\n  \"skipped\": [";
  for (std::size_t i = 0; i < report.skipped.size(); ++i) {
    const SkippedModel& s = report.skipped[i];
    out << (i ? "," : "") << "\n    {\"case\": " << JsonString(s.name)
        << ", \"dir\": " << JsonString(s.dir.string()) << ", \"reason\": " << JsonString(s.reason)
        << "}";
  }
  out << (report.skipped.empty() ? "" : "\n  ") << "],\n  \"shadowed\": [";
  for (std::size_t i = 0; i < report.shadowed.size(); ++i) {
    const ShadowedCase& s = report.shadowed[i];
    out << (i ? ", " : "") << "{\"case\": " << JsonString(s.name)
        << ", \"dir\": " << JsonString(s.dir.string()) << ", \"winner\": " << JsonString(s.winner)
        << "}";
  }
  out << "]\n}\n";
  return out.str();
}

std::string ToJUnitXml(const Report& report) {
  std::ostringstream out;
  const Summary sum = Summarize(report.results);
  const int strict_failures = report.strict ? sum.unsupported : 0;
  const bool official_failed = report.require_official && !report.official.complete();
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"mm-conformance\" tests=\"" << sum.total() + 1 << "\" failures=\""
      << sum.fail + strict_failures + (official_failed ? 1 : 0) << "\" errors=\"" << sum.error
      << "\" skipped=\"" << sum.unsupported - strict_failures << "\">\n";
  for (const std::string& backend : report.backends) {
    std::vector<const Result*> mine;
    for (const Result& r : report.results) {
      if (r.backend == backend) mine.push_back(&r);
    }
    int fail = 0, error = 0, skipped = 0;
    for (const Result* r : mine) {
      fail +=
          r->verdict == Verdict::kFail || (report.strict && r->verdict == Verdict::kUnsupported);
      error += r->verdict == Verdict::kError;
      skipped += !report.strict && r->verdict == Verdict::kUnsupported;
    }
    out << "  <testsuite name=\"conformance." << XmlEscape(backend) << "\" tests=\"" << mine.size()
        << "\" failures=\"" << fail << "\" errors=\"" << error << "\" skipped=\"" << skipped
        << "\">\n";
    for (const Result* r : mine) {
      const std::string name = r->case_name + "/" + (r->data_set.empty() ? "-" : r->data_set);
      out << "    <testcase name=\"" << XmlEscape(name) << "\" classname=\"conformance."
          << XmlEscape(backend) << "\" file=\"" << XmlEscape(r->source) << "\" time=\""
          << JUnitSeconds(r->seconds) << "\"";
      const std::string detail =
          r->message + "\nvs reference: " + r->vs_reference +
          (r->support_note.empty() ? "" : "\nby conversion: " + r->support_note) +
          "\ntolerance: " + ToleranceText(report.tolerance);
      switch (r->verdict) {
        case Verdict::kPass:
          out << ">\n      <system-out>" << XmlEscape(detail) << "</system-out>\n    </testcase>\n";
          break;
        case Verdict::kFail:
          out << ">\n      <failure type=\"FAIL\" message=\"" << XmlEscape(r->message) << "\">"
              << XmlEscape(detail) << "</failure>\n    </testcase>\n";
          break;
        case Verdict::kError:
          out << ">\n      <error type=\"ERROR\" message=\"" << XmlEscape(r->message) << "\">"
              << XmlEscape(detail) << "</error>\n    </testcase>\n";
          break;
        case Verdict::kUnsupported:
          if (report.strict) {
            out << ">\n      <failure type=\"UNSUPPORTED\" message=\""
                << XmlEscape("unsupported (--strict): " + r->message) << "\"/>\n    </testcase>\n";
          } else {
            out << ">\n      <skipped message=\"" << XmlEscape("UNSUPPORTED: " + r->message)
                << "\"/>\n    </testcase>\n";
          }
          break;
      }
    }
    out << "  </testsuite>\n";
  }
  // The tripwire as a test of its own, so a CI dashboard shows a missing official case.
  std::string problems;
  for (const OfficialStatus& s : report.official.cases) {
    if (s.state == OfficialStatus::State::kIntact) continue;
    problems += std::string(OfficialStateName(s.state)) + ": " + s.name;
    for (const std::string& p : s.problems) problems += "\n  " + p;
    problems += "\n";
  }
  out << "  <testsuite name=\"official-corpus\" tests=\"1\" failures=\""
      << (official_failed ? 1 : 0) << "\" errors=\"0\" skipped=\""
      << (!report.official.complete() && !official_failed ? 1 : 0)
      << "\">\n    <testcase name=\"official_corpus\" classname=\"conformance.official\"";
  if (report.official.complete()) {
    out << "/>\n";
  } else if (official_failed) {
    out << ">\n      <failure type=\"OFFICIAL\" message=\"official corpus incomplete or altered\">"
        << XmlEscape(problems) << "</failure>\n    </testcase>\n";
  } else {
    out << ">\n      <skipped message=\""
        << XmlEscape("official corpus incomplete (not required): " + problems) << "\"/>\n"
        << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

std::string ToMarkdown(const Report& report) {
  std::ostringstream out;
  const Summary sum = Summarize(report.results);
  out << "# MatMul conformance report\n\n"
      << "mm-conformance " << MarkdownEscape(report.version) << "; tolerance: pass iff |actual - "
      << "expected| <= atol + rtol * |expected| (" << ToleranceText(report.tolerance)
      << "); integers exact.\n\n"
      << "**" << sum.pass << " PASS, " << sum.fail << " FAIL, " << sum.unsupported
      << " UNSUPPORTED, " << sum.error << " ERROR** of " << sum.total()
      << " results (case x data set x backend); exit code " << report.exit_code << ".\n\n";

  // The comparison matrix: one row per case, one column per backend.
  std::vector<std::string> cases;
  std::map<std::pair<std::string, std::string>, Verdict> cell;
  std::map<std::string, const Result*> first_of_case;
  for (const Result& r : report.results) {
    if (!first_of_case.count(r.case_name)) {
      cases.push_back(r.case_name);
      first_of_case[r.case_name] = &r;
    }
    auto key = std::pair{r.case_name, r.backend};
    auto it = cell.find(key);
    cell[key] = it == cell.end() ? r.verdict : WorseVerdict(it->second, r.verdict);
  }
  out << "## Verdicts\n\n| Case | dtype | A x B |";
  for (const std::string& b : report.backends) out << " " << MarkdownEscape(b) << " |";
  out << "\n|---|---|---|";
  for (std::size_t i = 0; i < report.backends.size(); ++i) out << "---|";
  out << "\n";
  for (const std::string& c : cases) {
    const Result& first = *first_of_case[c];
    out << "| " << MarkdownEscape(c) << " | "
        << (first.dtype ? std::string(DTypeName(*first.dtype)) : "-") << " | "
        << MarkdownEscape(DescOf(first)) << " |";
    for (const std::string& b : report.backends) {
      auto it = cell.find({c, b});
      out << " " << (it == cell.end() ? "-" : std::string(VerdictName(it->second))) << " |";
    }
    out << "\n";
  }

  out << "\n## Details\n\n| Case | Data set | Backend | Verdict | Max abs | Max rel | Message | vs "
         "reference |\n|---|---|---|---|---|---|---|---|\n";
  for (const Result& r : report.results) {
    const bool measured = r.vs_expected && r.vs_expected->mismatch.empty();
    std::string message = r.message;
    if (!r.support_note.empty()) message += " (by conversion: " + r.support_note + ")";
    out << "| " << MarkdownEscape(r.case_name) << " | " << MarkdownEscape(r.data_set) << " | "
        << MarkdownEscape(r.backend) << " | " << VerdictName(r.verdict) << " | "
        << (measured ? FormatShort(r.vs_expected->max_abs_error) : "-") << " | "
        << (measured ? FormatShort(r.vs_expected->max_rel_error) : "-") << " | "
        << MarkdownEscape(message) << " | " << MarkdownEscape(r.vs_reference) << " |\n";
  }

  out << "\n## Official corpus\n\n"
      << report.official.Count(OfficialStatus::State::kIntact) << " of "
      << report.official.cases.size() << " official ONNX MatMul node tests found intact"
      << (report.require_official ? " (required)" : "") << ".\n\n| Case | State | Where | Problems "
      << "|\n|---|---|---|---|\n";
  for (const OfficialStatus& s : report.official.cases) {
    std::string problems;
    for (const std::string& p : s.problems) problems += (problems.empty() ? "" : "; ") + p;
    out << "| " << MarkdownEscape(s.name) << " | " << OfficialStateName(s.state) << " | "
        << MarkdownEscape(s.dir.string()) << " | " << MarkdownEscape(problems) << " |\n";
  }

  out << "\n## Data roots\n\n";
  if (report.roots.empty()) out << "(none: built-in cases only)\n";
  for (const DataRoot& root : report.roots) {
    out << "- " << MarkdownEscape(root.path.string()) << " (" << MarkdownEscape(root.origin)
        << ")\n";
  }
  if (!report.shadowed.empty()) {
    out << "\n## Shadowed\n\n";
    for (const ShadowedCase& s : report.shadowed) {
      out << "- " << MarkdownEscape(s.name) << " at " << MarkdownEscape(s.dir.string()) << " ("
          << MarkdownEscape(s.winner) << " wins)\n";
    }
  }
  if (!report.skipped.empty()) {
    out << "\n## Skipped models (not MatMul cases)\n\n<details><summary>" << report.skipped.size()
        << " models</summary>\n\n| Model | Reason |\n|---|---|\n";
    for (const SkippedModel& s : report.skipped) {
      out << "| " << MarkdownEscape(s.name) << " | " << MarkdownEscape(s.reason) << " |\n";
    }
    out << "\n</details>\n";
  }
  return out.str();
}

}  // namespace mm::conformance
