// The reports of a conformance run: console table, JSON, JUnit XML and Markdown, each escaped for
// its format (any byte in a path or message is safe).
#ifndef MM_CONFORMANCE_REPORT_REPORT_H_
#define MM_CONFORMANCE_REPORT_REPORT_H_

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
Summary Summarize(const std::vector<Result>& results);

// One line per (case, backend) unless `quiet`, its verdict the worst over the case's data sets;
// then the official corpus, skipped and shadowed counts and the summary.
void WriteConsole(const Report& report, std::ostream& out, bool quiet = false);

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
