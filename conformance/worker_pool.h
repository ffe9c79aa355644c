// Isolated runs: conformance results executed in reused worker processes, so that a crash (signal)
// or a hang in a backend costs exactly its own result.
#ifndef MM_CONFORMANCE_WORKER_POOL_H_
#define MM_CONFORMANCE_WORKER_POOL_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conformance/loader/catalog.h"
#include "conformance/runner.h"
#include "engine/registry.h"

namespace mm::conformance {

// Runs `cases` (from where each starts) like RunCase, in up to options.jobs worker
// processes reused from case to case: forked from this one (the catalog and registry are
// inherited; only indices and results cross the socket), or by options.launcher when it is set
// and names the same backends (each task then carries its case). The parent hands out whole cases
// and puts the results back in catalog order. A worker that dies on a signal or exits turns the
// result it was on into an ERROR naming the signal ("crashed: SIGSEGV (signal 11) in backend
// onednn"); one that runs a result past options.timeout_seconds is killed and that result is an
// ERROR ("timed out after 60 s in backend onednn"); either way a new worker picks the case up after
// that result. The parent never runs a backend itself (no OpenMP or oneDNN state before forking).
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

// The capacity of oneDNN's primitive cache in a worker, unless ONEDNN_PRIMITIVE_CACHE_CAPACITY is
// set: none. By default oneDNN keeps 1,024 primitives, so that a shape seen again skips its JIT;
// a conformance run sees each shape once or a few times, and that cache was most of a worker's
// resident memory.
inline constexpr int kWorkerPrimitiveCacheCapacity = 0;

// A process started before a run discovers its cases, from which the run's workers (and the child
// that describes its backends) are forked: a worker then holds the registry and the options, and
// none of what the run builds later, the catalog and its bookkeeping (at 125,000 cases those were
// 58 MB of every worker's resident memory). Its workers receive each case in their task. It
// ignores SIGINT and SIGTERM (the run's to handle) and ends with the process that started it,
// its workers with it.
class WorkerLauncher {
 public:
  // What a forked process does.
  enum class Role : char {
    kWorker = 'W',     // Runs the cases sent on its socket (RunIsolated).
    kDescriber = 'D',  // Answers one list of names with their RunsOn() (DescribeBackendsInChild).
  };

  // Forks the launcher. It keeps `registry` and `options`, and what they point to (the
  // expectations), as they are now: its workers run with those. Never called with threads of a
  // backend running (it forks).
  static StatusOr<std::unique_ptr<WorkerLauncher>> Start(const BackendRegistry& registry,
                                                         const RunOptions& options);
  WorkerLauncher(const WorkerLauncher&) = delete;
  WorkerLauncher& operator=(const WorkerLauncher&) = delete;
  // Ends the launcher; a worker still running ends with it.
  ~WorkerLauncher();

  // The options its workers run with (their `launcher` unset).
  const RunOptions& options() const { return options_; }
  pid_t pid() const { return pid_; }

  // Has the launcher fork a process of `role` that serves socket `fd` (the caller keeps its own
  // copy): its process id, or -1 with errno set (EPIPE: the launcher is gone).
  pid_t Spawn(int fd, Role role);
  // Waits for `pid`, forked by Spawn and not yet reaped, to end: true with its wait status and
  // peak resident memory in bytes; false when the launcher is gone or `pid` is not its child.
  bool Reap(pid_t pid, int& status, std::int64_t& peak_rss_bytes);

 private:
  WorkerLauncher(pid_t pid, int control, RunOptions options)
      : pid_(pid), control_(control), options_(std::move(options)) {}

  pid_t pid_;
  int control_;  // A datagram socket: one request, one reply.
  RunOptions options_;
};

// DescribeBackends, asked in a short-lived child process so that this one never loads a backend's
// state (oneDNN's engine, OpenMP threads, a plugin's library): forked from here, or by `launcher`
// (which then describes with the registry it kept). The child dies with the process that forked
// it, blocked or not. A child that dies gives "failed to start: crashed:
// ..." for the backends it did not describe.
std::vector<BackendInfo> DescribeBackendsInChild(const BackendRegistry& registry,
                                                 const std::vector<std::string>& names,
                                                 WorkerLauncher* launcher = nullptr);

// What a wait status says about a worker: "crashed: SIGSEGV (signal 11)", "crashed: exited with
// status 3".
std::string DescribeWorkerDeath(int wait_status);

// "60" for 60.0, "0.5" for 0.5: seconds as a person writes them.
std::string FormatSeconds(double seconds);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_WORKER_POOL_H_
