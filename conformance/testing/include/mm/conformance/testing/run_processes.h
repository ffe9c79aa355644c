// mm's tools run as processes of their own, and what of a run is still running afterwards: every
// process whose environment holds a test's mark, which all that a run starts inherits (forked or
// executed), so that nothing is found by a guess at timing or a name.
#ifndef MM_CONFORMANCE_TESTING_RUN_PROCESSES_H_
#define MM_CONFORMANCE_TESTING_RUN_PROCESSES_H_

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace mm::testing {

// A process started with posix_spawn, its stdout into a pipe (stderr into a second one).
struct Spawned {
  pid_t pid = -1;
  int out = -1;  // The read end of its stdout.
  int err = -1;  // The read end of its stderr.
};

// Starts `argv` (argv[0] a path) with this process's environment; pid -1 when it cannot.
inline Spawned SpawnProgram(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe(out) != 0) return {};
  if (pipe(err) != 0) {
    close(out[0]);
    close(out[1]);
    return {};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, err[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Spawned spawned;
  if (posix_spawn(&spawned.pid, args[0], &actions, nullptr, args.data(), environ) != 0) {
    spawned.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  spawned.out = out[0];
  spawned.err = err[0];
  return spawned;
}

// Reads `fd` until its end (or up to one line with `line`), without the newline.
inline std::string ReadFrom(int fd, bool line = false) {
  std::string text;
  char c;
  while (read(fd, &c, 1) == 1) {
    if (line && c == '\n') break;
    text += c;
  }
  return text;
}

// How a spawned process ended, and what it printed.
struct Finished {
  std::optional<int> wait_status;  // None: it was still running after the time given (killed).
  std::string out, err;
};

// Reads what `spawned` prints until it ends, for at most `seconds` (then it is killed), reaps it
// and closes its pipes. Never waits for the pipes' end: a process it left may hold them.
inline Finished FinishSpawned(const Spawned& spawned, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  Finished finished;
  std::string* texts[] = {&finished.out, &finished.err};
  const int fds[] = {spawned.out, spawned.err};
  auto drain = [&](int timeout_ms) {
    pollfd ready[] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (poll(ready, 2, timeout_ms) <= 0) return;
    for (int i = 0; i < 2; ++i) {
      char chunk[4096];
      if ((ready[i].revents & POLLIN) == 0) continue;
      const ssize_t n = read(fds[i], chunk, sizeof(chunk));
      if (n > 0) texts[i]->append(chunk, static_cast<std::size_t>(n));
    }
  };
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    drain(20);
    if (waitpid(spawned.pid, &status, WNOHANG) == spawned.pid) {
      finished.wait_status = status;
      break;
    }
  }
  if (!finished.wait_status) {
    kill(spawned.pid, SIGKILL);
    waitpid(spawned.pid, &status, 0);
  }
  for (int i = 0; i < 20; ++i) drain(0);  // What it wrote last.
  close(spawned.out);
  close(spawned.err);
  return finished;
}

// A mark ("MM_TEST_RUN_MARK=<unique>") put in this process's environment while the object lives:
// the processes a test starts then (and all they start) carry it.
class RunMark {
 public:
  RunMark() {
    static std::atomic<int> counter{0};
    value_ = std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    setenv(kName, value_.c_str(), 1);
  }
  ~RunMark() {
    unsetenv(kName);
    for (const pid_t pid : Marked()) kill(pid, SIGKILL);  // Left by a failed test.
  }
  RunMark(const RunMark&) = delete;
  RunMark& operator=(const RunMark&) = delete;

  // The processes, running or stopped (not zombies, whose environment reads empty), that carry the
  // mark, this one excluded.
  std::vector<pid_t> Marked() const {
    const std::string entry = std::string(kName) + "=" + value_;
    std::vector<pid_t> marked;
    std::error_code ec;
    for (const auto& dir : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = dir.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = std::stoi(name);
      if (pid == getpid()) continue;
      std::ifstream environment(dir.path() / "environ", std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(environment)),
                             std::istreambuf_iterator<char>());
      std::size_t at = 0;
      while (at < text.size()) {
        const std::size_t end = std::min(text.find('\0', at), text.size());
        if (text.compare(at, end - at, entry) == 0) {
          marked.push_back(pid);
          break;
        }
        at = end + 1;
      }
    }
    return marked;
  }

  // Marked(), once empty or after `seconds` (a process killed a moment ago may still be ending).
  std::vector<pid_t> Remaining(double seconds = 2) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::vector<pid_t> left = Marked();
    while (!left.empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      left = Marked();
    }
    return left;
  }

 private:
  static constexpr const char* kName = "MM_TEST_RUN_MARK";
  std::string value_;
};

}  // namespace mm::testing

#endif  // MM_CONFORMANCE_TESTING_RUN_PROCESSES_H_
