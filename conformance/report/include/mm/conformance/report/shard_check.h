// Checking the reports of a run's shards before they are merged (merge.h): their headers against
// each other, and every result as it is read, so that nothing claiming a verdict is taken on trust.
#ifndef MM_CONFORMANCE_REPORT_SHARD_CHECK_H_
#define MM_CONFORMANCE_REPORT_SHARD_CHECK_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/judging/resources.h"
#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/report/report.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// Checks the headers of the reports of shards 1/N .. N/N of one run: every shard exactly once
// (else INVALID_ARGUMENT naming the missing or repeated shard), all from the same run (version,
// tolerance and its rule, strictness, backends, expectations entries and data roots equal; else
// INVALID_ARGUMENT naming the difference), none interrupted (else FAILED_PRECONDITION: resume it
// first), all of one selection: each records the whole run's selection (a report of an older mm
// does not: refused, saying to run the shards again), the same one, and the shards' own
// selections combine into it (fingerprints by exclusive or, cases and results by sum). `names`
// (the files) name the shards in errors; "report N" where none is given.
Status CheckShardHeaders(const std::vector<Report>& shards, const std::vector<std::string>& names);

// Checks the results of the shards of one merge as they are read, so that nothing claiming a
// verdict is taken on trust: each result consistent with itself under the merged run's tolerance,
// rule and expectations (CheckResultConsistent, conformance/judging/result_check.h), of a case of
// its shard (InShard by the case name), its case's results together and none twice, and each shard
// holding exactly as many results as its selection says, its resource figures agreeing with each
// other (ResourceTrajectories, conformance/judging/resources.h). Errors name the shard and the
// result (case, data set, backend).
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

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_SHARD_CHECK_H_
