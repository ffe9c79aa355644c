#include "mm/conformance/isolation/worker.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/judging/compare.h"
#include "mm/conformance/judging/resources.h"
#include "mm/conformance/running/process_state.h"
#include "mm/engine/process/process.h"

namespace mm::conformance {
namespace {

// A safety net for what the checks after each result and the parent's sampling cannot catch: an
// allocation so fast or large that the machine would suffer first. RLIMIT_DATA counts private
// writable mappings (not the shared libraries' text): twice the limit above what the worker has
// mapped when it starts (a sanitizer's shadow memory, say), leaving room for mapped but untouched
// memory.
void SetMemoryNet(std::int64_t limit) {
  if (limit <= 0) return;
  const rlim_t net = static_cast<rlim_t>(process::MappedDataBytes() + limit * 2);
  rlimit data{net, net};
  setrlimit(RLIMIT_DATA, &data);
}

extern "C" void OnIgnoredSignal(int) {}

// SIGINT and SIGTERM are the parent's to handle. Caught and dropped rather than ignored: a program
// a backend executes gets them back with their default action (an exec keeps what is ignored, so
// only SIGKILL would end it).
void IgnoreStopSignals() {
  struct sigaction action {};
  action.sa_handler = OnIgnoredSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// What a worker sends the parent: stages, results and ends of tasks, each tagged with its task.
class Answers final : public CaseEvents {
 public:
  // `state`: the worker's process state before any backend was called, which every call must leave
  // as it found it.
  Answers(int fd, std::int64_t limit, ProcessState state)
      : fd_(fd), limit_(limit), state_(std::move(state)) {}

  // The task the next answers are for.
  void StartTask(std::uint64_t id) { tag_ = {id, 0}; }

  // Sends what is queued; false when the parent is gone.
  bool Flush() {
    // A copy of this worker, forked by a backend during a call, never answers: its answers
    // would be unrequested (the worker itself says what happened, OnResult).
    if (getpid() != worker_) _exit(0);
    const bool sent = WriteAll(fd_, outbox_);
    outbox_.clear();
    return sent;
  }

  void Answer(MessageType type, std::string_view bytes) {
    AppendAnswer(outbox_, type, tag_, bytes);
    ++tag_.number;
  }

  void OnStage(Stage s, const Result& about, const CaseProgress& at) override {
    stage_ = s;
    Answer(kStage, EncodeStage(s, at, about));
    if (!Flush()) _exit(0);
    if (s == Stage::kBackend) monitor_.Before();
  }

  void OnResult(Result result) override;

 private:
  void Queue(const Result& result) {
    payload_.clear();
    WireWriter out(payload_);
    EncodeResult(result, out);
    Answer(kResult, payload_);
  }

  // Sends `result` and leaves: the parent ends this worker's process group and a fresh worker
  // goes on with the case.
  [[noreturn]] void QueueAndRetire(const Result& result) {
    Queue(result);
    Answer(kRetire, {});
    Flush();
    _exit(0);
  }

  int fd_;
  std::int64_t limit_;
  pid_t worker_ = getpid();
  AnswerTag tag_;  // Of the task being answered; its number advances with every answer.
  std::optional<Stage> stage_;
  std::string payload_;  // Reused from result to result.
  // Frames not yet sent. A result waits for the next stage announcement or the end of the case,
  // which go out with it in one write: the parent wakes once for both. Nothing of a backend's
  // runs in between, so a crash still finds every finished result sent.
  std::string outbox_;
  CallMonitor monitor_;  // What each backend call leaves behind in this worker.
  ProcessState state_;
};

void Answers::OnResult(Result result) {
  const bool ran = stage_ == Stage::kBackend;
  stage_.reset();
  if (!ran) return Queue(result);
  // Before anything else of the worker's runs: the figures are the call's alone.
  result.resources = monitor_.After(result.backend, BackendComputed(result));
  // A worker whose directory, limits, umask or signals a backend changed would fail every later
  // case, for every backend: a fresh worker takes them, with the run's state. First: a lowered
  // limit of open files would also blind the checks below.
  if (const auto changes = state_.ChangesTo(ProcessState::Capture()); !changes.empty()) {
    TurnIntoError(result,
                  ProcessStateChangeText(result.backend, "the worker", changes) +
                      " (a backend must leave the process's state as it found it; the worker was "
                      "replaced)",
                  "n/a (process state changed)");
    QueueAndRetire(result);
  }
  // A child other than a backend's driver Program: the backend forked it during the call.
  if (process::HasChildrenBesidesPrograms()) {
    TurnIntoError(result,
                  "unrequested answer: backend " + result.backend +
                      " forked a process during the call, which could answer for this result "
                      "(its answer was discarded, the worker and its processes killed)",
                  "n/a (unrequested answer)");
    QueueAndRetire(result);
  }
  const std::int64_t peak = limit_ > 0 ? process::PeakResidentBytes() : 0;
  if (peak > limit_) {
    TurnIntoError(result,
                  "went past the memory limit of " + Mib(limit_) +
                      " (--memory-limit; the worker's peak resident memory was " + Mib(peak) +
                      "); the worker was replaced",
                  "n/a (memory limit)");
    QueueAndRetire(result);
  }
  Queue(result);
}

// The case task `task` is about: carried by the task, or found in `catalog`; null when neither.
const CaseEntry* EntryOf(const TaskMessage& task, const Catalog* catalog) {
  if (task.entry) return &*task.entry;
  if (catalog != nullptr && task.case_index < catalog->cases.size()) {
    return &catalog->cases[task.case_index];
  }
  return nullptr;
}

}  // namespace

std::string Mib(std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

void TurnIntoError(Result& result, const std::string& why, const std::string& vs_reference) {
  result.message = why + ". The result itself was " + std::string(VerdictName(result.verdict)) +
                   ": " + result.message;
  result.verdict = Verdict::kError;
  result.vs_expected.reset();
  result.vs_bound.reset();
  result.vs_reference_comparison.reset();
  result.vs_reference = vs_reference;
}

void WorkerMain(int fd, const Catalog* catalog, const BackendRegistry& registry,
                const RunOptions& options) {
  // Forked by process::Fork: it leaves with its parent and leads its own process group.
  IgnoreStopSignals();
  registry.SetUpWorker();
  const std::int64_t limit = options.memory_limit_bytes;
  SetMemoryNet(limit);
  Answers answers(fd, limit, ProcessState::Capture());
  BackendInstances instances(registry);
  FrameReader reader;
  while (auto frame = ReadFrame(fd, reader)) {
    if (frame->type != kTask) break;
    const std::optional<TaskMessage> task = DecodeTask(frame->payload);
    const CaseEntry* entry = task ? EntryOf(*task, catalog) : nullptr;
    if (entry == nullptr) break;
    answers.StartTask(task->id);
    RunCase(*entry, task->case_index, instances, registry, options, task->from, answers);
    // Grown past 3/4 of the limit (a leak, a cache): a fresh worker takes the next case.
    const bool retire = limit > 0 && process::ResidentBytes() > limit / 4 * 3;
    const char done = retire ? 1 : 0;
    answers.Answer(kDone, std::string_view(&done, 1));
    if (!answers.Flush() || retire) break;
  }
  _exit(0);
}

void DescriberMain(int fd, const BackendRegistry& registry) {
  IgnoreStopSignals();
  FrameReader reader;
  const std::optional<Frame> frame = ReadFrame(fd, reader);
  std::optional<std::vector<std::string>> names;
  if (frame && frame->type == kDescribe) names = DecodeStrings(frame->payload);
  if (!names) _exit(2);
  // One answer per backend as it is described: a hang is pinned on its backend.
  for (const std::string& name : *names) {
    const std::vector<BackendInfo> info = DescribeBackends(registry, {name});
    if (!SendFrame(fd, kDescribed, EncodeStrings({info.front().runs_on}))) break;
  }
  _exit(0);
}

}  // namespace mm::conformance
