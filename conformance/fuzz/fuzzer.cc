#include "mm/conformance/fuzz/fuzzer.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/fuzz/shrink.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/report/output_file.h"
#include "mm/conformance/running/poison.h"
#include "mm/engine/io/text.h"
#include "mm/engine/parallel.h"

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

std::string Describe(const Judgement& j, DType dtype) {
  std::string out = "vs ONNX tolerance: " + j.tolerance.Describe();
  // Integers are judged exactly by both rules; the bound adds nothing to say.
  if (IsFloat(dtype)) out += "; vs bound: " + j.bound.Describe();
  return out;
}

// Executes a prepared problem and judges it (the oracle already computed).
Outcome ExecuteAndJudge(MatMulPrimitive& primitive, const Tensor& a, const Tensor& b,
                        const OracleResult& oracle, const OracleBounds& bounds,
                        const conformance::Tolerance& tolerance) {
  Outcome out;
  auto y = Tensor::Create(a.dtype(), oracle.y.dims());
  if (!y.ok()) {
    out.message = y.status().ToString();
    return out;
  }
  out.y = std::move(*y);
  for (int round = 0; round < 2; ++round) {
    conformance::Poison(out.y.mutable_view(), round);
    const Status run = primitive.Execute(a.view(), b.view(), out.y.mutable_view());
    if (!run.ok()) {
      out.verdict = Verdict::kError;
      out.message = "Execute: " + run.ToString();
      return out;
    }
    if (!conformance::HoldsPoison(out.y.view(), round)) break;
  }
  Judgement j = Judge(out.y.view(), oracle.y.view(), bounds, tolerance);
  out.verdict = j.verdict;
  out.message = Describe(j, a.dtype());
  out.judgement = std::move(j);
  return out;
}

Outcome RunPrepared(Backend& backend, const MatMulPlan& plan, const Tensor& a, const Tensor& b,
                    const OracleResult& oracle, const OracleBounds& bounds,
                    const conformance::Tolerance& tolerance) {
  Outcome out;
  try {
    const Support support = backend.Supports(plan.desc);
    if (!support.supported()) {
      out.verdict = Verdict::kUnsupported;
      out.message = support.note;
      return out;
    }
    auto primitive = backend.Prepare(plan);
    if (!primitive.ok()) {
      out.verdict = Verdict::kError;
      out.message = "Prepare: " + primitive.status().ToString();
      return out;
    }
    return ExecuteAndJudge(**primitive, a, b, oracle, bounds, tolerance);
  } catch (const std::exception& e) {
    out.verdict = Verdict::kError;
    out.message = std::string("exception: ") + e.what();
  } catch (...) {
    out.verdict = Verdict::kError;
    out.message = "unknown exception";
  }
  return out;
}

// `word` as one word of a shell command: as it is when it holds only characters no shell treats
// specially, else in single quotes (a quote inside as '\''); a word with a control character (a
// newline in a --backend-cmd command, say) in bash's $'...' with each such byte as \xHH, so the
// command stays on one line and no byte of it drives the terminal.
std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,@%", c) != nullptr;
  });
  if (plain) return word;
  if (io::FirstControlCharacter(word)) {
    std::string quoted = "$'";
    for (const char c : word) {
      const auto byte = static_cast<unsigned char>(c);
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", byte);
      quoted += byte < 0x20 || byte >= 0x7F ? std::string(hex)
                : c == '\'' || c == '\\'    ? "\\" + std::string(1, c)
                                            : std::string(1, c);
    }
    return quoted + "'";
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// `command` with what auto ran on (its table, the expectations leaving backends out) when the
// finding is auto's: another table or none chooses other backends.
std::string WithAutoContext(const FuzzOptions& options, const Finding& f, std::string command) {
  if (f.backend != "auto") return command;
  const FuzzOptions::AutoContext& context = options.auto_context;
  std::string environment = "MM_AUTO_TABLE=" + ShellWord(context.table) + " ";
  if (!context.exclude.empty())
    environment += "MM_AUTO_EXCLUDE=" + ShellWord(context.exclude) + " ";
  command = environment + command;
  if (!context.expectations.empty()) {
    command += " --expectations " + ShellWord(context.expectations);
  }
  return command;
}

std::string ReplayLine(const FuzzOptions& options, const Finding& f,
                       const std::string& library_path, const std::string& driver_command) {
  std::string line = "mm-fuzz";
  // A plugin backend exists in a fresh process only once its library is loaded again; a driver's
  // once its command is given again.
  if (!library_path.empty()) line += " --backend-lib " + ShellWord(library_path);
  if (!driver_command.empty())
    line += " --backend-cmd " + ShellWord(f.backend + "=" + driver_command);
  line += " --seed " + std::to_string(f.seed) + " --first " + std::to_string(f.index) +
          " --cases 1 --dtype " + std::string(DTypeName(f.dtype)) + " --backend " +
          ShellWord(f.backend);
  if (f.kind == "NONDETERMINISTIC") line += " --check-threads";
  if (!options.replay_options.empty()) line += " " + options.replay_options;
  return WithAutoContext(options, f, line);
}

// The README.md of an exported minimal problem: what was found and the commands that run it
// again, the node test itself and the original problem.
std::string ExportReadme(const FuzzOptions& options, const Finding& f,
                         const std::filesystem::path& dir, const std::string& library_path,
                         const std::string& driver_command) {
  std::string conformance = "mm-conformance";
  if (!library_path.empty()) conformance += " --backend-lib " + ShellWord(library_path);
  if (!driver_command.empty()) {
    conformance += " --backend-cmd " + ShellWord(f.backend + "=" + driver_command);
  }
  conformance += " --data-dir " + ShellWord(std::filesystem::absolute(dir).string()) +
                 " --no-builtin --backend " + ShellWord(f.backend);
  // The rule and tolerance the finding was judged by (mm-conformance's default rule is onnx).
  conformance += options.rule == Rule::kBound ? " --tolerance bound" : " --tolerance onnx";
  if (options.tolerance.rtol != conformance::Tolerance{}.rtol) {
    conformance += " --rtol " + conformance::FormatDouble(options.tolerance.rtol);
  }
  if (options.tolerance.atol != conformance::Tolerance{}.atol) {
    conformance += " --atol " + conformance::FormatDouble(options.tolerance.atol);
  }
  conformance = WithAutoContext(options, f, conformance);
  std::string text = "# " + f.kind + ": " + f.backend + ", " + std::string(DTypeName(f.dtype)) +
                     "\n\nA minimal MatMul problem found by mm-fuzz (seed " +
                     std::to_string(f.seed) + ", problem " + std::to_string(f.index) + ": " +
                     f.original.ToString() + ", " + f.form + ", " + f.values + "; shrunk to " +
                     f.minimal.ToString() + ").\n\n" + f.message +
                     "\n\nRun this node test (model.onnx, test_data_set_0) on the backend:\n\n"
                     "    " +
                     conformance +
                     "\n\nFind it again (the original problem, judged the same way):\n\n"
                     "    " +
                     f.replay + "\n";
  return text;
}

// Whether every element of a float result that NaN/inf inputs reach holds IEEE's answer as the
// judgement accepts it (WithinBound): NaN where the exact value is NaN, the same infinity where it
// is one; any non-finite value where finite terms may overflow too; NaN also where the declared
// arithmetic flushes subnormals. Counts those elements into `elements`.
bool SpecialsCorrect(TensorView y, const OracleBounds& bounds, std::int64_t& elements) {
  if (bounds.size() != static_cast<std::size_t>(y.NumElements())) return true;
  return VisitDType(y.dtype, [&](auto tag) -> bool {
    constexpr DType kD = decltype(tag)::value;
    if constexpr (kD == DType::kFloat || kD == DType::kDouble || kD == DType::kFloat16 ||
                  kD == DType::kBFloat16) {
      const CppType<kD>* got = y.Data<CppType<kD>>();
      struct Specials {
        std::int64_t elements = 0;
        bool correct = true;
      };
      const Specials found = ReduceInOrder<Specials>(
          y.NumElements(),
          [&](std::int64_t begin, std::int64_t end) {
            Specials part;
            for (std::int64_t i = begin; i < end; ++i) {
              const ElementBound bound = bounds[static_cast<std::size_t>(i)];
              if (!bound.special) continue;
              ++part.elements;
              if (!WithinBound(kD, bound, ToDouble(got[i]))) part.correct = false;
            }
            return part;
          },
          [](Specials& left, Specials&& right) {
            left.elements += right.elements;
            left.correct = left.correct && right.correct;
          });
      elements += found.elements;
      return found.correct;
    } else {
      return true;
    }
  });
}

std::string CaseName(const Finding& f) {
  std::string kind = f.kind;
  for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "test_mm_fuzz_" + kind + "_" + f.backend + "_" + std::string(DTypeName(f.dtype)) + "_s" +
         std::to_string(f.seed) + "_i" + std::to_string(f.index);
}

// Runs `a` x `b` with 1 thread and with every core on fresh instances of `backend` and compares
// the results bit for bit. Returns a description of the first difference, or "".
std::string ThreadDifference(const BackendRegistry& registry, const std::string& name,
                             const MatMulPlan& plan, const Tensor& a, const Tensor& b) {
  const int saved = omp_get_max_threads();
  std::vector<Tensor> results;
  for (int threads : {1, omp_get_num_procs()}) {
    omp_set_num_threads(threads);
    auto backend = registry.Create(name);
    if (!backend.ok()) break;
    auto primitive = (*backend)->Prepare(plan);
    if (!primitive.ok()) break;
    auto y = Tensor::Create(a.dtype(), plan.y_dims);
    if (!y.ok() || !(*primitive)->Execute(a.view(), b.view(), y->mutable_view()).ok()) break;
    results.push_back(std::move(*y));
  }
  omp_set_num_threads(saved);
  if (results.size() != 2) return "";
  if (std::memcmp(results[0].raw_data(), results[1].raw_data(), results[0].NumBytes()) == 0) {
    return "";
  }
  const conformance::Comparison c =
      conformance::Compare(results[1].view(), results[0].view(), conformance::Tolerance{0, 0});
  return "1 thread and " + std::to_string(omp_get_num_procs()) +
         " threads differ bit for bit: " + c.Describe();
}

// The significand bits and the normal exponent range of a float dtype.
struct FloatFormat {
  int digits, min_exponent, max_exponent;
  double Ulp(double x) const {  // The spacing at |x| (the subnormal spacing near 0).
    const int exponent = x == 0 ? min_exponent : std::max(std::ilogb(x), min_exponent);
    return std::ldexp(1.0, exponent - digits + 1);
  }
  double MaxFinite() const { return std::ldexp(2.0 - std::ldexp(1.0, 1 - digits), max_exponent); }
};

template <DType D>
constexpr FloatFormat FormatOf() {
  if constexpr (D == DType::kFloat16) {
    return {11, -14, 15};
  } else if constexpr (D == DType::kBFloat16) {
    return {8, -126, 127};
  } else {
    using T = CppType<D>;
    return {std::numeric_limits<T>::digits, std::numeric_limits<T>::min_exponent - 1,
            std::numeric_limits<T>::max_exponent - 1};
  }
}

template <DType D>
ResultError MeasureErrorTyped(TensorView y, const OracleResult& oracle,
                              const OracleBounds& bounds) {
  using T = CppType<D>;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const T* got = y.Data<T>();
  const T* rounded = oracle.y.view().Data<T>();
  constexpr FloatFormat kFormat = FormatOf<D>();
  const double max_finite = kFormat.MaxFinite();
  auto examine = [&](std::int64_t begin, std::int64_t end) {
    ResultError out;
    for (std::int64_t i = begin; i < end; ++i) {
      const double exact = oracle.exact[static_cast<std::size_t>(i)];
      const ElementBound bound = bounds[static_cast<std::size_t>(i)];
      if (!std::isfinite(exact) || bound.special) continue;
      const double radius = bound.radius;
      // Overflow possible: the bound reaches an infinity, and no error size means anything.
      if (std::isinf(radius) || std::fabs(exact) + radius > max_finite) continue;
      const double g = ToDouble(got[i]);
      out.bound_fraction = std::max(out.bound_fraction.value_or(0), 0.0);
      // The correctly rounded value is the best a result can be: no error to report.
      if (g == ToDouble(rounded[i])) continue;
      const double miss = std::isfinite(g) ? std::fabs(g - exact) : kInf;
      out.max_ulp = std::max(out.max_ulp, miss / kFormat.Ulp(exact));
      // The judgement's own interval (WithinBound): the fraction is > 1 exactly where it failed.
      out.bound_fraction = std::max(*out.bound_fraction, BoundFraction(D, bound, g));
    }
    return out;
  };
  // Maxima: the order of the ranges does not matter.
  return ReduceInOrder<ResultError>(
      y.NumElements(), examine, [](ResultError& left, ResultError&& right) {
        left.max_ulp = std::max(left.max_ulp, right.max_ulp);
        if (right.bound_fraction) {
          left.bound_fraction = std::max(left.bound_fraction.value_or(0), *right.bound_fraction);
        }
      });
}

}  // namespace

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank > 0 ? rank - 1 : 0)];
}

ResultError MeasureError(TensorView y, const OracleResult& oracle, const OracleBounds& bounds) {
  if (!IsFloat(y.dtype) || oracle.exact.size() != static_cast<std::size_t>(y.NumElements()) ||
      bounds.size() != oracle.exact.size()) {
    return {};
  }
  return VisitDType(y.dtype, [&](auto tag) -> ResultError {
    constexpr DType kD = decltype(tag)::value;
    if constexpr (kD == DType::kFloat || kD == DType::kDouble || kD == DType::kFloat16 ||
                  kD == DType::kBFloat16) {
      return MeasureErrorTyped<kD>(y, oracle, bounds);
    } else {
      return {};
    }
  });
}

Outcome RunOne(Backend& backend, const Tensor& a, const Tensor& b, const Arithmetic& arithmetic,
               const conformance::Tolerance& tolerance, const std::atomic<bool>* cancel) {
  Outcome out;
  auto plan = PlanMatMul({a.dtype(), a.dims(), b.dims()});
  if (!plan.ok()) {
    out.message = plan.status().ToString();
    return out;
  }
  OracleOptions oracle_options;
  oracle_options.cancel = cancel;
  auto oracle = ExactMatMul(*plan, a.view(), b.view(), oracle_options);
  if (!oracle.ok()) {
    out.message = oracle.status().ToString();
    return out;
  }
  return RunPrepared(backend, *plan, a, b, *oracle, OracleBounds(*oracle, arithmetic, plan->k),
                     tolerance);
}

std::string FuzzCaseName(DType dtype, std::string_view values) {
  return "fuzz/" + std::string(DTypeName(dtype)) + "/" + std::string(values);
}

namespace {

// Per (backend index, dtype).
using BackendDType = std::pair<std::size_t, DType>;

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
    TrackExpectations();
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

  // Adds an outcome per XFAIL entry of the expectations; xfail_index_ maps each entry to it (-1:
  // a SKIP entry).
  void TrackExpectations() {
    if (options_.expectations == nullptr) return;
    for (const conformance::Expectation& e : options_.expectations->entries) {
      if (e.kind != conformance::Expectation::Kind::kXFail) {
        xfail_index_.push_back(-1);
        continue;
      }
      xfail_index_.push_back(static_cast<int>(report_.expectations.size()));
      report_.expectations.push_back({e.case_pattern, e.backend_pattern, e.reason, e.link});
    }
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

  // The expectation entry matching the result of `problem` on backend `bi`, or null.
  const conformance::Expectation* Expected(std::size_t bi, const Problem& problem) const {
    if (options_.expectations == nullptr) return nullptr;
    return options_.expectations->Find(FuzzCaseName(problem.a.dtype(), problem.values), names_[bi]);
  }

  void RunOnBackend(std::size_t bi, std::int64_t index, const Problem& problem,
                    const MatMulPlan& plan, const OracleResult& oracle) {
    Backend& backend = *backends_[bi];
    BackendStats& stats = report_.stats.backends[bi];
    const DType dtype = problem.a.dtype();
    const Arithmetic arithmetic = backend.DeclaredArithmetic(dtype);
    const conformance::Expectation* expected = Expected(bi, problem);
    ExpectationOutcome* expected_outcome = nullptr;
    if (expected != nullptr) {
      const int entry = xfail_index_[expected - options_.expectations->entries.data()];
      if (entry < 0) {
        ++stats.verdicts[Verdict::kSkip];
        return;
      }
      expected_outcome = &report_.expectations[entry];
      ++expected_outcome->matched;
    }
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
    auto& [ulps, fractions] = errors_[{bi, dtype}];
    ulps.push_back(error.max_ulp);
    if (error.bound_fraction) fractions.push_back(*error.bound_fraction);
    auto& [special_results, special_wrong] = specials_[{bi, dtype}];
    if (special_elements > 0) {
      ++special_results;
      if (!specials_correct) ++special_wrong;
    }
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
    if (expected_outcome != nullptr &&
        conformance::ApplyXFail(outcome.verdict, options_.rule) == Verdict::kXFail) {
      // Declared: shown and exported like any failure, not counted as one.
      ++expected_outcome->failures;
      ++stats.verdicts[Verdict::kXFail];
      return "XFAIL";
    }
    if (conformance::FailsUnder(outcome.verdict, options_.rule)) {
      ++report_.stats.failures;
      return std::string(VerdictName(outcome.verdict));
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

  // Shrinks the failing problem into `f` (its minimal problem, message and worst element). A stop
  // request cuts shrinking short (shrink_timed_out); before its first step, the problem as it
  // failed is kept.
  void ShrinkInto(Finding& f, Backend& backend, const Problem& problem,
                  const Arithmetic& arithmetic, const Outcome& outcome) {
    ShrinkOptions shrink;
    shrink.seconds = options_.shrink ? options_.shrink_seconds : 0;
    shrink.arithmetic = arithmetic;
    shrink.tolerance = options_.tolerance;
    shrink.cancel = &cancel_;
    const Verdict original = outcome.verdict;
    shrink.keeps_failing = [original](Verdict v) {
      return v == original || (original != Verdict::kError && v == Verdict::kFail);
    };
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
          written = conformance::WriteFileAtomically(
              dir / "README.md", ExportReadme(options_, f, dir, library_path, driver_command));
        }
        return written.ok() ? dir.string() : "(not written: " + written.ToString() + ")";
      });
    }
    if (log_ != nullptr) Log(f);
  }

  void Log(const Finding& f) {
    *log_ << f.kind << " " << f.backend << " " << DTypeName(f.dtype) << " " << f.original.ToString()
          << " (" << f.form << ", " << f.values << ")\n"
          << "  minimal: " << f.minimal.ToString() << " after " << f.shrink_steps << " shrink steps"
          << (f.shrink_timed_out ? " (time limit)" : "") << "\n"
          << "  " << f.message << "\n"
          << "  replay: " << f.replay << "\n";
    if (!f.expectation.empty()) *log_ << "  expected failure: " << f.expectation << "\n";
    if (!f.exported.empty()) *log_ << "  exported: " << f.exported << "\n";
  }

  // Problems by dtype, the accuracy statistics and the run's time.
  void Summarize() {
    for (const auto& [dtype, count] : by_dtype_) {
      report_.stats.problems_by_dtype.emplace_back(std::string(DTypeName(dtype)), count);
    }
    for (auto& [key, values] : errors_) {
      auto& [ulps, fractions] = values;
      ErrorStats e;
      e.backend = names_[key.first];
      e.dtype = key.second;
      e.problems = static_cast<std::int64_t>(ulps.size());
      e.p99_ulp = Percentile(ulps, 0.99);
      e.worst_ulp = ulps.empty() ? 0 : ulps.back();
      if (!fractions.empty()) {
        e.p99_bound_fraction = Percentile(fractions, 0.99);
        e.worst_bound_fraction = fractions.back();
      }
      if (auto it = specials_.find(key); it != specials_.end()) {
        e.special_problems = it->second.first;
        e.special_wrong = it->second.second;
      }
      report_.error_stats.push_back(std::move(e));
    }
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
  std::vector<int> xfail_index_;
  Clock::time_point start_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::map<DType, std::int64_t> by_dtype_;
  // Every result's worst ULP error and bound fraction.
  std::map<BackendDType, std::pair<std::vector<double>, std::vector<double>>> errors_;
  // Results with NaN/inf inputs reaching Y, and those with a wrong IEEE special.
  std::map<BackendDType, std::pair<std::int64_t, std::int64_t>> specials_;
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
