// The reports of a conformance run: console table, JSON, JUnit XML and Markdown, each escaped for
// its format (any byte in a path or message is safe).
#ifndef MM_CONFORMANCE_REPORT_REPORT_H_
#define MM_CONFORMANCE_REPORT_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/loader/catalog.h"
#include "conformance/official/official_corpus.h"
#include "conformance/runner.h"
#include "engine/machine.h"

namespace mm::conformance {

// A run that a signal ended before every result was finished.
struct Interruption {
  int signal = 0;                       // SIGINT, SIGTERM, ...
  std::int64_t results = 0;             // Results finished (and in the report).
  std::int64_t expected = 0;            // Results the whole run would have given.
  std::vector<std::string> not_run;     // Cases without any result, in catalog order.
  std::vector<std::string> incomplete;  // Cases with some of their results.
};
// "SIGTERM (signal 15)".
std::string SignalName(int signal);
// "interrupted by SIGTERM (signal 15) after 120 of 300 results; 60 case(s) not run, 1 incomplete".
std::string InterruptionText(const Interruption& interruption);

// Which cases a run selected, so a resumed run can check it is the same run: how many cases and
// results, and a hash of the case names and data sets in order.
struct Selection {
  std::int64_t cases = 0;
  std::int64_t results = 0;
  std::string fingerprint;  // 16 hex digits; empty when not known (merged or older reports).
};

// A fingerprint as it is written: 16 hex digits.
std::string FingerprintText(std::uint64_t fingerprint);

// Everything a report shows about one run.
struct Report {
  std::string version;  // mm's version.
  Tolerance tolerance;
  ToleranceRule rule = ToleranceRule::kOnnx;  // Which rule decided the exit code.
  bool strict = false;
  bool require_official = false;
  std::vector<std::string> backends;      // Selected, in order.
  std::vector<BackendInfo> backend_info;  // What each selected backend runs on, in that order.
  // The backends this build knows but cannot run here (name, why), in registration order: listed
  // in every report, never silently left out.
  std::vector<std::pair<std::string, std::string>> unavailable_backends;
  MachineInfo machine;
  std::string loader_versions;  // The libraries that read the cases ("protobuf 3.21.12, ...").
  std::vector<DataRoot> roots;
  std::vector<SkippedModel> skipped;
  std::vector<ShadowedCase> shadowed;
  OfficialReport official;
  std::vector<Result> results;
  int exit_code = 0;
  Shard shard;  // The part of the cases this run took (1/1: all).
  // The expectations file given, with how many results each entry decided (0: it matched
  // nothing, which every report points out).
  std::optional<Expectations> expectations;
  Selection selection;
  std::optional<Interruption> interrupted;  // Set when a signal ended the run.
};

// Results per verdict.
struct Summary {
  int pass = 0, fail = 0, unsupported = 0, error = 0, bound = 0, imprecise = 0;
  int xfail = 0, xpass = 0, skip = 0;
  int total() const {
    return pass + fail + unsupported + error + bound + imprecise + xfail + xpass + skip;
  }
};

// Sets each entry's `matched` to the number of `results` it decided (the first matching entry
// decides a result).
void CountMatches(Expectations& expectations, const std::vector<Result>& results);
// Adds one result to the counts of the first entry of `expectations` matching it.
void CountMatch(Expectations& expectations, const Result& result);
Summary Summarize(const std::vector<Result>& results);
// Adds one result of verdict `verdict` to `summary`.
void Count(Summary& summary, Verdict verdict);

// One line per (case, backend) unless `quiet`, its verdict the worst over the case's data sets;
// then the official corpus, skipped and shadowed counts and the summary.
void WriteConsole(const Report& report, std::ostream& out, bool quiet = false);

// WriteConsole as results arrive: the lines of a case are printed (and flushed, whatever `out`
// is: a terminal, a file, a pipe) as soon as a result of the next case or Finish comes. Results
// of one case must be contiguous (as every run gives them).
class ConsoleWriter {
 public:
  // `name_width` and `backend_width`: the longest case and backend name (columns are 2 wider).
  ConsoleWriter(std::ostream& out, bool quiet, const Tolerance& tolerance, std::size_t name_width,
                std::size_t backend_width);
  void Add(const Result& result);
  // The pending lines, then everything after them: the official corpus, skipped and shadowed
  // models, the machine, expectations, the interruption and the summary of `report` (whose own
  // results are not looked at).
  void Finish(const Report& report, const Summary& summary);

 private:
  void FlushCase();
  std::ostream& out_;
  bool quiet_;
  Tolerance tolerance_;
  std::size_t name_width_, backend_width_;
  std::vector<Result> pending_;  // The current case's results.
  std::int64_t rows_ = 0;
};

// The JSON, JUnit and Markdown files of one run, written as results arrive: each result is
// rendered once, into temporary spool files, so memory does not grow with the results; Finish
// assembles each file (through PATH.partial, renamed over PATH) byte for byte as ToJson,
// ToJUnitXml and ToMarkdown render the same report.
class ReportFiles {
 public:
  ReportFiles();
  ~ReportFiles();
  ReportFiles(const ReportFiles&) = delete;
  ReportFiles& operator=(const ReportFiles&) = delete;
  // The formats to write (an empty path: not written); `header` gives the run's backends,
  // tolerance, rule and strictness (its results are not looked at). The error says what cannot
  // be created.
  Status Open(const std::string& json, const std::string& junit, const std::string& markdown,
              const Report& header);
  void Add(const Result& result);
  // Writes every file for `report` (its own results not looked at) with `summary`; the error
  // names the file that cannot be written.
  Status Finish(const Report& report, const Summary& summary);

  struct Renderers;

 private:
  std::string json_, junit_, markdown_;
  std::unique_ptr<Renderers> renderers_;
};

// JSON (written with nlohmann-json): {"tool", "version", "tolerance", "strict",
// "require_official", "shard", "backends", "runs_on" {backend: text}, "machine" {...},
// "data_roots", "summary", "exit_code", "results" (ResultToJson each), "official", "skipped",
// "shadowed", "expectations"?}; non-finite numbers as the strings "nan", "inf", "-inf"; invalid
// UTF-8 replaced by U+FFFD.
std::string ToJson(const Report& report);
// JUnit XML (written with pugixml): one <testsuite> per backend with <properties> (machine,
// runs_on), one <testcase> per (case, data set) in it, named "<case>/<data set>" with classname
// "conformance.<backend>" and a property "implementation"; FAIL as <failure>, ERROR as <error>,
// UNSUPPORTED as <skipped> (as <failure> under --strict); plus a suite "official-corpus".
std::string ToJUnitXml(const Report& report);
// Markdown: summary, the machine and what each backend runs on, a case x backend verdict matrix,
// the details of every result (with what computed it), the official corpus table, skipped and
// shadowed lists.
std::string ToMarkdown(const Report& report);

// Escapers. All replace invalid UTF-8 with U+FFFD.
// Text XML 1.0 can hold: invalid UTF-8 and the control characters XML 1.0 forbids (all below
// U+0020 but tab, newline and carriage return, and U+FFFE/U+FFFF) become U+FFFD. Escaping itself
// is pugixml's.
std::string XmlSafeText(std::string_view text);
// Valid UTF-8: each byte of an invalid sequence becomes U+FFFD.
std::string ValidUtf8(std::string_view text);
// A Markdown table cell: one line, | and markup escaped.
std::string MarkdownEscape(std::string_view text);
// A terminal or CI log line: control characters (newlines included) become U+FFFD, so text from a
// file can neither break a line nor drive the terminal.
std::string PrintableText(std::string_view text);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_H_
