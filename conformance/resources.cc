#include "mm/conformance/resources.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  f.rss_growth_bytes += call.rss_growth_bytes;
  f.fd_growth += call.fd_growth;
  f.thread_growth += call.thread_growth;
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
