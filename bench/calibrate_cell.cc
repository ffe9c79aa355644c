// One cell of the calibration measured: every candidate computing it, timed side by side in blocks
// on this process's threads, and ranked.
#include "calibrate_cell.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <limits>

#include "mm/bench/calibrate.h"

namespace mm::bench::internal {
namespace {

struct Measured {
  std::string name;
  TimedCall call;               // One call, as auto makes it.
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
// TimeBlocks); the fastest block's median sample ranks (Measured::Measure). A candidate over
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

// The shortest group of calls the warm-up times as one (see CellTimer::Settle).
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

// The candidates computing `plan` (the reference not on a large shape), each prepared on the
// threads it runs on, as auto prepares it: on the cell's `threads`, and a small problem's also on
// 1 thread ("name@1", not the reference's). Leaves OpenMP at `threads`.
std::vector<TimedCandidate> PreparedCandidates(const Candidates& candidates, const MatMulPlan& plan,
                                               const BenchShape& shape, int threads) {
  struct Operands {
    Tensor a, b, y;
  };
  auto operands = std::make_shared<Operands>(Operands{
      BenchInput(plan.desc.dtype, shape.a_dims, 1), BenchInput(plan.desc.dtype, shape.b_dims, 2),
      Tensor::Create(plan.desc.dtype, plan.y_dims).value()});
  std::vector<TimedCandidate> measured;
  const bool fewer = threads > 1 && MatMulFlops(plan) <= kFewerThreadsFlops;
  for (const auto& [name, backend] : candidates) {
    if (name == "reference" && shape.Large()) continue;
    if (!backend->Supports(plan.desc).supported()) continue;
    for (int on : {0, 1}) {
      if (on == 1 && (!fewer || name == "reference")) continue;
      omp_set_num_threads(on > 0 ? on : threads);
      auto prepared = backend->Prepare(plan);
      if (!prepared.ok()) continue;
      std::shared_ptr<MatMulPrimitive> primitive = std::move(prepared).value();
      const std::string entry = on > 0 ? name + "@" + std::to_string(on) : name;
      TimedCall call = [primitive, operands] {
        (void)primitive->Execute(operands->a.view(), operands->b.view(),
                                 operands->y.mutable_view());
      };
      measured.push_back({entry, std::move(call), on});
    }
  }
  omp_set_num_threads(threads);
  return measured;
}

// Orders `measured` as the likely fastest first (`preference`, the cell's built-in ranking, then
// the others, the reference last), so that a slow candidate meets a best to be pruned against on
// its warm-up.
void OrderByPreference(std::vector<Measured>& measured,
                       const std::vector<std::string>& preference) {
  auto place = [&](const Measured& m) {
    const std::string backend = m.name.substr(0, m.name.find('@'));
    if (backend == "reference") return preference.size() + 1;
    return static_cast<std::size_t>(std::find(preference.begin(), preference.end(), backend) -
                                    preference.begin());
  };
  std::stable_sort(measured.begin(), measured.end(),
                   [&](const Measured& x, const Measured& y) { return place(x) < place(y); });
}

// Times the candidates of one cell, with the cell's clock (Now).
class CellTimer {
 public:
  explicit CellTimer(bool cpu_time) : cpu_time_(cpu_time) {}

  // One call as auto makes it: a candidate on fewer threads than the cell's with the thread count
  // set around the call and given back after it (auto_backend.cc, ScopedOmpThreads), which costs
  // a tiny product about as much as the product itself.
  void Call(const Measured& m) {
    if (m.threads > 0) {
      const int previous = omp_get_max_threads();
      omp_set_num_threads(m.threads);
      m.call();
      omp_set_num_threads(previous);
    } else {
      m.call();
    }
  }

  // One sample: m.calls calls, their time per call appended to m.samples.
  void Sample(Measured& m) {
    const double start = Now(cpu_time_);
    for (std::int64_t i = 0; i < m.calls; ++i) Call(m);
    m.samples.push_back((Now(cpu_time_) - start) / static_cast<double>(m.calls));
  }

  // Waits for the other threads, then calls `m` untimed for a sample's time and at least
  // `min_groups` groups of calls, unless a group's time per call exceeds `enough`; returns its
  // fastest time per call. The first calls after a wait are slower while the library's threads
  // wake and its data comes back into cache.
  double Settle(Measured& m, int min_groups,
                double enough = std::numeric_limits<double>::infinity()) {
    SettleOtherThreads();
    double fastest = std::numeric_limits<double>::infinity();
    const double start = Now(false);
    // Timed in groups of calls that double until a group takes kGroupSeconds: reading the CPU-time
    // clock costs more than a tiny call, which timed alone would be ranked on the clock.
    std::int64_t group = 1;
    for (int groups = 0; groups < min_groups || Now(false) - start < g_sample_seconds; ++groups) {
      const double group_start = Now(cpu_time_);
      for (std::int64_t i = 0; i < group; ++i) Call(m);
      const double elapsed = Now(cpu_time_) - group_start;
      fastest = std::min(fastest, elapsed / static_cast<double>(group));
      if (fastest > enough) break;
      if (elapsed < kGroupSeconds) group *= 2;
    }
    return std::max(fastest, 1e-9);
  }

  // One block of a candidate left in: settled, then kPruneAfterRounds samples back to back.
  void Block(Measured& m) {
    if (m.pruned) return;
    Settle(m, 1);
    for (int round = 0; round < kPruneAfterRounds; ++round) Sample(m);
  }

 private:
  const bool cpu_time_;
};

// Each candidate's first block, in order, against the best so far: sizes its samples and prunes
// it when it is far slower.
void WarmUp(CellTimer& timer, std::vector<Measured>& measured) {
  double best = std::numeric_limits<double>::infinity();
  for (Measured& m : measured) {
    // The fastest of at least 2 groups of calls sizes the samples and is the first prune's measure:
    // one call can be stalled for many times its time, and a candidate pruned on it is ranked on
    // it. A call over OneCallPruneThreshold(best) is not a stall: the candidate is pruned on it
    // alone (the naive reference on a large shape, say).
    const double once = timer.Settle(m, 2, OneCallPruneThreshold(best));
    m.calls = std::max<std::int64_t>(1, static_cast<std::int64_t>(g_sample_seconds / once));
    m.samples = {once};
    if (once > kPruneFactor * kPruneFactor * best) {
      m.pruned = true;  // Ranked on its fastest call.
      continue;
    }
    m.samples.clear();
    for (int round = 0; round < kPruneAfterRounds; ++round) timer.Sample(m);
    best = std::min(best, m.Measure());
  }
}

// The remaining blocks, after the warm-up's: each candidate's rounds back to back, once the
// threads of the one before have stopped spinning (SettleOtherThreads), since interleaved
// candidates share the cores with the previous one's threads or are timed in turns too short.
// The rounds are split over kBlockPasses passes, each over the candidates in the same order, so
// that a phase when other work takes a core lands in one block of a candidate, not in all its
// samples (the cases behind this: docs/notes/2026-12-03-measurements-behind-the-code.md). Then
// the close contenders, alone, for kBlockPasses more passes.
void TimeBlocks(CellTimer& timer, std::vector<Measured>& measured) {
  for (int pass = 1; pass < kBlockPasses; ++pass) {
    for (Measured& m : measured) timer.Block(m);
  }
  std::vector<double> measures;
  for (const Measured& m : measured) {
    measures.push_back(m.pruned ? std::numeric_limits<double>::infinity() : m.Measure());
  }
  const std::vector<std::size_t> close = CloseContenders(measures, kCloseMargin);
  for (int pass = 0; pass < kBlockPasses && !close.empty(); ++pass) {
    for (std::size_t i : close) timer.Block(measured[i]);
  }
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

}  // namespace

double Now(bool cpu_time) {
  if (cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return Seconds(Clock::now().time_since_epoch());
}

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

AutoCell RankCandidates(AutoCell cell, std::vector<TimedCandidate> candidates,
                        const std::vector<std::string>& preference) {
  std::vector<Measured> measured;
  for (TimedCandidate& c : candidates) {
    measured.push_back({std::move(c.entry), std::move(c.call), {}, 1, false, c.threads});
  }
  OrderByPreference(measured, preference);
  if (measured.empty()) return cell;
  if (measured.size() == 1) {
    cell.ranking = {measured[0].name};
    return cell;
  }
  CellTimer timer(/*cpu_time=*/cell.threads == 1);
  WarmUp(timer, measured);
  Prune(measured, kPruneFactor, [](const Measured& m) { return m.Measure(); });
  TimeBlocks(timer, measured);
  omp_set_num_threads(cell.threads);
  return Ranked(std::move(cell), measured, preference);
}

AutoCell MeasureCell(const Candidates& candidates, DType dtype, const BenchShape& shape,
                     int threads) {
  AutoCell cell;
  cell.dtype = dtype;
  cell.threads = threads;
  cell.a_dims = shape.a_dims;
  cell.b_dims = shape.b_dims;
  const MatMulPlan plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims}).value();
  return RankCandidates(
      std::move(cell), PreparedCandidates(candidates, plan, shape, threads),
      DefaultAutoRanking(dtype, threads, MatMulFlops(plan), AutoDefaultsBasis::OfThisMachine()));
}

}  // namespace mm::bench::internal
