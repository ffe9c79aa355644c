// Differential fuzzing of MatMul backends: random problems (problem.h) run on every backend and
// judged against the exact oracle by ONNX's tolerance and by the K-aware error bound
// (mm/oracle/error_bound.h, conformance/judging/compare.h); failures shrunk to a minimal problem
// and exported as ONNX node tests.
#ifndef MM_CONFORMANCE_FUZZ_FUZZER_H_
#define MM_CONFORMANCE_FUZZ_FUZZER_H_

#include <atomic>
#include <csignal>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/fuzz/problem.h"
#include "mm/conformance/judging/compare.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/registry.h"
#include "mm/family/op.h"
#include "mm/oracle/error_bound.h"

namespace mm::fuzz {

// Which rule decides pass or fail, and the verdicts: the conformance harness's own
// (conformance/judging/verdict.h), so mm-fuzz and mm-conformance judge alike. The fuzzer's default
// rule is kBound (BOUND passes, IMPRECISE fails); kOnnx lets ONNX's fixed tolerance decide.
using Rule = conformance::ToleranceRule;
using Verdict = conformance::Verdict;
using conformance::VerdictName;

struct FuzzOptions {
  // The operator whose problems are drawn (mm-fuzz --op): MatMul (problem.h), or Gemm,
  // MatMulInteger or QLinearMatMul (family_problem.h), run through each backend's family
  // interface (mm/family/backend.h) and judged by mm::family's exact judgement.
  family::Op op = family::Op::kMatMul;
  std::uint64_t seed = 1;
  std::int64_t first = 0;     // Index of the first problem.
  std::int64_t cases = 1000;  // Number of problems; with `seconds` > 0, at most this many.
  // Run only shard `index` of `count` (1-based) of the problems: problem first + i when
  // i % count == index - 1, so shards are disjoint, cover the campaign and stay balanced.
  conformance::Shard shard;
  double seconds = 0;                 // Time budget (0: none). Shrinking counts against it.
  std::vector<std::string> backends;  // Registered names; empty: every registered backend.
  GeneratorOptions generator;
  conformance::Tolerance tolerance;
  Rule rule = Rule::kBound;
  bool shrink = true;
  double shrink_seconds = 2;       // Per finding.
  std::int64_t max_findings = 20;  // Further failures are counted, not shrunk or exported.
  std::int64_t stop_after = 0;     // Stop after this many findings (0: run every problem).
  std::string export_dir;          // Where minimal failing problems go as node tests; "" = none.
  bool check_threads = false;      // Also run each problem at 1 thread and at all cores.
  bool require_deterministic = false;  // A thread-count difference is then a failure.
  // Per-problem error records kept in the report (FuzzReport::errors); statistics use every one.
  std::int64_t max_error_records = 20000;
  // Extra command-line words that reproduce the generator and judging options in a replay line.
  std::string replay_options;
  // What auto ran on, carried by the replay lines of auto's findings (another table, or other
  // expectations, choose other backends): its table location (MM_AUTO_TABLE=, given even when
  // empty), MM_AUTO_EXCLUDE (when not empty) and the expectations file (--expectations FILE).
  struct AutoContext {
    std::string table, exclude, expectations;
  } auto_context;
  // Stops the run when it holds a nonzero value (a signal handler sets it to the signal's number):
  // before the next problem, and inside one at its next cancellation point (before each backend's
  // call, between the oracle's tiles, between shrinking steps); RunFuzz returns within
  // kStopGraceSeconds and a half even when a backend's call runs on (FuzzReport::abandoned). The
  // report then has what was finished and says interrupted. nullptr: never.
  const volatile std::sig_atomic_t* stop = nullptr;
  // Known deviations (conformance/judging/expectations.h), matched against (FuzzCaseName, backend):
  // a failure an XFAIL entry matches is still shrunk, shown and exported, as kind "XFAIL", but is
  // not a failure of the run; a SKIP entry's problems are not run on that backend. Null: none.
  const conformance::Expectations* expectations = nullptr;
};

// The case name a fuzz result is matched by in an expectations file: "fuzz/<dtype>/<values>",
// e.g. "fuzz/float/small-int+specials" (the generator's value family; "+specials" when NaN or
// infinities were sprinkled in).
std::string FuzzCaseName(DType dtype, std::string_view values);
// The same for a family operator's problem: "fuzz/<op>/<types>/<form>/<values>", <types> its type
// constraints' element types (FamilyProblem::Types: Gemm's T; MatMulInteger's A/B; QLinearMatMul's
// a/b/y/scales), <form> and <values> the generator's (Gemm's form names the transposes, C's form,
// alpha and beta), e.g. "fuzz/MatMulInteger/uint8/int8/2-D/saturating pairs, zero points 0": an
// entry "fuzz/MatMulInteger/uint8/int8/*" declares every uint8 x int8 problem,
// "fuzz/Gemm/float/*beta 0*" float Gemm with beta 0.
std::string FuzzCaseName(family::Op op, std::string_view types, std::string_view form,
                         std::string_view values);

// One failure (or, with --check-threads, a nondeterminism), shrunk.
struct Finding {
  // "FAIL", "ERROR", "IMPRECISE", "BOUND" (ONNX rule), "NONDETERMINISTIC", or "XFAIL" (a failure
  // an expectations entry declares; `expectation` is its reason and link).
  std::string kind;
  std::string expectation;
  std::string backend;
  family::Op op = family::Op::kMatMul;  // The operator of the problem.
  std::uint64_t seed = 0;
  std::int64_t index = 0;
  DType dtype = DType::kFloat;
  std::string form, values;
  MatMulDesc original;
  MatMulDesc minimal;  // After shrinking (== original when not shrunk).
  Tensor a, b;         // The minimal problem's inputs (a family problem's A and B).
  // A family problem (op not MatMul) as ONNX states it (family::Problem::ToString), before and
  // after shrinking; `original` and `minimal` then hold A's type and A's and B's dims.
  std::string problem, minimal_problem;
  // A family problem's element type of each input of the minimal problem, in ONNX's order
  // ({"A", uint8}, {"B", int8}, ...): what a runtime's fuzz declaration matches ("types").
  std::vector<std::pair<std::string, DType>> types;
  // Elements of the minimal problem whose exact accumulation leaves int32 (MatMulInteger,
  // QLinearMatMul): when any, the problem is outside the standard's range and judged against the
  // wrapped value the standard allows.
  std::int64_t outside_int32 = 0;
  Tensor expected;      // The oracle's Y for it, rounded to the dtype.
  std::string message;  // What is wrong with the minimal problem's result.
  std::optional<conformance::WorstElement> worst;  // Worst element against the bound.
  int shrink_steps = 0;
  bool shrink_timed_out = false;
  // Command line that finds it again in a fresh shell: seed, index, dtype, backend, the plugin's
  // library (--backend-lib, absolute) for a plugin backend, and the generator/judging options.
  std::string replay;
  // Node-test directory written (with a README.md holding the commands that run it), or "".
  std::string exported;
};

struct BackendStats {
  std::string name;
  // Results per verdict: PASS, FAIL, BOUND, IMPRECISE, UNSUPPORTED, ERROR as judged; XFAIL: of the
  // failing results, those an expectations entry declares (also counted under their verdict);
  // SKIP: the problems a SKIP entry kept from this backend (counted under no other verdict). A fuzz
  // run gives no XPASS per result (FuzzReport::expectations reports entries not seen).
  conformance::VerdictCounts<std::int64_t> verdicts;
  std::int64_t nondeterministic = 0;
  // The same verdicts per dtype of the problems (only verdicts that occurred are present).
  std::map<DType, std::map<Verdict, std::int64_t>> by_dtype;
};

// An XFAIL entry of the expectations and what this run saw of it.
struct ExpectationOutcome {
  std::string case_pattern, backend_pattern, reason, link;
  std::int64_t matched = 0;   // Results it decided.
  std::int64_t failures = 0;  // Of which failed (XFAIL). 0 with matched > 0: not seen (XPASS?).
};

struct FuzzStats {
  std::int64_t problems = 0;
  std::int64_t results = 0;             // problems x backends.
  std::int64_t elements = 0;            // Output elements judged.
  std::int64_t unbounded_elements = 0;  // Of which with an infinite bound (overflow possible).
  std::int64_t failures = 0;            // Failing results (each a finding, up to max_findings).
  // Family problems (MatMulInteger, QLinearMatMul) with an element whose exact accumulation leaves
  // int32: outside the standard's range, judged against the wrapped value.
  std::int64_t outside_standard_range = 0;
  double seconds = 0;
  double shrink_seconds = 0;
  std::vector<std::pair<std::string, std::int64_t>> problems_by_dtype;
  std::vector<BackendStats> backends;
};

// How far one result of a float dtype is from the exact product, at its worst element.
struct ResultError {
  // |got - exact| / ulp(exact) in the output dtype; 0 when got equals the correctly rounded value.
  // +inf when got is NaN or infinite where the exact value is finite. Elements whose exact value
  // is NaN or infinite (IEEE specials from the inputs) are skipped.
  double max_ulp = 0;
  // Where got stands in the K-aware bound the verdict applies (mm/oracle/error_bound.h,
  // BoundFraction): > 1 exactly where it is outside; 0 when got is correctly rounded. Elements
  // with an infinite radius are skipped; empty when all are.
  std::optional<double> bound_fraction;
};

// The error of `y` (a float dtype) against `oracle`, with one bound per element.
ResultError MeasureError(TensorView y, const OracleResult& oracle, const OracleBounds& bounds);

// One (problem, backend) result of a float dtype, for the accuracy report.
struct ErrorRecord {
  std::int64_t index = 0;  // The problem's index in its seed.
  std::string backend;
  DType dtype = DType::kFloat;
  std::int64_t k = 0;
  ResultError error;
};

// The nearest-rank percentile `p` (0..1) of `values` (sorted here); 0 when empty. ErrorStats'
// p99 fields, in a run and in a merge of shards alike.
double Percentile(std::vector<double>& values, double p);

// The errors of every judged float result of one backend and dtype.
struct ErrorStats {
  std::string backend;
  DType dtype = DType::kFloat;
  std::int64_t problems = 0;
  double worst_ulp = 0, p99_ulp = 0;  // p99: the nearest-rank 99th percentile over problems.
  std::optional<double> worst_bound_fraction, p99_bound_fraction;  // Empty: all unbounded.
  // IEEE specials: results in which NaN/inf inputs reach an element of Y, and of those the ones
  // with an element that is not IEEE's answer (NaN where the exact value is NaN, the same
  // infinity where it is one).
  std::int64_t special_problems = 0, special_wrong = 0;
};

struct FuzzReport {
  FuzzStats stats;
  std::vector<Finding> findings;
  // Judged float results (not UNSUPPORTED or ERROR), in run order, up to max_error_records.
  std::vector<ErrorRecord> errors;
  bool errors_capped = false;  // More results were judged than `errors` holds.
  // Per (backend, dtype), over every judged float result (not only those in `errors`).
  std::vector<ErrorStats> error_stats;
  std::string error;       // A setup error (unknown backend, backend failed to start); else empty.
  int interrupted_by = 0;  // The signal that stopped the run early (options.stop); 0: none.
  // Stopped while a computation that does not look at the stop request (a backend's call) was
  // still running on another thread, which still uses the run's backends and options: the caller
  // writes the report and ends the process (std::_Exit) without destroying them. The report has
  // the results finished, the problem in progress with the backends it finished.
  bool abandoned = false;
  // Per XFAIL entry of options.expectations, in file order.
  std::vector<ExpectationOutcome> expectations;
  // 0: nothing failed; 1: a failure or error (exit codes of mm-fuzz).
  int ExitCode(const FuzzOptions& options) const;
};

// How long RunFuzz waits, after a stop request, for the problem in progress to reach a
// cancellation point before it takes the report of the finished results (then waits at most half
// as long again for the lock on them): the run ends within 2 s of SIGINT/SIGTERM.
inline constexpr double kStopGraceSeconds = 1.0;

// Runs options.cases problems from options.first (or until options.seconds) on every selected
// backend. Writes one line per finding to `log` as it is found (may be null). Never throws. With
// options.stop, runs them on a thread of its own (see FuzzReport::abandoned).
FuzzReport RunFuzz(const FuzzOptions& options, const BackendRegistry& registry, std::ostream* log);

// One judged run of a problem on a backend.
struct Outcome {
  Verdict verdict = Verdict::kError;
  std::string message;  // The reason (UNSUPPORTED, ERROR) or the judgement in words.
  std::optional<conformance::Judgement> judgement;
  Tensor y;  // What the backend wrote (valid unless UNSUPPORTED/ERROR before Execute).
};

// Runs `a` x `b` on `backend` and judges it against the oracle with the bound of `arithmetic`
// (the oracle stopped, an ERROR, when `cancel` is set and true).
// Y is filled with a poison pattern before Execute (all bytes 0xFF: NaN for floats, -1 or max
// for integers); when any element still holds it afterwards, Execute runs again over a second
// pattern (bytes 0x5A) and that result is judged, so an element never written cannot pass. It
// runs inside the write guard (conformance/running/write_guard.h): a write outside Y or into A or
// B is an ERROR naming it.
Outcome RunOne(Backend& backend, const Tensor& a, const Tensor& b, const Arithmetic& arithmetic,
               const conformance::Tolerance& tolerance, const std::atomic<bool>* cancel = nullptr);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZER_H_
