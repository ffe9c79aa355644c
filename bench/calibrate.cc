#include "mm/bench/calibrate.h"

#include <omp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/backend_list.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/output_file.h"
#include "mm/engine/machine.h"
#include "mm/engine/process/process.h"

namespace mm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The clock a cell is timed with: at 1 thread the process's CPU time, which other work on a shared
// machine does not inflate (wall time also counts the moments the process waits for a core, and
// those differ from sample to sample); at more threads wall time, since CPU time would add the
// threads up and hide what parallelism gains.
double Now(bool cpu_time) {
  if (cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return Seconds(Clock::now().time_since_epoch());
}

struct Measured {
  std::string name;
  Backend* backend;
  std::unique_ptr<MatMulPrimitive> primitive;
  std::vector<double> samples;  // Seconds per call, one per round it took part in.
  std::int64_t calls = 1;       // Calls per sample.
  bool pruned = false;          // Left out of later rounds: far slower than the fastest.
  int threads = 0;              // Fewer threads than the cell's it runs on ("name@N"); 0: all.
  // What ranks: FastestBlockMedian of the samples in blocks of kPruneAfterRounds (a candidate
  // pruned on its warm-up has its one sample), since a busy phase over some blocks would decide the
  // median of all samples (figures: docs/notes/2026-12-03-measurements-behind-the-code.md).
  double Measure() const;
};

// How a cell is timed (see docs/backends.md, "auto"; the clock is Now's): kRounds rounds of every
// remaining candidate, each calling it for about kSampleSeconds (at least once), in blocks (see
// MeasureCell); the fastest block's median sample ranks (Measured::Measure). A candidate over
// kPruneFactor times the fastest's time after its warm-up (kPruneFactor^2 for its fastest warm-up
// call) or after kPruneAfterRounds rounds cannot win and leaves the remaining rounds: on a large
// shape the slow libraries (netlib, the reference) would otherwise cost most of the calibration.
constexpr int kRounds = 9;
constexpr int kPruneAfterRounds = 3;
// The rounds are timed in this many blocks per candidate, of kPruneAfterRounds rounds each.
constexpr int kBlockPasses = kRounds / kPruneAfterRounds;
constexpr double kSampleSeconds = 0.004;
// MM_CALIBRATE_SAMPLE_SECONDS, when set, replaces kSampleSeconds: a quicker calibration with
// noisier rankings, for a run whose table matters more than its choices (the calibration's test).
constexpr char kSampleSecondsVariable[] = "MM_CALIBRATE_SAMPLE_SECONDS";
double g_sample_seconds = kSampleSeconds;

// Sets g_sample_seconds from the environment; false (saying why) if the value is not a number of
// seconds in (0, 1].
bool LoadSampleSeconds() {
  const char* text = std::getenv(kSampleSecondsVariable);
  if (text == nullptr) return true;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value > 0 && value <= 1)) {
    std::cerr << "mm-bench: " << kSampleSecondsVariable
              << " must be a number of seconds in (0, 1], got '" << text << "'\n";
    return false;
  }
  g_sample_seconds = value;
  return true;
}
// The shortest group of calls the warm-up times as one (see MeasureCell's settle).
constexpr double kGroupSeconds = 20e-6;
constexpr double kPruneFactor = 1.5;
// Candidates within kTieMargin of the fastest measure are a tie, broken by the built-in default
// ranking (DefaultAutoRanking), so that noise between near-equal backends does not flip the
// choice from one calibration to the next.
constexpr double kTieMargin = 0.03;
// Candidates within kCloseMargin of the fastest after the passes are timed in kBlockPasses more
// passes over them alone (CloseContenders).
constexpr double kCloseMargin = 0.25;
// Problems of at most this many flops are also timed on 1 thread at a cell of more threads
// ("name@1"): a thread wake-up per call (OpenMP under OMP_WAIT_POLICY=passive) can cost more than
// the product on one core.
constexpr double kFewerThreadsFlops = 2.0 * 256 * 256 * 256;

double Measured::Measure() const { return FastestBlockMedian(samples, kPruneAfterRounds); }

// Drops (from further rounds) every candidate whose `time` is above `factor` times the best.
template <class Time>
void Prune(std::vector<Measured>& measured, double factor, Time time) {
  double best = std::numeric_limits<double>::infinity();
  for (const Measured& m : measured) {
    if (!m.pruned) best = std::min(best, time(m));
  }
  for (Measured& m : measured) {
    if (!m.pruned && time(m) > factor * best) m.pruned = true;
  }
}

AutoCell Ranked(AutoCell cell, const std::vector<Measured>& measured,
                const std::vector<std::string>& preference);

// Every candidate computing (dtype, shape), timed side by side in blocks (see kRounds); ranked by
// Measured::Measure, ties (kTieMargin) broken by the default ranking.
AutoCell MeasureCell(
    const std::vector<std::pair<std::string, std::unique_ptr<Backend>>>& candidates, DType dtype,
    const BenchShape& shape, int threads) {
  AutoCell cell;
  cell.dtype = dtype;
  cell.threads = threads;
  cell.a_dims = shape.a_dims;
  cell.b_dims = shape.b_dims;
  const MatMulPlan plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims}).value();
  std::vector<Measured> measured;
  const bool fewer = threads > 1 && MatMulFlops(plan) <= kFewerThreadsFlops;
  for (const auto& [name, backend] : candidates) {
    if (name == "reference" && shape.Large()) continue;
    if (!backend->Supports(plan.desc).supported()) continue;
    for (int on : {0, 1}) {
      if (on == 1 && (!fewer || name == "reference")) continue;
      // Prepared on the threads it runs on, as auto prepares it.
      omp_set_num_threads(on > 0 ? on : threads);
      auto primitive = backend->Prepare(plan);
      if (!primitive.ok()) continue;
      const std::string entry = on > 0 ? name + "@" + std::to_string(on) : name;
      measured.push_back({entry, backend.get(), std::move(primitive).value(), {}, 1, false, on});
    }
  }
  omp_set_num_threads(threads);
  // The likely fastest first (the built-in ranking's order, the others after it, the reference
  // last), so that a slow candidate meets a best to be pruned against on its warm-up.
  const std::vector<std::string> preference =
      DefaultAutoRanking(dtype, threads, MatMulFlops(plan), AutoDefaultsBasis::OfThisMachine());
  auto place = [&](const Measured& m) {
    const std::string backend = m.name.substr(0, m.name.find('@'));
    if (backend == "reference") return preference.size() + 1;
    return static_cast<std::size_t>(std::find(preference.begin(), preference.end(), backend) -
                                    preference.begin());
  };
  std::stable_sort(measured.begin(), measured.end(),
                   [&](const Measured& x, const Measured& y) { return place(x) < place(y); });
  if (measured.size() == 1) {
    cell.ranking = {measured[0].name};
    return cell;
  }
  const Tensor a = BenchInput(dtype, shape.a_dims, 1);
  const Tensor b = BenchInput(dtype, shape.b_dims, 2);
  Tensor y = Tensor::Create(dtype, plan.y_dims).value();
  const bool cpu_time = threads == 1;
  // One call as auto makes it: a candidate on fewer threads than the cell's with the thread count
  // set around the call and given back after it (auto_backend.cc, ScopedOmpThreads), which costs
  // a tiny product about as much as the product itself.
  auto call = [&](const Measured& m) {
    if (m.threads > 0) {
      const int previous = omp_get_max_threads();
      omp_set_num_threads(m.threads);
      (void)m.primitive->Execute(a.view(), b.view(), y.mutable_view());
      omp_set_num_threads(previous);
    } else {
      (void)m.primitive->Execute(a.view(), b.view(), y.mutable_view());
    }
  };
  auto sample = [&](Measured& m) {
    const double start = Now(cpu_time);
    for (std::int64_t i = 0; i < m.calls; ++i) call(m);
    m.samples.push_back((Now(cpu_time) - start) / static_cast<double>(m.calls));
  };
  // In blocks: each candidate's rounds back to back, once the threads of the one before have
  // stopped spinning (SettleOtherThreads), since interleaved candidates share the cores with the
  // previous one's threads or are timed in turns too short. The rounds are split over kBlockPasses
  // passes, each over the candidates in the same order, so that a phase when other work takes a
  // core lands in one block of a candidate, not in all its samples (the cases behind this:
  // docs/notes/2026-12-03-measurements-behind-the-code.md).
  //
  // settle: waits for the other threads, then calls `m` untimed for a sample's time and at least
  // `min_groups` groups of calls, unless a group's time per call exceeds `enough`; returns its
  // fastest time per call. The first calls after a wait are slower while the library's threads
  // wake and its data comes back into cache.
  auto settle = [&](Measured& m, int min_groups,
                    double enough = std::numeric_limits<double>::infinity()) {
    SettleOtherThreads();
    double fastest = std::numeric_limits<double>::infinity();
    const double start = Now(false);
    // Timed in groups of calls that double until a group takes kGroupSeconds: reading the CPU-time
    // clock costs more than a tiny call, which timed alone would be ranked on the clock.
    std::int64_t group = 1;
    for (int groups = 0; groups < min_groups || Now(false) - start < g_sample_seconds; ++groups) {
      const double group_start = Now(cpu_time);
      for (std::int64_t i = 0; i < group; ++i) call(m);
      const double elapsed = Now(cpu_time) - group_start;
      fastest = std::min(fastest, elapsed / static_cast<double>(group));
      if (fastest > enough) break;
      if (elapsed < kGroupSeconds) group *= 2;
    }
    return std::max(fastest, 1e-9);
  };
  double best = std::numeric_limits<double>::infinity();
  for (Measured& m : measured) {
    // The fastest of at least 2 groups of calls sizes the samples and is the first prune's measure:
    // one call can be stalled for many times its time, and a candidate pruned on it is ranked on
    // it. A call over OneCallPruneThreshold(best) is not a stall: the candidate is pruned on it
    // alone (the naive reference on a large shape, say).
    const double once = settle(m, 2, OneCallPruneThreshold(best));
    m.calls = std::max<std::int64_t>(1, static_cast<std::int64_t>(g_sample_seconds / once));
    m.samples = {once};
    if (once > kPruneFactor * kPruneFactor * best) {
      m.pruned = true;  // Ranked on its fastest call.
      continue;
    }
    m.samples.clear();
    for (int round = 0; round < kPruneAfterRounds; ++round) sample(m);
    best = std::min(best, m.Measure());
  }
  Prune(measured, kPruneFactor, [](const Measured& m) { return m.Measure(); });
  auto block = [&](Measured& m) {
    if (m.pruned) return;
    settle(m, 1);
    for (int round = 0; round < kPruneAfterRounds; ++round) sample(m);
  };
  for (int pass = 1; pass < kBlockPasses; ++pass) {
    std::for_each(measured.begin(), measured.end(), block);
  }
  std::vector<double> measures;
  for (const Measured& m : measured) {
    measures.push_back(m.pruned ? std::numeric_limits<double>::infinity() : m.Measure());
  }
  const std::vector<std::size_t> close = CloseContenders(measures, kCloseMargin);
  for (int pass = 0; pass < kBlockPasses && !close.empty(); ++pass) {
    for (std::size_t i : close) block(measured[i]);
  }
  omp_set_num_threads(threads);
  return Ranked(std::move(cell), measured, preference);
}

// `cell` with its ranking: RankEntries of the candidates' Measured::Measure, ties (kTieMargin)
// broken by `preference`, the cell's default ranking.
AutoCell Ranked(AutoCell cell, const std::vector<Measured>& measured,
                const std::vector<std::string>& preference) {
  std::vector<std::pair<double, std::string>> measures;
  for (const Measured& m : measured) measures.emplace_back(m.Measure(), m.name);
  for (auto& [seconds, name] : RankEntries(std::move(measures), preference, kTieMargin)) {
    cell.ranking.push_back(std::move(name));
    cell.seconds.push_back(seconds);
  }
  return cell;
}

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

// Writes `text` to `path` whole or not at all, as mm's reports are written: into a new file of an
// unpredictable name beside it (never a planted link), renamed over `path` once complete.
bool WriteWhole(const std::string& path, const std::string& text) {
  return io::WriteFileAtomically(path, text).ok();
}

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

}  // namespace

double OneCallPruneThreshold(double best) {
  // Well above kPruneFactor^2: a candidate pruned on one call is one the two-call rule prunes too.
  constexpr double kFactor = 10;
  constexpr double kAtLeast = 0.01;
  return std::max(kFactor * best, kAtLeast);
}

double FastestBlockMedian(std::span<const double> samples, int block) {
  auto median = [](std::span<const double> values) {
    std::vector<double> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  };
  if (samples.empty()) return std::numeric_limits<double>::infinity();
  const std::size_t size = static_cast<std::size_t>(std::max(block, 1));
  if (samples.size() < size) return median(samples);
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t start = 0; start + size <= samples.size(); start += size) {
    best = std::min(best, median(samples.subspan(start, size)));
  }
  return best;
}

std::vector<std::size_t> CloseContenders(std::span<const double> measures, double margin) {
  const auto fastest = std::min_element(measures.begin(), measures.end());
  if (fastest == measures.end() || !std::isfinite(*fastest)) return {};
  const std::size_t first = static_cast<std::size_t>(fastest - measures.begin());
  std::vector<std::size_t> close = {first};
  for (std::size_t i = 0; i < measures.size(); ++i) {
    if (i != first && measures[i] <= *fastest * (1 + margin)) close.push_back(i);
  }
  if (close.size() == 1) return {};
  return close;
}

std::vector<DType> CalibratedDTypes(ShapeSet set) {
  std::vector<DType> dtypes(BenchDTypes(set).begin(), BenchDTypes(set).end());
  if (std::find(dtypes.begin(), dtypes.end(), DType::kFloat16) == dtypes.end()) {
    dtypes.push_back(DType::kFloat16);
  }
  return dtypes;
}

int CalibratePart(const std::string& out, ShapeSet set) {
  // A part whose parent is gone would measure on for minutes, for nobody, taking the cores.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (!LoadSampleSeconds()) return 1;
  // Created once: creating a backend (oneDNN's probes) costs more than timing a small cell.
  const BackendRegistry registry = AutoCandidateBackends();
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> candidates;
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name);
    if (backend.ok()) candidates.emplace_back(name, std::move(backend).value());
  }
  const int threads = std::max(
      1,
      std::atoi(std::getenv("OMP_NUM_THREADS") != nullptr ? std::getenv("OMP_NUM_THREADS") : "1"));
  AutoTable part;
  for (DType dtype : CalibratedDTypes(set)) {
    for (const BenchShape& shape : Shapes(set)) {
      if (!Benchmarked(shape, dtype)) continue;
      const auto start = Clock::now();
      AutoCell cell = MeasureCell(candidates, dtype, shape, threads);
      if (cell.ranking.empty()) continue;
      std::cerr << "mm-bench: calibrated " << DTypeName(dtype) << " " << shape.name << " at "
                << threads << " thread(s): " << cell.ranking[0] << " ("
                << Seconds(Clock::now() - start) << " s)\n";
      part.cells.push_back(std::move(cell));
    }
  }
  if (!WriteWhole(out, part.ToJson()["cells"].dump())) {
    std::cerr << "mm-bench: cannot write " << out << "\n";
    return 1;
  }
  return 0;
}

int Calibrate(const std::string& path, ShapeSet set) {
  if (!LoadSampleSeconds()) return 1;
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
  const std::filesystem::path target(path);
  if (std::error_code error; target.has_parent_path() &&
                             !std::filesystem::is_directory(target.parent_path()) &&
                             !std::filesystem::create_directories(target.parent_path(), error)) {
    std::cerr << "mm-bench: cannot create the folder of " << path << ": " << error.message()
              << "\n";
    return 1;
  }
  const InterruptGuard guard;
  // Every file the calibration writes but the table: none is left behind, whatever the ending.
  auto remove_parts = [&] {
    std::error_code ignored;
    for (int threads : thread_counts) {
      const std::string part = path + ".part" + std::to_string(threads);
      std::filesystem::remove(part, ignored);
      RemoveTemporariesOf(part);
    }
  };
  auto interrupted = [&] {
    remove_parts();
    RemoveTemporariesOf(path);
    std::cerr << "mm-bench: calibration interrupted by " << process::SignalName(g_signal)
              << "; no table written to " << path << "\n";
    return 128 + g_signal;
  };
  for (int threads : thread_counts) {
    if (g_signal != 0) return interrupted();
    const std::string part = path + ".part" + std::to_string(threads);
    const LoadMeter meter;
    double part_cpu_seconds = 0;
    const std::optional<int> status = RunPart(self, threads, part, set, part_cpu_seconds);
    if (std::optional<CalibrationLoad> load = meter.Finish(threads, part_cpu_seconds)) {
      table.load.push_back(*load);
    }
    if (g_signal != 0) return interrupted();
    auto text = io::ReadInputFile(part, io::kCalibrationTableFile);
    if (!status.has_value() || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0 || !text.ok()) {
      std::cerr << "mm-bench: calibration at " << threads << " thread(s) failed ("
                << (status.has_value() ? process::DescribeWaitStatus(*status) : "not started")
                << (text.ok() ? "" : "; " + text.status().message()) << ")\n";
      remove_parts();
      return 1;
    }
    remove_parts();
    // The part is parsed as a table of this identity, so a cell the parser would refuse is found
    // here rather than when auto loads the file.
    auto cells = io::ParseJson(*text, io::InputName(part, io::kCalibrationTableFile));
    if (!cells.ok()) {
      std::cerr << "mm-bench: " << cells.status().message() << "\n";
      return 1;
    }
    nlohmann::json wrapped = table.ToJson();
    wrapped["cells"] = std::move(cells).value();
    auto parsed = ParseAutoTable(wrapped.dump(), part, table.identity);
    if (!parsed.ok()) {
      std::cerr << "mm-bench: " << parsed.status().message() << "\n";
      return 1;
    }
    for (AutoCell& cell : parsed->cells) table.cells.push_back(std::move(cell));
  }
  if (!WriteWhole(path, table.ToJson().dump(1) + "\n")) {
    std::cerr << "mm-bench: cannot write " << path << "\n";
    return 1;
  }
  std::cerr << "mm-bench: wrote " << table.cells.size() << " cells to " << path << " in "
            << Seconds(Clock::now() - start) << " s\n";
  if (const std::string load = table.LoadWarning(); !load.empty()) {
    std::cerr << "mm-bench: warning: the table was " << load
              << "; its rankings may be off there (make it again on a quiet machine: mm-bench "
              << "--mm_calibrate=" << path << (set == ShapeSet::kQuick ? " --mm_set=quick" : "")
              << ")\n";
  }
  return 0;
}

std::vector<std::pair<double, std::string>> RankEntries(
    std::vector<std::pair<double, std::string>> measures,
    const std::vector<std::string>& preference, double tie_margin) {
  std::sort(measures.begin(), measures.end());
  // An entry's place in the preference: its backend's rank, then all threads before "@N".
  auto preferred = [&](const std::string& entry) {
    const std::size_t at = entry.find('@');
    const std::string name = entry.substr(0, at);
    const auto rank = std::find(preference.begin(), preference.end(), name) - preference.begin();
    return std::pair{rank, at != std::string::npos};
  };
  std::size_t winner = 0;
  for (std::size_t i = 1; i < measures.size(); ++i) {
    if (measures[i].first <= measures[0].first * (1 + tie_margin) &&
        preferred(measures[i].second) < preferred(measures[winner].second)) {
      winner = i;
    }
  }
  std::rotate(measures.begin(), measures.begin() + static_cast<std::ptrdiff_t>(winner),
              measures.begin() + static_cast<std::ptrdiff_t>(winner) + 1);
  return measures;
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
