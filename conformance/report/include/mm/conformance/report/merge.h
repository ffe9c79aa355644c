// Merging the reports of the shards of one run (`mm-conformance merge`) into the report the
// unsharded run gives: same results in the same order, same summary, same exit code. The shards'
// reports are read by report_reader.h and checked by shard_check.h; merge_files.cc writes the
// merged report as its results are read.
#ifndef MM_CONFORMANCE_REPORT_MERGE_H_
#define MM_CONFORMANCE_REPORT_MERGE_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mm/conformance/judging/resources.h"
#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/report/report_reader.h"
#include "mm/conformance/report/shard_check.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// mm-conformance's exit code for a report with `summary` and the resource figures of
// report.resources (ExitCodeOf's rules).
int ExitCodeOfSummary(const Report& report, const Summary& summary, bool any_case,
                      std::optional<int> skip_exit_code = {});

// mm-conformance's exit code for `report`: 3 when require_official and the official corpus is not
// complete; 2 when `any_case` is false (no MatMul case found); 1 on any FAIL, ERROR or XPASS,
// BOUND under report.rule onnx, IMPRECISE under report.rule bound, or, under strict, UNSUPPORTED
// or a resource finding (TallyResources of report.results); `skip_exit_code` when every result is
// UNSUPPORTED; else 0.
int ExitCodeOf(const Report& report, bool any_case, std::optional<int> skip_exit_code = {});

// Checks the headers of the reports of shards 1/N .. N/N of one run (CheckShardHeaders) and gives
// the merged report's header (no results, shard 1/1, the whole run's selection). What the shards
// took from resumed reports is summed.
StatusOr<Report> MergeShardHeaders(const std::vector<Report>& shards,
                                   const std::vector<std::string>& names);

// MergeShardHeaders on shards read whole (their results in memory), every result checked by a
// ShardResultCheck; results are put in catalog order and the exit code is recomputed.
StatusOr<Report> MergeShardReports(const std::vector<Report>& shards);

// What `mm-conformance merge` takes: the shard reports and where to write the merged one.
struct MergeOptions {
  std::vector<std::string> inputs;
  std::string json, junit, markdown;
  bool quiet = false;
};

// Merges the shard reports `options.inputs` (MergeShardHeaders, then every result checked by
// ShardResultCheck before anything is written, and checked again as it is merged, in catalog
// order) into the report files of `options` and the console on `out`. Memory does not grow with
// the results. Returns the merged run's exit code (ExitCodeOfSummary); the error names the file.
StatusOr<int> MergeShardReports(const MergeOptions& options, std::ostream& out);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_MERGE_H_
