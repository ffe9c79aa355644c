// Isolated runs: conformance results executed in reused worker processes, so that a crash (signal)
// or a hang in a backend costs exactly its own result.
#ifndef MM_CONFORMANCE_WORKER_POOL_H_
#define MM_CONFORMANCE_WORKER_POOL_H_

#include <cstddef>
#include <string>
#include <vector>

#include "conformance/loader/catalog.h"
#include "conformance/runner.h"
#include "engine/registry.h"

namespace mm::conformance {

// Runs `cases` (from where each starts) like RunCase, in up to options.jobs worker
// processes forked from this one and reused from case to case (the catalog and registry are
// inherited; only indices and results cross the pipe). The parent hands out whole cases and puts
// the results back in catalog order. A worker that dies on a signal or exits turns the result it
// was on into an ERROR naming the signal ("crashed: SIGSEGV (signal 11) in backend onednn"); one
// that runs a result past options.timeout_seconds is killed and that result is an ERROR ("timed
// out after 60 s in backend onednn"); either way a new worker picks the case up after that result.
// The parent never runs a backend itself (no OpenMP or oneDNN state before forking).
// Results are handed to `sink` in catalog order as soon as every earlier one is there. A worker
// whose memory passes options.memory_limit_bytes during a result turns it into an ERROR naming
// the limit and is replaced; one past 3/4 of it after a case is replaced quietly. When
// options.stop is set the workers are killed and the results finished so far (those of cases in
// flight included) are given; returns false then.
bool RunIsolated(const Catalog& catalog, const std::vector<CaseStart>& cases,
                 const BackendRegistry& registry, const RunOptions& options, ResultSink& sink);

// The capacity of oneDNN's primitive cache in a worker, unless ONEDNN_PRIMITIVE_CACHE_CAPACITY is
// set: none. By default oneDNN keeps 1,024 primitives, so that a shape seen again skips its JIT;
// a conformance run sees each shape once or a few times, and that cache was most of a worker's
// resident memory.
inline constexpr int kWorkerPrimitiveCacheCapacity = 0;

// DescribeBackends, asked in a short-lived child process so that this one never loads a backend's
// state (oneDNN's engine, OpenMP threads, their memory); a child that dies gives "failed to start:
// crashed: ..." for the backends it did not describe.
std::vector<BackendInfo> DescribeBackendsInChild(const BackendRegistry& registry,
                                                 const std::vector<std::string>& names);

// What a wait status says about a worker: "crashed: SIGSEGV (signal 11)", "crashed: exited with
// status 3".
std::string DescribeWorkerDeath(int wait_status);

// "60" for 60.0, "0.5" for 0.5: seconds as a person writes them.
std::string FormatSeconds(double seconds);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_WORKER_POOL_H_
