#include "mm/conformance/fuzz/fuzzer.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include "family_run.h"
#include "fuzz_accuracy.h"
#include "fuzz_execute.h"
#include "fuzz_expectations.h"
#include "fuzz_replay.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/fuzz/shrink.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/running/poison.h"
#include "mm/engine/io/output_file.h"
#include "mm/engine/io/text.h"
#include "mm/oracle/parallel.h"

namespace mm::fuzz {

using conformance::Judge;
using conformance::Judgement;

int FuzzReport::ExitCode(const FuzzOptions& options) const {
  if (!error.empty()) return 1;
  if (stats.failures > 0) return 1;
  for (const Finding& f : findings) {
    if (f.kind == "XFAIL") continue;
    if (f.kind != "NONDETERMINISTIC" || options.require_deterministic) return 1;
  }
  return 0;
}

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Thrown on the campaign's thread when it takes its lock back after a long computation and finds
// that the report was taken from it (Campaign::TakeUnfinished): it leaves at once.
struct Abandoned {};

// One RunFuzz: the backends, the report as it fills, and the accuracy data the statistics are
// computed from at the end. Its thread holds mutex_ except during the long computations (the
// oracle, a backend's call, shrinking, the 1-thread rerun, writing an export), so that another
// thread may take the report of the results finished so far while one of those runs on.
class Campaign {
 public:
  Campaign(const FuzzOptions& options, const BackendRegistry& registry, std::ostream* log)
      : options_(options), registry_(registry), log_(log) {}

  // Runs the campaign on the calling thread; its report is then Result(). Returns early, without
  // a result, when TakeUnfinished took the report meanwhile.
  void Run() {
    std::unique_lock<std::timed_mutex> lock(mutex_);
    held_ = &lock;
    try {
      RunLocked();
    } catch (const Abandoned&) {
      return;
    }
    result_ = std::move(report_);
    finished_ = true;
  }

  bool finished() const { return finished_; }
  // The report of a run that finished.
  FuzzReport Result() { return std::move(result_); }
  // Ends every computation that looks at it (the oracle, the shrinker) at its next check.
  void Cancel() { cancel_ = true; }

  // The report of the results finished so far (the problem in progress with the backends it
  // finished), summarized, when the lock can be had within `seconds`; the campaign's thread then
  // leaves at its next look at the report. The report of the finished run when it finished
  // meanwhile; nothing when the lock stays busy.
  std::optional<FuzzReport> TakeUnfinished(double seconds) {
    std::unique_lock<std::timed_mutex> lock(mutex_, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::duration<double>(seconds))) return std::nullopt;
    if (finished_) return std::move(result_);
    abandoned_ = true;
    Summarize();
    FuzzReport out = std::move(report_);
    out.abandoned = true;
    return out;
  }

 private:
  void RunLocked() {
    expectations_.emplace(options_.expectations, report_.expectations);
    start_ = Clock::now();
    if (!StartBackends()) return;
    for (std::int64_t i = 0; i < options_.cases; ++i) {
      if (i % options_.shard.count != options_.shard.index - 1) continue;
      if (Stopped()) break;
      if (!RunProblem(options_.first + i)) return;
    }
    // A stop during the last problem, which no check before a next one sees.
    if (options_.stop != nullptr && *options_.stop != 0) {
      report_.interrupted_by = static_cast<int>(*options_.stop);
    }
    Summarize();
  }

  // Whether a stop was requested: the run's problem in progress is cut short at its next
  // cancellation point.
  bool Cancelled() const { return cancel_ || (options_.stop != nullptr && *options_.stop != 0); }

  // `work()`, a long computation that touches nothing the report is made of, run without the
  // lock. Throws Abandoned when the report was taken meanwhile.
  template <class Work>
  auto Unlocked(Work&& work) -> decltype(work()) {
    held_->unlock();
    auto result = work();
    held_->lock();
    if (abandoned_) throw Abandoned{};
    return result;
  }

  bool StartBackends() {
    names_ = options_.backends.empty() ? registry_.DefaultNames() : options_.backends;
    for (const std::string& name : names_) {
      // auto's first use may calibrate (ended by a stop request, AutoOptions::stop).
      auto backend = Unlocked([&] { return registry_.Create(name); });
      if (!backend.ok()) {
        report_.error = "backend '" + name + "' cannot start: " + backend.status().ToString();
        return false;
      }
      backends_.push_back(std::move(*backend));
      BackendStats stats;
      stats.name = name;
      report_.stats.backends.push_back(std::move(stats));
    }
    return true;
  }

  // A stop signal (recorded in the report), the time budget or the findings limit.
  bool Stopped() {
    if (options_.stop != nullptr && *options_.stop != 0) {
      report_.interrupted_by = static_cast<int>(*options_.stop);
      return true;
    }
    if (options_.seconds > 0 && SecondsSince(start_) >= options_.seconds) return true;
    return options_.stop_after > 0 &&
           static_cast<std::int64_t>(report_.findings.size()) >= options_.stop_after;
  }

  // Generates problem `index` and runs it on every backend. False on a setup error (in the
  // report).
  bool RunProblem(std::int64_t index) {
    if (IsFamilyOp(options_.op)) return RunFamilyProblem(index);
    const Problem problem =
        Unlocked([&] { return GenerateProblem(options_.seed, index, options_.generator); });
    ++by_dtype_[problem.a.dtype()];
    ++report_.stats.problems;
    auto plan = PlanMatMul(problem.desc());
    if (!plan.ok()) {  // The generator makes only valid problems; say so loudly if not.
      report_.error = "generated an invalid problem (seed " + std::to_string(options_.seed) +
                      ", index " + std::to_string(index) + "): " + plan.status().ToString();
      return false;
    }
    OracleOptions oracle_options;
    oracle_options.cancel = &cancel_;
    auto oracle = Unlocked(
        [&] { return ExactMatMul(*plan, problem.a.view(), problem.b.view(), oracle_options); });
    if (Cancelled()) return true;  // The oracle may have stopped half way.
    if (!oracle.ok()) {
      report_.error = "oracle: " + oracle.status().ToString();
      return false;
    }
    for (std::size_t bi = 0; bi < backends_.size() && !Cancelled(); ++bi) {
      RunOnBackend(bi, index, problem, *plan, *oracle);
    }
    return true;
  }

  // Draws family problem `index` (mm-fuzz --op) and runs it on every backend. False on a setup
  // error (in the report).
  bool RunFamilyProblem(std::int64_t index) {
    const FamilyProblem problem = Unlocked([&] {
      return GenerateFamilyProblem(options_.seed, index, options_.op, options_.generator);
    });
    ++by_dtype_[problem.dtype()];
    ++report_.stats.problems;
    bool outside = false;
    for (std::size_t bi = 0; bi < backends_.size() && !Cancelled(); ++bi) {
      if (!RunFamilyOnBackend(bi, problem, outside)) return false;
    }
    if (outside) ++report_.stats.outside_standard_range;
    return true;
  }

  // Runs family `problem` on backend `bi`: judged, counted, and shrunk into a finding when it
  // fails. False on a setup error (in the report).
  bool RunFamilyOnBackend(std::size_t bi, const FamilyProblem& problem, bool& outside) {
    Backend& backend = *backends_[bi];
    const conformance::Expectation* expected = nullptr;
    ExpectationOutcome* expected_outcome = nullptr;
    const std::string case_name =
        FuzzCaseName(options_.op, problem.Types(), problem.form, problem.values);
    if (!Expect(bi, case_name, expected, expected_outcome)) return true;
    auto outcome =
        Unlocked([&] { return RunFamilyOne(backend, problem, options_.tolerance, &cancel_); });
    if (Cancelled()) return true;  // The oracle may have stopped half way.
    if (!outcome.ok()) {           // The generator makes only valid problems; say so loudly if not.
      report_.error = "generated an invalid problem (seed " + std::to_string(options_.seed) +
                      ", index " + std::to_string(problem.index) + ", " + problem.ToString() +
                      "): " + outcome.status().ToString();
      return false;
    }
    BackendStats& stats = report_.stats.backends[bi];
    ++report_.stats.results;
    ++stats.by_dtype[problem.dtype()][outcome->verdict];
    ++stats.verdicts[outcome->verdict];
    report_.stats.elements += outcome->elements;
    outside |= outcome->outside_int32 > 0;
    const std::string kind = FailureKind(bi, outcome->verdict, expected_outcome);
    if (kind.empty() || std::ssize(report_.findings) >= options_.max_findings) return true;
    const Clock::time_point shrink_start = Clock::now();
    Finding f = Unlocked([&] {
      return ShrunkFamilyFinding(options_, kind, names_[bi], backend, problem, *outcome,
                                 ShrinkOptionsFor(outcome->verdict));
    });
    report_.stats.shrink_seconds += SecondsSince(shrink_start);
    if (kind == "XFAIL") f.expectation = expected->reason + " (" + expected->link + ")";
    if (log_ != nullptr) *log_ << FindingLog(f);
    report_.findings.push_back(std::move(f));
    return true;
  }

  // The expectation entry matching case `case_name` on backend `bi` (`expected`, null when none)
  // and its outcome, counted as matched. False when a SKIP entry keeps the case from the backend
  // (counted as SKIP).
  bool Expect(std::size_t bi, const std::string& case_name,
              const conformance::Expectation*& expected, ExpectationOutcome*& expected_outcome) {
    if (expectations_->Find(case_name, names_[bi], expected, expected_outcome)) return true;
    ++report_.stats.backends[bi].verdicts[Verdict::kSkip];
    return false;
  }

  void RunOnBackend(std::size_t bi, std::int64_t index, const Problem& problem,
                    const MatMulPlan& plan, const OracleResult& oracle) {
    Backend& backend = *backends_[bi];
    BackendStats& stats = report_.stats.backends[bi];
    const DType dtype = problem.a.dtype();
    const Arithmetic arithmetic = backend.DeclaredArithmetic(dtype);
    const conformance::Expectation* expected = nullptr;
    ExpectationOutcome* expected_outcome = nullptr;
    if (!Expect(bi, FuzzCaseName(dtype, problem.values), expected, expected_outcome)) return;
    const OracleBounds bounds(oracle, arithmetic, plan.k);
    const Outcome outcome = Unlocked([&] {
      return RunPrepared(backend, plan, problem.a, problem.b, oracle, bounds, options_.tolerance);
    });
    ++report_.stats.results;
    ++stats.by_dtype[dtype][outcome.verdict];
    // RunPrepared gives none of an expectations file's verdicts (XFAIL, XPASS, SKIP).
    ++stats.verdicts[outcome.verdict];
    if (outcome.judgement) {
      report_.stats.elements += outcome.judgement->bound.elements;
      report_.stats.unbounded_elements += outcome.judgement->bound.unbounded;
      if (IsFloat(dtype)) RecordAccuracy(bi, index, dtype, plan.k, outcome, oracle, bounds);
    }
    std::string thread_difference;
    const std::string kind =
        Classify(bi, problem, plan, outcome, expected_outcome, thread_difference);
    if (kind.empty()) return;
    if (static_cast<std::int64_t>(report_.findings.size()) >= options_.max_findings) return;
    Finding f = NewFinding(bi, index, problem, kind, expected);
    if (kind == "NONDETERMINISTIC") {
      f.minimal = f.original;
      f.a = Clone(problem.a);
      f.b = Clone(problem.b);
      f.message = thread_difference;
    } else {
      ShrinkInto(f, backend, problem, arithmetic, outcome);
    }
    Complete(f, backend);
    report_.findings.push_back(std::move(f));
  }

  // The worst ULP error and bound fraction of a float result, and whether its IEEE specials are
  // right.
  void RecordAccuracy(std::size_t bi, std::int64_t index, DType dtype, std::int64_t k,
                      const Outcome& outcome, const OracleResult& oracle,
                      const OracleBounds& bounds) {
    std::int64_t special_elements = 0;
    bool specials_correct = true;
    const ResultError error = Unlocked([&] {
      specials_correct = SpecialsCorrect(outcome.y.view(), bounds, special_elements);
      return MeasureError(outcome.y.view(), oracle, bounds);
    });
    accuracy_.Record(bi, dtype, error, special_elements > 0, specials_correct);
    if (static_cast<std::int64_t>(report_.errors.size()) < options_.max_error_records) {
      report_.errors.push_back({index, names_[bi], dtype, k, error});
    } else {
      report_.errors_capped = true;
    }
  }

  // The finding's kind ("" for none), counting it: XFAIL when declared, the verdict when it
  // fails under the rule, NONDETERMINISTIC (with `thread_difference`) under --check-threads.
  std::string Classify(std::size_t bi, const Problem& problem, const MatMulPlan& plan,
                       const Outcome& outcome, ExpectationOutcome* expected_outcome,
                       std::string& thread_difference) {
    BackendStats& stats = report_.stats.backends[bi];
    if (std::string kind = FailureKind(bi, outcome.verdict, expected_outcome); !kind.empty()) {
      return kind;
    }
    if (options_.check_threads && outcome.verdict != Verdict::kUnsupported && !Cancelled()) {
      const std::string& name = names_[bi];
      thread_difference =
          Unlocked([&] { return ThreadDifference(registry_, name, plan, problem.a, problem.b); });
      if (!thread_difference.empty()) {
        ++stats.nondeterministic;
        return "NONDETERMINISTIC";
      }
    }
    return "";
  }

  // "XFAIL" when declared, the verdict when it fails under the rule (counted), else "".
  std::string FailureKind(std::size_t bi, Verdict verdict, ExpectationOutcome* expected_outcome) {
    if (expected_outcome != nullptr &&
        conformance::ApplyXFail(verdict, options_.rule) == Verdict::kXFail) {
      // Declared: shown and exported like any failure, not counted as one.
      ++expected_outcome->failures;
      ++report_.stats.backends[bi].verdicts[Verdict::kXFail];
      return "XFAIL";
    }
    if (conformance::FailsUnder(verdict, options_.rule)) {
      ++report_.stats.failures;
      return std::string(VerdictName(verdict));
    }
    return "";
  }

  Finding NewFinding(std::size_t bi, std::int64_t index, const Problem& problem,
                     const std::string& kind, const conformance::Expectation* expected) const {
    Finding f;
    f.kind = kind;
    if (kind == "XFAIL") f.expectation = expected->reason + " (" + expected->link + ")";
    f.backend = names_[bi];
    f.seed = options_.seed;
    f.index = index;
    f.dtype = problem.a.dtype();
    f.form = problem.form;
    f.values = problem.values;
    f.original = problem.desc();
    return f;
  }

  // How a result that failed as `original` shrinks: while it fails the same way (or FAILs).
  ShrinkOptions ShrinkOptionsFor(Verdict original) {
    ShrinkOptions shrink;
    shrink.seconds = options_.shrink ? options_.shrink_seconds : 0;
    shrink.tolerance = options_.tolerance;
    shrink.cancel = &cancel_;
    shrink.keeps_failing = [original](Verdict v) {
      return v == original || (original != Verdict::kError && v == Verdict::kFail);
    };
    return shrink;
  }

  // Shrinks the failing problem into `f` (its minimal problem, message and worst element). A stop
  // request cuts shrinking short (shrink_timed_out); before its first step, the problem as it
  // failed is kept.
  void ShrinkInto(Finding& f, Backend& backend, const Problem& problem,
                  const Arithmetic& arithmetic, const Outcome& outcome) {
    ShrinkOptions shrink = ShrinkOptionsFor(outcome.verdict);
    shrink.arithmetic = arithmetic;
    const Clock::time_point shrink_start = Clock::now();
    ShrinkResult shrunk = Unlocked([&] { return Shrink(backend, problem.a, problem.b, shrink); });
    report_.stats.shrink_seconds += SecondsSince(shrink_start);
    if (Cancelled() && shrunk.steps == 0) {
      f.shrink_timed_out = shrink.seconds > 0;
      f.minimal = f.original;
      f.a = Clone(problem.a);
      f.b = Clone(problem.b);
      f.message = outcome.message;
      if (outcome.judgement) f.worst = outcome.judgement->bound.worst;
      return;
    }
    f.shrink_steps = shrunk.steps;
    f.shrink_timed_out = shrunk.timed_out;
    f.minimal = {f.dtype, shrunk.a.dims(), shrunk.b.dims()};
    f.a = std::move(shrunk.a);
    f.b = std::move(shrunk.b);
    f.message = shrunk.outcome.message;
    if (shrunk.outcome.judgement) f.worst = shrunk.outcome.judgement->bound.worst;
  }

  // The finding's replay line, expected output and exported node test; logged.
  void Complete(Finding& f, const Backend& backend) {
    const std::string library_path = PluginLibraryPath(backend);
    const std::string driver_command = runtime::DriverCommandOf(backend);
    f.replay = ReplayLine(options_, f, library_path, driver_command);
    if (auto min_plan = PlanMatMul(f.minimal); min_plan.ok()) {
      OracleOptions oracle_options;
      oracle_options.cancel = &cancel_;
      auto min_oracle =
          Unlocked([&] { return ExactMatMul(*min_plan, f.a.view(), f.b.view(), oracle_options); });
      if (min_oracle.ok()) f.expected = std::move(min_oracle->y);
    }
    if (!options_.export_dir.empty() && Cancelled()) {
      f.exported = "(not written: the run was stopped)";
    } else if (!options_.export_dir.empty()) {
      const std::filesystem::path dir = std::filesystem::path(options_.export_dir) / CaseName(f);
      f.exported = Unlocked([&] {
        Status written = conformance::WriteMatMulNodeTest(dir, f.a, f.b, f.expected, "mm-fuzz");
        if (written.ok()) {
          written = io::WriteFileAtomically(
              dir / "README.md", ExportReadme(options_, f, dir, library_path, driver_command));
        }
        return written.ok() ? dir.string() : "(not written: " + written.ToString() + ")";
      });
    }
    if (log_ != nullptr) *log_ << FindingLog(f);
  }

  // Problems by dtype, the accuracy statistics and the run's time.
  void Summarize() {
    for (const auto& [dtype, count] : by_dtype_) {
      report_.stats.problems_by_dtype.emplace_back(std::string(DTypeName(dtype)), count);
    }
    report_.error_stats = accuracy_.Statistics(names_);
    report_.stats.seconds = SecondsSince(start_);
  }

  const FuzzOptions& options_;
  const BackendRegistry& registry_;
  std::ostream* log_;
  // Held by the campaign's thread (through held_) but while Unlocked; taken by TakeUnfinished.
  std::timed_mutex mutex_;
  std::unique_lock<std::timed_mutex>* held_ = nullptr;
  bool abandoned_ = false;  // The report was taken (TakeUnfinished): the thread leaves.
  std::atomic<bool> finished_{false};
  std::atomic<bool> cancel_{false};
  FuzzReport result_;
  FuzzReport report_;
  std::optional<ExpectationTracker> expectations_;  // Set when the run starts.
  Clock::time_point start_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::map<DType, std::int64_t> by_dtype_;
  AccuracyData accuracy_;
};

}  // namespace

FuzzReport RunFuzz(const FuzzOptions& options, const BackendRegistry& registry, std::ostream* log) {
  if (options.stop == nullptr) {
    Campaign campaign(options, registry, log);
    campaign.Run();
    return campaign.Result();
  }
  // The campaign runs on a thread of its own; this one watches for the stop request, so that a
  // computation that does not look at it (a backend's call) cannot hold the run past it.
  auto campaign = std::make_shared<Campaign>(options, registry, log);
  std::thread worker([campaign] { campaign->Run(); });
  auto sleep = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  while (!campaign->finished() && *options.stop == 0) sleep();
  if (!campaign->finished()) {
    campaign->Cancel();
    const Clock::time_point asked = Clock::now();
    while (!campaign->finished() && SecondsSince(asked) < kStopGraceSeconds) sleep();
  }
  if (campaign->finished()) {
    worker.join();
    return campaign->Result();
  }
  std::optional<FuzzReport> unfinished = campaign->TakeUnfinished(kStopGraceSeconds / 2);
  if (unfinished && !unfinished->abandoned) {
    worker.join();
    return std::move(*unfinished);
  }
  // The thread stays inside its computation, using the backends and options: the caller ends
  // the process once the report is written (FuzzReport::abandoned).
  worker.detach();
  FuzzReport report = unfinished ? std::move(*unfinished) : FuzzReport{};
  report.abandoned = true;
  report.interrupted_by = static_cast<int>(*options.stop);
  return report;
}

}  // namespace mm::fuzz
