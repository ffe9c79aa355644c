#include "conformance/worker_pool.h"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>

#include "conformance/compare.h"
#include "conformance/worker_protocol.h"
#include "engine/process/process.h"

namespace mm::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// Resident memory of this process now, and at its peak, in bytes.
std::int64_t CurrentRssBytes(pid_t pid) {
  const std::string path = pid > 0 ? "/proc/" + std::to_string(pid) + "/statm" : "/proc/self/statm";
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return 0;
  long long size = 0, resident = 0;
  const int read = std::fscanf(file, "%lld %lld", &size, &resident);
  std::fclose(file);
  return read == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

// The private writable memory mapped by this process (statm's data field), in bytes.
std::int64_t MappedDataBytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return 0;
  long long size = 0, resident = 0, shared = 0, text = 0, lib = 0, data = 0;
  const int read = std::fscanf(file, "%lld %lld %lld %lld %lld %lld", &size, &resident, &shared,
                               &text, &lib, &data);
  std::fclose(file);
  return read == 6 ? data * sysconf(_SC_PAGESIZE) : 0;
}

std::int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::int64_t{usage.ru_maxrss} * 1024;
}

std::string Mib(std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

// Applies kWorkerPrimitiveCacheCapacity, unless the user set ONEDNN_PRIMITIVE_CACHE_CAPACITY.
// oneDNN reads the variable once, when it first creates a primitive: the variable covers a oneDNN
// that starts in this worker (the parent of a run never creates one), and oneDNN's own setter,
// found in the process when oneDNN is linked in, one that started before the fork (in a test
// process that ran backends in process, say). No link dependency: the pool knows no backend.
void LimitOneDnnPrimitiveCache() {
  if (std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr) return;
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", std::to_string(kWorkerPrimitiveCacheCapacity).c_str(),
         /*overwrite=*/1);
  using Setter = int (*)(int);
  if (auto set =
          reinterpret_cast<Setter>(dlsym(RTLD_DEFAULT, "dnnl_set_primitive_cache_capacity"))) {
    set(kWorkerPrimitiveCacheCapacity);
  }
}

// Whether this worker has a child process other than a backend's driver program (a Program, which
// a backend owns and keeps between calls): a backend forked it during a call (zombies are reaped
// on the way).
bool ForkedByTheBackend() { return process::HasChildrenBesidesPrograms(); }

// The worker: runs the cases it is sent until the parent closes the socket. `catalog` is null in
// a worker forked by a launcher: its tasks carry their cases.
[[noreturn]] void WorkerMain(int fd, const Catalog* catalog, const BackendRegistry& registry,
                             const RunOptions& options) {
  // Forked by process::Fork: it leaves with its parent and leads its own process group. A Ctrl-C
  // for the terminal's process group is the parent's to handle (it kills the workers and writes
  // the reports).
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  LimitOneDnnPrimitiveCache();
  const std::int64_t limit = options.memory_limit_bytes;
  if (limit > 0) {
    // A safety net for what the checks after each result and the parent's sampling cannot catch:
    // an allocation so fast or large that the machine would suffer first. RLIMIT_DATA counts
    // private writable mappings (not the shared libraries' text): twice the limit above what the
    // worker has mapped when it starts (a sanitizer's shadow memory, say), leaving room for mapped
    // but untouched memory.
    const rlim_t net = static_cast<rlim_t>(MappedDataBytes() + limit * 2);
    rlimit data{net, net};
    setrlimit(RLIMIT_DATA, &data);
  }
  struct Sender final : CaseEvents {
    int fd;
    std::int64_t limit;
    pid_t worker = getpid();
    AnswerTag tag;  // Of the task being answered; its number advances with every answer.
    std::optional<Stage> stage;
    std::string payload;  // Reused from result to result.
    // Frames not yet sent. A result waits for the next stage announcement or the end of the case,
    // which go out with it in one write: the parent wakes once for both. Nothing of a backend's
    // runs in between, so a crash still finds every finished result sent.
    std::string outbox;
    CallMonitor monitor;  // What each backend call leaves behind in this worker.
    bool Flush() {
      // A copy of this worker, forked by a backend during a call, never answers: its answers
      // would be unrequested (the worker itself says what happened, ForkedByTheBackend).
      if (getpid() != worker) _exit(0);
      const bool sent = WriteAll(fd, outbox);
      outbox.clear();
      return sent;
    }
    void OnStage(Stage s, const Result& about, const CaseProgress& at) override {
      stage = s;
      Answer(kStage, EncodeStage(s, at, about));
      if (!Flush()) _exit(0);
      if (s == Stage::kBackend) monitor.Before();
    }
    void Answer(MessageType type, std::string_view bytes) {
      AppendAnswer(outbox, type, tag, bytes);
      ++tag.number;
    }
    void Queue(const Result& result) {
      payload.clear();
      WireWriter out(payload);
      EncodeResult(result, out);
      Answer(kResult, payload);
    }
    // Sends `result` and leaves: the parent ends this worker's process group and a fresh worker
    // goes on with the case.
    [[noreturn]] void QueueAndRetire(const Result& result) {
      Queue(result);
      Answer(kRetire, {});
      Flush();
      _exit(0);
    }
    void OnResult(Result result) override {
      const bool ran = stage == Stage::kBackend;
      stage.reset();
      // Before anything else of the worker's runs: the figures are the call's alone.
      if (ran) {
        result.resources = monitor.After(result.backend, BackendComputed(result));
      }
      if (ran && ForkedByTheBackend()) {
        result.message = "unrequested answer: backend " + result.backend +
                         " forked a process during the call, which could answer for this result "
                         "(its answer was discarded, the worker and its processes killed). The "
                         "result itself was " +
                         std::string(VerdictName(result.verdict)) + ": " + result.message;
        result.verdict = Verdict::kError;
        result.vs_expected.reset();
        result.vs_bound.reset();
        result.vs_reference_comparison.reset();
        result.vs_reference = "n/a (unrequested answer)";
        QueueAndRetire(result);
      }
      const std::int64_t peak = limit > 0 && ran ? PeakRssBytes() : 0;
      if (peak > limit && ran) {
        result.message = "went past the memory limit of " + Mib(limit) +
                         " (--memory-limit; the worker's peak resident memory was " + Mib(peak) +
                         "); the worker was replaced. The result itself was " +
                         std::string(VerdictName(result.verdict)) + ": " + result.message;
        result.verdict = Verdict::kError;
        result.vs_expected.reset();
        result.vs_bound.reset();
        result.vs_reference_comparison.reset();
        result.vs_reference = "n/a (memory limit)";
        QueueAndRetire(result);
      }
      Queue(result);
    }
  } sender;
  sender.fd = fd;
  sender.limit = limit;
  BackendInstances instances(registry);
  FrameReader reader;
  while (auto frame = ReadFrame(fd, reader)) {
    if (frame->type != kTask) break;
    const std::optional<TaskMessage> task = DecodeTask(frame->payload);
    if (!task) break;
    const CaseEntry* entry = nullptr;
    if (task->entry) {
      entry = &*task->entry;
    } else if (catalog != nullptr && task->case_index < catalog->cases.size()) {
      entry = &catalog->cases[task->case_index];
    }
    if (entry == nullptr) break;
    sender.tag = {task->id, 0};
    RunCase(*entry, task->case_index, instances, registry, options, task->from, sender);
    // Grown past 3/4 of the limit (a leak, a cache): a fresh worker takes the next case.
    const bool retire = limit > 0 && CurrentRssBytes(0) > limit / 4 * 3;
    const char done = retire ? 1 : 0;
    sender.Answer(kDone, std::string_view(&done, 1));
    if (!sender.Flush() || retire) break;
  }
  _exit(0);
}

// The describing child: answers one list of backend names with their RunsOn(), then leaves.
[[noreturn]] void DescriberMain(int fd, const BackendRegistry& registry) {
  FrameReader reader;
  const std::optional<Frame> frame = ReadFrame(fd, reader);
  std::optional<std::vector<std::string>> names;
  if (frame && frame->type == kDescribe) names = DecodeStrings(frame->payload);
  if (!names) _exit(2);
  std::vector<std::string> described;
  for (const BackendInfo& info : DescribeBackends(registry, *names)) {
    described.push_back(info.runs_on);
  }
  SendFrame(fd, kDescribed, EncodeStrings(described));
  _exit(0);
}

// What the run asks its launcher, and what it answers: one datagram each.
struct LauncherRequest {
  char op = 0;  // A WorkerLauncher::Role (a socket comes with it), or kReap.
  std::int64_t pid = 0;
};
constexpr char kReap = 'R';
struct LauncherReply {
  std::int64_t value = 0;  // Spawn: the process id, or -errno; reap: 0, or -errno.
  std::int32_t status = 0;
  std::int64_t peak_rss_bytes = 0;
};

// The launcher: forks workers and describers on request and reaps them, until the run closes the
// control socket.
[[noreturn]] void LauncherMain(int control, const BackendRegistry& registry,
                               const RunOptions& options) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  while (true) {
    LauncherRequest request;
    int fd = -1;
    alignas(cmsghdr) char control_bytes[CMSG_SPACE(sizeof(int))];
    iovec iov{&request, sizeof(request)};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control_bytes;
    message.msg_controllen = sizeof(control_bytes);
    const ssize_t n = recvmsg(control, &message, MSG_CMSG_CLOEXEC);
    if (n == 0) _exit(0);  // The run is over.
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(request))) _exit(1);
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
      }
    }
    LauncherReply reply;
    if (request.op == kReap) {
      const auto ended = process::EndGroup(static_cast<pid_t>(request.pid), /*kill_leader=*/false);
      reply.value = ended.ok() ? 0 : -ECHILD;
      if (ended.ok()) {
        reply.status = ended->wait_status;
        reply.peak_rss_bytes = ended->peak_rss_bytes;
      }
    } else if (fd < 0) {
      reply.value = -EBADF;
    } else {
      process::ForkOptions child;
      child.close_in_child = {control};
      const pid_t pid = process::Fork(child);
      if (pid == 0) {
        if (request.op == static_cast<char>(WorkerLauncher::Role::kWorker)) {
          WorkerMain(fd, nullptr, registry, options);
        }
        DescriberMain(fd, registry);
      }
      reply.value = pid < 0 ? -errno : pid;
      close(fd);
    }
    if (send(control, &reply, sizeof(reply), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(reply))) {
      _exit(1);
    }
  }
}

// Where a run's processes come from: forked from this process, or by a launcher.
class Spawner {
 public:
  Spawner(const Catalog* catalog, const BackendRegistry& registry, const RunOptions& options)
      : catalog_(catalog), registry_(registry), options_(options) {}

  bool launched() const { return options_.launcher != nullptr; }

  // Forks a process of `role` serving `fd` (closed here either way); in a child forked here,
  // `close_in_child` are closed first. Its process id, or -1 with errno set.
  pid_t Spawn(int fd, WorkerLauncher::Role role, const std::vector<int>& close_in_child) {
    if (launched()) {
      const pid_t pid = options_.launcher->Spawn(fd, role);
      const int saved = errno;
      close(fd);
      errno = saved;
      return pid;
    }
    process::ForkOptions child;
    child.close_in_child = close_in_child;
    const pid_t pid = process::Fork(child);
    if (pid == 0) {
      if (role == WorkerLauncher::Role::kWorker) WorkerMain(fd, catalog_, registry_, options_);
      DescriberMain(fd, registry_);
    }
    const int saved = errno;
    close(fd);
    errno = saved;
    return pid;
  }

  // Waits for `pid` to end, kills what is left of its process group (what a backend forked) and
  // reaps it: its wait status and peak resident memory in bytes.
  void Reap(pid_t pid, int& status, std::int64_t& peak_rss_bytes) {
    status = 0;
    peak_rss_bytes = 0;
    if (launched()) {
      if (!options_.launcher->Reap(pid, status, peak_rss_bytes)) {
        // The launcher is gone, and its workers with it (they end with it).
        status = SIGKILL;
      }
      return;
    }
    if (const auto ended = process::EndGroup(pid, /*kill_leader=*/false); ended.ok()) {
      status = ended->wait_status;
      peak_rss_bytes = ended->peak_rss_bytes;
    }
  }

 private:
  const Catalog* catalog_;
  const BackendRegistry& registry_;
  const RunOptions& options_;
};

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
    for (std::size_t slot = 0; slot < cases.size(); ++slot) {
      const CaseStart& c = cases[slot];
      const CaseEntry& entry = catalog_.cases[c.case_index];
      if (!entry.model) {
        results_[slot] = InvalidCaseResults(entry, c.case_index, options_);
        Complete(slot);
      } else if (spawner_.launched() && entry.make_data_set) {
        FailTask({slot, c.case_index, {c.data_set, c.backend, ""}},
                 "an in-memory case cannot be sent to a worker of a launcher (internal error)");
        Complete(slot);
      } else {
        pending_.push_back({slot, c.case_index, {c.data_set, c.backend, ""}});
      }
    }
    workers_.resize(static_cast<std::size_t>(std::max(1, options_.jobs)));
    while (true) {
      if (Stopped()) {
        Stop();
        return false;
      }
      for (Worker& w : workers_) {
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

  void Emit(Result r) {
    ApplyExpectation(options_.expectations, options_.rule, r);
    sink_.Add(std::move(r));
  }

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
      for (Worker* w : busy) {
        if (!w->task || w->pid <= 0) continue;
        const std::int64_t rss = CurrentRssBytes(w->pid);
        if (rss > options_.memory_limit_bytes) {
          Died(*w, "went past the memory limit of " + Mib(options_.memory_limit_bytes) +
                       " (--memory-limit; resident memory " + Mib(rss) +
                       ", the worker was killed)");
        }
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
    const Frame frame{tagged.type, payload};
    switch (frame.type) {
      case kStage: {
        std::optional<StageMessage> stage = DecodeStage(frame.payload);
        if (!stage) return "a stage that does not decode";
        w.stage = stage->stage;
        w.at = std::move(stage->at);
        w.about = std::move(stage->about);
        w.result_in = false;
        w.since = Clock::now();
        break;
      }
      case kResult: {
        Result result;
        WireReader in(frame.payload);
        if (!DecodeResult(in, result) || !in.at_end()) return "a result that does not decode";
        if (w.stage == CaseEvents::Stage::kBackend && result.backend == w.about.backend) {
          w.result_in = true;
        }
        results_[w.task->slot].push_back(std::move(result));
        break;
      }
      case kDone: {
        if (frame.payload.size() != 1) return "an end of task that does not decode";
        const Clock::time_point now = Clock::now();
        const double took = std::chrono::duration<double>(now - w.task_started).count();
        mean_case_seconds_ = mean_case_seconds_ < 0 ? took : 0.9 * mean_case_seconds_ + 0.1 * took;
        Complete(w.task->slot);
        w.task.reset();
        w.stage.reset();
        if (frame.payload[0] == 1) {
          Retire(w, /*kill_it=*/false);
        } else if (!w.queued.empty()) {
          // The worker has already started it.
          w.task = w.queued.front();
          w.queued.pop_front();
          w.next_answer = 0;
          w.since = w.task_started = now;
        }
        break;
      }
      case kRetire: {
        // The worker went past its memory limit on the result it just sent, and left: the rest of
        // the case goes to a fresh worker.
        const Task task = *w.task;
        w.task.reset();
        Retire(w, /*kill_it=*/false);
        Continue(task, Next(task, w.at));
        break;
      }
      default:
        return "an unknown message type";
    }
    return nullptr;
  }

  // `w` sent an answer nobody asked for (`what`): it cannot be trusted with its task any more. The
  // result of its current backend stage, if in, becomes an ERROR; the worker and its process
  // group are killed and the case goes on in a fresh worker.
  void Unrequested(Worker& w, const std::string& what) {
    const std::string why = "unrequested answer: " + what +
                            " (from a process the backend forked?); the worker was killed";
    if (w.result_in && !results_[w.task->slot].empty()) {
      Result& r = results_[w.task->slot].back();
      r.message =
          why + ". The result itself was " + std::string(VerdictName(r.verdict)) + ": " + r.message;
      r.verdict = Verdict::kError;
      r.vs_expected.reset();
      r.vs_bound.reset();
      r.vs_reference_comparison.reset();
      r.vs_reference = "n/a (unrequested answer)";
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
    }
    w.pid = -1;
    w.reader.Clear();
  }

  // How many cases a worker holds beyond the one it is on: about kQueuedSeconds of work at the
  // mean duration of the cases so far (one until a case has ended), at most kMaxQueuedPerWorker.
  // A worker then goes from case to case without waiting for the parent, which may be busy with
  // the reports or waiting for a core: on 2 cores, 10,000 tiny cases on 3 backends ran in 1.35 s
  // with one case queued, 1.22 s with 16 and 1.20 s with 64 (with --json --junit: 1.57, 1.36,
  // 1.31 s). The bound on the work held keeps the end of a run of long cases even: no worker is
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

std::string DescribeWorkerDeath(int status) {
  if (WIFSIGNALED(status)) return process::DescribeWaitStatus(status);
  return "crashed: the worker " + process::DescribeWaitStatus(status);
}

std::vector<BackendInfo> DescribeBackendsInChild(const BackendRegistry& registry,
                                                 const std::vector<std::string>& names,
                                                 WorkerLauncher* launcher) {
  std::vector<BackendInfo> infos;
  for (const std::string& name : names) {
    infos.push_back({name, registry.Description(name), "failed to start: not described"});
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return infos;
  RunOptions options;
  options.launcher = launcher;
  Spawner spawner(nullptr, registry, options);
  const pid_t pid = spawner.Spawn(sv[1], WorkerLauncher::Role::kDescriber, {sv[0]});
  if (pid < 0) {
    close(sv[0]);
    return infos;
  }
  FrameReader reader;
  std::optional<std::vector<std::string>> described;
  if (SendFrame(sv[0], kDescribe, EncodeStrings(names))) {
    const std::optional<Frame> frame = ReadFrame(sv[0], reader);
    if (frame && frame->type == kDescribed) described = DecodeStrings(frame->payload);
  }
  close(sv[0]);
  int status = 0;
  std::int64_t peak = 0;
  spawner.Reap(pid, status, peak);
  if (!described || described->size() != names.size()) {
    for (BackendInfo& info : infos)
      info.runs_on = "failed to start: " + DescribeWorkerDeath(status);
    return infos;
  }
  for (std::size_t i = 0; i < names.size(); ++i) infos[i].runs_on = std::move((*described)[i]);
  return infos;
}

StatusOr<std::unique_ptr<WorkerLauncher>> WorkerLauncher::Start(const BackendRegistry& registry,
                                                                const RunOptions& options) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return InternalError("could not start the worker launcher: socketpair: " +
                         std::string(std::strerror(errno)));
  }
  // The launcher stays in the run's process group; it leaves with the run.
  process::ForkOptions child;
  child.own_group = false;
  child.close_in_child = {sv[0]};
  const pid_t pid = process::Fork(child);
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    close(sv[0]);
    close(sv[1]);
    return InternalError("could not start the worker launcher: fork: " + why);
  }
  if (pid == 0) {
    RunOptions kept = options;
    kept.launcher = nullptr;
    kept.stop = nullptr;
    if (kept.stop_fd >= 0) close(kept.stop_fd);
    kept.stop_fd = -1;
    LauncherMain(sv[1], registry, kept);
  }
  close(sv[1]);
  RunOptions kept = options;
  kept.launcher = nullptr;
  return std::unique_ptr<WorkerLauncher>(new WorkerLauncher(pid, sv[0], std::move(kept)));
}

WorkerLauncher::~WorkerLauncher() {
  close(control_);  // The launcher reads the end and leaves; its workers end with it.
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

namespace {

// One request to the launcher and its answer; false when the launcher is gone.
bool Ask(int control, const LauncherRequest& request, int fd, LauncherReply& reply) {
  iovec iov{const_cast<LauncherRequest*>(&request), sizeof(request)};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control_bytes[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control_bytes;
    message.msg_controllen = sizeof(control_bytes);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  }
  ssize_t n;
  while ((n = sendmsg(control, &message, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof(request))) return false;
  while ((n = recv(control, &reply, sizeof(reply), 0)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(sizeof(reply));
}

}  // namespace

pid_t WorkerLauncher::Spawn(int fd, Role role) {
  LauncherRequest request;
  request.op = static_cast<char>(role);
  LauncherReply reply;
  if (!Ask(control_, request, fd, reply)) {
    errno = EPIPE;
    return -1;
  }
  if (reply.value < 0) {
    errno = static_cast<int>(-reply.value);
    return -1;
  }
  return static_cast<pid_t>(reply.value);
}

bool WorkerLauncher::Reap(pid_t pid, int& status, std::int64_t& peak_rss_bytes) {
  LauncherRequest request;
  request.op = kReap;
  request.pid = pid;
  LauncherReply reply;
  if (!Ask(control_, request, -1, reply) || reply.value < 0) return false;
  status = reply.status;
  peak_rss_bytes = reply.peak_rss_bytes;
  return true;
}

bool RunIsolated(const Catalog& catalog, const std::vector<CaseStart>& cases,
                 const BackendRegistry& registry, const RunOptions& options, ResultSink& sink) {
  if (options.launcher != nullptr && options.launcher->options().backends != options.backends) {
    // Its workers would run other backends than those the results are counted for.
    RunOptions here = options;
    here.launcher = nullptr;
    Pool pool(catalog, registry, here, cases.size(), sink);
    return pool.Run(cases);
  }
  Pool pool(catalog, registry, options, cases.size(), sink);
  return pool.Run(cases);
}

}  // namespace mm::conformance
