#include "mm/conformance/running/stop_signals.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <utility>

#include "mm/engine/process/process.h"

namespace mm::conformance {
namespace {

// SIGKILL to child `pid` and to the process group it is in, unless that is this process's own.
void KillChildAndGroup(pid_t pid) {
  const pid_t group = getpgid(pid);
  if (group > 0 && group != getpgrp()) kill(-group, SIGKILL);
  kill(pid, SIGKILL);
}

// Kills every child listed in the /proc children file `path` (KillChildAndGroup); whether any was.
bool KillChildrenListed(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool any = false;
  pid_t pid = 0;
  char chunk[512];
  ssize_t n;
  while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] >= '0' && chunk[i] <= '9') {
        pid = pid * 10 + (chunk[i] - '0');
      } else if (pid > 0) {
        KillChildAndGroup(std::exchange(pid, 0));
        any = true;
      }
    }
  }
  if (pid > 0) KillChildAndGroup(pid);
  close(fd);
  return any || pid > 0;
}

// Kills every child of this process (from each thread's /proc children list) with its group;
// whether any was found.
bool KillEveryChild() {
  const int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  bool any = false;
  alignas(dirent64) char entries[4096];
  long n;
  while ((n = syscall(SYS_getdents64, dir, entries, sizeof(entries))) > 0) {
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(entries + at);
      at += entry->d_reclen;
      if (entry->d_name[0] == '.') continue;
      char path[64] = "/proc/self/task/";
      std::size_t length = std::strlen(path);
      for (const char* c = entry->d_name; *c != '\0' && length < 40; ++c) path[length++] = *c;
      std::memcpy(path + length, "/children", sizeof("/children"));
      any = KillChildrenListed(path) || any;
    }
  }
  close(dir);
  return any;
}

// What the run started ends with it, before a second signal ends the process: every child (the
// launcher, a driver, what this subreaper adopted) is killed with its process group and reaped,
// and so is what their deaths orphan here in turn (workers, a driver's helper), for up to 1 s.
// Async-signal-safe: called from the signal handler.
void EndEveryChildNow() {
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (true) {
    const bool any = KillEveryChild();
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double elapsed = static_cast<double>(now.tv_sec - start.tv_sec) +
                           static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9;
    if (!any || elapsed > 1.0) return;
    const timespec pause{0, 5 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

// The signals that stop a run: the first sets the flag (and wakes the pool through the pipe), so
// the reports are written for the results finished; a second ends the process at once, after
// ending what the run started (EndEveryChildNow).
volatile std::sig_atomic_t g_stop_signal = 0;
int g_stop_pipe[2] = {-1, -1};

extern "C" void OnStopSignal(int signal_number) {
  if (g_stop_signal != 0) {
    EndEveryChildNow();
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);  // Delivered, with the default action, when this handler returns.
    return;
  }
  g_stop_signal = signal_number;
  if (g_stop_pipe[1] >= 0) {
    [[maybe_unused]] const ssize_t n = write(g_stop_pipe[1], "", 1);
  }
}

}  // namespace

StopOnSignals::StopOnSignals() : subreaper_(std::make_unique<process::Subreaper>()) {
  g_stop_signal = 0;
  if (pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_stop_pipe[0] = g_stop_pipe[1] = -1;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
  process::SetStopRequest(&g_stop_signal);
}
StopOnSignals::~StopOnSignals() {
  process::SetStopRequest(nullptr);
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  for (int& fd : g_stop_pipe) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  g_stop_signal = 0;
}

const volatile std::sig_atomic_t* StopOnSignals::flag() const { return &g_stop_signal; }
int StopOnSignals::fd() const { return g_stop_pipe[0]; }

}  // namespace mm::conformance
