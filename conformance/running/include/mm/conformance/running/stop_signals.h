// SIGINT and SIGTERM as a request to stop: the first sets a flag (and wakes a poll through a pipe),
// so a tool can write what it has; a second ends the process at once, after killing every child
// with its process group (and what that orphans here), so that nothing of the run is left to
// init. Shared by mm-conformance and mm-fuzz, whose runs it brackets: the processes the run leaves
// behind are ended with it.
#ifndef MM_CONFORMANCE_RUNNING_STOP_SIGNALS_H_
#define MM_CONFORMANCE_RUNNING_STOP_SIGNALS_H_

#include <csignal>
#include <memory>

namespace mm::process {
class Subreaper;
}  // namespace mm::process

namespace mm::conformance {

// SIGINT and SIGTERM handled for the lifetime of this object; the previous handlers after. One
// object at a time per process. The flag is also the process module's stop request
// (process::SetStopRequest): a wait for a child gives up when it is set. And the process is the
// subreaper of what the run starts (process::Subreaper): what is left of it (a driver's daemon, a
// plugin's setsid'ed child) is killed and reaped when this object ends.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  // The signal that asked to stop; 0 while none came.
  const volatile std::sig_atomic_t* flag() const;
  // Readable once a signal came (for poll); -1 when the pipe could not be made.
  int fd() const;

 private:
  // Made first, ended last: the strays are ended after the handlers are restored.
  std::unique_ptr<process::Subreaper> subreaper_;
  struct sigaction previous_int_ {
  }, previous_term_{};
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNING_STOP_SIGNALS_H_
