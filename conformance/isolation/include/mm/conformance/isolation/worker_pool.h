// Isolated runs: conformance results executed in reused worker processes, so that a crash (signal)
// or a hang in a backend costs exactly its own result. This is the scheduler, in the run's
// process; the workers are in worker.h, where they come from in worker_launcher.h.
#ifndef MM_CONFORMANCE_ISOLATION_WORKER_POOL_H_
#define MM_CONFORMANCE_ISOLATION_WORKER_POOL_H_

#include <string>
#include <vector>

#include "mm/conformance/isolation/worker_launcher.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/registry.h"

namespace mm::conformance {

// Runs `cases` (from where each starts) like RunCase, in up to options.jobs worker
// processes reused from case to case: forked from this one (the catalog and registry are
// inherited; only indices and results cross the socket), or by options.launcher when it is set
// and names the same backends (each task then carries its case). The parent hands out whole cases
// and puts the results back in catalog order. A worker that dies on a signal or exits turns the
// result it was on into an ERROR naming the signal ("crashed: SIGSEGV (signal 11) in backend
// onednn"); one that runs a result past options.timeout_seconds is killed and that result is an
// ERROR ("timed out after 60 s in backend onednn"); either way a new worker picks the case up after
// that result. The parent never runs a backend itself (no OpenMP or oneDNN state before forking);
// a worker runs the registry's worker setup (BackendRegistry::SetUpWorker) before its first case.
// Results are handed to `sink` in catalog order as soon as every earlier one is there. A worker
// whose memory passes options.memory_limit_bytes during a result turns it into an ERROR naming
// the limit and is replaced; one past 3/4 of it after a case is replaced quietly. Each worker
// leads a process group of its own, killed when the worker ends or is replaced, so processes a
// backend forks end with it; a backend that forks during a call, or an answer that is not the
// next of the worker's task (every answer carries its task's id), makes that result an ERROR
// ("unrequested answer"), never a second result, and the worker is replaced. When
// options.stop is set the workers are killed and the results finished so far (those of cases in
// flight included) are given; returns false then.
bool RunIsolated(const Catalog& catalog, const std::vector<CaseStart>& cases,
                 const BackendRegistry& registry, const RunOptions& options, ResultSink& sink);

// "60" for 60.0, "0.5" for 0.5: seconds as a person writes them.
std::string FormatSeconds(double seconds);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_ISOLATION_WORKER_POOL_H_
