#include "mm/engine/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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
#include <sstream>
#include <thread>
#include <utility>

extern char** environ;

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

namespace {

using Clock = std::chrono::steady_clock;

const volatile std::sig_atomic_t* g_stop_request = nullptr;

// The children Fork() started in process `owner` and Reap() has not reaped yet: never strays
// (EndStrays). A forked child, another owner, starts with none (without touching the set before
// an exec, where only async-signal-safe calls are allowed).
struct StartedChildren {
  pid_t owner = -1;
  std::set<pid_t> pids;
};
std::mutex g_started_mutex;
StartedChildren& Started() {
  static StartedChildren started;
  if (started.owner != getpid()) {
    started.pids.clear();
    started.owner = getpid();
  }
  return started;
}

void TrackStarted(pid_t pid, bool running) {
  std::lock_guard lock(g_started_mutex);
  if (running) {
    Started().pids.insert(pid);
  } else {
    Started().pids.erase(pid);
  }
}

}  // namespace

void SetStopRequest(const volatile std::sig_atomic_t* flag) { g_stop_request = flag; }

bool StopRequested() { return g_stop_request != nullptr && *g_stop_request != 0; }

bool WaitForExit(pid_t pid, double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  // A pidfd is readable once the process ended; without one (an old kernel), the wait polls.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  bool ended = false;
  while (true) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
      ended = errno != EINTR;  // Not a child (any more): nothing to wait for.
    } else {
      ended = info.si_pid == pid;
    }
    const double left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (ended || left <= 0 || StopRequested()) break;
    // Slices of 100 ms at most: a stop request is seen within them.
    const int slice = static_cast<int>(std::ceil(std::min(left, 100.0)));
    if (pidfd >= 0) {
      pollfd fd{pidfd, POLLIN, 0};
      poll(&fd, 1, slice);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(slice, 10)));
    }
  }
  if (pidfd >= 0) close(pidfd);
  return ended;
}

pid_t Fork(const ForkOptions& options) {
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // The stop is the parent's to handle; the children it started are its own.
    g_stop_request = nullptr;
    for (const int fd : options.close_in_child) close(fd);
    if (options.own_group) setpgid(0, 0);
    if (options.die_with_parent && !DieWithParent(parent)) _exit(0);
    return 0;
  }
  // Both sides set the group: whichever runs first, the group exists when either goes on.
  if (pid > 0 && options.own_group) setpgid(pid, pid);
  if (pid > 0) TrackStarted(pid, true);
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
  TrackStarted(pid, false);
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

StatusOr<Ended> EndGroup(pid_t pid, bool kill_leader, double timeout_seconds) {
  if (pid <= 0) return NotFoundError("no process " + std::to_string(pid));
  // Unreaped, the leader's id still names its group below.
  const bool ended = kill_leader || WaitForExit(pid, timeout_seconds);
  KillGroup(pid);
  StatusOr<Ended> reaped = Reap(pid);
  if (reaped.ok()) reaped->timed_out = !ended;
  return reaped;
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

// This process's environment with `changes` applied (ProgramOptions::environment), as
// "NAME=value" strings; INVALID_ARGUMENT for a malformed name or value.
StatusOr<std::vector<std::string>> ProgramEnvironment(
    const std::map<std::string, std::optional<std::string>>& changes) {
  for (const auto& [name, value] : changes) {
    if (name.empty() || name.find_first_of(std::string_view("=\0", 2)) != std::string::npos) {
      return InvalidArgumentError("a program's environment variable is named \"" +
                                  name.substr(0, name.find('\0')) +
                                  "\": a name is not empty and has no '=' or NUL");
    }
    if (value && value->find('\0') != std::string::npos) {
      return InvalidArgumentError("the value of a program's environment variable " + name +
                                  " has a NUL");
    }
  }
  std::vector<std::string> environment;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view text(*variable);
    if (changes.count(std::string(text.substr(0, text.find('=')))) == 0) {
      environment.emplace_back(text);
    }
  }
  for (const auto& [name, value] : changes) {
    if (value) environment.push_back(name + "=" + *value);
  }
  return environment;
}

// In the forked child of Program::Start, before exec: async-signal-safe calls only.
[[noreturn]] void ExecProgram(char* const* argv, char* const* envp, int io, int err,
                              const ProgramOptions& options) {
  if (dup2(io, 0) < 0 || dup2(io, 1) < 0 || dup2(err, 2) < 0) _exit(127);
  // Nothing of mm's (worker sockets, other programs' ends) leaks into the program.
  close_range(3, ~0U, 0);
  if (const std::int64_t data_limit = options.data_limit_bytes; data_limit > 0) {
    const rlimit limit{static_cast<rlim_t>(data_limit), static_cast<rlim_t>(data_limit)};
    setrlimit(RLIMIT_DATA, &limit);
  }
  // An exec keeps what is ignored and blocked: a worker ignores SIGINT and SIGTERM, and its
  // program must not (only SIGKILL would end it then). Handlers are reset by the exec itself.
  if (options.default_signals) {
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      signal(signal_number, SIG_DFL);  // SIGKILL and SIGSTOP fail, harmlessly.
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
  }
  execvpe(argv[0], argv, envp);
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
  MM_ASSIGN_OR_RETURN(const std::vector<std::string> environment,
                      ProgramEnvironment(options.environment));
  std::vector<char*> envp;
  for (const std::string& variable : environment)
    envp.push_back(const_cast<char*>(variable.c_str()));
  envp.push_back(nullptr);
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
  if (pid == 0) ExecProgram(args.data(), envp.data(), io[1], err[1], options);
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

StatusOr<Ended> Program::Wait(double timeout_seconds) {
  if (pid_ <= 0) return FailedPreconditionError("the program was already waited for");
  CloseFds();
  const pid_t pid = std::exchange(pid_, -1);
  auto ended = EndGroup(pid, /*kill_leader=*/false, timeout_seconds);
  Track(pid, false);
  return ended;
}

namespace {

// The Subreaper's state: how many are alive, whether the outermost made this process a
// subreaper, and the children this process had then.
std::mutex g_subreaper_mutex;
int g_subreapers = 0;
bool g_subreaper_active = false;
int g_subreaper_previous = 0;
std::set<pid_t> g_children_before;

// This process's children: from /proc's children lists, else from every process's parent.
std::vector<pid_t> AllChildren() {
  if (std::optional<std::vector<pid_t>> listed = Children()) return *listed;
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t end_of_name = line.rfind(')');
    if (end_of_name == std::string::npos || end_of_name + 2 >= line.size()) continue;
    std::istringstream fields(line.substr(end_of_name + 2));
    char state = 0;
    pid_t parent = 0;
    if (fields >> state >> parent && parent == getpid()) children.push_back(std::stoi(name));
  }
  return children;
}

// The children that are strays now (EndStrays), and the groups that must be spared.
std::vector<pid_t> Strays(std::set<pid_t>& spared_groups) {
  std::set<pid_t> started;
  {
    std::lock_guard lock(g_started_mutex);
    started = Started().pids;
  }
  spared_groups = {getpgrp()};
  for (const pid_t pid : started) spared_groups.insert(getpgid(pid) > 0 ? getpgid(pid) : pid);
  for (const pid_t pid : g_children_before) {
    if (getpgid(pid) > 0) spared_groups.insert(getpgid(pid));
  }
  std::vector<pid_t> strays;
  for (const pid_t pid : AllChildren()) {
    if (started.count(pid) == 0 && g_children_before.count(pid) == 0) strays.push_back(pid);
  }
  return strays;
}

}  // namespace

Subreaper::Subreaper() {
  std::lock_guard lock(g_subreaper_mutex);
  if (g_subreapers++ > 0) return;  // Inside another: that one's setting and children hold.
  prctl(PR_GET_CHILD_SUBREAPER, &g_subreaper_previous);
  const std::vector<pid_t> children = AllChildren();
  g_children_before = {children.begin(), children.end()};
  g_subreaper_active = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
}

Subreaper::~Subreaper() {
  EndStrays();
  std::lock_guard lock(g_subreaper_mutex);
  if (--g_subreapers > 0) return;
  if (g_subreaper_active) prctl(PR_SET_CHILD_SUBREAPER, g_subreaper_previous);
  g_subreaper_active = false;
  g_children_before.clear();
}

int EndStrays(double timeout_seconds) {
  std::lock_guard lock(g_subreaper_mutex);
  if (!g_subreaper_active) return 0;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  int ended = 0;
  std::set<pid_t> spared;
  for (std::vector<pid_t> strays = Strays(spared); !strays.empty(); strays = Strays(spared)) {
    for (const pid_t pid : strays) {
      // Its group too: what it left there (a driver's helper) would be adopted next, or never.
      const pid_t group = getpgid(pid);
      if (group > 0 && spared.count(group) == 0) kill(-group, SIGKILL);
      kill(pid, SIGKILL);
    }
    // Reaped, their own children are adopted here in turn: the next round ends them.
    for (const pid_t pid : strays) {
      int status = 0;
      while (waitpid(pid, &status, WNOHANG) == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      ++ended;
    }
    if (Clock::now() >= deadline) break;
  }
  return ended;
}

}  // namespace mm::process
