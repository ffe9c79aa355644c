// Merging the JSON reports of a sharded mm-fuzz campaign (mm-fuzz --shard I/N --json FILE) into
// the report of the unsharded campaign.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_MERGE_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_MERGE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mm/engine/status.h"

namespace mm::fuzz {

// One shard's report, as read, with where it came from (for error messages).
struct ShardReport {
  std::string path;
  nlohmann::ordered_json json;
};

// The report of the unsharded campaign from the reports of shards 1/N .. N/N of one campaign
// (each exactly once; same version and options): counts summed; findings and per-problem records
// in problem order, cut to the campaign's limits; percentiles computed again from every record;
// the exit code of the unsharded run. Only the timing fields (seconds, shrink_seconds,
// problems_per_second) are sums rather than one run's. INVALID_ARGUMENT naming the report for a
// missing, repeated or foreign shard, a capped shard, or a report that is not a shard's.
StatusOr<nlohmann::ordered_json> MergeFuzzReports(const std::vector<ShardReport>& shards);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_MERGE_H_
