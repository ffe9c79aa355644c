#include "mm/conformance/running/stop_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include "mm/engine/process/process.h"

namespace mm::conformance {
namespace {

// The signals that stop a run: the first sets the flag (and wakes the pool through the pipe), so
// the reports are written for the results finished; a second ends the process at once.
volatile std::sig_atomic_t g_stop_signal = 0;
int g_stop_pipe[2] = {-1, -1};

extern "C" void OnStopSignal(int signal_number) {
  if (g_stop_signal != 0) {
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
