// The result model every report of a conformance run is rendered from: the run (Report), its
// counts (Summary), its interruption and selection, and the pieces of text several formats share.
// Each format is in a file of its own: console_report.h, json_report.h, junit_report.h,
// markdown_report.h; report_files.h writes the files of a run as results arrive; escape.h holds
// the escapers.
#ifndef MM_CONFORMANCE_REPORT_REPORT_H_
#define MM_CONFORMANCE_REPORT_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/official/official_corpus.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/machine.h"

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

// What a run took from previous reports instead of running it (--resume; a merged report: its
// shards' together).
struct Resumption {
  std::vector<std::string> files;  // The reports resumed from.
  std::int64_t taken = 0;          // Results taken as they were.
  // Results in them that were not consistent with themselves (conformance/judging/result_check.h):
  // run again, never taken.
  std::int64_t rerun = 0;
};
// "12 results taken from r.json; 1 run again (not consistent with itself)".
std::string ResumptionText(const Resumption& resumption);

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
  // The selection of the whole (unsharded) run this run is a shard of; `selection` itself when
  // unsharded. Merge checks that its shards add up to it. Empty fingerprint: not known (a report
  // of an older mm).
  Selection run_selection;
  std::optional<Resumption> resumed;        // Set when results were taken from a previous report.
  std::optional<Interruption> interrupted;  // Set when a signal ended the run.
  // What the backends' calls left behind, per backend with figures, in `backends` order, from
  // every result of the report (TallyResources); a finding fails the run under strict.
  std::vector<BackendResources> resources;
};

// Results per verdict.
struct Summary : VerdictCounts<int> {
  int gaps = 0;  // Conformance gaps: ERROR results, counted under ERROR too.
};

// Sets each entry's `matched` to the number of `results` it decided (the first matching entry
// decides a result).
void CountMatches(Expectations& expectations, const std::vector<Result>& results);
// Adds one result to the counts of the first entry of `expectations` matching it.
void CountMatch(Expectations& expectations, const Result& result);
Summary Summarize(const std::vector<Result>& results);
// Adds one result of verdict `verdict` to `summary`.
void Count(Summary& summary, Verdict verdict);
// Adds `result` to `summary`: its verdict, and whether it is a conformance gap.
void Count(Summary& summary, const Result& result);

// A conformance gap (engine/backend.h): an ERROR whose message starts "conformance gap: ", a
// refusal of a problem of a dtype its backend declares supported.
bool IsConformanceGap(const Result& result);
// " (2 conformance gaps)" when `summary` has any, else "": what follows the ERROR count.
std::string GapCount(const Summary& summary);

// The resource figures of `results` (ResourceTally), for `backends` in that order.
std::vector<BackendResources> TallyResources(const std::vector<Result>& results,
                                             const std::vector<std::string>& backends);
// "resources: BACKEND: finding; finding" lines, one per backend with a finding, each ending in
// " (fails under --strict)" when `strict`, without a line end; what console and merge print.
std::vector<std::string> ResourceFindingLines(const std::vector<BackendResources>& resources,
                                              bool strict);

// "A x B" of a result ("[2,3] x [3,4]"), "-" when it has no problem; a result of MatMul's family
// names its operator first ("Gemm [3,6] x [4,6]", "Gemm" when it has no problem): the operator of
// every line of the console, Markdown and JUnit reports.
std::string DescOf(const Result& r);
// "rtol 0.0001, atol 1e-05".
std::string ToleranceText(const Tolerance& t);
// (name, runs_on) of each selected backend, for text reports.
std::vector<std::pair<std::string, std::string>> RunsOn(const Report& report);
// "2 XFAIL, 1 XPASS, 3 SKIP" for the verdicts that exist only with an expectations file; empty
// when there are none.
std::string DeclaredCounts(const Summary& sum);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_H_
