#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "mm/conformance/isolation/worker.h"
#include "mm/conformance/isolation/worker_launcher.h"
#include "mm/engine/process/process.h"
#include "pool.h"

namespace mm::conformance::pool_internal {

void Pool::Read(Worker& w) {
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

const char* Pool::Handle(Worker& w, const Frame& tagged) {
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

const char* Pool::TakeStage(Worker& w, std::string_view payload) {
  std::optional<StageMessage> stage = DecodeStage(payload);
  if (!stage) return "a stage that does not decode";
  w.stage = stage->stage;
  w.at = std::move(stage->at);
  w.about = std::move(stage->about);
  w.result_in = false;
  w.since = Clock::now();
  return nullptr;
}

const char* Pool::TakeResult(Worker& w, std::string_view payload) {
  Result result;
  WireReader in(payload);
  if (!DecodeResult(in, result) || !in.at_end()) return "a result that does not decode";
  if (w.stage == CaseEvents::Stage::kBackend && result.backend == w.about.backend) {
    w.result_in = true;
  }
  results_[w.task->slot].push_back(std::move(result));
  return nullptr;
}

const char* Pool::TakeDone(Worker& w, std::string_view payload) {
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

void Pool::TakeRetire(Worker& w) {
  const Task task = *w.task;
  w.task.reset();
  Retire(w, /*kill_it=*/false);
  Continue(task, Next(task, w.at));
}

void Pool::Unrequested(Worker& w, const std::string& what) {
  const std::string why = "unrequested answer: " + what +
                          " (from a process the backend forked?); the worker was killed";
  if (w.result_in && !results_[w.task->slot].empty()) {
    TurnIntoError(results_[w.task->slot].back(), why, "n/a (unrequested answer)");
  }
  Died(w, why);
}

}  // namespace mm::conformance::pool_internal
