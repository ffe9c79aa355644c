// Reading JSON reports back, and merging the reports of the shards of one run (`mm-conformance
// merge`) into the report the unsharded run gives: same results in the same order, same summary,
// same exit code.
#ifndef MM_CONFORMANCE_REPORT_MERGE_H_
#define MM_CONFORMANCE_REPORT_MERGE_H_

#include <optional>
#include <string_view>
#include <vector>

#include "conformance/report/report.h"
#include "engine/status.h"

namespace mm::conformance {

// Parses a JSON report (ToJson's output) back into a Report; INVALID_ARGUMENT naming the key (and
// the result's position) when something is missing or malformed. Never throws.
StatusOr<Report> ReportFromJson(std::string_view text);

// mm-conformance's exit code for `report`: 3 when require_official and the official corpus is not
// complete; 2 when `any_case` is false (no MatMul case found); 1 on any FAIL, ERROR or XPASS,
// BOUND under report.rule onnx, IMPRECISE under report.rule bound, or UNSUPPORTED under strict;
// `skip_exit_code` when every result is UNSUPPORTED; else 0.
int ExitCodeOf(const Report& report, bool any_case, std::optional<int> skip_exit_code = {});

// Merges the reports of shards 1/N .. N/N of one run: every shard exactly once (else
// INVALID_ARGUMENT naming the missing or repeated shard), all from the same run (version,
// tolerance and its rule, strictness, backends and data roots equal; else INVALID_ARGUMENT naming
// the difference). Results are put in catalog order; the exit code is recomputed.
StatusOr<Report> MergeShardReports(const std::vector<Report>& shards);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_MERGE_H_
