#include "mm/conformance/isolation/worker_launcher.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "mm/conformance/isolation/worker.h"
#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/judging/compare.h"
#include "mm/engine/process/process.h"

namespace mm::conformance {
namespace {

// What the run asks its launcher, and what it answers: one datagram each.
struct LauncherRequest {
  char op = 0;  // A WorkerLauncher::Role (a socket comes with it), or kReap.
  std::int64_t pid = 0;
};
constexpr char kReap = 'R';
struct LauncherReply {
  std::int64_t value = 0;  // Spawn: the process id, or -errno; reap: 0, or -errno.
  std::int32_t status = 0;
  std::int64_t peak_rss_bytes = 0;
};

// Forks the process of `role` serving `fd` (closing `close_in_child` in it first), which runs
// with `catalog`, `registry` and `options` and never returns. As fork().
pid_t ForkRole(WorkerLauncher::Role role, int fd, const std::vector<int>& close_in_child,
               const Catalog* catalog, const BackendRegistry& registry, const RunOptions& options) {
  process::ForkOptions child;
  child.close_in_child = close_in_child;
  const pid_t pid = process::Fork(child);
  if (pid == 0) {
    if (role == WorkerLauncher::Role::kWorker) WorkerMain(fd, catalog, registry, options);
    DescriberMain(fd, registry);
  }
  return pid;
}

// Receives one request on `control`, with the socket that comes with it in `fd` (-1: none).
// 0 when the run closed the socket, -1 on EINTR, else the bytes received.
ssize_t ReceiveRequest(int control, LauncherRequest& request, int& fd) {
  fd = -1;
  alignas(cmsghdr) char control_bytes[CMSG_SPACE(sizeof(int))];
  iovec iov{&request, sizeof(request)};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control_bytes;
  message.msg_controllen = sizeof(control_bytes);
  const ssize_t n = recvmsg(control, &message, MSG_CMSG_CLOEXEC);
  if (n < 0 && errno == EINTR) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); n > 0 && c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
    }
  }
  return n;
}

// The launcher's answer to `request`, served with `fd` (closed here).
LauncherReply Serve(const LauncherRequest& request, int fd, int control,
                    const BackendRegistry& registry, const RunOptions& options) {
  LauncherReply reply;
  if (request.op == kReap) {
    const auto ended = process::EndGroup(static_cast<pid_t>(request.pid), /*kill_leader=*/false,
                                         process::kExitGraceSeconds);
    reply.value = ended.ok() ? 0 : -ECHILD;
    if (ended.ok()) {
      reply.status = ended->wait_status;
      reply.peak_rss_bytes = ended->peak_rss_bytes;
    }
    return reply;
  }
  if (fd < 0) {
    reply.value = -EBADF;
    return reply;
  }
  const pid_t pid = ForkRole(static_cast<WorkerLauncher::Role>(request.op), fd, {control}, nullptr,
                             registry, options);
  reply.value = pid < 0 ? -errno : pid;
  close(fd);
  return reply;
}

// The launcher: forks workers and describers on request and reaps them, until the run closes the
// control socket.
[[noreturn]] void LauncherMain(int control, const BackendRegistry& registry,
                               const RunOptions& options) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  while (true) {
    LauncherRequest request;
    int fd = -1;
    const ssize_t n = ReceiveRequest(control, request, fd);
    if (n == 0) _exit(0);  // The run is over.
    if (n == -1 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(request))) _exit(1);
    const LauncherReply reply = Serve(request, fd, control, registry, options);
    if (send(control, &reply, sizeof(reply), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(reply))) {
      _exit(1);
    }
  }
}

// One request to the launcher and its answer; false when the launcher is gone.
bool Ask(int control, const LauncherRequest& request, int fd, LauncherReply& reply) {
  iovec iov{const_cast<LauncherRequest*>(&request), sizeof(request)};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control_bytes[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control_bytes;
    message.msg_controllen = sizeof(control_bytes);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  }
  ssize_t n;
  while ((n = sendmsg(control, &message, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof(request))) return false;
  while ((n = recv(control, &reply, sizeof(reply), 0)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(sizeof(reply));
}

// Closes `fd`, keeping errno.
void CloseKeepingErrno(int fd) {
  const int saved = errno;
  close(fd);
  errno = saved;
}

}  // namespace

StatusOr<std::unique_ptr<WorkerLauncher>> WorkerLauncher::Start(const BackendRegistry& registry,
                                                                const RunOptions& options) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return InternalError("could not start the worker launcher: socketpair: " +
                         std::string(std::strerror(errno)));
  }
  // The launcher stays in the run's process group; it leaves with the run.
  process::ForkOptions child;
  child.own_group = false;
  child.close_in_child = {sv[0]};
  const pid_t pid = process::Fork(child);
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    close(sv[0]);
    close(sv[1]);
    return InternalError("could not start the worker launcher: fork: " + why);
  }
  RunOptions kept = options;
  kept.launcher = nullptr;
  if (pid == 0) {
    kept.stop = nullptr;
    if (kept.stop_fd >= 0) close(kept.stop_fd);
    kept.stop_fd = -1;
    LauncherMain(sv[1], registry, kept);
  }
  close(sv[1]);
  return std::unique_ptr<WorkerLauncher>(new WorkerLauncher(pid, sv[0], std::move(kept)));
}

WorkerLauncher::~WorkerLauncher() {
  close(control_);  // The launcher reads the end and leaves; its workers end with it.
  [[maybe_unused]] const auto ended =
      process::EndGroup(pid_, /*kill_leader=*/false, process::kExitGraceSeconds);
}

pid_t WorkerLauncher::Spawn(int fd, Role role) {
  LauncherRequest request;
  request.op = static_cast<char>(role);
  LauncherReply reply;
  if (!Ask(control_, request, fd, reply)) {
    errno = EPIPE;
    return -1;
  }
  if (reply.value < 0) {
    errno = static_cast<int>(-reply.value);
    return -1;
  }
  return static_cast<pid_t>(reply.value);
}

bool WorkerLauncher::Reap(pid_t pid, int& status, std::int64_t& peak_rss_bytes) {
  LauncherRequest request;
  request.op = kReap;
  request.pid = pid;
  LauncherReply reply;
  if (!Ask(control_, request, -1, reply) || reply.value < 0) return false;
  status = reply.status;
  peak_rss_bytes = reply.peak_rss_bytes;
  return true;
}

pid_t Spawner::Spawn(int fd, WorkerLauncher::Role role, const std::vector<int>& close_in_child) {
  const pid_t pid = launched() ? options_.launcher->Spawn(fd, role)
                               : ForkRole(role, fd, close_in_child, catalog_, registry_, options_);
  CloseKeepingErrno(fd);
  return pid;
}

void Spawner::Reap(pid_t pid, int& status, std::int64_t& peak_rss_bytes) {
  status = 0;
  peak_rss_bytes = 0;
  if (launched()) {
    // A launcher that is gone took its workers with it (they end with it).
    if (!options_.launcher->Reap(pid, status, peak_rss_bytes)) status = SIGKILL;
    return;
  }
  if (const auto ended = process::EndGroup(pid, /*kill_leader=*/false, process::kExitGraceSeconds);
      ended.ok()) {
    status = ended->wait_status;
    peak_rss_bytes = ended->peak_rss_bytes;
  }
}

std::string DescribeWorkerDeath(int status) {
  if (WIFSIGNALED(status)) return process::DescribeWaitStatus(status);
  return "crashed: the worker " + process::DescribeWaitStatus(status);
}

namespace {

// What waiting for the describing child's next frame gave.
enum class Awaited { kFrame, kEnd, kTimeout, kStopped };

// The next frame on `fd` within `timeout_seconds` (into `frame`), or why none came: the end of the
// socket, the time, or a stop request (process::StopRequested, seen within 100 ms).
Awaited AwaitFrame(int fd, FrameReader& reader, double timeout_seconds,
                   std::optional<Frame>& frame) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  while (!(frame = reader.Pop())) {
    if (process::StopRequested()) return Awaited::kStopped;
    const double left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left <= 0) return Awaited::kTimeout;
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(std::ceil(std::min(left, 100.0)))) <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Awaited::kEnd;
    reader.Append(chunk, static_cast<std::size_t>(n));
  }
  return Awaited::kFrame;
}

// One describing child for names[first...]: fills their runs_on as it answers, one by one. Returns
// where the next child must start: past the name it hung on (that name's runs_on says so, and
// `undescribed` gets it), or names.size() when it answered all, died, or the run was stopped.
std::size_t DescribeFrom(const BackendRegistry& registry, const std::vector<std::string>& names,
                         std::size_t first, WorkerLauncher* launcher, double timeout_seconds,
                         std::vector<BackendInfo>& infos,
                         std::map<std::string, std::string>* undescribed) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return names.size();
  RunOptions options;
  options.launcher = launcher;
  Spawner spawner(nullptr, registry, options);
  const pid_t pid = spawner.Spawn(sv[1], WorkerLauncher::Role::kDescriber, {sv[0]});
  if (pid < 0) {
    close(sv[0]);
    return names.size();
  }
  std::size_t next = first;
  Awaited awaited = Awaited::kEnd;
  FrameReader reader;
  if (SendFrame(sv[0], kDescribe, EncodeStrings({names.begin() + first, names.end()}))) {
    std::optional<Frame> frame;
    while (next < names.size() &&
           (awaited = AwaitFrame(sv[0], reader, timeout_seconds, frame)) == Awaited::kFrame) {
      std::optional<std::vector<std::string>> described;
      if (frame->type == kDescribed) described = DecodeStrings(frame->payload);
      if (!described || described->size() != 1) break;
      infos[next++].runs_on = std::move(described->front());
    }
  }
  close(sv[0]);
  // Done, hung or stopped: what is left of it is killed (a plugin's process group with it).
  if (next == names.size() || awaited != Awaited::kEnd) process::KillGroup(pid);
  int status = 0;
  std::int64_t peak = 0;
  spawner.Reap(pid, status, peak);
  if (next == names.size()) return next;
  if (awaited == Awaited::kTimeout) {
    const std::string why =
        "did not describe itself within " + FormatDouble(timeout_seconds) + " s (--timeout)";
    infos[next].runs_on = "failed to start: " + why;
    if (undescribed != nullptr) (*undescribed)[names[next]] = why;
    return next + 1;
  }
  const std::string why = awaited == Awaited::kStopped ? "not described (the run was stopped)"
                                                       : DescribeWorkerDeath(status);
  for (std::size_t i = next; i < names.size(); ++i) infos[i].runs_on = "failed to start: " + why;
  return names.size();
}

}  // namespace

std::vector<BackendInfo> DescribeBackendsInChild(const BackendRegistry& registry,
                                                 const std::vector<std::string>& names,
                                                 WorkerLauncher* launcher, double timeout_seconds,
                                                 std::map<std::string, std::string>* undescribed) {
  std::vector<BackendInfo> infos;
  for (const std::string& name : names) {
    infos.push_back({name, registry.Description(name), "failed to start: not described"});
  }
  // A child that hangs on one backend is killed; a fresh one describes the backends after it.
  for (std::size_t next = 0; next < names.size();) {
    next = DescribeFrom(registry, names, next, launcher, timeout_seconds, infos, undescribed);
  }
  return infos;
}

}  // namespace mm::conformance
