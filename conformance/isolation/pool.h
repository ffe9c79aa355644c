// The scheduler of an isolated run (RunIsolated, worker_pool.h), private to conformance/isolation:
// its loop (worker_pool.cc), its workers' starting, replacement and the results of a worker that
// died (pool_workers.cc), and the answers it takes in from them (pool_answers.cc).
#ifndef MM_CONFORMANCE_ISOLATION_POOL_H_
#define MM_CONFORMANCE_ISOLATION_POOL_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/isolation/worker_launcher.h"
#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/registry.h"

namespace mm::conformance::pool_internal {

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

// The workers of one isolated run, the cases pending for them and the results of the cases in
// flight (RunIsolated gives the contract).
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
  bool Run(const std::vector<CaseStart>& cases);

 private:
  // --- The loop (worker_pool.cc) ---
  // Every case becomes a task pending for the workers, but those that cannot run in one (an
  // invalid case, an in-memory one for a launcher's worker): those have their results now.
  void Enqueue(const std::vector<CaseStart>& cases);
  // Gives `w` pending tasks until it holds as many as it should (QueueDepth), starting it first
  // when it has no process.
  void Feed(Worker& w);
  bool Stopped() const { return options_.stop != nullptr && *options_.stop != 0; }
  // Interrupted: the workers are killed, and every finished result still buffered leaves in
  // order, those of the cases in flight included.
  void Stop();
  // Polls the busy workers until one has news, passes its deadline, or the run is stopped.
  void Wait(const std::vector<Worker*>& busy);
  // Kills the busy workers whose resident memory is past the limit.
  void CheckMemory(const std::vector<Worker*>& busy);
  // How many cases a worker holds beyond the one it is on: about kQueuedSeconds of work at the
  // mean duration of the cases so far (one until a case has ended), at most kMaxQueuedPerWorker.
  std::size_t QueueDepth() const;
  // Case `slot` has all its results. Results leave for the sink in catalog order as soon as every
  // earlier case is complete, so only the cases in flight are buffered here.
  void Complete(std::size_t slot);
  void Emit(Result r) { sink_.Add(std::move(r)); }

  // --- The workers (pool_workers.cc) ---
  // Starts a process for `w`; false with errno set when it cannot.
  bool Spawn(Worker& w);
  // Sends `task` to `w`: its case now when it has none, else queued after the ones it has.
  void Assign(Worker& w, Task task);
  // Ends `w`'s process; the cases queued for it, not started, go back to the front of the queue,
  // in their order.
  void Retire(Worker& w, bool kill_it);
  // The worker is dead or must die: its current result becomes an ERROR saying `why`, and the
  // rest of its case goes back to the front of the queue for a fresh worker.
  void Died(Worker& w, const std::string& why);
  // Where a case goes on after the result at `at` (a backend stage).
  CaseProgress Next(const Task&, const CaseProgress& at) const;
  // The rest of `task` from `next` goes back to the front of the queue, or its case is complete.
  void Continue(const Task& task, const CaseProgress& next);
  // Every result of `task` not yet given is an ERROR saying `why`.
  void FailTask(const Task& task, const std::string& why);

  // --- The workers' answers (pool_answers.cc) ---
  // Reads what `w` sent: its frames taken in, or its end (the worker died).
  void Read(Worker& w);
  // Takes one frame of `w`'s; what is wrong with it when it is garbled, else nullptr. An answer
  // that is not the next one of `w`'s task is unrequested (Unrequested).
  const char* Handle(Worker& w, const Frame& tagged);
  const char* TakeStage(Worker& w, std::string_view payload);
  const char* TakeResult(Worker& w, std::string_view payload);
  // The end of `w`'s task: it retires (the payload says so) or goes on with its next queued case.
  const char* TakeDone(Worker& w, std::string_view payload);
  // The worker went past its memory limit on the result it just sent, and left: the rest of the
  // case goes to a fresh worker.
  void TakeRetire(Worker& w);
  // `w` sent an answer nobody asked for (`what`): it cannot be trusted with its task any more. The
  // result of its current backend stage, if in, becomes an ERROR; the worker and its process
  // group are killed and the case goes on in a fresh worker.
  void Unrequested(Worker& w, const std::string& what);

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

}  // namespace mm::conformance::pool_internal

#endif  // MM_CONFORMANCE_ISOLATION_POOL_H_
