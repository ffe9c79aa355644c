#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "mm/engine/process/process.h"
#include "pool.h"

namespace mm::conformance::pool_internal {

bool Pool::Spawn(Worker& w) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  // Another worker's socket held open in a worker would hide that worker's death from here.
  std::vector<int> close_in_child = {sv[0]};
  for (const Worker& other : workers_) {
    if (other.fd >= 0) close_in_child.push_back(other.fd);
  }
  if (options_.stop_fd >= 0) close_in_child.push_back(options_.stop_fd);
  const pid_t pid = spawner_.Spawn(sv[1], WorkerLauncher::Role::kWorker, close_in_child);
  if (pid < 0) {
    const int saved = errno;
    close(sv[0]);
    errno = saved;
    return false;
  }
  w.pid = pid;
  w.fd = sv[0];
  w.reader.Clear();
  return true;
}

void Pool::Assign(Worker& w, Task task) {
  task.id = ++last_task_id_;
  const bool busy = w.task.has_value();
  if (busy) {
    w.queued.push_back(task);
  } else {
    w.task = task;
    w.next_answer = 0;
    w.stage.reset();
    w.since = w.task_started = Clock::now();
  }
  // A busy worker that is gone has results and its end still to be read (a crash, a retirement):
  // reading them finds the end of file and says what happened, and the queued case goes back.
  TaskMessage message{task.case_index, task.from, std::nullopt, task.id};
  if (spawner_.launched()) message.entry = catalog_.cases[task.case_index];
  if (!SendFrame(w.fd, kTask, EncodeTask(message)) && !busy) {
    Died(w, "crashed: the worker was gone");
  }
}

void Pool::Retire(Worker& w, bool kill_it) {
  for (auto t = w.queued.rbegin(); t != w.queued.rend(); ++t) pending_.push_front(*t);
  w.queued.clear();
  if (w.fd >= 0) close(w.fd);  // An idle worker reads end of file and exits.
  w.fd = -1;
  if (w.pid > 0) {
    // The whole group: what a backend forked dies with the worker.
    if (kill_it) process::KillGroup(w.pid);
    int status = 0;
    std::int64_t peak = 0;
    spawner_.Reap(w.pid, status, peak);
    // What its backends left that is not in its group (a driver and the helpers it started, a
    // plugin's setsid'ed child) came to this process when the worker ended, when it is their
    // subreaper (StopOnSignals): it ends now, not with the run.
    process::EndStrays();
  }
  w.pid = -1;
  w.reader.Clear();
}

void Pool::Died(Worker& w, const std::string& why) {
  const double seconds = std::chrono::duration<double>(Clock::now() - w.since).count();
  Retire(w, /*kill_it=*/true);
  if (!w.task) return;
  const Task task = *w.task;
  w.task.reset();
  const std::size_t num_backends = options_.backends.size();
  auto error = [&](const std::string& backend, const std::string& message) {
    Result r = w.about;
    r.backend = backend;
    r.verdict = Verdict::kError;
    r.message = message;
    r.seconds = seconds;
    r.vs_reference = "n/a (no result)";
    results_[task.slot].push_back(std::move(r));
  };
  CaseProgress next;
  if (!w.stage) {
    FailTask(task, why + " before starting the case");
    Complete(task.slot);
    return;
  }
  switch (*w.stage) {
    case CaseEvents::Stage::kLoad:
      for (std::size_t b = w.at.backend; b < num_backends; ++b) {
        error(options_.backends[b], why + " while reading the data set");
      }
      next = {w.at.data_set + 1, 0, ""};
      break;
    case CaseEvents::Stage::kReference:
      next = {w.at.data_set, w.at.backend, "n/a (reference " + why + ")"};
      break;
    case CaseEvents::Stage::kBackend:
      if (!w.result_in) error(w.about.backend, why + " in backend " + w.about.backend);
      next = Next(task, w.at);
      break;
  }
  w.stage.reset();
  Continue(task, next);
}

CaseProgress Pool::Next(const Task&, const CaseProgress& at) const {
  CaseProgress next{at.data_set, at.backend + 1, at.reference_missing};
  if (next.backend >= options_.backends.size()) next = {at.data_set + 1, 0, ""};
  return next;
}

void Pool::Continue(const Task& task, const CaseProgress& next) {
  if (next.data_set < catalog_.cases[task.case_index].data_sets.size()) {
    pending_.push_front({task.slot, task.case_index, next});
  } else {
    Complete(task.slot);
  }
}

void Pool::FailTask(const Task& task, const std::string& why) {
  const CaseEntry& entry = catalog_.cases[task.case_index];
  for (std::size_t d = task.from.data_set; d < entry.data_sets.size(); ++d) {
    for (std::size_t b = d == task.from.data_set ? task.from.backend : 0;
         b < options_.backends.size(); ++b) {
      Result r;
      r.case_name = entry.name;
      r.case_index = static_cast<std::int64_t>(task.case_index);
      r.source = entry.source();
      r.data_set = entry.data_sets.name(d);
      r.backend = options_.backends[b];
      r.verdict = Verdict::kError;
      r.message = why;
      r.vs_reference = "n/a (no result)";
      results_[task.slot].push_back(std::move(r));
    }
  }
}

}  // namespace mm::conformance::pool_internal
