#include "driver_process.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace mm::runtime {
namespace {

// How much of a driver's stderr is kept (its end), and how much of it an error message quotes.
constexpr std::size_t kStderrKept = 16 * 1024;
constexpr std::size_t kStderrQuoted = 1500;
// Resident memory is sampled this often while a driver works.
constexpr auto kMemoryCheckInterval = std::chrono::milliseconds(100);

std::string Mib(std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

}  // namespace

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

void DriverProcess::StartClock() {
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(limits_.timeout_seconds));
}

Status DriverProcess::Read(std::span<std::byte> into) {
  while (!into.empty()) {
    const ssize_t n = recv(program_.io_fd(), into.data(), into.size(), MSG_DONTWAIT);
    if (n > 0) {
      into = into.subspan(static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return Ended("ended before its answer was complete");
    if (errno != EAGAIN && errno != EINTR) {
      return Ended("closed its stdout (" + std::string(std::strerror(errno)) + ")");
    }
    MM_RETURN_IF_ERROR(Wait(POLLIN));
  }
  return OkStatus();
}

Status DriverProcess::Write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n =
        send(program_.io_fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes = bytes.subspan(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Ended("stopped reading its stdin (" + std::string(std::strerror(errno)) + ")");
    }
    MM_RETURN_IF_ERROR(Wait(POLLOUT));
  }
  return OkStatus();
}

std::size_t DriverProcess::Unrequested() {
  char peek[256];
  const ssize_t n = recv(program_.io_fd(), peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

std::string DriverProcess::StderrTail() {
  DrainStderr();
  std::string_view tail = stderr_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.remove_suffix(1);
  if (tail.empty()) return "";
  if (tail.size() > kStderrQuoted) tail = tail.substr(tail.size() - kStderrQuoted);
  std::string text;
  for (char c : tail) text += c == '\n' ? '|' : c;
  return "; its stderr ends: " + DriverText(text, kStderrQuoted + 8);
}

std::string DriverProcess::KillAndDescribe() {
  program_.Kill();
  auto ended = program_.Wait();
  return ended.ok() ? process::DescribeWaitStatus(ended->wait_status) : ended.status().message();
}

std::string DriverProcess::KillKeepingTail() {
  const std::string tail = StderrTail();
  KillAndDescribe();
  return tail;
}

// One that lives on (a daemon, a driver that closed its stdout) is killed with its group after
// process::kExitGraceSeconds.
Status DriverProcess::Ended(const std::string& what) {
  const std::string tail = StderrTail();
  auto ended = program_.Wait(process::kExitGraceSeconds);
  std::string how =
      ended.ok() ? process::DescribeWaitStatus(ended->wait_status) : ended.status().message();
  if (ended.ok() && ended->timed_out) {
    how = "it did not exit within " + Seconds(process::kExitGraceSeconds) +
          " s after closing its stdout, and was killed";
  }
  return InternalError("the driver " + what + ": " + how + tail);
}

Status DriverProcess::Wait(short events) {
  while (true) {
    // A stop request (SIGINT, SIGTERM) ends the wait at once: whatever the driver would answer
    // is not judged, so it is killed now rather than at the deadline.
    if (process::StopRequested()) {
      KillAndDescribe();
      return CancelledError("the run was stopped; the driver was killed");
    }
    const auto now = Clock::now();
    if (now >= deadline_) {
      const std::string tail = KillKeepingTail();
      return InternalError("the driver did not answer within " + Seconds(limits_.timeout_seconds) +
                           " s (--timeout); it was killed" + tail);
    }
    if (limits_.memory_limit_bytes > 0 && now - last_memory_check_ > kMemoryCheckInterval) {
      last_memory_check_ = now;
      const std::int64_t resident = process::ResidentBytes(program_.pid());
      if (resident > limits_.memory_limit_bytes) {
        const std::string tail = KillKeepingTail();
        return ResourceExhaustedError(
            "the driver went past the memory limit of " + Mib(limits_.memory_limit_bytes) +
            " (--memory-limit; resident memory " + Mib(resident) + "); it was killed" + tail);
      }
    }
    // Slices of kMemoryCheckInterval at most: the memory and a stop request are looked at between
    // them.
    const double wait_ms =
        std::min(std::chrono::duration<double, std::milli>(deadline_ - now).count(), 100.0);
    pollfd fds[2] = {{program_.io_fd(), events, 0}, {program_.stderr_fd(), POLLIN, 0}};
    const int ready = poll(fds, stderr_open_ ? 2 : 1, static_cast<int>(std::ceil(wait_ms)));
    if (ready <= 0) continue;
    if (stderr_open_ && fds[1].revents != 0) DrainStderr();
    if (fds[0].revents != 0) return OkStatus();
  }
}

void DriverProcess::DrainStderr() {
  if (!stderr_open_ || program_.stderr_fd() < 0) return;
  char chunk[4096];
  while (true) {
    const ssize_t n = read(program_.stderr_fd(), chunk, sizeof(chunk));
    if (n > 0) {
      stderr_.append(chunk, static_cast<std::size_t>(n));
      if (stderr_.size() > 2 * kStderrKept) stderr_.erase(0, stderr_.size() - kStderrKept);
      continue;
    }
    if (n == 0) stderr_open_ = false;
    return;
  }
}

Status WithTail(const Status& status, const std::string& tail) {
  if (status.message().find("; its stderr ends: ") != std::string::npos) return status;
  return Status(status.code(), status.message() + tail);
}

}  // namespace mm::runtime
