// Running one case in this process: each of its data sets on every selected backend, each result
// judged against the expected output (a verdict of conformance/judging/verdict.h, whose table says
// what each means and when it fails a run) and, three-way, against the reference backend; and the
// options, shards and sinks of a run, which worker processes (conformance/isolation) share. A
// whole run, in this process or in workers: conformance/session/run.h.
#ifndef MM_CONFORMANCE_RUNNING_RUNNER_H_
#define MM_CONFORMANCE_RUNNING_RUNNER_H_

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mm/conformance/judging/compare.h"
#include "mm/conformance/judging/expectations.h"
#include "mm/conformance/judging/resources.h"
#include "mm/conformance/judging/result.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/registry.h"
#include "mm/family/plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::conformance {

// The name of the backend every other is compared with.
inline constexpr std::string_view kReferenceBackend = "reference";

// A backend that computes nothing: it answers each (case, data set) with what another runtime
// recorded for it (an outputs tree, conformance/running/outputs_backend.h). ExecuteAndJudge asks it
// instead of Supports / Prepare / Execute, and judges its answer under the arithmetic it declares
// (Backend::DeclaredArithmetic).
class RecordedBackend : public Backend {
 public:
  // The recorded Y of the result `about` (its case, source and data set identify it), which
  // `plan` says the inputs give: the tensor (of plan's dtype and Y shape); no tensor, with
  // `support` saying why, when the runtime recorded that it refused it; or an error naming the
  // file. `implementation` receives where Y came from.
  virtual StatusOr<std::optional<Tensor>> Recorded(const Result& about, const MatMulPlan& plan,
                                                   Support& support,
                                                   std::string& implementation) const = 0;
};

// Which part of the cases a sharded run takes: shard `index` of `count`, 1-based (1/1 is all).
struct Shard {
  int index = 1;
  int count = 1;
};

// Whether case `case_name` belongs to `shard`: by a hash of the name (64-bit FNV-1a), so the split
// is the same on every machine and in every run, and a case stays in its shard when other cases
// come or go. Every data set and backend of a case run in the same shard.
bool InShard(std::string_view case_name, const Shard& shard);

class WorkerLauncher;

struct RunOptions {
  std::vector<std::string> backends;  // Names to run, in order; every name must be registered.
  Tolerance tolerance;
  // Which rule decides whether a result failed, for expectations: a result declared XFAIL that
  // does not fail under it is XPASS.
  ToleranceRule rule = ToleranceRule::kOnnx;
  // Run results in worker processes, so a crash or hang in a backend costs only its own result.
  // Workers are forked from this process (after the registry and catalog exist), or from
  // `launcher`, and reused. Off: everything runs in this process, one result at a time (e.g.
  // under a debugger).
  bool isolate = true;
  // Where isolated runs fork their workers when set (worker_pool.h): a process started before the
  // catalog existed, so that workers do not hold it. Its options must name the same backends.
  WorkerLauncher* launcher = nullptr;
  int jobs = 1;  // Worker processes when isolated (>= 1).
  // A result that runs longer is an ERROR "timed out after N s" and its worker is replaced
  // (isolated runs only).
  double timeout_seconds = 60;
  Shard shard;
  // Known failures (XFAIL, SKIP); nullptr for none. SKIP results are not run.
  const Expectations* expectations = nullptr;
  // Stops the run when it holds a nonzero value (a signal handler sets it to the signal's
  // number): no new result starts, workers are killed, and every result finished so far is still
  // given. nullptr: never stops.
  const volatile std::sig_atomic_t* stop = nullptr;
  // A descriptor that becomes readable when `stop` is set (the read end of a self-pipe), so a
  // waiting run wakes at once; -1: none (`stop` is then looked at least every 100 ms).
  int stop_fd = -1;
  // Per worker process, in bytes (isolated runs; 0: no limit). A result during which a worker's
  // resident memory goes past it is an ERROR naming the limit and the worker is replaced; a worker
  // whose resident memory passes 3/4 of it after a case is replaced before its next case.
  std::int64_t memory_limit_bytes = 0;
  // Backends that could not be described (DescribeBackendsInChild: one that hung past the
  // timeout), with why: their results are ERRORs "backend failed to start: WHY", never created.
  std::map<std::string, std::string> failed_to_start;
};

// The memory limit per worker when none is given: half the machine's physical memory shared
// among `jobs` workers, at least 256 MiB.
std::int64_t DefaultMemoryLimitBytes(int jobs);

// What one backend runs on here (Backend::RunsOn()), for reports.
struct BackendInfo {
  std::string name;
  std::string description;  // The registry's one-line description.
  std::string runs_on;      // RunsOn(), or "failed to start: ..." when it cannot be created.
};
// Creates each of `names` once and asks what it runs on. Never throws.
std::vector<BackendInfo> DescribeBackends(const BackendRegistry& registry,
                                          const std::vector<std::string>& names);

// Receives the results of a run one by one, in catalog order, then data set, then backend order,
// as they are finished (expectations already applied).
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void Add(Result result) = 0;
};

// Where to pick up a case: the whole case (the default), or from its first missing result when a
// run is resumed.
struct CaseStart {
  std::size_t case_index = 0;  // Into catalog.cases.
  std::size_t data_set = 0;    // Data set and backend (indices) of the first result to run.
  std::size_t backend = 0;
};

// The cases of `catalog` in `shard`, each from its start, in catalog order.
std::vector<CaseStart> CasesInShard(const Catalog& catalog, const Shard& shard);

// How many results case `case_index` gives on `num_backends` backends: one per data set and
// backend, or one per backend when the case is invalid.
std::size_t ResultsOfCase(const Catalog& catalog, std::size_t case_index, std::size_t num_backends);

// --- The pieces RunConformance (session/run.h) is made of, shared by in-process and isolated runs

// Backend instances of one process, created on first use and kept.
class BackendInstances {
 public:
  explicit BackendInstances(const BackendRegistry& registry) : registry_(registry) {}
  // The instance of `name`, or why it could not be created.
  StatusOr<std::unique_ptr<Backend>>& Get(const std::string& name);

 private:
  const BackendRegistry& registry_;
  std::map<std::string, StatusOr<std::unique_ptr<Backend>>> instances_;
};

// The reference result for the three-way comparison of one data set: the tensor, or why there is
// none ("n/a (...)").
struct ReferenceY {
  std::optional<Tensor> y;
  std::string missing;
};

// Executes and judges one result: Supports, Prepare and Execute of `backend` on `set` (timed into
// `seconds`), then the verdict against set.y and, three-way, against `reference`. `result` carries
// the identity fields (case, data set, backend, dtype, shapes) and is filled in. The single place
// where a verdict is decided; checks added here apply to in-process and isolated runs alike.
void ExecuteAndJudge(Backend& backend, const MatMulPlan& plan, const DataSet& set,
                     const ReferenceY& reference, const Tolerance& tolerance, Result& result);

// The message of a result whose backend failed with `status`: "backend failed: ...", or, for a
// refusal of a problem of a type it declares supported, "conformance gap: ..." (named first, so
// every report shows it as such).
std::string BackendErrorMessage(const Status& status);

// Where to pick up a case: the data set and backend (indices into the case's data sets and the
// selected backends) and, for that data set, why it has no reference result when the reference
// already crashed on it (empty: compute it).
struct CaseProgress {
  std::size_t data_set = 0;
  std::size_t backend = 0;
  std::string reference_missing;
};

// What running a case reports as it goes.
class CaseEvents {
 public:
  enum class Stage { kLoad, kReference, kBackend };
  virtual ~CaseEvents() = default;
  // About to enter `stage` at `at`; `about` is the result being worked on (identity fields only;
  // for kLoad and kReference, its backend is empty). A crash or hang from here until the next
  // stage is pinned on it.
  virtual void OnStage(Stage stage, const Result& about, const CaseProgress& at) = 0;
  // A finished result.
  virtual void OnResult(Result result) = 0;
};

// Runs case `entry`, at `case_index` in its catalog, from `from` to its end: each data set is read,
// its reference result computed (when a reference backend is registered), each backend executed
// and judged, and the data set released.
void RunCase(const CaseEntry& entry, std::size_t case_index, BackendInstances& instances,
             const BackendRegistry& registry, const RunOptions& options, const CaseProgress& from,
             CaseEvents& events);

// One backend's result `r` at `at`: SKIP when an expectation declares it not to be run, ERROR when
// its backend failed to start, else `execute` on the backend's instance fills it in; then it is
// given to `events`. Shared by MatMul's and the family's data sets.
void RunOneBackend(const CaseProgress& at, BackendInstances& instances, const RunOptions& options,
                   CaseEvents& events, Result r,
                   const std::function<void(Backend&, Result&)>& execute);

// Runs the family case `entry` (its `family` set) from `from`, as RunCase does a MatMul case: each
// data set read and planned (family::PlanProblem; a problem it refuses is an ERROR per backend
// naming the data set), its expected output checked against mm's exact answer (a disagreement is
// the results' data_suspect), and each backend judged by ExecuteAndJudgeFamily.
void RunFamilyCase(const CaseEntry& entry, std::size_t case_index, BackendInstances& instances,
                   const RunOptions& options, const CaseProgress& from, CaseEvents& events);

// Executes and judges one family result: family::SupportOf (no: UNSUPPORTED with its reason), Y
// under the write guard (ComputeWithWriteGuard: an error or a write outside Y is an ERROR), the
// exact answer for the backend's declared arithmetic and family::JudgeFamily: PASS, BOUND,
// IMPRECISE or FAIL, its description (the worst element, the count outside int32, the
// ambiguities and the reading followed) as the message.
void ExecuteAndJudgeFamily(Backend& backend, const family::Plan& plan, const Tolerance& tolerance,
                           Result& result);

// The ERROR results of the invalid case `entry`, at `case_index` in its catalog, one per backend.
std::vector<Result> InvalidCaseResults(const CaseEntry& entry, std::size_t case_index,
                                       const RunOptions& options);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNING_RUNNER_H_
