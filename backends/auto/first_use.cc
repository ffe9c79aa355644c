#include "first_use.h"

#include <poll.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "auto_table.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/process/process.h"

namespace mm::auto_first_use {
namespace {

using Clock = std::chrono::steady_clock;

// Reads the calibrator's stderr as it comes (a full pipe would stop it), keeping its end, until
// it closes it and ends, `deadline` passes or a stop is requested. True when it ended by itself.
bool Follow(process::Program& program, Clock::time_point deadline, const Limits& limits,
            std::string& err) {
  bool open = true;
  char buffer[4096];
  while (!limits.Stopped() && Clock::now() < deadline) {
    if (!open) {
      // Its stderr closed: it ends now, or lives on without it (waited for without reaping).
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(program.pid()), &info, WEXITED | WNOHANG | WNOWAIT) ==
              0 &&
          info.si_pid == program.pid()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    pollfd fd{program.stderr_fd(), POLLIN, 0};
    if (poll(&fd, 1, 100) <= 0) continue;
    const ssize_t n = read(program.stderr_fd(), buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) open = false;
    if (n > 0) err.append(buffer, static_cast<std::size_t>(n));
    if (err.size() > 8192) err.erase(0, err.size() - 4096);
  }
  return false;
}

}  // namespace

Status RunCalibrator(const std::string& calibrator, const std::string& table,
                     const Limits& limits) {
  const std::vector<std::string> argv = {calibrator, "--mm_calibrate=" + table, "--mm_set=quick"};
  const std::string command = calibrator + " --mm_calibrate=" + table + " --mm_set=quick";
  const Clock::time_point deadline = limits.Deadline();
  process::ProgramOptions options;
  options.environment = {{"MM_AUTO_CALIBRATE", "0"}};
  MM_ASSIGN_OR_RETURN(process::Program program, process::Program::Start(argv, options));
  const std::string named =
      "the calibrator (pid " + std::to_string(program.pid()) + ": " + io::Printable(command) + ")";
  std::string err;
  if (!Follow(program, deadline, limits, err)) {
    const bool stopped = limits.Stopped();
    program.Kill();  // Its whole process group: whatever it started ends with it.
    (void)program.Wait();
    if (stopped) return Status(StatusCode::kCancelled, "stopped " + named);
    return ResourceExhaustedError(named + " ran over " + limits.SecondsText() + " and was killed");
  }
  MM_ASSIGN_OR_RETURN(const process::Ended ended, program.Wait());
  if (WIFEXITED(ended.wait_status) && WEXITSTATUS(ended.wait_status) == 0) return OkStatus();
  while (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t last = err.rfind('\n');
  return InternalError(
      command + " " + process::DescribeWaitStatus(ended.wait_status) +
      (err.empty() ? ""
                   : ": " + io::Printable(err.substr(last == std::string::npos ? 0 : last + 1))));
}

namespace {

using auto_table::EnvOr;
using auto_table::ReadTable;

// `path` as reports show it: under $HOME from "~" (auto's own tables live in ~/.cache/mm), so no
// report carries the machine's home directory; else as io::ReportedPath names it.
std::string ShownTablePath(const std::string& path) {
  const std::filesystem::path home = EnvOr("HOME");
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  if (home.is_absolute() && normal.is_absolute()) {
    const std::filesystem::path rest = normal.lexically_relative(home.lexically_normal());
    if (!rest.empty() && *rest.begin() != ".." && rest != ".") return "~/" + rest.string();
  }
  return io::ReportedPath(path).string();
}

LoadedTable Used(AutoTable table, const std::string& path, const std::string& how) {
  const std::string load = table.LoadWarning();
  const std::string note = "calibration table " + ShownTablePath(path) + " (" +
                           std::to_string(table.cells.size()) + " cells, created " + table.created +
                           how + (load.empty() ? "" : "; " + load) + ")";
  return {std::move(table), note};
}

// The built-in defaults after a first use that could not make the table, saying why on stderr.
LoadedTable FirstUseFailed(const std::string& what, const Status& why) {
  std::cerr << "mm: auto: warning: " << what << ", using the built-in defaults: " << why.message()
            << "\n";
  return {std::nullopt, "built-in defaults (first-use calibration failed: " + why.message() + ")"};
}

// Makes the table at `path` (a quick calibration, one process at a time) after `why` it could not
// be used; the defaults when the calibration fails, or the lock or the calibrator's run pass their
// limits or are stopped, saying why on stderr.
LoadedTable CalibrateOnFirstUse(const AutoOptions& options, const AutoIdentity& identity,
                                const std::string& why) {
  const std::string& path = options.table_path;
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  auto lock = TableLock::Take(path, {options.lock_wait_seconds, options.stop});
  if (!lock.ok()) return FirstUseFailed("no calibration table", lock.status());
  // Another process may have made it while this one waited for the lock.
  if (auto table = ReadTable(path, identity); table.ok()) {
    return Used(std::move(table).value(), path, "");
  }
  std::cerr << "mm: auto: " << why << "; calibrating for this machine (quick set, under 30 s on 2 "
            << "cores, stopped after " << options.calibrator_seconds
            << " s; MM_AUTO_CALIBRATE=0 turns this off) into " << path << "\n";
  Status made = RunCalibrator(options.calibrator, path, {options.calibrator_seconds, options.stop});
  auto table = made.ok() ? ReadTable(path, identity) : StatusOr<AutoTable>(made);
  if (table.ok()) return Used(std::move(table).value(), path, ", on first use");
  return FirstUseFailed("calibration failed", table.status());
}

}  // namespace

StatusOr<LoadedTable> LoadTable(const AutoOptions& options, const AutoIdentity& identity) {
  const std::string& path = options.table_path;
  if (path.empty()) {
    return LoadedTable{std::nullopt,
                       "built-in defaults (no table location: MM_AUTO_TABLE, XDG_CACHE_HOME "
                       "and HOME are unset)"};
  }
  auto table = ReadTable(path, identity);
  if (table.ok()) return Used(std::move(table).value(), path, "");
  const bool missing = table.status().code() == StatusCode::kNotFound;
  if (options.calibrate) {
    return CalibrateOnFirstUse(
        options, identity,
        missing ? "no calibration table yet"
                : "warning: calibration table refused (" + table.status().message() + ")");
  }
  if (missing) {
    return LoadedTable{std::nullopt, "built-in defaults (no calibration table at " + path +
                                         "; make one with mm-bench --mm_calibrate=" + path + ")"};
  }
  return LoadedTable{std::nullopt, "built-in defaults (calibration table refused: " +
                                       table.status().message() + ")"};
}

}  // namespace mm::auto_first_use
