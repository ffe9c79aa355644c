#include "mm/conformance/judging/resources.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

namespace mm::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// The entries of `dir` other than "." and "..", read afresh (procfs lists a directory anew after a
// rewind). `names` receives them as numbers when asked.
std::int64_t CountEntries(DIR* dir, std::vector<pid_t>* names = nullptr) {
  if (dir == nullptr) return 0;
  rewinddir(dir);
  std::int64_t count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    ++count;
    if (names != nullptr) names->push_back(static_cast<pid_t>(std::atoi(entry->d_name)));
  }
  return count;
}

// Whether thread `tid` of this process is runnable now: on a CPU or waiting in a run queue for
// one ('R' in its stat), as a spinning thread always is whatever the machine's load, and a
// sleeping one is not. False when it has ended.
bool Runnable(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char line[512];
  const ssize_t n = read(fd, line, sizeof(line) - 1);
  close(fd);
  if (n <= 0) return false;
  line[n] = '\0';
  // The command name may hold spaces and parentheses: the state follows its last ')'.
  const char* name_end = std::strrchr(line, ')');
  return name_end != nullptr && name_end[1] == ' ' && name_end[2] == 'R';
}

// The threads of `threads` found runnable in at least kSpinningShare of `looks` looks, `every`
// apart.
std::vector<pid_t> BusyThreads(const std::vector<pid_t>& threads, int looks,
                               std::chrono::milliseconds every) {
  std::vector<int> runnable(threads.size(), 0);
  for (int look = 0; look < looks; ++look) {
    if (look > 0) std::this_thread::sleep_for(every);
    for (std::size_t i = 0; i < threads.size(); ++i) runnable[i] += Runnable(threads[i]);
  }
  std::vector<pid_t> busy;
  for (std::size_t i = 0; i < threads.size(); ++i) {
    if (runnable[i] >= kSpinningShare * looks) busy.push_back(threads[i]);
  }
  return busy;
}

std::string Fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace

bool IsLookOutCall(std::int64_t call) {
  if (call < kFirstLookOutCall || call % kFirstLookOutCall != 0) return false;
  const std::int64_t doublings = call / kFirstLookOutCall;
  return (doublings & (doublings - 1)) == 0;
}

CallMonitor::~CallMonitor() {
  if (pid_ != getpid()) return;  // A copy forked with them: the descriptors are the parent's too.
  if (statm_ >= 0) close(statm_);
  if (fd_dir_ != nullptr) closedir(fd_dir_);
  if (task_dir_ != nullptr) closedir(task_dir_);
}

bool CallMonitor::Open() {
  if (pid_ == getpid()) return statm_ >= 0;
  // Opened once per process and kept (a fork's child opens its own): a call's "before" and "after"
  // then count the same descriptors of the monitor's.
  pid_ = getpid();
  statm_ = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  fd_dir_ = opendir("/proc/self/fd");
  task_dir_ = opendir("/proc/self/task");
  return statm_ >= 0;
}

CallMonitor::Snapshot CallMonitor::Take() {
  Snapshot s;
  if (!Open()) return s;
  char text[256];
  const ssize_t n = pread(statm_, text, sizeof(text) - 1, 0);
  long long size = 0, resident = 0;
  if (n > 0) {
    text[n] = '\0';
    if (std::sscanf(text, "%lld %lld", &size, &resident) == 2) {
      s.rss_bytes = resident * sysconf(_SC_PAGESIZE);
    }
  }
  s.fds = CountEntries(fd_dir_);
  CountEntries(task_dir_, &s.threads);
  std::sort(s.threads.begin(), s.threads.end());
  return s;
}

void CallMonitor::Before() { before_ = Take(); }

CallResources CallMonitor::After(const std::string& backend, bool computed) {
  const Clock::time_point returned = Clock::now();
  const Snapshot after = Take();
  CallResources r;
  r.process = getpid();
  r.call = computed ? ++calls_[backend] : 0;
  r.rss_bytes = after.rss_bytes;
  r.rss_growth_bytes = after.rss_bytes - before_.rss_bytes;
  r.fds = after.fds;
  r.fd_growth = after.fds - before_.fds;
  r.threads = static_cast<std::int64_t>(after.threads.size());
  r.thread_growth = r.threads - static_cast<std::int64_t>(before_.threads.size());
  for (pid_t tid : after.threads) {
    if (!std::binary_search(before_.threads.begin(), before_.threads.end(), tid)) {
      started_by_.emplace(tid, backend);
    }
  }
  // Threads that have ended are forgotten (their ids may come back for another's thread).
  for (auto it = started_by_.begin(); it != started_by_.end();) {
    it = std::binary_search(after.threads.begin(), after.threads.end(), it->first)
             ? std::next(it)
             : started_by_.erase(it);
  }
  if (computed && IsLookOutCall(r.call)) r.spinning_threads = SpinningThreads(backend, returned);
  return r;
}

std::int64_t CallMonitor::SpinningThreads(const std::string& backend, Clock::time_point returned) {
  std::vector<pid_t> own;
  for (const auto& [tid, started_by] : started_by_) {
    if (started_by == backend) own.push_back(tid);
  }
  if (own.empty()) return 0;
  // Quiet just after the return: asleep, and nothing wakes a sleeping pool but a call.
  const std::vector<pid_t> suspects =
      BusyThreads(own, kLookOutQuickLooks, kLookOutQuickWindow / (kLookOutQuickLooks - 1));
  if (suspects.empty()) return 0;
  std::this_thread::sleep_until(returned + kLookOutDelay);
  return static_cast<std::int64_t>(
      BusyThreads(suspects, kLookOutLooks, kLookOutWindow / (kLookOutLooks - 1)).size());
}

double BackendResources::RssGrowthPerCall() const {
  return calls_after_warm_up > 0 ? static_cast<double>(rss_growth_bytes) / calls_after_warm_up : 0;
}

double BackendResources::FdGrowthPerCall() const {
  return calls_after_warm_up > 0 ? static_cast<double>(fd_growth) / calls_after_warm_up : 0;
}

double BackendResources::ThreadGrowthPerCall() const {
  return calls_after_warm_up > 0 ? static_cast<double>(thread_growth) / calls_after_warm_up : 0;
}

std::string ByteSize(double bytes) {
  const double magnitude = bytes < 0 ? -bytes : bytes;
  if (magnitude >= 1 << 20) return Fixed(bytes / (1 << 20), 1) + " MiB";
  if (magnitude >= 1 << 10) return Fixed(bytes / (1 << 10), 0) + " KiB";
  return Fixed(bytes, 0) + " B";
}

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<std::int64_t>::max()
               : std::numeric_limits<std::int64_t>::min();
}

namespace {

std::int64_t SaturatingSub(std::int64_t a, std::int64_t b) {
  std::int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<std::int64_t>::max()
               : std::numeric_limits<std::int64_t>::min();
}

// "its resources' FIELD VALUE WHY".
Status BadFigure(const char* field, std::int64_t value, const std::string& why) {
  return InvalidArgumentError(std::string("its resources' ") + field + " " + std::to_string(value) +
                              " " + why);
}

// A figure measured after the call and its growth: both possible, and so what they leave before.
Status CheckFigure(const char* after_name, std::int64_t after, const char* growth_name,
                   std::int64_t growth, std::int64_t max, const char* unit) {
  if (after < 1 || after > max) {
    return BadFigure(after_name, after,
                     std::string("is not a number of ") + unit + " a running process has");
  }
  std::int64_t before = 0;
  const bool overflow = __builtin_sub_overflow(after, growth, &before);
  if (overflow || before < 1 || before > max) {
    const bool too_few = !overflow && before < 1;
    return BadFigure(growth_name, growth,
                     std::string("with ") + after_name + " " + std::to_string(after) + " leaves " +
                         (too_few ? "fewer than 1" : "more than " + std::to_string(max)) + " " +
                         unit + " before the call");
  }
  return OkStatus();
}

}  // namespace

Status CheckCallResources(const CallResources& c) {
  if (c.process <= 0) return BadFigure("process", c.process, "is not a process id");
  if (c.call < 0) return BadFigure("call", c.call, "is negative");
  MM_RETURN_IF_ERROR(CheckFigure("rss_bytes", c.rss_bytes, "rss_growth_bytes", c.rss_growth_bytes,
                                 kMaxRssBytes, "resident bytes"));
  MM_RETURN_IF_ERROR(
      CheckFigure("fds", c.fds, "fd_growth", c.fd_growth, kMaxCount, "file descriptors"));
  MM_RETURN_IF_ERROR(
      CheckFigure("threads", c.threads, "thread_growth", c.thread_growth, kMaxCount, "threads"));
  const bool looked = c.call > 0 && IsLookOutCall(c.call);
  if (c.spinning_threads < -1 || c.spinning_threads > c.threads) {
    return BadFigure(
        "spinning_threads", c.spinning_threads,
        "is not -1 (not looked) nor a number of its " + std::to_string(c.threads) + " threads");
  }
  if (looked != (c.spinning_threads >= 0)) {
    return BadFigure("spinning_threads", c.spinning_threads,
                     looked ? "says no look-out followed call " + std::to_string(c.call) +
                                  ", which one always follows"
                            : "says a look-out followed call " + std::to_string(c.call) +
                                  ", which none follows");
  }
  return OkStatus();
}

void ResourceTally::Add(const std::string& backend, const CallResources& call) {
  if (call.call <= 0) return;
  Sums& sums = sums_[backend];
  BackendResources& f = sums.figures;
  ++f.calls;
  sums.processes.insert(call.process);
  f.peak_rss_bytes = std::max(f.peak_rss_bytes, call.rss_bytes);
  if (call.spinning_threads >= 0) {
    ++f.look_outs;
    f.spinning_look_outs += call.spinning_threads > 0;
    f.spinning_threads = std::max(f.spinning_threads, call.spinning_threads);
  }
  if (call.call == 1) return;
  ++f.calls_after_warm_up;
  // Saturated: figures read back from a report are bounded (CheckCallResources), their sums are
  // not; a saturated sum stays past every threshold instead of wrapping below it.
  f.rss_growth_bytes = SaturatingAdd(f.rss_growth_bytes, call.rss_growth_bytes);
  f.fd_growth = SaturatingAdd(f.fd_growth, call.fd_growth);
  f.thread_growth = SaturatingAdd(f.thread_growth, call.thread_growth);
}

namespace {

// Adds one call's figure (after the call, and its growth) to a group's.
template <class Figure>
void AddFigure(Figure& f, std::int64_t after, std::int64_t growth, bool first, bool last) {
  if (first) {
    f.first = after;
    f.first_growth = growth;
  }
  if (last) f.last = after;
  f.growth = SaturatingAdd(f.growth, growth);
  f.positive = SaturatingAdd(f.positive, std::max<std::int64_t>(growth, 0));
}

// What the change of a figure from a group's first call to its last leaves unexplained: minus
// the growth of the calls after the first, minus the positive growth of the process's other calls.
template <class Figure>
std::int64_t Unexplained(const Figure& f, std::int64_t process_positive) {
  const std::int64_t own = SaturatingSub(f.growth, f.first_growth);
  const std::int64_t others = SaturatingSub(process_positive, f.positive);
  return SaturatingSub(SaturatingSub(SaturatingSub(f.last, f.first), own), others);
}

}  // namespace

void ResourceTrajectories::Add(const std::string& backend, const CallResources& call,
                               const std::string& result, std::int64_t tensor_bytes) {
  Process& p = processes_[call.process];
  // What the process's other calls grew is then unknown: its groups are not judged (the result
  // itself is refused by CheckCallResources).
  if (!CheckCallResources(call).ok()) p.unjudged = true;
  if (p.unjudged) return;
  p.tensor_bytes = std::max(p.tensor_bytes, tensor_bytes);
  p.rss = SaturatingAdd(p.rss, std::max<std::int64_t>(call.rss_growth_bytes, 0));
  p.fds = SaturatingAdd(p.fds, std::max<std::int64_t>(call.fd_growth, 0));
  p.threads = SaturatingAdd(p.threads, std::max<std::int64_t>(call.thread_growth, 0));
  if (call.call <= 0) return;
  Group& g = groups_[{call.process, backend}];
  if (!g.calls.insert(call.call).second) g.mixed = true;
  const bool first = g.calls.size() == 1 || call.call < g.first_call;
  const bool last = g.calls.size() == 1 || call.call > g.last_call;
  if (first) g.first_call = call.call;
  if (last) {
    g.last_call = call.call;
    g.last_result = result;
  }
  AddFigure(g.rss, call.rss_bytes, call.rss_growth_bytes, first, last);
  AddFigure(g.fds, call.fds, call.fd_growth, first, last);
  AddFigure(g.threads, call.threads, call.thread_growth, first, last);
}

std::vector<ResourceTrajectories::Disagreement> ResourceTrajectories::Finish() const {
  std::vector<Disagreement> out;
  for (const auto& entry : groups_) {
    // Named, not a structured binding: clang 14 cannot capture one in the lambdas below.
    const auto& key = entry.first;
    const Group& g = entry.second;
    const Process& p = processes_.at(key.first);
    if (g.mixed || g.calls.size() < 2 || p.unjudged) continue;
    const auto after_first = static_cast<std::int64_t>(g.calls.size()) - 1;
    const std::string calls = " over its calls " + std::to_string(g.first_call) + " to " +
                              std::to_string(g.last_call) + " in process " +
                              std::to_string(key.first);
    auto add = [&](const std::string& why) {
      out.push_back({key.first, key.second, g.last_result, why});
    };
    const std::int64_t rss = Unexplained(g.rss, p.rss);
    std::int64_t slack = 0;
    if (__builtin_mul_overflow(p.tensor_bytes, kHeldTensorsSlack, &slack)) {
      slack = std::numeric_limits<std::int64_t>::max();
    }
    if (after_first >= kMinLeakCalls && rss >= SaturatingAdd(kUnexplainedRssBytes, slack) &&
        rss / after_first >= kLeakBytesPerCall) {
      add("its rss_growth_bytes leave " + ByteSize(static_cast<double>(rss)) +
          " of the growth of its rss_bytes unexplained" + calls);
    }
    auto left_open = [&](const Figure& f, std::int64_t positive, const char* field,
                         const char* what) {
      const std::int64_t n = Unexplained(f, positive);
      if (n >= kMinLeftOpen && n >= (after_first + kCallsPerLeftOpen - 1) / kCallsPerLeftOpen) {
        add(std::string("its ") + field + " leave " + std::to_string(n) + " more " + what +
            " unexplained" + calls);
      }
    };
    left_open(g.fds, p.fds, "fd_growth", "open descriptors");
    left_open(g.threads, p.threads, "thread_growth", "threads");
  }
  return out;
}

namespace {

// The findings of `f` (its figures complete), each with its figure.
std::vector<std::string> Findings(const BackendResources& f) {
  std::vector<std::string> out;
  const std::string over = " (mean of " + std::to_string(f.calls_after_warm_up) +
                           " calls after warm-up, in " + std::to_string(f.processes) + " process" +
                           (f.processes == 1 ? "" : "es") + ")";
  if (f.calls_after_warm_up >= kMinLeakCalls &&
      f.RssGrowthPerCall() >= static_cast<double>(kLeakBytesPerCall)) {
    out.push_back("resident memory grows by " + ByteSize(f.RssGrowthPerCall()) + " per call" +
                  over);
  }
  auto left_open = [&](std::int64_t growth, double per_call, const char* what) {
    if (growth >= kMinLeftOpen && growth * kCallsPerLeftOpen >= f.calls_after_warm_up) {
      out.push_back(std::string(what) + ": " + Fixed(per_call, 2) + " per call" + over);
    }
  };
  left_open(f.fd_growth, f.FdGrowthPerCall(), "file descriptors left open");
  left_open(f.thread_growth, f.ThreadGrowthPerCall(), "threads left running");
  if (f.spinning_threads > 0) {
    out.push_back(std::to_string(f.spinning_threads) + " thread" +
                  (f.spinning_threads == 1 ? "" : "s") + " it started still ran (not asleep) " +
                  std::to_string(kLookOutDelay.count()) + " ms after a call returned (" +
                  std::to_string(f.spinning_look_outs) + " of " + std::to_string(f.look_outs) +
                  " look-outs)");
  }
  return out;
}

}  // namespace

std::vector<BackendResources> ResourceTally::Finish(
    const std::vector<std::string>& backends) const {
  std::vector<BackendResources> out;
  for (const std::string& backend : backends) {
    const auto it = sums_.find(backend);
    if (it == sums_.end()) continue;
    BackendResources f = it->second.figures;
    f.backend = backend;
    f.processes = static_cast<std::int64_t>(it->second.processes.size());
    f.findings = Findings(f);
    out.push_back(std::move(f));
  }
  return out;
}

int BackendsWithFindings(const std::vector<BackendResources>& resources) {
  return static_cast<int>(
      std::count_if(resources.begin(), resources.end(),
                    [](const BackendResources& f) { return !f.findings.empty(); }));
}

}  // namespace mm::conformance
