// Where the processes of an isolated run come from: forked from the run itself, or by a launcher,
// a process started before the run discovers its cases. And the short-lived child that describes
// the backends, so that the run never loads a backend's state itself.
#ifndef MM_CONFORMANCE_ISOLATION_WORKER_LAUNCHER_H_
#define MM_CONFORMANCE_ISOLATION_WORKER_LAUNCHER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// A process started before a run discovers its cases, from which the run's workers (and the child
// that describes its backends) are forked: a worker then holds the registry and the options, and
// none of what the run builds later, the catalog and its bookkeeping (which grow with the number
// of cases and would otherwise sit in every worker's resident memory). Its workers receive each
// case in their task. It ignores SIGINT and SIGTERM (the run's to handle) and ends with the process
// that started it, its workers with it.
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

// Where a run's processes come from: forked from this process (each in a process group of its
// own, dying with this process: process::Fork), or by options.launcher when it is set.
class Spawner {
 public:
  // `catalog` is what a worker forked here finds its cases in (null: its tasks carry them).
  Spawner(const Catalog* catalog, const BackendRegistry& registry, const RunOptions& options)
      : catalog_(catalog), registry_(registry), options_(options) {}

  bool launched() const { return options_.launcher != nullptr; }

  // Forks a process of `role` serving `fd` (closed here either way); in a child forked here,
  // `close_in_child` are closed first. Its process id, or -1 with errno set.
  pid_t Spawn(int fd, WorkerLauncher::Role role, const std::vector<int>& close_in_child);

  // Waits for `pid` to end (its socket closed: at most process::kExitGraceSeconds, then it is
  // killed), kills what is left of its process group (what a backend forked) and reaps it: its
  // wait status and peak resident memory in bytes. A launcher that is gone gives
  // the status of a SIGKILL (its workers ended with it).
  void Reap(pid_t pid, int& status, std::int64_t& peak_rss_bytes);

 private:
  const Catalog* catalog_;
  const BackendRegistry& registry_;
  const RunOptions& options_;
};

// DescribeBackends, asked in a short-lived child process so that this one never loads a backend's
// state (oneDNN's engine, OpenMP threads, a plugin's library): forked from here, or by `launcher`
// (which then describes with the registry it kept). The child dies with the process that forked
// it, blocked or not, and answers backend by backend. A child that dies gives "failed to start:
// crashed: ..." for the backends it did not describe; one that takes longer than
// `timeout_seconds` on a backend (a plugin's constructor that hangs, a first use that never ends)
// is killed, that backend's runs_on is "failed to start: did not describe itself within N s
// (--timeout)" (the reason, after "failed to start: ", is put under its name in `undescribed`
// when given), and a fresh child describes the backends after it. A stop request
// (process::StopRequested) ends the wait within 100 ms: the backends left are "not described".
std::vector<BackendInfo> DescribeBackendsInChild(
    const BackendRegistry& registry, const std::vector<std::string>& names,
    WorkerLauncher* launcher = nullptr, double timeout_seconds = 60,
    std::map<std::string, std::string>* undescribed = nullptr);

// What a wait status says about a worker: "crashed: SIGSEGV (signal 11)", "crashed: the worker
// exited with status 3".
std::string DescribeWorkerDeath(int wait_status);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_ISOLATION_WORKER_LAUNCHER_H_
