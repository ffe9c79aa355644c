// SIGINT and SIGTERM as a request to stop: the first sets a flag (and wakes a poll through a pipe),
// so a tool can write what it has; a second ends the process at once. Shared by mm-conformance
// and mm-fuzz.
#ifndef MM_CONFORMANCE_STOP_SIGNALS_H_
#define MM_CONFORMANCE_STOP_SIGNALS_H_

#include <csignal>

namespace mm::conformance {

// SIGINT and SIGTERM handled for the lifetime of this object; the previous handlers after. One
// object at a time per process.
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
  struct sigaction previous_int_ {
  }, previous_term_{};
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_STOP_SIGNALS_H_
