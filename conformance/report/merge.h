// Reading JSON reports back, and merging the reports of the shards of one run (`mm-conformance
// merge`) into the report the unsharded run gives: same results in the same order, same summary,
// same exit code.
#ifndef MM_CONFORMANCE_REPORT_MERGE_H_
#define MM_CONFORMANCE_REPORT_MERGE_H_

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/report/report.h"
#include "engine/status.h"

namespace mm::conformance {

// Parses a JSON report (ToJson's output) back into a Report; INVALID_ARGUMENT naming the key (and
// the result's position) when something is missing or malformed. Never throws.
StatusOr<Report> ReportFromJson(std::string_view text);

// Reads the JSON report at `path` without its results (report.results stays empty), whatever
// their number: memory does not grow with them. Errors name the file and the key.
StatusOr<Report> ReadReportHeader(const std::string& path);

// Reads the results of a JSON report one at a time, in file order, without holding the report in
// memory.
class ResultReader {
 public:
  ResultReader() = default;
  ~ResultReader();
  ResultReader(const ResultReader&) = delete;
  ResultReader& operator=(const ResultReader&) = delete;
  // Opens `path` and finds its top-level "results" array; the error names the file.
  Status Open(const std::string& path);
  // The next result, or nullopt after the last. INVALID_ARGUMENT naming the file and the
  // result's position when it is malformed or the file ends early.
  StatusOr<std::optional<Result>> Next();

 private:
  int Get();
  std::string path_;
  std::FILE* file_ = nullptr;
  std::int64_t index_ = 0;
  bool done_ = false;
};

// mm-conformance's exit code for a report with `summary` (ExitCodeOf's rules).
int ExitCodeOfSummary(const Report& report, const Summary& summary, bool any_case,
                      std::optional<int> skip_exit_code = {});

// mm-conformance's exit code for `report`: 3 when require_official and the official corpus is not
// complete; 2 when `any_case` is false (no MatMul case found); 1 on any FAIL, ERROR or XPASS,
// BOUND under report.rule onnx, IMPRECISE under report.rule bound, or UNSUPPORTED under strict;
// `skip_exit_code` when every result is UNSUPPORTED; else 0.
int ExitCodeOf(const Report& report, bool any_case, std::optional<int> skip_exit_code = {});

// Merges the reports of shards 1/N .. N/N of one run: every shard exactly once (else
// INVALID_ARGUMENT naming the missing or repeated shard), all from the same run (version,
// tolerance and its rule, strictness, backends and data roots equal; else INVALID_ARGUMENT naming
// the difference), none interrupted (else FAILED_PRECONDITION: resume it first). Results are put
// in catalog order; the exit code is recomputed.
StatusOr<Report> MergeShardReports(const std::vector<Report>& shards);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_MERGE_H_
