// Program: a program executed in a child, with its standard streams on a socket and a pipe, its
// environment, and the children of this process that are none of them (process.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "mm/engine/process/process.h"
#include "process_internal.h"

extern char** environ;

namespace mm::process {
namespace {

using internal::ListedChildren;

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
  const std::optional<std::vector<pid_t>> children = ListedChildren();
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

}  // namespace mm::process
