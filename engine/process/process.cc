// Processes: what a wait status and a signal are called, memory figures, forking with the
// options every child of mm gets, and waiting for, reaping and killing what was forked
// (process.h). Child, Program and Subreaper are built on these (child.cc, program.cc,
// subreaper.cc).
#include "mm/engine/process/process.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "process_internal.h"

namespace mm::process {

std::string SignalName(int signal_number) {
  const char* abbrev = sigabbrev_np(signal_number);
  return abbrev != nullptr ? "SIG" + std::string(abbrev)
                           : "signal " + std::to_string(signal_number);
}

std::string SignalText(int signal_number) {
  return SignalName(signal_number) + " (signal " + std::to_string(signal_number) + ")";
}

std::string DescribeWaitStatus(int wait_status) { return DescribeWaitStatus(wait_status, ""); }

std::string DescribeWaitStatus(int wait_status, std::string_view where) {
  const std::string at = where.empty() ? "" : " " + std::string(where);
  if (WIFSIGNALED(wait_status)) return "crashed" + at + ": " + SignalText(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status)) + at;
  }
  return "ended (wait status " + std::to_string(wait_status) + ")" + at;
}

namespace {

// Field `index` (0: size, 1: resident, 5: data) of /proc/PID/statm, in bytes; 0 when unreadable.
std::int64_t StatmBytes(pid_t pid, int index) {
  if (pid < 0) return 0;
  const std::string path = pid > 0 ? "/proc/" + std::to_string(pid) + "/statm" : "/proc/self/statm";
  std::ifstream statm(path);
  long long pages = 0;
  for (int i = 0; i <= index; ++i) {
    if (!(statm >> pages)) return 0;
  }
  return pages * sysconf(_SC_PAGESIZE);
}

}  // namespace

std::int64_t ResidentBytes(pid_t pid) { return StatmBytes(pid, 1); }

std::int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::int64_t{usage.ru_maxrss} * 1024;
}

std::int64_t MappedDataBytes() { return StatmBytes(0, 5); }

bool DieWithParent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have ended between fork() and prctl(): no signal would come then.
  return getppid() == parent;
}

namespace {

using Clock = std::chrono::steady_clock;

const volatile std::sig_atomic_t* g_stop_request = nullptr;

// The children Fork() started in process `owner` and Reap() has not reaped yet: never strays
// (EndStrays). A forked child, another owner, starts with none (without touching the set before
// an exec, where only async-signal-safe calls are allowed).
struct StartedSet {
  pid_t owner = -1;
  std::set<pid_t> pids;
};
std::mutex g_started_mutex;
StartedSet& Started() {
  static StartedSet started;
  if (started.owner != getpid()) {
    started.pids.clear();
    started.owner = getpid();
  }
  return started;
}

void TrackStarted(pid_t pid, bool running) {
  std::lock_guard lock(g_started_mutex);
  if (running) {
    Started().pids.insert(pid);
  } else {
    Started().pids.erase(pid);
  }
}

}  // namespace

namespace internal {

std::set<pid_t> StartedChildren() {
  std::lock_guard lock(g_started_mutex);
  return Started().pids;
}

std::optional<std::vector<pid_t>> ListedChildren() {
  std::error_code ec;
  std::vector<pid_t> children;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream list(task.path() / "children");
    if (!list) return std::nullopt;
    pid_t pid;
    while (list >> pid) children.push_back(pid);
  }
  if (ec) return std::nullopt;
  return children;
}

}  // namespace internal

void SetStopRequest(const volatile std::sig_atomic_t* flag) { g_stop_request = flag; }

bool StopRequested() { return g_stop_request != nullptr && *g_stop_request != 0; }

bool WaitForExit(pid_t pid, double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  // A pidfd is readable once the process ended; without one (an old kernel), the wait polls.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  bool ended = false;
  while (true) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
      ended = errno != EINTR;  // Not a child (any more): nothing to wait for.
    } else {
      ended = info.si_pid == pid;
    }
    const double left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (ended || left <= 0 || StopRequested()) break;
    // Slices of 100 ms at most: a stop request is seen within them.
    const int slice = static_cast<int>(std::ceil(std::min(left, 100.0)));
    if (pidfd >= 0) {
      pollfd fd{pidfd, POLLIN, 0};
      poll(&fd, 1, slice);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(slice, 10)));
    }
  }
  if (pidfd >= 0) close(pidfd);
  return ended;
}

pid_t Fork(const ForkOptions& options) {
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // The stop is the parent's to handle; the children it started are its own.
    g_stop_request = nullptr;
    for (const int fd : options.close_in_child) close(fd);
    if (options.own_group) setpgid(0, 0);
    if (options.die_with_parent && !DieWithParent(parent)) _exit(0);
    return 0;
  }
  // Both sides set the group: whichever runs first, the group exists when either goes on.
  if (pid > 0 && options.own_group) setpgid(pid, pid);
  if (pid > 0) TrackStarted(pid, true);
  return pid;
}

StatusOr<Ended> Reap(pid_t pid) {
  int status = 0;
  rusage usage{};
  pid_t got;
  while ((got = wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) {
  }
  if (got < 0) {
    return NotFoundError("process " + std::to_string(pid) +
                         " cannot be waited for: " + std::strerror(errno));
  }
  TrackStarted(pid, false);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  Ended ended;
  ended.wait_status = status;
  ended.peak_rss_bytes = std::int64_t{usage.ru_maxrss} * 1024;
  ended.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return ended;
}

void KillGroup(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

StatusOr<Ended> EndGroup(pid_t pid, bool kill_leader, double timeout_seconds) {
  if (pid <= 0) return NotFoundError("no process " + std::to_string(pid));
  // Unreaped, the leader's id still names its group below.
  const bool ended = kill_leader || WaitForExit(pid, timeout_seconds);
  KillGroup(pid);
  StatusOr<Ended> reaped = Reap(pid);
  if (reaped.ok()) reaped->timed_out = !ended;
  return reaped;
}

}  // namespace mm::process
