#include "mm/conformance/report/report_header.h"

namespace mm::conformance {
namespace {

OfficialCounts CountOfficial(const Report& report) {
  const OfficialReport& official = report.official;
  OfficialCounts counts;
  for (const OfficialStatus& s : official.cases) {
    const bool intact = s.state == OfficialStatus::State::kIntact;
    const bool altered = s.state == OfficialStatus::State::kAltered;
    if (IsFamilyOfficialCase(s.name)) {
      ++counts.family_found;
      counts.family_intact += intact;
      counts.family_altered += altered;
      continue;
    }
    ++counts.cases;
    counts.intact += intact;
    counts.altered += altered;
    counts.missing += s.state == OfficialStatus::State::kMissing;
  }
  counts.complete = official.complete();
  counts.failed = report.require_official && !counts.complete;
  counts.judged = report.require_official || counts.intact > 0 || counts.altered > 0;
  return counts;
}

UnmatchedCounts CountUnmatched(const Expectations& expectations) {
  UnmatchedCounts counts;
  for (const Expectation& e : expectations.entries) {
    counts.elsewhere += !e.not_here.empty();
    counts.unmatched += e.matched == 0 && e.not_here.empty();
  }
  return counts;
}

}  // namespace

ReportHeader MakeReportHeader(const Report& report, const Summary& summary) {
  ReportHeader header;
  header.run = &report;
  header.summary = summary;
  header.tolerance_text = ToleranceText(report.tolerance);
  const bool onnx = report.rule == ToleranceRule::kOnnx;
  header.rule_name = onnx ? "onnx" : "bound";
  header.rule_verdict = onnx ? "BOUND" : "IMPRECISE";
  header.rule_failures = summary[onnx ? Verdict::kBound : Verdict::kImprecise];
  header.runs_on = RunsOn(report);
  header.official = CountOfficial(report);
  if (report.expectations) header.expectations = CountUnmatched(*report.expectations);
  header.resource_findings = BackendsWithFindings(report.resources);
  header.resource_lines = ResourceFindingLines(report.resources, report.strict);
  header.strict_failures =
      report.strict ? summary[Verdict::kUnsupported] + header.resource_findings : 0;
  if (report.interrupted) header.interruption = InterruptionText(*report.interrupted);
  if (report.resumed) header.resumption = ResumptionText(*report.resumed);
  header.gap_count = GapCount(summary);
  header.declared = DeclaredCounts(summary);
  return header;
}

}  // namespace mm::conformance
