#include "conformance/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>

#include "conformance/result_json.h"

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

using Json = nlohmann::ordered_json;

// A string for JSON: valid UTF-8 always (nlohmann refuses anything else).
Json JsonText(std::string_view text) { return ValidUtf8(text); }

// Non-finite numbers are not JSON: "nan", "inf", "-inf" instead.
Json JsonNumber(double value) {
  if (!std::isfinite(value)) return FormatDouble(value);
  return value;
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

std::string ErrorsText(const Result& r) {
  if (!r.vs_expected || !r.vs_expected->mismatch.empty()) return "";
  return "max abs " + FormatShort(r.vs_expected->max_abs_error) + ", max rel " +
         FormatShort(r.vs_expected->max_rel_error);
}

std::string ToleranceText(const Tolerance& t) {
  return "rtol " + FormatDouble(t.rtol) + ", atol " + FormatDouble(t.atol);
}

Json MachineJson(const Report& report) {
  const MachineInfo& m = report.machine;
  return {{"cpu_model", JsonText(m.cpu_model)},
          {"logical_cpus", m.logical_cpus},
          {"cpu_features", JsonText(m.cpu_features)},
          {"omp_num_threads", JsonText(m.omp_num_threads)},
          {"onednn_max_cpu_isa", JsonText(m.onednn_max_cpu_isa)},
          {"os", JsonText(m.os)},
          {"compiler", JsonText(m.compiler)},
          {"loader", JsonText(report.loader_versions)}};
}

// "name: runs_on" lines, for text reports.
std::vector<std::pair<std::string, std::string>> RunsOn(const Report& report) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const BackendInfo& info : report.backend_info) lines.emplace_back(info.name, info.runs_on);
  return lines;
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](char32_t, std::string_view bytes) { out += bytes; });
  return out;
}

std::string XmlSafeText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    // XML 1.0 cannot hold other control characters, even as references.
    const bool allowed =
        cp == U'\t' || cp == U'\n' || cp == U'\r' || (cp >= 0x20 && cp != 0xFFFE && cp != 0xFFFF);
    out += allowed ? bytes : std::string_view("\xEF\xBF\xBD");
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

void Count(Summary& s, Verdict verdict) {
  switch (verdict) {
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
    case Verdict::kXFail:
      ++s.xfail;
      break;
    case Verdict::kXPass:
      ++s.xpass;
      break;
    case Verdict::kSkip:
      ++s.skip;
      break;
    case Verdict::kBound:
      ++s.bound;
      break;
    case Verdict::kImprecise:
      ++s.imprecise;
      break;
  }
}

Summary Summarize(const std::vector<Result>& results) {
  Summary s;
  for (const Result& r : results) Count(s, r.verdict);
  return s;
}

void CountMatch(Expectations& expectations, const Result& r) {
  for (Expectation& e : expectations.entries) {
    if (e.Matches(r.case_name, r.backend)) {
      ++e.matched;
      return;
    }
  }
}

void CountMatches(Expectations& expectations, const std::vector<Result>& results) {
  for (Expectation& e : expectations.entries) e.matched = 0;
  for (const Result& r : results) CountMatch(expectations, r);
}

namespace {

// "2 XFAIL, 1 XPASS, 3 SKIP" for the verdicts that exist only with an expectations file; empty
// when there are none.
std::string DeclaredCounts(const Summary& sum) {
  std::string out;
  for (auto [count, name] :
       {std::pair{sum.xfail, "XFAIL"}, {sum.xpass, "XPASS"}, {sum.skip, "SKIP"}}) {
    if (count) out += ", " + std::to_string(count) + " " + name;
  }
  return out;
}

}  // namespace

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return (abbrev ? "SIG" + std::string(abbrev) : std::string("signal")) + " (signal " +
         std::to_string(signal) + ")";
}

std::string FingerprintText(std::uint64_t fingerprint) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fingerprint));
  return hex;
}

std::string InterruptionText(const Interruption& i) {
  return "interrupted by " + SignalName(i.signal) + " after " + std::to_string(i.results) + " of " +
         std::to_string(i.expected) + " results; " + std::to_string(i.not_run.size()) +
         " case(s) not run, " + std::to_string(i.incomplete.size()) + " incomplete";
}

namespace {

// A temporary file holding rendered parts of a report until Finish puts them in place.
class Spool {
 public:
  Spool() : file_(std::tmpfile()) {}
  ~Spool() {
    if (file_ != nullptr) std::fclose(file_);
  }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  bool ok() const { return file_ != nullptr && !failed_; }
  bool empty() const { return bytes_ == 0; }
  void Write(std::string_view text) {
    if (file_ == nullptr) return;
    failed_ |= std::fwrite(text.data(), 1, text.size(), file_) != text.size();
    bytes_ += text.size();
  }
  // Appends everything written so far to `out`.
  void CopyTo(std::ostream& out) {
    if (file_ == nullptr) return;
    std::fflush(file_);
    std::rewind(file_);
    char buffer[1 << 16];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) out.write(buffer, n);
    std::fseek(file_, 0, SEEK_END);
  }

 private:
  std::FILE* file_;
  bool failed_ = false;
  std::size_t bytes_ = 0;
};

// Replaces the first `marker` in `text` by what `fill` writes, writing everything to `out`.
template <class Fill>
void Splice(std::ostream& out, const std::string& text, const std::string& marker, Fill fill) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) {
    out << text;
    return;
  }
  out.write(text.data(), static_cast<std::streamsize>(at));
  fill();
  const std::string rest = text.substr(at + marker.size());
  out << rest;
}

// Groups contiguous results of one case into rows by backend, in order of first appearance.
std::vector<Row> CaseRows(const std::vector<Result>& results) {
  std::vector<Row> rows;
  for (const Result& r : results) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) {
      return row.backend == r.backend && row.case_name == r.case_name;
    });
    if (it == rows.end()) {
      rows.push_back({r.case_name, r.backend, r.verdict, {}});
      it = rows.end() - 1;
    }
    it->verdict = WorseVerdict(it->verdict, r.verdict);
    it->results.push_back(&r);
  }
  return rows;
}

}  // namespace

ConsoleWriter::ConsoleWriter(std::ostream& out, bool quiet, const Tolerance& tolerance,
                             std::size_t name_width, std::size_t backend_width)
    : out_(out),
      quiet_(quiet),
      tolerance_(tolerance),
      name_width_(std::max<std::size_t>(4, name_width)),
      backend_width_(std::max<std::size_t>(7, backend_width)) {}

void ConsoleWriter::Add(const Result& result) {
  if (!pending_.empty() && pending_.back().case_name != result.case_name) FlushCase();
  pending_.push_back(result);
}

void ConsoleWriter::FlushCase() {
  const std::vector<Row> rows = CaseRows(pending_);
  rows_ += static_cast<std::int64_t>(rows.size());
  for (const Row& row : quiet_ ? std::vector<Row>() : rows) {
    const Result& first = *row.results.front();
    // The line shows the data set that decided the verdict (the first with the worst verdict).
    const Result* decisive = row.results.front();
    for (const Result* r : row.results) {
      if (r->verdict == row.verdict) {
        decisive = r;
        break;
      }
    }
    std::ostream& out = out_;
    out << std::left << std::setw(12) << VerdictName(row.verdict) << std::setw(name_width_ + 2)
        << PrintableText(row.case_name) << std::setw(backend_width_ + 2) << row.backend
        << std::setw(9) << (first.dtype ? std::string(DTypeName(*first.dtype)) : std::string("-"))
        << std::setw(22) << DescOf(first);
    if (row.results.size() > 1) out << "[" << row.results.size() << " data sets] ";
    switch (row.verdict) {
      case Verdict::kPass:
        out << ErrorsText(*decisive) << "; vs reference: " << decisive->vs_reference;
        break;
      case Verdict::kFail:
      case Verdict::kBound:
      case Verdict::kImprecise:
        out << PrintableText(decisive->data_set) << ": " << PrintableText(decisive->message) << " ["
            << ToleranceText(tolerance_) << "]; vs reference: " << decisive->vs_reference;
        break;
      case Verdict::kUnsupported:
      case Verdict::kError:
      case Verdict::kXFail:
      case Verdict::kXPass:
      case Verdict::kSkip:
        out << PrintableText(decisive->message);
        break;
    }
    if (!decisive->support_note.empty())
      out << " (by conversion: " << decisive->support_note << ")";
    if (!decisive->implementation.empty()) out << " [ran: " << decisive->implementation << "]";
    out << "\n";
  }
  pending_.clear();
  // Lines leave now, not when a buffer fills: an interrupted or killed run has shown them.
  if (!quiet_) out_.flush();
}

void ConsoleWriter::Finish(const Report& report, const Summary& sum) {
  if (!pending_.empty()) FlushCase();
  std::ostream& out = out_;
  const OfficialReport& official = report.official;
  out << (quiet_ ? "" : "\n")
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
  out << "machine: " << PrintableText(report.machine.ToString()) << "\n";
  for (const auto& [name, runs_on] : RunsOn(report)) {
    out << "  " << name << ": " << PrintableText(runs_on) << "\n";
  }
  for (const auto& [name, why] : report.unavailable_backends) {
    out << "  " << name << ": not available: " << PrintableText(why) << "\n";
  }
  if (report.expectations) {
    int unmatched = 0;
    for (const Expectation& e : report.expectations->entries) unmatched += e.matched == 0;
    out << "expectations: " << report.expectations->entries.size() << " entries from "
        << PrintableText(report.expectations->source) << ", " << unmatched << " matching nothing\n";
    for (const Expectation& e : report.expectations->entries) {
      if (e.matched) continue;
      out << "  matches nothing: " << ExpectationKindName(e.kind) << " case "
          << PrintableText(e.case_pattern) << " backend " << PrintableText(e.backend_pattern)
          << " (" << PrintableText(e.reason) << ")\n";
    }
  }
  if (report.interrupted) {
    out << InterruptionText(*report.interrupted) << " (--resume the JSON report to finish)\n";
  }
  out << "summary: " << sum.total() << " results (" << rows_ << " case x backend): " << sum.pass
      << " PASS, " << sum.fail << " FAIL, " << sum.unsupported << " UNSUPPORTED"
      << (report.strict && sum.unsupported ? " (failures under --strict)" : "") << ", " << sum.error
      << " ERROR, " << sum.bound << " BOUND, " << sum.imprecise << " IMPRECISE ("
      << (report.rule == ToleranceRule::kOnnx ? "BOUND" : "IMPRECISE")
      << " fails under --tolerance " << (report.rule == ToleranceRule::kOnnx ? "onnx" : "bound")
      << ")" << DeclaredCounts(sum) << "; exit " << report.exit_code << "\n";
  out.flush();
}

void WriteConsole(const Report& report, std::ostream& out, bool quiet) {
  std::size_t name_width = 4, backend_width = 7;
  for (const Result& r : report.results) {
    name_width = std::max(name_width, r.case_name.size());
    backend_width = std::max(backend_width, r.backend.size());
  }
  ConsoleWriter writer(out, quiet, report.tolerance, name_width, backend_width);
  for (const Result& r : report.results) writer.Add(r);
  writer.Finish(report, Summarize(report.results));
}

namespace {

constexpr const char* kResultsMarker = "\"@@mm-conformance-results@@\"";

class JsonRenderer {
 public:
  bool ok() const { return spool_.ok(); }
  void Add(const Result& r) {
    if (!spool_.empty()) spool_.Write(",\n");
    // Results carry text from files and backends: invalid UTF-8 becomes U+FFFD here.
    // Rendered at the depth of an element of "results" (4 spaces), into a buffer kept from result
    // to result: the same text as the whole report's dump.
    text_.assign(4, ' ');
    nlohmann::detail::serializer<Json> serializer(nlohmann::detail::output_adapter<char>(text_),
                                                  ' ', Json::error_handler_t::replace);
    serializer.dump(ResultToJson(r), /*pretty_print=*/true, /*ensure_ascii=*/false,
                    /*indent_step=*/2, /*current_indent=*/4);
    spool_.Write(text_);
  }
  void Finish(const Report& report, const Summary& sum, std::ostream& out) {
    Json j;
    j["tool"] = "mm-conformance";
    j["version"] = JsonText(report.version);
    j["tolerance"] = {{"rtol", JsonNumber(report.tolerance.rtol)},
                      {"atol", JsonNumber(report.tolerance.atol)}};
    j["strict"] = report.strict;
    j["require_official"] = report.require_official;
    j["shard"] = {{"index", report.shard.index}, {"count", report.shard.count}};
    if (!report.selection.fingerprint.empty()) {
      j["selection"] = {{"cases", report.selection.cases},
                        {"results", report.selection.results},
                        {"fingerprint", report.selection.fingerprint}};
    }
    j["backends"] = Json::array();
    for (const std::string& b : report.backends) j["backends"].push_back(JsonText(b));
    j["runs_on"] = Json::object();
    for (const auto& [name, runs_on] : RunsOn(report))
      j["runs_on"][ValidUtf8(name)] = JsonText(runs_on);
    j["unavailable_backends"] = Json::object();
    for (const auto& [name, why] : report.unavailable_backends) {
      j["unavailable_backends"][ValidUtf8(name)] = JsonText(why);
    }
    j["machine"] = MachineJson(report);
    j["data_roots"] = Json::array();
    for (const DataRoot& root : report.roots) {
      j["data_roots"].push_back(
          {{"path", JsonText(root.path.string())}, {"origin", JsonText(root.origin)}});
    }
    j["summary"] = {{"total", sum.total()},       {"PASS", sum.pass},
                    {"FAIL", sum.fail},           {"UNSUPPORTED", sum.unsupported},
                    {"ERROR", sum.error},         {"BOUND", sum.bound},
                    {"IMPRECISE", sum.imprecise}, {"XFAIL", sum.xfail},
                    {"XPASS", sum.xpass},         {"SKIP", sum.skip}};
    j["tolerance"]["rule"] = report.rule == ToleranceRule::kOnnx ? "onnx" : "bound";
    j["exit_code"] = report.exit_code;
    if (report.interrupted) {
      const Interruption& i = *report.interrupted;
      Json not_run = Json::array(), incomplete = Json::array();
      for (const std::string& c : i.not_run) not_run.push_back(JsonText(c));
      for (const std::string& c : i.incomplete) incomplete.push_back(JsonText(c));
      j["interrupted"] = {{"signal", SignalName(i.signal)},
                          {"signal_number", i.signal},
                          {"results", i.results},
                          {"of", i.expected},
                          {"cases_not_run", std::move(not_run)},
                          {"cases_incomplete", std::move(incomplete)}};
    }
    // The results are spliced in where this marker is dumped.
    j["results"] = std::string(kResultsMarker).substr(1, std::strlen(kResultsMarker) - 2);
    Json found = Json::array(), missing = Json::array(), altered = Json::array();
    for (const OfficialStatus& s : report.official.cases) {
      switch (s.state) {
        case OfficialStatus::State::kIntact:
          found.push_back({{"case", JsonText(s.name)}, {"dir", JsonText(s.dir.string())}});
          break;
        case OfficialStatus::State::kMissing:
          missing.push_back(JsonText(s.name));
          break;
        case OfficialStatus::State::kAltered: {
          Json problems = Json::array();
          for (const std::string& p : s.problems) problems.push_back(JsonText(p));
          altered.push_back({{"case", JsonText(s.name)},
                             {"dir", JsonText(s.dir.string())},
                             {"problems", std::move(problems)}});
          break;
        }
      }
    }
    j["official"] = {{"complete", report.official.complete()},
                     {"found", std::move(found)},
                     {"missing", std::move(missing)},
                     {"altered", std::move(altered)}};
    j["skipped"] = Json::array();
    for (const SkippedModel& s : report.skipped) {
      j["skipped"].push_back({{"case", JsonText(s.name)},
                              {"dir", JsonText(s.dir.string())},
                              {"reason", JsonText(s.reason)}});
    }
    j["shadowed"] = Json::array();
    for (const ShadowedCase& s : report.shadowed) {
      j["shadowed"].push_back({{"case", JsonText(s.name)},
                               {"dir", JsonText(s.dir.string())},
                               {"winner", JsonText(s.winner)}});
    }
    if (report.expectations) {
      Json entries = Json::array();
      for (const Expectation& e : report.expectations->entries) {
        entries.push_back({{"case", JsonText(e.case_pattern)},
                           {"backend", JsonText(e.backend_pattern)},
                           {"expect", std::string(ExpectationKindName(e.kind))},
                           {"reason", JsonText(e.reason)},
                           {"link", JsonText(e.link)},
                           {"matched", e.matched}});
      }
      j["expectations"] = {{"file", JsonText(report.expectations->source)},
                           {"entries", std::move(entries)}};
    }
    const std::string text = j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
    Splice(out, text, std::string("\"results\": ") + kResultsMarker, [&] {
      out << "\"results\": ";
      if (spool_.empty()) {
        out << "[]";
        return;
      }
      out << "[\n";
      spool_.CopyTo(out);
      out << "\n  ]";
    });
  }

 private:
  Spool spool_;
  std::string text_;
};

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
class JUnitRenderer {
 public:
  JUnitRenderer(const std::vector<std::string>& backends, const Tolerance& tolerance,
                ToleranceRule rule, bool strict)
      : backends_(backends), tolerance_(tolerance), rule_(rule), strict_(strict) {
    for (std::size_t i = 0; i < backends.size(); ++i) {
      suites_.push_back(std::make_unique<Suite>());
    }
  }
  bool ok() const {
    for (const auto& s : suites_) {
      if (!s->spool.ok()) return false;
    }
    return true;
  }
  void Add(const Result& r) {
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
    text_.str("");
    text_.clear();
    // Depth 2: a <testcase> inside <testsuites><testsuite>.
    holder.first_child().print(text_, "  ", pugi::format_default, pugi::encoding_utf8, 2);
    holder.remove_child(holder.first_child());
    suite.spool.Write(text_.str());
  }
  void Finish(const Report& report, const Summary& sum, std::ostream& out) {
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
  std::ostringstream text_;
};

}  // namespace

namespace {

// Markdown: the verdict matrix (a row per case, once its results are there) and the details (a
// row per result) are spooled; Finish writes the summary and machine above them.
class MarkdownRenderer {
 public:
  explicit MarkdownRenderer(const std::vector<std::string>& backends) : backends_(backends) {}
  bool ok() const { return matrix_.ok() && details_.ok(); }
  void Add(const Result& r) {
    if (!pending_.empty() && pending_.front().case_name != r.case_name) FlushCase();
    pending_.push_back(Cell{r.case_name, r.backend, r.verdict, r.dtype, DescOf(r)});
    const bool measured = r.vs_expected && r.vs_expected->mismatch.empty();
    std::string message = r.message;
    if (!r.support_note.empty()) message += " (by conversion: " + r.support_note + ")";
    std::ostringstream out;
    out << "| " << MarkdownEscape(r.case_name) << " | " << MarkdownEscape(r.data_set) << " | "
        << MarkdownEscape(r.backend) << " | " << VerdictName(r.verdict) << " | "
        << (measured ? FormatShort(r.vs_expected->max_abs_error) : "-") << " | "
        << (measured ? FormatShort(r.vs_expected->max_rel_error) : "-") << " | "
        << MarkdownEscape(message) << " | " << MarkdownEscape(r.vs_reference) << " | "
        << MarkdownEscape(r.implementation.empty() ? "-" : r.implementation) << " |\n";
    details_.Write(out.str());
  }
  void Finish(const Report& report, const Summary& sum, std::ostream& out) {
    if (!pending_.empty()) FlushCase();
    out << "# MatMul conformance report\n\n"
        << "mm-conformance " << MarkdownEscape(report.version) << "; tolerance: pass iff |actual - "
        << "expected| <= atol + rtol * |expected| (" << ToleranceText(report.tolerance)
        << "); integers exact.\n\n"
        << "**" << sum.pass << " PASS, " << sum.fail << " FAIL, " << sum.unsupported
        << " UNSUPPORTED, " << sum.error << " ERROR, " << sum.bound << " BOUND, " << sum.imprecise
        << " IMPRECISE" << DeclaredCounts(sum) << "** of " << sum.total()
        << " results (case x data set x backend); exit code " << report.exit_code << ".\n\n";
    if (report.interrupted) {
      const Interruption& i = *report.interrupted;
      out << "**Run " << MarkdownEscape(InterruptionText(i)) << ".**";
      if (!i.incomplete.empty()) {
        out << " Incomplete:";
        for (const std::string& c : i.incomplete) out << " " << MarkdownEscape(c);
        out << ".";
      }
      if (!i.not_run.empty()) {
        out << " Not run:";
        for (const std::string& c : i.not_run) out << " " << MarkdownEscape(c);
        out << ".";
      }
      out << "\n\n";
    }

    const MachineInfo& m = report.machine;
    out << "## Machine\n\n| | |\n|---|---|\n"
        << "| CPU | " << MarkdownEscape(m.cpu_model) << ", " << m.logical_cpus
        << " logical CPUs |\n"
        << "| CPU features | " << MarkdownEscape(m.cpu_features) << " |\n"
        << "| OMP_NUM_THREADS | " << MarkdownEscape(m.omp_num_threads) << " |\n"
        << "| ONEDNN_MAX_CPU_ISA | " << MarkdownEscape(m.onednn_max_cpu_isa) << " |\n"
        << "| OS | " << MarkdownEscape(m.os) << " |\n"
        << "| Built with | " << MarkdownEscape(m.compiler) << " |\n"
        << "| Loader | " << MarkdownEscape(report.loader_versions) << " |\n";
    for (const auto& [name, runs_on] : RunsOn(report)) {
      out << "| " << MarkdownEscape(name) << " runs on | " << MarkdownEscape(runs_on) << " |\n";
    }
    for (const auto& [name, why] : report.unavailable_backends) {
      out << "| " << MarkdownEscape(name) << " | not available: " << MarkdownEscape(why) << " |\n";
    }
    out << "\n";

    out << "## Verdicts\n\n| Case | dtype | A x B |";
    for (const std::string& b : report.backends) out << " " << MarkdownEscape(b) << " |";
    out << "\n|---|---|---|";
    for (std::size_t i = 0; i < report.backends.size(); ++i) out << "---|";
    out << "\n";
    matrix_.CopyTo(out);

    out << "\n## Details\n\n| Case | Data set | Backend | Verdict | Max abs | Max rel | Message | "
           "vs "
           "reference | Computed by |\n|---|---|---|---|---|---|---|---|---|\n";
    details_.CopyTo(out);

    if (report.expectations) {
      out << "\n## Expectations\n\nFrom " << MarkdownEscape(report.expectations->source)
          << " (the first matching entry decides a result).\n\n| Case | Backend | Expect | Reason "
             "| "
             "Link | Results |\n|---|---|---|---|---|---|\n";
      for (const Expectation& e : report.expectations->entries) {
        out << "| " << MarkdownEscape(e.case_pattern) << " | " << MarkdownEscape(e.backend_pattern)
            << " | " << ExpectationKindName(e.kind) << " | " << MarkdownEscape(e.reason) << " | "
            << MarkdownEscape(e.link) << " | "
            << (e.matched ? std::to_string(e.matched) : "**matches nothing**") << " |\n";
      }
    }

    out << "\n## Official corpus\n\n"
        << report.official.Count(OfficialStatus::State::kIntact) << " of "
        << report.official.cases.size() << " official ONNX MatMul node tests found intact"
        << (report.require_official ? " (required)" : "")
        << ".\n\n| Case | State | Where | Problems "
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
  }

 private:
  struct Cell {
    std::string case_name, backend;
    Verdict verdict;
    std::optional<DType> dtype;
    std::string desc;
  };
  // The matrix row of the case whose results are pending.
  void FlushCase() {
    const Cell& first = pending_.front();
    std::ostringstream out;
    out << "| " << MarkdownEscape(first.case_name) << " | "
        << (first.dtype ? std::string(DTypeName(*first.dtype)) : "-") << " | "
        << MarkdownEscape(first.desc) << " |";
    for (const std::string& b : backends_) {
      std::optional<Verdict> cell;
      for (const Cell& c : pending_) {
        if (c.backend == b) cell = cell ? WorseVerdict(*cell, c.verdict) : c.verdict;
      }
      out << " " << (cell ? std::string(VerdictName(*cell)) : "-") << " |";
    }
    out << "\n";
    matrix_.Write(out.str());
    pending_.clear();
  }

  std::vector<std::string> backends_;
  std::vector<Cell> pending_;
  Spool matrix_, details_;
};

}  // namespace

struct ReportFiles::Renderers {
  std::optional<JsonRenderer> json;
  std::optional<JUnitRenderer> junit;
  std::optional<MarkdownRenderer> markdown;
};

ReportFiles::ReportFiles() : renderers_(std::make_unique<Renderers>()) {}
ReportFiles::~ReportFiles() = default;

Status ReportFiles::Open(const std::string& json, const std::string& junit,
                         const std::string& markdown, const Report& header) {
  json_ = json;
  junit_ = junit;
  markdown_ = markdown;
  if (!json.empty()) renderers_->json.emplace();
  if (!junit.empty()) {
    renderers_->junit.emplace(header.backends, header.tolerance, header.rule, header.strict);
  }
  if (!markdown.empty()) renderers_->markdown.emplace(header.backends);
  if ((renderers_->json && !renderers_->json->ok()) ||
      (renderers_->junit && !renderers_->junit->ok()) ||
      (renderers_->markdown && !renderers_->markdown->ok())) {
    return DataLossError("cannot create a temporary file for the reports (TMPDIR)");
  }
  return OkStatus();
}

void ReportFiles::Add(const Result& result) {
  if (renderers_->json) renderers_->json->Add(result);
  if (renderers_->junit) renderers_->junit->Add(result);
  if (renderers_->markdown) renderers_->markdown->Add(result);
}

namespace {

// Writes `path` through PATH.partial, so the file is either the old one or the whole new one.
template <class Render>
Status WriteWhole(const std::string& path, Render render) {
  const std::string partial = path + ".partial";
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    if (!file) return NotFoundError("cannot open '" + partial + "' for writing");
    render(static_cast<std::ostream&>(file));
    file.close();
    if (!file) return DataLossError("cannot write '" + partial + "'");
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec)
    return DataLossError("cannot rename '" + partial + "' to '" + path + "': " + ec.message());
  return OkStatus();
}

}  // namespace

Status ReportFiles::Finish(const Report& report, const Summary& summary) {
  if (renderers_->json) {
    MM_RETURN_IF_ERROR(WriteWhole(
        json_, [&](std::ostream& out) { renderers_->json->Finish(report, summary, out); }));
  }
  if (renderers_->junit) {
    MM_RETURN_IF_ERROR(WriteWhole(
        junit_, [&](std::ostream& out) { renderers_->junit->Finish(report, summary, out); }));
  }
  if (renderers_->markdown) {
    MM_RETURN_IF_ERROR(WriteWhole(
        markdown_, [&](std::ostream& out) { renderers_->markdown->Finish(report, summary, out); }));
  }
  return OkStatus();
}

std::string ToJson(const Report& report) {
  JsonRenderer renderer;
  for (const Result& r : report.results) renderer.Add(r);
  std::ostringstream out;
  renderer.Finish(report, Summarize(report.results), out);
  return out.str();
}

std::string ToJUnitXml(const Report& report) {
  JUnitRenderer renderer(report.backends, report.tolerance, report.rule, report.strict);
  for (const Result& r : report.results) renderer.Add(r);
  std::ostringstream out;
  renderer.Finish(report, Summarize(report.results), out);
  return out.str();
}

std::string ToMarkdown(const Report& report) {
  MarkdownRenderer renderer(report.backends);
  for (const Result& r : report.results) renderer.Add(r);
  std::ostringstream out;
  renderer.Finish(report, Summarize(report.results), out);
  return out.str();
}

}  // namespace mm::conformance
