#include <algorithm>
#include <memory>
#include <optional>

#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report_files.h"
#include "mm/conformance/report/report_paths.h"

namespace mm::conformance {
namespace {

StatusOr<std::vector<Report>> ReadShardHeaders(const std::vector<std::string>& inputs) {
  std::vector<Report> shards;
  for (const std::string& path : inputs) {
    MM_ASSIGN_OR_RETURN(Report header, ReadReportHeader(path));
    shards.push_back(std::move(header));
  }
  return shards;
}

// A first pass over every shard's results: checks all of them before anything is written, so a
// refused merge leaves no report. Gives the longest case name (the console's column width).
StatusOr<std::size_t> CheckShardResults(const Report& merged, const std::vector<Report>& shards,
                                        const std::vector<std::string>& inputs) {
  std::size_t name_width = 4;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    ShardResultCheck check(merged);
    check.Start(shards[i], "'" + inputs[i] + "'");
    ResultReader reader;
    MM_RETURN_IF_ERROR(reader.Open(inputs[i]));
    while (true) {
      MM_ASSIGN_OR_RETURN(std::optional<Result> r, reader.Next());
      if (!r) break;
      MM_RETURN_IF_ERROR(check.Add(*r));
      name_width = std::max(name_width, r->case_name.size());
    }
    MM_RETURN_IF_ERROR(check.Finish());
  }
  return name_width;
}

// The second pass: every shard's results into `sink`, checked again (a file changed in between is
// refused too). Each case ran whole in one shard, in order: the smallest case index comes next
// (ties keep the shards' order).
Status MergeShardResults(const Report& merged, const std::vector<Report>& shards,
                         const std::vector<std::string>& inputs, ResultSink& sink) {
  std::vector<ShardResultCheck> checks;
  std::vector<std::unique_ptr<ResultReader>> readers;
  std::vector<std::optional<Result>> heads;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    checks.emplace_back(merged);
    checks.back().Start(shards[i], "'" + inputs[i] + "'");
    readers.push_back(std::make_unique<ResultReader>());
    MM_RETURN_IF_ERROR(readers.back()->Open(inputs[i]));
    MM_ASSIGN_OR_RETURN(std::optional<Result> first, readers.back()->Next());
    heads.push_back(std::move(first));
  }
  while (true) {
    std::optional<std::size_t> next;
    for (std::size_t i = 0; i < heads.size(); ++i) {
      if (heads[i] && (!next || heads[i]->case_index < heads[*next]->case_index)) next = i;
    }
    if (!next) break;
    Result r = std::move(*heads[*next]);
    MM_RETURN_IF_ERROR(checks[*next].Add(r));
    MM_ASSIGN_OR_RETURN(heads[*next], readers[*next]->Next());
    sink.Add(std::move(r));
  }
  for (const ShardResultCheck& check : checks) MM_RETURN_IF_ERROR(check.Finish());
  return OkStatus();
}

}  // namespace

StatusOr<int> MergeShardReports(const MergeOptions& options, std::ostream& out) {
  std::vector<RunInput> inputs;
  for (const std::string& path : options.inputs) inputs.push_back({"the shard report", path, ""});
  MM_RETURN_IF_ERROR(CheckReportPaths(
      {{"--json", options.json}, {"--junit", options.junit}, {"--markdown", options.markdown}},
      inputs));
  MM_ASSIGN_OR_RETURN(std::vector<Report> shards, ReadShardHeaders(options.inputs));
  MM_ASSIGN_OR_RETURN(Report report, MergeShardHeaders(shards, options.inputs));
  MM_ASSIGN_OR_RETURN(const std::size_t name_width,
                      CheckShardResults(report, shards, options.inputs));
  std::size_t backend_width = 7;
  for (const std::string& b : report.backends) backend_width = std::max(backend_width, b.size());
  ReportFiles reports;
  MM_RETURN_IF_ERROR(reports.Open(options.json, options.junit, options.markdown, report));
  reports.AddStream(std::make_unique<ConsoleWriter>(out, options.quiet, report.tolerance,
                                                    name_width, backend_width),
                    out);
  if (report.expectations) {
    for (Expectation& e : report.expectations->entries) e.matched = 0;
    reports.CountMatches(&*report.expectations);
  }
  MM_RETURN_IF_ERROR(MergeShardResults(report, shards, options.inputs, reports));
  report.resources = reports.Resources(report.backends);
  const Summary& summary = reports.summary();
  report.exit_code = ExitCodeOfSummary(report, summary, summary.total() > 0);
  MM_RETURN_IF_ERROR(reports.Finish(report));
  return report.exit_code;
}

}  // namespace mm::conformance
