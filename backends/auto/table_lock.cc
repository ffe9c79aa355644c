#include "table_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "mm/engine/io/names.h"

namespace mm::auto_first_use {
namespace {

using Clock = std::chrono::steady_clock;

// "NAME" or "NAME, stopped" for process `pid`: the file name of its argv[0] (mm's workers run
// as /proc/self/exe, whose comm is "exe"), else its comm; stopped from its /proc/PID/stat ("pid
// (comm) S ..."). Empty when it is gone.
std::string ProcessNote(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream stat(proc + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return {};
  const std::size_t open = line.find('(');
  const std::size_t close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::string argv0;
  std::getline(std::ifstream(proc + "/cmdline"), argv0, '\0');
  const std::size_t slash = argv0.rfind('/');
  std::string note =
      io::Printable(argv0.empty() ? line.substr(open + 1, close - open - 1)
                                  : argv0.substr(slash == std::string::npos ? 0 : slash + 1));
  const char state = close + 2 < line.size() ? line[close + 2] : '?';
  if (state == 'T' || state == 't') note += ", stopped";
  return note;
}

// The pid /proc/locks names as holding a FLOCK on the file of `st` (its lines: "1: FLOCK
// ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"; a waiter's line has "->" after the number); 0: none.
pid_t HolderFromProcLocks(const struct stat& st) {
  std::ifstream locks("/proc/locks");
  char device[64];
  std::snprintf(device, sizeof device, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  for (std::string line; std::getline(locks, line);) {
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string word; fields >> word;) words.push_back(word);
    if (words.size() < 6 || words[1] != "FLOCK" || words[5] != device) continue;
    const long pid = std::strtol(words[4].c_str(), nullptr, 10);
    if (pid > 0) return static_cast<pid_t>(pid);
  }
  return 0;
}

// The pid the holder wrote into the lock file; 0 when it holds none.
pid_t HolderFromFile(int fd) {
  char text[32] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  const long pid = std::strtol(text, nullptr, 10);
  return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

// Opens `path` without following a link and without blocking; INVALID... FAILED_PRECONDITION for a
// link or anything but a regular file; an fd of -1 when it cannot be created.
StatusOr<int> OpenLockFile(const std::string& path) {
  const int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0 && errno == ELOOP) {
    return FailedPreconditionError("the calibration table's lock file " + io::Printable(path) +
                                   " is a symbolic link; not followed");
  }
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return FailedPreconditionError("the calibration table's lock file " + io::Printable(path) +
                                   " is not a regular file");
  }
  return fd;
}

}  // namespace

std::string LockHolder(int fd) {
  struct stat st {};
  pid_t pid = fstat(fd, &st) == 0 ? HolderFromProcLocks(st) : 0;
  if (pid == 0) pid = HolderFromFile(fd);
  if (pid == 0) return "an unknown process";
  const std::string note = ProcessNote(pid);
  return "pid " + std::to_string(pid) + (note.empty() ? "" : " (" + note + ")");
}

StatusOr<TableLock> TableLock::Take(const std::string& table, const Limits& limits) {
  const std::string path = table + ".lock";
  MM_ASSIGN_OR_RETURN(const int fd, OpenLockFile(path));
  TableLock lock(fd);
  if (fd < 0) return lock;
  const Clock::time_point deadline = limits.Deadline();
  bool announced = false;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    if (errno != EWOULDBLOCK && errno != EINTR) return TableLock(-1);  // No lock: as unopenable.
    const std::string holder = LockHolder(fd);
    if (limits.Stopped()) {
      return Status(StatusCode::kCancelled,
                    "stopped while waiting for the calibration table's "
                    "lock " +
                        io::Printable(path) + " (held by " + holder + ")");
    }
    if (Clock::now() >= deadline) {
      return ResourceExhaustedError("the calibration table's lock " + io::Printable(path) +
                                    " was still held by " + holder + " after " +
                                    limits.SecondsText());
    }
    if (!announced) {
      std::cerr << "mm: auto: waiting for the calibration table's lock " << io::Printable(path)
                << ", held by " << holder << " (at most " << limits.SecondsText()
                << ", then the built-in defaults)\n";
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // The holder's pid, for a waiter where /proc/locks does not say (another pid namespace).
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t n = pwrite(fd, pid.data(), pid.size(), 0);
  }
  return lock;
}

TableLock::TableLock(TableLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

TableLock::~TableLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace mm::auto_first_use
