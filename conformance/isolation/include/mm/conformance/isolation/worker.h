// The processes of an isolated run (worker_pool.h) as they start: a worker, which runs the cases
// sent on its socket, and a describer, which answers one list of backend names. Forked by the
// run or by its launcher (worker_launcher.h); each leaves with _exit.
#ifndef MM_CONFORMANCE_ISOLATION_WORKER_H_
#define MM_CONFORMANCE_ISOLATION_WORKER_H_

#include <cstdint>
#include <string>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/registry.h"

namespace mm::conformance {

// The worker: runs the registry's worker setup, then the cases it is sent on socket `fd` until
// the parent closes it. `catalog` is null in a worker forked by a launcher: its tasks carry their
// cases. Drops SIGINT and SIGTERM (the parent handles a Ctrl-C and kills the workers); what it
// executes gets them with their default action. A backend call that leaves the worker's process
// state changed (process_state.h: directory, limits, umask, signals) makes its result an ERROR
// naming the change, and the worker leaves for a fresh one.
[[noreturn]] void WorkerMain(int fd, const Catalog* catalog, const BackendRegistry& registry,
                             const RunOptions& options);

// The describing child: answers one list of backend names on `fd` with their RunsOn(), one
// kDescribed frame (a list of one) per backend as it is described, then leaves.
[[noreturn]] void DescriberMain(int fd, const BackendRegistry& registry);

// "12 MiB": `bytes` rounded to the nearest MiB, as the memory limit's messages say it.
std::string Mib(std::int64_t bytes);

// Makes `result` an ERROR because of `why`, keeping what it was in its message ("WHY. The result
// itself was PASS: ..."); its comparisons are dropped and its vs_reference says `vs_reference`.
void TurnIntoError(Result& result, const std::string& why, const std::string& vs_reference);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_ISOLATION_WORKER_H_
