#include "mm/conformance/isolation/worker_pool.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string>

#include "mm/conformance/isolation/worker.h"
#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/judging/compare.h"
#include "mm/engine/process/process.h"

namespace mm::conformance {
namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::size_t slot = 0;  // Position among the cases to run.
  std::size_t case_index = 0;
  CaseProgress from;
  std::uint64_t id = 0;  // Given when sent to a worker (TaskMessage::id).
};

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  FrameReader reader;
  std::optional<Task> task;       // The case it is on.
  std::uint32_t next_answer = 0;  // The number the task's next answer must carry (AnswerTag).
  // Cases sent after it, which it starts without waiting for the parent (QueueDepth()).
  std::deque<Task> queued;
  Clock::time_point task_started;  // When the case it is on began.
  // The stage the worker announced last, and when: a death or hang is pinned on it.
  std::optional<CaseEvents::Stage> stage;
  Result about;
  CaseProgress at;
  // Whether the result of the backend stage announced last has arrived (a worker killed after
  // sending it, by the memory sampling say, owes nothing for it).
  bool result_in = false;
  Clock::time_point since;
};

class Pool {
 public:
  Pool(const Catalog& catalog, const BackendRegistry& registry, const RunOptions& options,
       std::size_t slots, ResultSink& sink)
      : catalog_(catalog),
        options_(options),
        spawner_(&catalog, registry, options),
        sink_(sink),
        results_(slots),
        complete_(slots, false) {}

  ~Pool() {
    for (Worker& w : workers_) Retire(w, /*kill_it=*/false);
  }

  // False when options.stop ended the run.
  bool Run(const std::vector<CaseStart>& cases) {
    Enqueue(cases);
    workers_.resize(static_cast<std::size_t>(std::max(1, options_.jobs)));
    while (true) {
      if (Stopped()) {
        Stop();
        return false;
      }
      for (Worker& w : workers_) Feed(w);
      std::vector<Worker*> busy;
      for (Worker& w : workers_) {
        if (w.task) busy.push_back(&w);
      }
      if (busy.empty()) break;
      Wait(busy);
    }
    return true;
  }

 private:
  // Every case becomes a task pending for the workers, but those that cannot run in one (an
  // invalid case, an in-memory one for a launcher's worker): those have their results now.
  void Enqueue(const std::vector<CaseStart>& cases) {
    for (std::size_t slot = 0; slot < cases.size(); ++slot) {
      const CaseStart& c = cases[slot];
      const CaseEntry& entry = catalog_.cases[c.case_index];
      if (!entry.valid()) {
        results_[slot] = InvalidCaseResults(entry, c.case_index, options_);
        Complete(slot);
      } else if (spawner_.launched() && (entry.make_data_set || entry.make_family_data_set)) {
        FailTask({slot, c.case_index, {c.data_set, c.backend, ""}},
                 "an in-memory case cannot be sent to a worker of a launcher (internal error)");
        Complete(slot);
      } else {
        pending_.push_back({slot, c.case_index, {c.data_set, c.backend, ""}});
      }
    }
  }

  // Gives `w` pending tasks until it holds as many as it should (QueueDepth), starting it first
  // when it has no process.
  void Feed(Worker& w) {
    while (!pending_.empty() && (!w.task || w.queued.size() < QueueDepth())) {
      if (w.pid < 0 && !Spawn(w)) {
        FailTask(pending_.front(),
                 "worker could not be started: " + std::string(std::strerror(errno)));
        Complete(pending_.front().slot);
        pending_.pop_front();
        continue;
      }
      const Task task = pending_.front();
      pending_.pop_front();
      Assign(w, task);
    }
  }

  bool Stopped() const { return options_.stop != nullptr && *options_.stop != 0; }

  // Interrupted: the workers are killed, and every finished result still buffered leaves in
  // order, those of the cases in flight included.
  void Stop() {
    for (Worker& w : workers_) Retire(w, /*kill_it=*/true);
    for (std::size_t slot = next_emit_; slot < results_.size(); ++slot) {
      for (Result& r : results_[slot]) Emit(std::move(r));
      std::vector<Result>().swap(results_[slot]);
    }
    next_emit_ = results_.size();
  }

  void Emit(Result r) { sink_.Add(std::move(r)); }

  bool Spawn(Worker& w) {
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

  // Sends `task` to `w`: its case now when it has none, else queued after the ones it has.
  void Assign(Worker& w, Task task) {
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

  // Polls the busy workers until one has news, passes its deadline, or the run is stopped.
  void Wait(const std::vector<Worker*>& busy) {
    const auto limit = std::chrono::duration<double>(options_.timeout_seconds);
    auto now = Clock::now();
    double wait_ms = 1e9;
    for (Worker* w : busy) {
      const double left = std::chrono::duration<double, std::milli>(w->since + limit - now).count();
      wait_ms = std::min(wait_ms, std::max(0.0, left));
    }
    // Memory is sampled, and a stop without a descriptor noticed, at least every 100 ms.
    if (options_.memory_limit_bytes > 0 || (options_.stop != nullptr && options_.stop_fd < 0)) {
      wait_ms = std::min(wait_ms, 100.0);
    }
    std::vector<pollfd> fds;
    for (Worker* w : busy) fds.push_back({w->fd, POLLIN, 0});
    if (options_.stop_fd >= 0) fds.push_back({options_.stop_fd, POLLIN, 0});
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(std::ceil(wait_ms)));
    if (ready < 0 && errno != EINTR) {
      for (Worker* w : busy) Died(*w, "crashed: poll failed: " + std::string(std::strerror(errno)));
      return;
    }
    if (ready < 0 || Stopped()) return;
    for (std::size_t i = 0; i < busy.size(); ++i) {
      Worker& w = *busy[i];
      if (fds[i].revents != 0) Read(w);
    }
    now = Clock::now();
    for (Worker* w : busy) {
      if (w->task && now - w->since > limit) {
        Died(*w, "timed out after " + FormatSeconds(options_.timeout_seconds) + " s");
      }
    }
    if (options_.memory_limit_bytes > 0 && now - last_memory_check_ > kMemoryCheckInterval) {
      last_memory_check_ = now;
      CheckMemory(busy);
    }
  }

  // Kills the busy workers whose resident memory is past the limit.
  void CheckMemory(const std::vector<Worker*>& busy) {
    for (Worker* w : busy) {
      if (!w->task || w->pid <= 0) continue;
      const std::int64_t rss = process::ResidentBytes(w->pid);
      if (rss > options_.memory_limit_bytes) {
        Died(*w, "went past the memory limit of " + Mib(options_.memory_limit_bytes) +
                     " (--memory-limit; resident memory " + Mib(rss) + ", the worker was killed)");
      }
    }
  }

  void Read(Worker& w) {
    char chunk[65536];
    const ssize_t n = read(w.fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      int status = 0;
      std::int64_t peak = 0;
      // Its socket is closed: the worker has ended or is of no more use (a backend that closed
      // the descriptor). Killing a process that is ending leaves its wait status as it was.
      process::KillGroup(w.pid);
      spawner_.Reap(w.pid, status, peak);
      process::EndStrays();  // As Retire does.
      w.pid = -1;
      std::string why = DescribeWorkerDeath(status);
      if (options_.memory_limit_bytes > 0 && peak > options_.memory_limit_bytes) {
        why = "went past the memory limit of " + Mib(options_.memory_limit_bytes) +
              " (--memory-limit; peak resident memory " + Mib(peak) + ") and " + why;
      }
      Died(w, why);
      return;
    }
    w.reader.Append(chunk, static_cast<std::size_t>(n));
    while (w.task) {
      const std::optional<Frame> frame = w.reader.Pop();
      if (!frame) break;
      if (const char* garbled = Handle(w, *frame)) {
        Died(w, std::string("crashed: garbled message from the worker: ") + garbled);
        return;
      }
    }
  }

  // Takes one frame of `w`'s; what is wrong with it when it is garbled, else nullptr. An answer
  // that is not the next one of `w`'s task is unrequested (Unrequested).
  const char* Handle(Worker& w, const Frame& tagged) {
    if (!w.task) return nullptr;
    const auto split = SplitAnswer(tagged.payload);
    if (!split) return "a message without its task";
    const auto& [tag, payload] = *split;
    if (tag.task_id != w.task->id) {
      Unrequested(w, "an answer for task " + std::to_string(tag.task_id) +
                         " while the worker is on "
                         "task " +
                         std::to_string(w.task->id));
      return nullptr;
    }
    if (tag.number != w.next_answer) {
      Unrequested(w, "answer " + std::to_string(tag.number) + " of the task where answer " +
                         std::to_string(w.next_answer) + " was due (a second answer)");
      return nullptr;
    }
    ++w.next_answer;
    switch (tagged.type) {
      case kStage:
        return TakeStage(w, payload);
      case kResult:
        return TakeResult(w, payload);
      case kDone:
        return TakeDone(w, payload);
      case kRetire:
        TakeRetire(w);
        return nullptr;
      default:
        return "an unknown message type";
    }
  }

  const char* TakeStage(Worker& w, std::string_view payload) {
    std::optional<StageMessage> stage = DecodeStage(payload);
    if (!stage) return "a stage that does not decode";
    w.stage = stage->stage;
    w.at = std::move(stage->at);
    w.about = std::move(stage->about);
    w.result_in = false;
    w.since = Clock::now();
    return nullptr;
  }

  const char* TakeResult(Worker& w, std::string_view payload) {
    Result result;
    WireReader in(payload);
    if (!DecodeResult(in, result) || !in.at_end()) return "a result that does not decode";
    if (w.stage == CaseEvents::Stage::kBackend && result.backend == w.about.backend) {
      w.result_in = true;
    }
    results_[w.task->slot].push_back(std::move(result));
    return nullptr;
  }

  // The end of `w`'s task: it retires (the payload says so) or goes on with its next queued case.
  const char* TakeDone(Worker& w, std::string_view payload) {
    if (payload.size() != 1) return "an end of task that does not decode";
    const Clock::time_point now = Clock::now();
    const double took = std::chrono::duration<double>(now - w.task_started).count();
    mean_case_seconds_ = mean_case_seconds_ < 0 ? took : 0.9 * mean_case_seconds_ + 0.1 * took;
    Complete(w.task->slot);
    w.task.reset();
    w.stage.reset();
    if (payload[0] == 1) {
      Retire(w, /*kill_it=*/false);
    } else if (!w.queued.empty()) {
      // The worker has already started it.
      w.task = w.queued.front();
      w.queued.pop_front();
      w.next_answer = 0;
      w.since = w.task_started = now;
    }
    return nullptr;
  }

  // The worker went past its memory limit on the result it just sent, and left: the rest of the
  // case goes to a fresh worker.
  void TakeRetire(Worker& w) {
    const Task task = *w.task;
    w.task.reset();
    Retire(w, /*kill_it=*/false);
    Continue(task, Next(task, w.at));
  }

  // `w` sent an answer nobody asked for (`what`): it cannot be trusted with its task any more. The
  // result of its current backend stage, if in, becomes an ERROR; the worker and its process
  // group are killed and the case goes on in a fresh worker.
  void Unrequested(Worker& w, const std::string& what) {
    const std::string why = "unrequested answer: " + what +
                            " (from a process the backend forked?); the worker was killed";
    if (w.result_in && !results_[w.task->slot].empty()) {
      TurnIntoError(results_[w.task->slot].back(), why, "n/a (unrequested answer)");
    }
    Died(w, why);
  }

  // Where a case goes on after the result at `at` (a backend stage).
  CaseProgress Next(const Task&, const CaseProgress& at) const {
    CaseProgress next{at.data_set, at.backend + 1, at.reference_missing};
    if (next.backend >= options_.backends.size()) next = {at.data_set + 1, 0, ""};
    return next;
  }

  void Continue(const Task& task, const CaseProgress& next) {
    if (next.data_set < catalog_.cases[task.case_index].data_sets.size()) {
      pending_.push_front({task.slot, task.case_index, next});
    } else {
      Complete(task.slot);
    }
  }

  // The worker is dead or must die: its current result becomes an ERROR saying `why`, and the
  // rest of its case goes back to the front of the queue for a fresh worker.
  void Died(Worker& w, const std::string& why) {
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

  // Case `slot` has all its results. Results leave for the sink in catalog order as soon as every
  // earlier case is complete, so only the cases in flight are buffered here.
  void Complete(std::size_t slot) {
    complete_[slot] = true;
    while (next_emit_ < complete_.size() && complete_[next_emit_]) {
      for (Result& r : results_[next_emit_]) Emit(std::move(r));
      std::vector<Result>().swap(results_[next_emit_]);
      ++next_emit_;
    }
  }

  // Every result of `task` not yet given is an ERROR saying `why`.
  void FailTask(const Task& task, const std::string& why) {
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

  // Ends `w`'s process; the cases queued for it, not started, go back to the front of the queue,
  // in their order.
  void Retire(Worker& w, bool kill_it) {
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

  // How many cases a worker holds beyond the one it is on: about kQueuedSeconds of work at the
  // mean duration of the cases so far (one until a case has ended), at most kMaxQueuedPerWorker.
  // A worker then goes from case to case without waiting for the parent, which may be busy with
  // the reports or waiting for a core (docs/notes/2026-12-03-measurements-behind-the-code.md).
  // The bound on the work held keeps the end of a run of long cases even: no worker is
  // left with many cases while another has none.
  std::size_t QueueDepth() const {
    if (mean_case_seconds_ < 0) return 1;
    const double depth = kQueuedSeconds / std::max(mean_case_seconds_, 1e-9);
    return std::clamp<std::size_t>(static_cast<std::size_t>(std::min(depth, 1e6)), 1,
                                   kMaxQueuedPerWorker);
  }

  static constexpr auto kMemoryCheckInterval = std::chrono::milliseconds(100);
  static constexpr double kQueuedSeconds = 0.02;
  static constexpr std::size_t kMaxQueuedPerWorker = 64;

  const Catalog& catalog_;
  const RunOptions& options_;
  Spawner spawner_;
  ResultSink& sink_;
  std::vector<std::vector<Result>> results_;  // Per case to run, until emitted.
  std::vector<bool> complete_;
  std::size_t next_emit_ = 0;
  std::deque<Task> pending_;
  std::vector<Worker> workers_;
  Clock::time_point last_memory_check_;
  double mean_case_seconds_ = -1;  // Moving mean of how long a case took; -1 before the first.
  std::uint64_t last_task_id_ = 0;
};

}  // namespace

std::string FormatSeconds(double seconds) { return FormatDouble(seconds); }

bool RunIsolated(const Catalog& catalog, const std::vector<CaseStart>& cases,
                 const BackendRegistry& registry, const RunOptions& options, ResultSink& sink) {
  if (options.launcher != nullptr &&
      (options.launcher->options().backends != options.backends ||
       options.launcher->options().failed_to_start != options.failed_to_start)) {
    // Its workers would run other backends than those the results are counted for, or create one
    // that could not be described.
    RunOptions here = options;
    here.launcher = nullptr;
    Pool pool(catalog, registry, here, cases.size(), sink);
    return pool.Run(cases);
  }
  Pool pool(catalog, registry, options, cases.size(), sink);
  return pool.Run(cases);
}

}  // namespace mm::conformance
