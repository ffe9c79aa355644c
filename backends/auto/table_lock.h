// The calibration table's lock, and what bounds each wait of auto's first use (Limits): a holder
// of the lock that never lets go (a first use stopped with Ctrl-Z) costs a later first use its
// limit and not for ever.
#ifndef MM_BACKENDS_AUTO_TABLE_LOCK_H_
#define MM_BACKENDS_AUTO_TABLE_LOCK_H_

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sstream>
#include <string>

#include "mm/engine/status.h"

namespace mm::auto_first_use {

// What bounds a wait: its limit and the stop request (a nonzero value; null: none). Each wait
// looks at the stop request at least every 0.1 s.
struct Limits {
  double seconds = 0;
  const volatile std::sig_atomic_t* stop = nullptr;

  // Whether the stop request is set.
  bool Stopped() const { return stop != nullptr && *stop != 0; }
  // When a wait that starts now ends: `seconds` from now (none below 0).
  std::chrono::steady_clock::time_point Deadline() const {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(std::max(0.0, seconds)));
  }
  // "600 s".
  std::string SecondsText() const {
    std::ostringstream text;
    text << seconds << " s";
    return text.str();
  }
};

// An exclusive flock on `table`.lock while alive.
class TableLock {
 public:
  // Opens `table`.lock (created 0644, O_NOFOLLOW: a symbolic link there is not followed) and takes
  // the lock, trying without blocking every 0.05 s. While another process holds it, says once on
  // stderr what it waits for ("waiting for the calibration table's lock ..., held by pid N
  // (mm-fuzz, stopped)", the holder from /proc/locks, else the pid the holder wrote into the file),
  // and how long it will. Once held, writes this process's pid into the file.
  // FAILED_PRECONDITION when the path is a symbolic link or not a regular file; DEADLINE_EXCEEDED
  // after `limits.seconds`, naming the holder; CANCELLED on a stop request. A lock file that
  // cannot be created (a read-only cache folder) gives a TableLock without a lock: two first uses
  // may then both calibrate, each writing the table whole, and either's is used.
  static StatusOr<TableLock> Take(const std::string& table, const Limits& limits);

  TableLock(TableLock&& other) noexcept;
  TableLock& operator=(TableLock&&) = delete;
  ~TableLock();

 private:
  explicit TableLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Who holds the flock on the open file `fd` refers to: "pid N (COMM)" or "pid N (COMM, stopped)"
// from /proc/locks and /proc/N, else "pid N" as the holder wrote it into the file, else "an
// unknown process".
std::string LockHolder(int fd);

}  // namespace mm::auto_first_use

#endif  // MM_BACKENDS_AUTO_TABLE_LOCK_H_
