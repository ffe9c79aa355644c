#include "mm/conformance/report/report.h"

#include <cstdio>
#include <cstring>

#include "mm/engine/process/process.h"

namespace mm::conformance {

std::string DescOf(const Result& r) {
  // MatMul's results read as they always have; the family's name their operator first.
  const std::string op = r.op == "MatMul" ? "" : r.op;
  if (!r.dtype) return op.empty() ? "-" : op;
  return (op.empty() ? "" : op + " ") + DimsToString(r.a_dims) + " x " + DimsToString(r.b_dims);
}

std::string ToleranceText(const Tolerance& t) {
  return "rtol " + FormatDouble(t.rtol) + ", atol " + FormatDouble(t.atol);
}

// "name: runs_on" lines, for text reports.
std::vector<std::pair<std::string, std::string>> RunsOn(const Report& report) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const BackendInfo& info : report.backend_info) lines.emplace_back(info.name, info.runs_on);
  return lines;
}

void Count(Summary& s, Verdict verdict) { ++s[verdict]; }

void Count(Summary& s, const Result& result) {
  Count(s, result.verdict);
  s.gaps += IsConformanceGap(result);
}

Summary Summarize(const std::vector<Result>& results) {
  Summary s;
  for (const Result& r : results) Count(s, r);
  return s;
}

bool IsConformanceGap(const Result& result) {
  return result.verdict == Verdict::kError && result.message.starts_with("conformance gap: ");
}

std::string GapCount(const Summary& summary) {
  if (summary.gaps == 0) return "";
  return " (" + std::to_string(summary.gaps) + " conformance gap" + (summary.gaps == 1 ? "" : "s") +
         ")";
}

void CountMatch(Expectations& expectations, const Result& r) {
  for (Expectation& e : expectations.entries) {
    if (e.Matches(r.case_name, r.backend, r.data_set)) {
      ++e.matched;
      return;
    }
  }
}

void CountMatches(Expectations& expectations, const std::vector<Result>& results) {
  for (Expectation& e : expectations.entries) e.matched = 0;
  for (const Result& r : results) CountMatch(expectations, r);
}

std::string DeclaredCounts(const Summary& sum) {
  std::string out;
  for (auto [count, name] : {std::pair{sum[Verdict::kXFail], "XFAIL"},
                             {sum[Verdict::kXPass], "XPASS"},
                             {sum[Verdict::kSkip], "SKIP"}}) {
    if (count) out += ", " + std::to_string(count) + " " + name;
  }
  return out;
}

std::vector<BackendResources> TallyResources(const std::vector<Result>& results,
                                             const std::vector<std::string>& backends) {
  ResourceTally tally;
  for (const Result& r : results) {
    if (r.resources) tally.Add(r.backend, *r.resources);
  }
  return tally.Finish(backends);
}

std::vector<std::string> ResourceFindingLines(const std::vector<BackendResources>& resources,
                                              bool strict) {
  std::vector<std::string> lines;
  for (const BackendResources& f : resources) {
    if (f.findings.empty()) continue;
    std::string line = "resources: " + f.backend + ": ";
    for (std::size_t i = 0; i < f.findings.size(); ++i) line += (i ? "; " : "") + f.findings[i];
    lines.push_back(line + (strict ? " (fails under --strict)" : ""));
  }
  return lines;
}

std::string SignalName(int signal) { return process::SignalText(signal); }

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

std::string ResumptionText(const Resumption& r) {
  std::string files;
  for (const std::string& f : r.files) files += (files.empty() ? "" : ", ") + f;
  return std::to_string(r.taken) + " result" + (r.taken == 1 ? "" : "s") + " taken from " +
         (files.empty() ? "a previous report" : files) + "; " + std::to_string(r.rerun) +
         " run again (not consistent with " + (r.rerun == 1 ? "itself" : "themselves") + ")";
}

}  // namespace mm::conformance
