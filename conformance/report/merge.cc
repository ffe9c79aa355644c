#include "mm/conformance/report/merge.h"

#include <algorithm>

#include "mm/conformance/judging/verdict.h"

namespace mm::conformance {
namespace {

int ExitCode(const Report& report, const Summary& sum,
             const std::vector<BackendResources>& resources, bool any_case,
             std::optional<int> skip_exit_code) {
  ExitFacts facts;
  facts.rule = report.rule;
  facts.strict = report.strict;
  facts.official_failed = report.require_official && !report.official.complete();
  facts.any_case = any_case;
  facts.resource_findings = BackendsWithFindings(resources);
  facts.skip_exit_code = skip_exit_code;
  return ExitCodeOf(sum, facts);
}

}  // namespace

int ExitCodeOf(const Report& report, bool any_case, std::optional<int> skip_exit_code) {
  return ExitCode(report, Summarize(report.results),
                  TallyResources(report.results, report.backends), any_case, skip_exit_code);
}

int ExitCodeOfSummary(const Report& report, const Summary& sum, bool any_case,
                      std::optional<int> skip_exit_code) {
  return ExitCode(report, sum, report.resources, any_case, skip_exit_code);
}

StatusOr<Report> MergeShardHeaders(const std::vector<Report>& shards,
                                   const std::vector<std::string>& names) {
  MM_RETURN_IF_ERROR(CheckShardHeaders(shards, names));
  const Report& first = shards.front();
  Report merged = first;
  merged.shard = {1, 1};
  merged.selection = first.run_selection;
  merged.results.clear();
  merged.resumed.reset();
  for (const Report& s : shards) {
    if (!s.resumed) continue;
    if (!merged.resumed) merged.resumed.emplace();
    merged.resumed->files.insert(merged.resumed->files.end(), s.resumed->files.begin(),
                                 s.resumed->files.end());
    merged.resumed->taken += s.resumed->taken;
    merged.resumed->rerun += s.resumed->rerun;
  }
  return merged;
}

StatusOr<Report> MergeShardReports(const std::vector<Report>& shards) {
  MM_ASSIGN_OR_RETURN(Report merged, MergeShardHeaders(shards, {}));
  ShardResultCheck check(merged);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    check.Start(shards[i], "report " + std::to_string(i + 1));
    for (const Result& r : shards[i].results) MM_RETURN_IF_ERROR(check.Add(r));
    MM_RETURN_IF_ERROR(check.Finish());
    merged.results.insert(merged.results.end(), shards[i].results.begin(), shards[i].results.end());
  }
  // Each case runs whole in one shard, in order: sorting by case keeps its own order.
  std::stable_sort(merged.results.begin(), merged.results.end(),
                   [](const Result& a, const Result& b) { return a.case_index < b.case_index; });
  // An entry matched nothing only if it matched nothing in every shard.
  if (merged.expectations) CountMatches(*merged.expectations, merged.results);
  merged.resources = TallyResources(merged.results, merged.backends);
  merged.exit_code = ExitCodeOf(merged, !merged.results.empty());
  return merged;
}

}  // namespace mm::conformance
