#include "mm/conformance/session/run.h"

#include <csignal>
#include <limits>
#include <string>
#include <utility>

#include "mm/conformance/isolation/worker.h"
#include "mm/conformance/isolation/worker_pool.h"
#include "mm/conformance/judging/resources.h"
#include "mm/conformance/running/process_state.h"

namespace mm::conformance {

namespace {

// Applies the run's expectations to each result on its way to `next`.
class ExpectationsApplied final : public ResultSink {
 public:
  ExpectationsApplied(const RunOptions& options, ResultSink& next)
      : options_(options), next_(next) {}
  void Add(Result r) override {
    ApplyExpectation(options_.expectations, options_.rule, r);
    next_.Add(std::move(r));
  }

 private:
  const RunOptions& options_;
  ResultSink& next_;
};

// Gives the extra results (by case index) after the last result of their case: before the first
// result of a later case, or at Finish.
class ExtrasMerger final : public ResultSink {
 public:
  ExtrasMerger(ExtraResults& extras, ResultSink& next) : extras_(extras), next_(next) {}
  void Add(Result r) override {
    Drain(r.case_index - 1);
    next_.Add(std::move(r));
  }
  // Gives the extras not given yet.
  void Finish() { Drain(std::numeric_limits<std::int64_t>::max()); }

 private:
  void Drain(std::int64_t upto) {
    while (!extras_.empty() && extras_.begin()->first <= upto) {
      next_.Add(std::move(extras_.begin()->second));
      extras_.erase(extras_.begin());
    }
  }
  ExtraResults& extras_;
  ResultSink& next_;
};

// RunConformanceStreaming in this process, into `sink` as judged.
bool RunInProcess(const Catalog& catalog, const BackendRegistry& registry,
                  const RunOptions& options, const std::vector<CaseStart>& cases,
                  ResultSink& sink) {
  struct Forward final : CaseEvents {
    void OnStage(Stage stage, const Result&, const CaseProgress&) override {
      in_backend = stage == Stage::kBackend;
      if (in_backend) {
        state = ProcessState::Capture();
        monitor.Before();
      }
    }
    void OnResult(Result result) override {
      // Finished after a stop request: the call may have been cut short by it (a driver's is
      // killed at once), so the result is not reported; the run ends as interrupted.
      if (stop != nullptr && *stop != 0) {
        dropped = true;
        return;
      }
      if (in_backend) {
        result.resources = monitor.After(result.backend, BackendComputed(result));
        CheckProcessState(result);
      }
      in_backend = false;
      sink->Add(std::move(result));
    }
    // No worker to replace here: what the call changed is put back, and its result is an ERROR
    // all the same.
    void CheckProcessState(Result& result) const {
      const std::vector<std::string> changes = state.ChangesTo(ProcessState::Capture());
      if (changes.empty()) return;
      const std::vector<std::string> failed = state.Restore();
      std::string restored = failed.empty() ? "restored" : "not all restored: ";
      for (std::size_t i = 0; i < failed.size(); ++i) restored += (i ? "; " : "") + failed[i];
      TurnIntoError(result,
                    ProcessStateChangeText(result.backend, "this process", changes) +
                        " (a backend must leave the process's state as it found it; " + restored +
                        ")",
                    "n/a (process state changed)");
    }
    ResultSink* sink;
    const volatile std::sig_atomic_t* stop = nullptr;
    bool dropped = false;  // A result came after the stop.
    // Measured in this process too: the figures are this process's, with whatever else it runs.
    CallMonitor monitor;
    ProcessState state;  // Before the call in flight.
    bool in_backend = false;
  } forward;
  forward.sink = &sink;
  forward.stop = options.stop;
  BackendInstances instances(registry);
  for (const CaseStart& c : cases) {
    // In one process a case is not abandoned half way: the run stops between cases, and what
    // its case finishes after the stop is dropped.
    if (options.stop != nullptr && *options.stop != 0) return false;
    if (!catalog.cases[c.case_index].valid() && (c.data_set != 0 || c.backend != 0)) continue;
    RunCase(catalog.cases[c.case_index], c.case_index, instances, registry, options,
            {c.data_set, c.backend, ""}, forward);
  }
  return !forward.dropped;
}

}  // namespace

bool RunConformanceStreaming(const Catalog& catalog, const BackendRegistry& registry,
                             const RunOptions& options, const std::vector<CaseStart>& cases,
                             ResultSink& sink, ExtraResults extras) {
  ExpectationsApplied applied(options, sink);
  ExtrasMerger merged(extras, applied);
  const bool finished = options.isolate ? RunIsolated(catalog, cases, registry, options, merged)
                                        : RunInProcess(catalog, registry, options, cases, merged);
  if (finished) merged.Finish();
  return finished;
}

std::vector<Result> RunConformance(const Catalog& catalog, const BackendRegistry& registry,
                                   const RunOptions& options) {
  struct Collect final : ResultSink {
    void Add(Result result) override { results.push_back(std::move(result)); }
    std::vector<Result> results;
  } collect;
  RunConformanceStreaming(catalog, registry, options, CasesInShard(catalog, options.shard),
                          collect);
  return std::move(collect.results);
}

}  // namespace mm::conformance
