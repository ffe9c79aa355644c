// The calibration's parent: a child per thread count (calibrate_part.cc), its output passed on,
// its cells gathered into the table, which is written whole; interrupted, it passes the signal on
// and leaves no file behind (calibrate.h).
#include "mm/bench/calibrate.h"

#include <omp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include "calibrate_cell.h"
#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/backend_list.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/machine.h"
#include "mm/engine/process/process.h"

namespace mm::bench {

using internal::Clock;
using internal::Now;
using internal::Seconds;
using internal::WriteWhole;

namespace {

// The signal that interrupted a calibration (0: none) and the child measuring a part (0: none).
// PassOn (a signal handler) sets the first and reads the second, RunPart the other way round, so
// that a signal arriving while the child starts still reaches it.
std::atomic<int> g_signal{0};
std::atomic<pid_t> g_child{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "read and written in a signal handler");

void PassOn(int signal) {
  g_signal = signal;
  const pid_t child = g_child;
  if (child > 0) kill(child, signal);
}

// While alive, SIGINT, SIGTERM and SIGHUP go to PassOn (one that is ignored, as SIGHUP under
// nohup, stays ignored); the earlier handlers come back at its end.
class InterruptGuard {
 public:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  InterruptGuard() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) {
      struct sigaction action {};
      action.sa_handler = PassOn;
      sigemptyset(&action.sa_mask);
      sigaction(kSignals[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~InterruptGuard() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) {
      sigaction(kSignals[i], &previous_[i], nullptr);
    }
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction previous_[std::size(kSignals)]{};
};

// Removes the temporary files WriteFileAtomically leaves when a process is killed while writing
// `path` (".NAME.XXXXXX" beside it).
void RemoveTemporariesOf(const std::filesystem::path& path) {
  const std::string prefix = "." + path.filename().string() + ".";
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == prefix.size() + 6 && name.starts_with(prefix)) {
      std::filesystem::remove(entry.path(), ignored);
    }
  }
}

// Passes what `program` writes on its stdout and stderr on to this process's, as it comes, until
// it has closed both (it ended).
void PassOnOutput(const process::Program& program) {
  pollfd fds[] = {{program.io_fd(), POLLIN, 0}, {program.stderr_fd(), POLLIN, 0}};
  const int to[] = {STDOUT_FILENO, STDERR_FILENO};
  char buffer[4096];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (poll(fds, 2, 100) <= 0) continue;  // EINTR: a signal this process passed on.
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) fds[i].fd = -1;
      for (ssize_t written = 0, w = 0; written < n; written += w) {
        w = write(to[i], buffer + written, static_cast<std::size_t>(n - written));
        if (w < 0 && errno != EINTR) break;
        w = std::max<ssize_t>(w, 0);
      }
    }
  }
}

// Runs this executable again with OMP_NUM_THREADS=threads to measure that thread count's cells
// (libraries read their thread count when they start, so it cannot change in-process), passing
// its output on. Returns its wait status, or nullopt when it cannot be started; sets
// `cpu_seconds` to the CPU time it used.
std::optional<int> RunPart(const std::string& self, int threads, const std::string& out,
                           ShapeSet set, double& cpu_seconds) {
  process::ProgramOptions options;
  options.environment = {{"OMP_NUM_THREADS", std::to_string(threads)}};
  // Not a group of its own: a Ctrl-C at the terminal reaches the part as before. What this
  // process ignores (SIGHUP under nohup) the part ignores too.
  options.fork.own_group = false;
  options.default_signals = false;
  StatusOr<process::Program> part =
      process::Program::Start({self, "--mm_calibrate_part=" + out,
                               set == ShapeSet::kQuick ? "--mm_set=quick" : "--mm_set=full"},
                              options);
  if (!part.ok()) return std::nullopt;
  g_child = part->pid();
  if (const int signal = g_signal; signal != 0) kill(part->pid(), signal);  // Came before g_child.
  PassOnOutput(*part);
  const StatusOr<process::Ended> ended = part->Wait();
  g_child = 0;
  if (!ended.ok()) return std::nullopt;
  cpu_seconds = ended->cpu_seconds;
  return ended->wait_status;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

// The part file of `path` at `threads` (the child's output).
std::string PartOf(const std::string& path, int threads) {
  return path + ".part" + std::to_string(threads);
}

// Removes every file the calibration of `path` writes but the table (its parts at
// `thread_counts` and their temporaries): none is left behind, whatever the ending.
void RemoveParts(const std::string& path, const std::vector<int>& thread_counts) {
  std::error_code ignored;
  for (int threads : thread_counts) {
    const std::string part = PartOf(path, threads);
    std::filesystem::remove(part, ignored);
    RemoveTemporariesOf(part);
  }
}

// Ends a calibration interrupted by g_signal: every file it wrote removed, said on stderr;
// returns its exit code, 128 + the signal.
int Interrupted(const std::string& path, const std::vector<int>& thread_counts) {
  RemoveParts(path, thread_counts);
  RemoveTemporariesOf(path);
  std::cerr << "mm-bench: calibration interrupted by " << process::SignalName(g_signal)
            << "; no table written to " << path << "\n";
  return 128 + g_signal;
}

// Creates the folder of `path` when it has one that is missing; false (saying why) if it cannot.
bool MakeFolderOf(const std::string& path) {
  const std::filesystem::path target(path);
  if (std::error_code error; target.has_parent_path() &&
                             !std::filesystem::is_directory(target.parent_path()) &&
                             !std::filesystem::create_directories(target.parent_path(), error)) {
    std::cerr << "mm-bench: cannot create the folder of " << path << ": " << error.message()
              << "\n";
    return false;
  }
  return true;
}

// Adds to `table` the cells of the part at `threads`, which ended with `status` (nullopt: not
// started), and removes the part files; false (saying why on stderr) when the part failed or its
// cells are not a table of `table`'s identity. The part is parsed as such a table, so a cell the
// parser would refuse is found here rather than when auto loads the file.
bool AddPart(const std::string& path, int threads, std::optional<int> status,
             const std::vector<int>& thread_counts, AutoTable& table) {
  const std::string part = PartOf(path, threads);
  auto text = io::ReadInputFile(part, io::kCalibrationTableFile);
  if (!status.has_value() || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0 || !text.ok()) {
    std::cerr << "mm-bench: calibration at " << threads << " thread(s) failed ("
              << (status.has_value() ? process::DescribeWaitStatus(*status) : "not started")
              << (text.ok() ? "" : "; " + text.status().message()) << ")\n";
    RemoveParts(path, thread_counts);
    return false;
  }
  RemoveParts(path, thread_counts);
  auto cells = io::ParseJson(*text, io::InputName(part, io::kCalibrationTableFile));
  if (!cells.ok()) {
    std::cerr << "mm-bench: " << cells.status().message() << "\n";
    return false;
  }
  nlohmann::json wrapped = table.ToJson();
  wrapped["cells"] = std::move(cells).value();
  auto parsed = ParseAutoTable(wrapped.dump(), part, table.identity);
  if (!parsed.ok()) {
    std::cerr << "mm-bench: " << parsed.status().message() << "\n";
    return false;
  }
  for (AutoCell& cell : parsed->cells) table.cells.push_back(std::move(cell));
  return true;
}

// Writes `table` to `path`, saying so on stderr with the calibration's time since `start`, and
// warning when the machine was loaded while it measured; false (saying why) if it cannot.
bool WriteTable(const AutoTable& table, const std::string& path, ShapeSet set,
                Clock::time_point start) {
  if (!WriteWhole(path, table.ToJson().dump(1) + "\n")) {
    std::cerr << "mm-bench: cannot write " << path << "\n";
    return false;
  }
  std::cerr << "mm-bench: wrote " << table.cells.size() << " cells to " << path << " in "
            << Seconds(Clock::now() - start) << " s\n";
  if (const std::string load = table.LoadWarning(); !load.empty()) {
    std::cerr << "mm-bench: warning: the table was " << load
              << "; its rankings may be off there (make it again on a quiet machine: mm-bench "
              << "--mm_calibrate=" << path << (set == ShapeSet::kQuick ? " --mm_set=quick" : "")
              << ")\n";
  }
  return true;
}

}  // namespace

int Calibrate(const std::string& path, ShapeSet set) {
  if (!internal::LoadSampleSeconds()) return 1;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  // The thread count auto is given here (OMP_NUM_THREADS, else every core), part of the table's
  // identity.
  const int all = std::max(1, omp_get_max_threads());
  std::vector<int> thread_counts = {1};
  if (all > 1) thread_counts.push_back(all);
  AutoTable table;
  table.identity = CurrentAutoIdentity(AutoCandidateBackends());
  table.created = UtcNow();
  const auto start = Clock::now();
  if (!MakeFolderOf(path)) return 1;
  const InterruptGuard guard;
  for (int threads : thread_counts) {
    if (g_signal != 0) return Interrupted(path, thread_counts);
    const LoadMeter meter;
    double part_cpu_seconds = 0;
    const std::optional<int> status =
        RunPart(self, threads, PartOf(path, threads), set, part_cpu_seconds);
    if (std::optional<CalibrationLoad> load = meter.Finish(threads, part_cpu_seconds)) {
      table.load.push_back(*load);
    }
    if (g_signal != 0) return Interrupted(path, thread_counts);
    if (!AddPart(path, threads, status, thread_counts, table)) return 1;
  }
  return WriteTable(table, path, set, start) ? 0 : 1;
}

LoadMeter::LoadMeter()
    : start_(Clock::now()), machine_(ReadMachineCpuTimes()), own_cpu_seconds_(Now(true)) {}

std::optional<CalibrationLoad> LoadMeter::Finish(int threads, double part_cpu_seconds) const {
  const std::optional<MachineCpuTimes> now = ReadMachineCpuTimes();
  const double wall = Seconds(Clock::now() - start_);
  if (!machine_ || !now || !(wall > 0)) return std::nullopt;
  const double others =
      now->busy - machine_->busy - part_cpu_seconds - (Now(true) - own_cpu_seconds_);
  // The kernel counts in ticks: a quiet machine can come out a tick below zero.
  return CalibrationLoad{threads, wall, std::max(0.0, others / wall),
                         std::max(0.0, (now->steal - machine_->steal) / wall)};
}

}  // namespace mm::bench
