// Reading JSON reports back, and merging the reports of the shards of one run (`mm-conformance
// merge`) into the report the unsharded run gives: same results in the same order, same summary,
// same exit code.
#ifndef MM_CONFORMANCE_REPORT_MERGE_H_
#define MM_CONFORMANCE_REPORT_MERGE_H_

#include <cstdio>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/judging/resources.h"
#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/report/report.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// Parses a JSON report (ToJson's output) back into a Report (its resources tallied from its
// results, as the run tallied them); INVALID_ARGUMENT naming `name`, the
// key (and the result's position) when something is missing or malformed, the byte offset of
// invalid JSON, or nesting deeper than io::kMaxJsonDepth. Never throws.
StatusOr<Report> ReportFromJson(std::string_view text, std::string_view name = "JSON report");

// Reads the JSON report at `path` without its results (report.results stays empty), whatever
// their number: memory does not grow with them. The file is opened by io::OpenInputFile's rules
// (io::kConformanceReportFile: a FIFO, device or directory is refused at once). Errors name the
// file and the key.
StatusOr<Report> ReadReportHeader(const std::string& path);

// Reads the results of a JSON report one at a time, in file order, without holding the report in
// memory.
class ResultReader {
 public:
  ResultReader() = default;
  ~ResultReader();
  ResultReader(const ResultReader&) = delete;
  ResultReader& operator=(const ResultReader&) = delete;
  // Opens `path` (as ReadReportHeader does) and finds its top-level "results" array; the error
  // names the file.
  Status Open(const std::string& path);
  // The next result, or nullopt after the last. INVALID_ARGUMENT naming the file and the
  // result's position when it is malformed, longer than 16 MiB, nested deeper than
  // io::kMaxJsonDepth, or the file ends early.
  StatusOr<std::optional<Result>> Next();

 private:
  int Get();
  std::string path_;
  std::FILE* file_ = nullptr;
  std::int64_t index_ = 0;
  bool done_ = false;
};

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

// Checks the headers of the reports of shards 1/N .. N/N of one run and gives the merged report's
// header (no results, shard 1/1, the whole run's selection): every shard exactly once (else
// INVALID_ARGUMENT naming the missing or repeated shard), all from the same run (version,
// tolerance and its rule, strictness, backends, expectations entries and data roots equal; else
// INVALID_ARGUMENT naming the difference), none interrupted (else FAILED_PRECONDITION: resume it
// first), all of one selection: each records the whole run's selection (a report of an older mm
// does not: refused, saying to run the shards again), the same one, and the shards' own
// selections combine into it (fingerprints by exclusive or, cases and results by sum). `names`
// (the files) name the shards in errors; "report N" where none is given. What the shards took
// from resumed reports is summed.
StatusOr<Report> MergeShardHeaders(const std::vector<Report>& shards,
                                   const std::vector<std::string>& names);

// Checks the results of the shards of one merge as they are read, so that nothing claiming a
// verdict is taken on trust: each result consistent with itself under the merged run's tolerance,
// rule and expectations (CheckResultConsistent, conformance/result_check.h), of a case of its
// shard (InShard by the case name), its case's results together and none twice, and each shard
// holding exactly as many results as its selection says, its resource figures agreeing with each
// other (ResourceTrajectories, conformance/resources.h). Errors name the shard and the result
// (case, data set, backend).
class ShardResultCheck {
 public:
  // `merged`: MergeShardHeaders' header.
  explicit ShardResultCheck(const Report& merged);
  // Starts the results of the shard with header `shard`, named `name` in errors ("'FILE'" or
  // "report 2", followed by " (shard I/N)").
  void Start(const Report& shard, std::string name);
  // One result of the current shard, in file order.
  Status Add(const Result& result);
  // After the current shard's last result: its number of results.
  Status Finish() const;

 private:
  ResultRules rules_;
  Shard shard_;
  std::string name_;
  std::int64_t expected_ = 0, results_ = 0;
  std::int64_t case_index_ = -1;
  std::string case_name_;
  std::set<std::pair<std::string, std::string>> keys_;  // (data set, backend) of the case.
  ResourceTrajectories trajectories_;                   // Of the shard's results.
};

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
