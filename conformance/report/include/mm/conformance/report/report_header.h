// The header of a report: what every format writes before and around a run's results (the
// options, the machine and backends, the data roots, the official corpus, expectations, what was
// resumed or interrupted, the resource findings, the counts), taken once from the run's Report
// and Summary. Each format (console_report.h, json_report.h, junit_report.h, markdown_report.h)
// renders this one model, so a count, a state or a sentence is derived in one place.
#ifndef MM_CONFORMANCE_REPORT_REPORT_HEADER_H_
#define MM_CONFORMANCE_REPORT_REPORT_HEADER_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/report/report.h"

namespace mm::conformance {

// The official corpus as the reports count it.
struct OfficialCounts {
  std::size_t cases = 0;  // MatMul's official cases looked for.
  int intact = 0, missing = 0, altered = 0;
  // The official cases of MatMul's family the roots hold (CheckOfficialCorpora lists no other).
  int family_found = 0, family_intact = 0, family_altered = 0;
  bool complete = false;  // Every case intact, MatMul's and the family's found.
  // Required (--require-official) and not complete: a failure of its own.
  bool failed = false;
  // Whether the console judges it: the run holds one of its cases (intact or altered) or requires
  // them. A run over roots holding none of them gets no verdict on them.
  bool judged = false;
};

// The expectations entries that decided nothing in the run.
struct UnmatchedCounts {
  int unmatched = 0;  // Applying on this CPU, matching nothing.
  int elsewhere = 0;  // Not for this CPU (not_here), so not tested here.
};

// Everything a report shows besides its results, filled once by MakeReportHeader.
struct ReportHeader {
  // The run as given: its options and the lists each format writes out (backends, data roots,
  // skipped and shadowed models, official cases, expectations entries, resource figures). Must
  // outlive the header.
  const Report* run = nullptr;
  Summary summary;
  std::string tolerance_text;                                // ToleranceText(run->tolerance).
  const char* rule_name = "onnx";                            // "onnx" or "bound".
  const char* rule_verdict = "BOUND";                        // The verdict failing under the rule.
  int rule_failures = 0;                                     // Results of that verdict.
  std::vector<std::pair<std::string, std::string>> runs_on;  // RunsOn(*run).
  OfficialCounts official;
  std::optional<UnmatchedCounts> expectations;  // Set when the run had an expectations file.
  int resource_findings = 0;  // Backends with a resource finding (BackendsWithFindings).
  // ResourceFindingLines(run->resources, run->strict): a line per backend with a finding.
  std::vector<std::string> resource_lines;
  // Under --strict, what fails besides the verdicts: UNSUPPORTED results and resource findings.
  int strict_failures = 0;
  std::string interruption;  // InterruptionText; empty when the run was not interrupted.
  std::string resumption;    // ResumptionText; empty when nothing was resumed.
  std::string gap_count;     // GapCount(summary).
  std::string declared;      // DeclaredCounts(summary).
};

// The header of `report` (whose own results are not looked at) with the counts `summary`.
ReportHeader MakeReportHeader(const Report& report, const Summary& summary);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_HEADER_H_
