#include "mm/conformance/running/process_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "mm/engine/io/text.h"
#include "mm/engine/process/process.h"

namespace mm::conformance {
namespace {

const char* LimitName(int resource) {
  switch (resource) {
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE (open files)";
    case RLIMIT_AS:
      return "RLIMIT_AS (address space)";
    case RLIMIT_DATA:
      return "RLIMIT_DATA (data)";
    case RLIMIT_STACK:
      return "RLIMIT_STACK (stack)";
    case RLIMIT_CORE:
      return "RLIMIT_CORE (core files)";
    case RLIMIT_NPROC:
      return "RLIMIT_NPROC (processes)";
    case RLIMIT_FSIZE:
      return "RLIMIT_FSIZE (file size)";
    case RLIMIT_CPU:
      return "RLIMIT_CPU (CPU seconds)";
  }
  return "a resource limit";
}

std::string LimitValue(rlim_t value) {
  return value == RLIM_INFINITY ? "unlimited" : std::to_string(value);
}

std::string LimitText(const rlimit& limit) {
  return LimitValue(limit.rlim_cur) + " (hard " + LimitValue(limit.rlim_max) + ")";
}

std::string Octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
  return text;
}

// The umask, read without changing it: umask(2) sets it for every thread at once, and a thread
// creating a file in between would get the wrong one. /proc/self/status has it since Linux 4.7.
mode_t CurrentUmask() {
  char text[4096];
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  if (n > 0) {
    text[n] = '\0';
    if (const char* line = std::strstr(text, "\nUmask:")) {
      return static_cast<mode_t>(std::strtoul(line + 7, nullptr, 8));
    }
  }
  const mode_t mask = umask(022);
  umask(mask);
  return mask;
}

std::string CurrentDirectory() {
  char path[PATH_MAX];
  if (getcwd(path, sizeof path) == nullptr) {
    return std::string("(unreadable: ") + std::strerror(errno) + ")";
  }
  return path;
}

std::string Disposition(const struct sigaction& action) {
  if (action.sa_handler == SIG_DFL) return "default";
  if (action.sa_handler == SIG_IGN) return "ignored";
  return "a handler";
}

bool SameAction(const struct sigaction& a, const struct sigaction& b) {
  if (a.sa_handler != b.sa_handler) return false;
  // The flags of a default or ignored disposition change nothing (the run's own sigaction calls
  // leave SA_RESTART there); a handler's do: sa_handler and sa_sigaction share their storage, and
  // SA_SIGINFO tells which is called.
  return a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN || a.sa_flags == b.sa_flags;
}

}  // namespace

ProcessState ProcessState::Capture() {
  ProcessState state;
  state.cwd_ = CurrentDirectory();
  for (std::size_t i = 0; i < std::size(kCheckedLimits); ++i) {
    getrlimit(kCheckedLimits[i], &state.limits_[i]);
  }
  state.umask_ = CurrentUmask();
  for (std::size_t i = 0; i < std::size(kCheckedSignals); ++i) {
    sigaction(kCheckedSignals[i], nullptr, &state.actions_[i]);
  }
  pthread_sigmask(SIG_SETMASK, nullptr, &state.blocked_);
  return state;
}

std::vector<std::string> ProcessState::ChangesTo(const ProcessState& now) const {
  std::vector<std::string> changes;
  if (now.cwd_ != cwd_) {
    changes.push_back("current directory from '" + io::ConsoleText(cwd_) + "' to '" +
                      io::ConsoleText(now.cwd_) + "'");
  }
  for (std::size_t i = 0; i < std::size(kCheckedLimits); ++i) {
    const rlimit& was = limits_[i];
    const rlimit& is = now.limits_[i];
    if (was.rlim_cur == is.rlim_cur && was.rlim_max == is.rlim_max) continue;
    changes.push_back(std::string(LimitName(kCheckedLimits[i])) + " from " + LimitText(was) +
                      " to " + LimitText(is));
  }
  if (now.umask_ != umask_) {
    changes.push_back("umask from " + Octal(umask_) + " to " + Octal(now.umask_));
  }
  for (std::size_t i = 0; i < std::size(kCheckedSignals); ++i) {
    const std::string name = process::SignalName(kCheckedSignals[i]);
    if (!SameAction(actions_[i], now.actions_[i])) {
      const std::string was = Disposition(actions_[i]), is = Disposition(now.actions_[i]);
      changes.push_back(name + " disposition from " + was + " to " +
                        (is == was ? "another " + is : is));
    }
    const bool was_blocked = sigismember(&blocked_, kCheckedSignals[i]) == 1;
    if (was_blocked != (sigismember(&now.blocked_, kCheckedSignals[i]) == 1)) {
      changes.push_back(
          name + (was_blocked ? " from blocked to unblocked" : " from unblocked to blocked"));
    }
  }
  return changes;
}

std::vector<std::string> ProcessState::Restore() const {
  std::vector<std::string> failed;
  auto failure = [&](const std::string& what) {
    failed.push_back(what + ": " + std::strerror(errno));
  };
  if (CurrentDirectory() != cwd_ && chdir(cwd_.c_str()) != 0) failure("current directory");
  for (std::size_t i = 0; i < std::size(kCheckedLimits); ++i) {
    rlimit now{};
    getrlimit(kCheckedLimits[i], &now);
    if (now.rlim_cur == limits_[i].rlim_cur && now.rlim_max == limits_[i].rlim_max) continue;
    if (setrlimit(kCheckedLimits[i], &limits_[i]) != 0) failure(LimitName(kCheckedLimits[i]));
  }
  umask(umask_);
  for (std::size_t i = 0; i < std::size(kCheckedSignals); ++i) {
    sigaction(kCheckedSignals[i], &actions_[i], nullptr);
  }
  pthread_sigmask(SIG_SETMASK, &blocked_, nullptr);
  return failed;
}

std::string ProcessStateChangeText(const std::string& backend, const std::string& process,
                                   const std::vector<std::string>& changes) {
  std::string text = "backend " + backend + " changed " + process + "'s ";
  for (std::size_t i = 0; i < changes.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == changes.size() ? " and its " : ", its ") + changes[i];
  }
  return text + " during its call";
}

}  // namespace mm::conformance
