// Child: a function run in a forked child that answers over a pipe (process.h).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "mm/engine/process/process.h"

namespace mm::process {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

StatusOr<Child> Child::Start(const std::function<void(int write_fd)>& body,
                             const ForkOptions& options) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return InternalError(std::string("cannot start a child process: pipe: ") +
                         std::strerror(errno));
  }
  ForkOptions child_options = options;
  child_options.close_in_child.push_back(fds[0]);
  const pid_t pid = Fork(child_options);
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return InternalError("cannot start a child process: fork: " + why);
  }
  if (pid == 0) {
    body(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  return Child(pid, fds[0]);
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), read_fd_(std::exchange(other.read_fd_, -1)) {}

Child::~Child() {
  if (read_fd_ >= 0) close(read_fd_);
  if (pid_ > 0) {
    KillGroup(pid_);
    [[maybe_unused]] auto ended = Reap(pid_);
  }
}

bool Child::ReadUntilEnd(double timeout_seconds, std::string& out,
                         const std::function<bool(const std::string&)>& complete) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (read_fd_ >= 0 && !(complete && complete(out))) {
    const double left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd fd{read_fd_, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::ceil(left)));
    if (ready <= 0) continue;  // EINTR, or the deadline (checked above).
    char chunk[4096];
    const ssize_t n = read(read_fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(read_fd_);
      read_fd_ = -1;
      break;
    }
    out.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

StatusOr<Ended> Child::Finish(double timeout_seconds, std::string& out,
                              const std::function<bool(const std::string&)>& complete) {
  const auto start = Clock::now();
  const bool ended = ReadUntilEnd(timeout_seconds, out, complete);
  if (!ended) Kill();
  const double left = timeout_seconds - std::chrono::duration<double>(Clock::now() - start).count();
  StatusOr<Ended> reaped = Wait(std::max(left, kExitGraceSeconds));
  if (reaped.ok()) reaped->timed_out = !ended;
  return reaped;
}

void Child::Kill() { KillGroup(pid_); }

StatusOr<Ended> Child::Wait(double timeout_seconds) {
  if (pid_ <= 0) return FailedPreconditionError("the child was already waited for");
  // Closed first: a child blocked writing to a full pipe then gets EPIPE instead of waiting.
  if (read_fd_ >= 0) close(std::exchange(read_fd_, -1));
  return EndGroup(std::exchange(pid_, -1), /*kill_leader=*/false, timeout_seconds);
}

}  // namespace mm::process
