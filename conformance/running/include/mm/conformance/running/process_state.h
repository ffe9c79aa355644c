// The process state a backend call must leave as it found it: the current directory, the resource
// limits, the file-creation mask and the dispositions (and blocking) of the signals mm handles or
// relies on. A plugin that changes them during a call would otherwise turn every later result of
// its process into an ERROR blamed on the cases' files (a lowered RLIMIT_NOFILE, a chdir); the
// worker (worker.h) and an in-process run (runner.h) check it after each backend call instead.
#ifndef MM_CONFORMANCE_RUNNING_PROCESS_STATE_H_
#define MM_CONFORMANCE_RUNNING_PROCESS_STATE_H_

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <string>
#include <vector>

namespace mm::conformance {

// The resource limits checked: open files, address space, data, stack, core files, processes,
// file size, CPU time.
inline constexpr int kCheckedLimits[] = {RLIMIT_NOFILE, RLIMIT_AS,    RLIMIT_DATA,  RLIMIT_STACK,
                                         RLIMIT_CORE,   RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CPU};
// The signals checked: those whose handlers mm sets (stop_signals.h, the workers) or relies on
// (SIGCHLD, for waiting; SIGPIPE, for writing to drivers).
inline constexpr int kCheckedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};

// One snapshot of this process's state (the calling thread's signal mask).
class ProcessState {
 public:
  // The state now.
  static ProcessState Capture();

  // What differs in `now` from this snapshot, one phrase each, in the order of the fields:
  // "current directory from '/a' to '/b'", "RLIMIT_NOFILE (open files) from 1024 (hard 4096) to 16
  // (hard 4096)", "umask from 0022 to 0077", "SIGCHLD disposition from default to ignored",
  // "SIGTERM from unblocked to blocked". Empty when nothing changed.
  std::vector<std::string> ChangesTo(const ProcessState& now) const;

  // Puts this snapshot back into the process (chdir, setrlimit, umask, sigaction, the mask); what
  // could not be put back, one phrase each with the reason ("RLIMIT_NOFILE: Operation not
  // permitted", a hard limit lowered is not raised again by an unprivileged process).
  std::vector<std::string> Restore() const;

 private:
  std::string cwd_;  // Or "(unreadable: why)".
  std::array<rlimit, std::size(kCheckedLimits)> limits_{};
  mode_t umask_ = 0;
  std::array<struct sigaction, std::size(kCheckedSignals)> actions_{};
  sigset_t blocked_{};
};

// "backend X changed the PROCESS's current directory from '/a' to '/b' and its umask from 0022 to
// 0077 during its call": the ERROR's cause for `changes` (ProcessState::ChangesTo, not empty).
// `process` is "the worker" or "this process".
std::string ProcessStateChangeText(const std::string& backend, const std::string& process,
                                   const std::vector<std::string>& changes);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNING_PROCESS_STATE_H_
