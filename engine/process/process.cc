#include "mm/engine/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace mm::process {

std::string SignalName(int signal_number) {
  const char* abbrev = sigabbrev_np(signal_number);
  return abbrev != nullptr ? "SIG" + std::string(abbrev)
                           : "signal " + std::to_string(signal_number);
}

std::string SignalText(int signal_number) {
  return SignalName(signal_number) + " (signal " + std::to_string(signal_number) + ")";
}

std::string DescribeWaitStatus(int wait_status) { return DescribeWaitStatus(wait_status, ""); }

std::string DescribeWaitStatus(int wait_status, std::string_view where) {
  const std::string at = where.empty() ? "" : " " + std::string(where);
  if (WIFSIGNALED(wait_status)) return "crashed" + at + ": " + SignalText(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status)) + at;
  }
  return "ended (wait status " + std::to_string(wait_status) + ")" + at;
}

namespace {

// Field `index` (0: size, 1: resident, 5: data) of /proc/PID/statm, in bytes; 0 when unreadable.
std::int64_t StatmBytes(pid_t pid, int index) {
  if (pid < 0) return 0;
  const std::string path = pid > 0 ? "/proc/" + std::to_string(pid) + "/statm" : "/proc/self/statm";
  std::ifstream statm(path);
  long long pages = 0;
  for (int i = 0; i <= index; ++i) {
    if (!(statm >> pages)) return 0;
  }
  return pages * sysconf(_SC_PAGESIZE);
}

}  // namespace

std::int64_t ResidentBytes(pid_t pid) { return StatmBytes(pid, 1); }

std::int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::int64_t{usage.ru_maxrss} * 1024;
}

std::int64_t MappedDataBytes() { return StatmBytes(0, 5); }

bool DieWithParent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have ended between fork() and prctl(): no signal would come then.
  return getppid() == parent;
}

pid_t Fork(const ForkOptions& options) {
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    for (const int fd : options.close_in_child) close(fd);
    if (options.own_group) setpgid(0, 0);
    if (options.die_with_parent && !DieWithParent(parent)) _exit(0);
    return 0;
  }
  // Both sides set the group: whichever runs first, the group exists when either goes on.
  if (pid > 0 && options.own_group) setpgid(pid, pid);
  return pid;
}

StatusOr<Ended> Reap(pid_t pid) {
  int status = 0;
  rusage usage{};
  pid_t got;
  while ((got = wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) {
  }
  if (got < 0) {
    return NotFoundError("process " + std::to_string(pid) +
                         " cannot be waited for: " + std::strerror(errno));
  }
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  Ended ended;
  ended.wait_status = status;
  ended.peak_rss_bytes = std::int64_t{usage.ru_maxrss} * 1024;
  ended.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return ended;
}

void KillGroup(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

StatusOr<Ended> EndGroup(pid_t pid, bool kill_leader) {
  if (pid <= 0) return NotFoundError("no process " + std::to_string(pid));
  if (!kill_leader) {
    siginfo_t info{};
    // WNOWAIT: the leader stays a zombie, so its id still names its group below.
    while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
  }
  KillGroup(pid);
  return Reap(pid);
}

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
  const bool ended = ReadUntilEnd(timeout_seconds, out, complete);
  if (!ended) Kill();
  StatusOr<Ended> reaped = Wait();
  if (reaped.ok()) reaped->timed_out = !ended;
  return reaped;
}

void Child::Kill() { KillGroup(pid_); }

StatusOr<Ended> Child::Wait() {
  if (pid_ <= 0) return FailedPreconditionError("the child was already waited for");
  // Closed first: a child blocked writing to a full pipe then gets EPIPE instead of waiting.
  if (read_fd_ >= 0) close(std::exchange(read_fd_, -1));
  return EndGroup(std::exchange(pid_, -1), /*kill_leader=*/false);
}

namespace {

// The pids of the Programs started and not yet reaped.
std::mutex g_programs_mutex;
std::set<pid_t>& Programs() {
  static std::set<pid_t> programs;
  return programs;
}

void Track(pid_t pid, bool running) {
  std::lock_guard lock(g_programs_mutex);
  if (running) {
    Programs().insert(pid);
  } else {
    Programs().erase(pid);
  }
}

// This process's children, from every thread's /proc children list; nullopt where the kernel
// does not list them.
std::optional<std::vector<pid_t>> Children() {
  std::error_code ec;
  std::vector<pid_t> children;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream list(task.path() / "children");
    if (!list) return std::nullopt;
    pid_t pid;
    while (list >> pid) children.push_back(pid);
  }
  if (ec) return std::nullopt;
  return children;
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(std::exchange(fd, -1));
}

// In the forked child of Program::Start, before exec: async-signal-safe calls only.
[[noreturn]] void ExecProgram(char* const* argv, int io, int err, std::int64_t data_limit) {
  if (dup2(io, 0) < 0 || dup2(io, 1) < 0 || dup2(err, 2) < 0) _exit(127);
  // Nothing of mm's (worker sockets, other programs' ends) leaks into the program.
  close_range(3, ~0U, 0);
  if (data_limit > 0) {
    const rlimit limit{static_cast<rlim_t>(data_limit), static_cast<rlim_t>(data_limit)};
    setrlimit(RLIMIT_DATA, &limit);
  }
  signal(SIGPIPE, SIG_DFL);
  execvp(argv[0], argv);
  const char* why = strerrordesc_np(errno);  // Unlike strerror, safe here.
  const char* parts[] = {"mm: cannot execute '", argv[0], "': ", why, "\n"};
  for (const char* part : parts) {
    [[maybe_unused]] const ssize_t n = write(2, part, std::strlen(part));
  }
  _exit(127);
}

}  // namespace

bool HasChildrenBesidesPrograms() {
  const std::optional<std::vector<pid_t>> children = Children();
  bool any = false;
  int status = 0;
  if (!children) {
    // No list: only a process without Programs can tell, by waiting for any child.
    {
      std::lock_guard lock(g_programs_mutex);
      if (!Programs().empty()) return false;
    }
    pid_t got;
    while ((got = waitpid(-1, &status, WNOHANG)) > 0) any = true;
    return any || got == 0;
  }
  std::lock_guard lock(g_programs_mutex);
  for (const pid_t pid : *children) {
    if (Programs().count(pid) > 0) continue;
    any = true;
    waitpid(pid, &status, WNOHANG);
  }
  return any;
}

StatusOr<Program> Program::Start(const std::vector<std::string>& argv,
                                 const ProgramOptions& options) {
  if (argv.empty()) return InvalidArgumentError("no program to start (empty command)");
  // Built before fork: the child must not allocate.
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int io[2], err[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, io) != 0) {
    return InternalError(std::string("cannot start '") + argv[0] +
                         "': socketpair: " + std::strerror(errno));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close(io[0]);
    close(io[1]);
    return InternalError("cannot start '" + argv[0] + "': pipe: " + why);
  }
  ForkOptions fork_options = options.fork;
  fork_options.close_in_child.clear();
  const pid_t pid = Fork(fork_options);
  if (pid == 0) ExecProgram(args.data(), io[1], err[1], options.data_limit_bytes);
  const std::string why = pid < 0 ? std::strerror(errno) : "";
  close(io[1]);
  close(err[1]);
  if (pid < 0) {
    close(io[0]);
    close(err[0]);
    return InternalError("cannot start '" + argv[0] + "': fork: " + why);
  }
  Track(pid, true);
  fcntl(io[0], F_SETFL, fcntl(io[0], F_GETFL) | O_NONBLOCK);
  fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
  return Program(pid, io[0], err[0]);
}

Program::Program(Program&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      io_fd_(std::exchange(other.io_fd_, -1)),
      stderr_fd_(std::exchange(other.stderr_fd_, -1)) {}

Program::~Program() {
  CloseFds();
  if (pid_ > 0) {
    KillGroup(pid_);
    [[maybe_unused]] auto ended = Reap(pid_);
    Track(pid_, false);
  }
}

void Program::CloseFds() {
  CloseIfOpen(io_fd_);
  CloseIfOpen(stderr_fd_);
}

void Program::Kill() { KillGroup(pid_); }

StatusOr<Ended> Program::Wait() {
  if (pid_ <= 0) return FailedPreconditionError("the program was already waited for");
  CloseFds();
  const pid_t pid = std::exchange(pid_, -1);
  auto ended = EndGroup(pid, /*kill_leader=*/false);
  Track(pid, false);
  return ended;
}

}  // namespace mm::process
