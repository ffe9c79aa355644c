// One running driver program as the command backend sees it (not an API: the backend's and the
// shipped drivers' registration's own): its socket, the end of its stderr, the deadline and the
// memory limit of what it is asked now.
#ifndef MM_BACKENDS_CMD_DRIVER_PROCESS_H_
#define MM_BACKENDS_CMD_DRIVER_PROCESS_H_

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/cmd/runtime_protocol.h"
#include "mm/engine/process/process.h"
#include "mm/engine/status.h"

namespace mm::runtime {

// `seconds` as "%g" prints it: "2", "0.5".
std::string Seconds(double seconds);

// A started driver. Reads and writes poll its socket and its stderr, so a driver that fills its
// stderr never blocks; each gives up at the deadline (StartClock) or the memory limit, killing
// the driver, and within 100 ms of a stop request (process::StopRequested): CANCELLED, the
// driver's group killed and reaped. A driver that ends (or closes its end) is reaped, and one that
// lives on after closing its stdout is killed with its group after process::kExitGraceSeconds.
class DriverProcess final : public ByteChannel {
 public:
  DriverProcess(process::Program program, DriverLimits limits)
      : program_(std::move(program)), limits_(limits) {}

  // The deadline of what the driver is asked now: the limit's timeout from now.
  void StartClock();

  Status Read(std::span<std::byte> into) override;
  Status Write(std::span<const std::byte> bytes) override;

  // How many bytes wait unread on the driver's stdout: output nobody asked for.
  std::size_t Unrequested();

  // The last of its stderr, for messages: "; its stderr ends: ..." or "".
  std::string StderrTail();

  // Kills the driver and says how it ended: "crashed: SIGSEGV (signal 11)".
  std::string KillAndDescribe();

 private:
  using Clock = std::chrono::steady_clock;

  // The driver closed its end: reaps it and says how it ended.
  Status Ended(const std::string& what);
  // Waits until the socket is ready for `events`, keeping stderr drained, the deadline and the
  // memory limit.
  Status Wait(short events);
  // Kills the driver; gives the end of its stderr from before, for the message that says why.
  std::string KillKeepingTail();
  void DrainStderr();

  process::Program program_;
  DriverLimits limits_;
  Clock::time_point deadline_ = Clock::now();
  Clock::time_point last_memory_check_ = Clock::now();
  std::string stderr_;
  bool stderr_open_ = true;
};

// `status` with the end of the driver's stderr (`tail`), unless it says it already.
Status WithTail(const Status& status, const std::string& tail);

}  // namespace mm::runtime

#endif  // MM_BACKENDS_CMD_DRIVER_PROCESS_H_
