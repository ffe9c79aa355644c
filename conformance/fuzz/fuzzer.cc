#include "mm/conformance/fuzz/fuzzer.h"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/fuzz/shrink.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/poison.h"
#include "mm/conformance/report/output_file.h"

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
                        const OracleResult& oracle, const std::vector<ElementBound>& bounds,
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
                    const OracleResult& oracle, const std::vector<ElementBound>& bounds,
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

// `word` as one word of a POSIX shell command: as it is when it holds only characters no shell
// treats specially, else in single quotes (a quote inside as '\'').
std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,@%", c) != nullptr;
  });
  if (plain) return word;
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
bool SpecialsCorrect(TensorView y, const std::vector<ElementBound>& bounds,
                     std::int64_t& elements) {
  if (bounds.size() != static_cast<std::size_t>(y.NumElements())) return true;
  bool correct = true;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!bounds[i].special) continue;
    ++elements;
    const double got = VisitDType(y.dtype, [&](auto tag) -> double {
      constexpr DType kD = decltype(tag)::value;
      if constexpr (kD == DType::kFloat || kD == DType::kDouble || kD == DType::kFloat16 ||
                    kD == DType::kBFloat16) {
        return ToDouble(y.Data<CppType<kD>>()[i]);
      } else {
        return 0;
      }
    });
    if (!WithinBound(y.dtype, bounds[i], got)) correct = false;
  }
  return correct;
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
                              const std::vector<ElementBound>& bounds) {
  using T = CppType<D>;
  ResultError out;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const T* got = y.Data<T>();
  const T* rounded = oracle.y.view().Data<T>();
  const std::int64_t n = y.NumElements();
  constexpr FloatFormat kFormat = FormatOf<D>();
  const double max_finite = kFormat.MaxFinite();
  for (std::int64_t i = 0; i < n; ++i) {
    const double exact = oracle.exact[static_cast<std::size_t>(i)];
    const ElementBound& bound = bounds[static_cast<std::size_t>(i)];
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
    // The judgement's own interval (WithinBound), so the fraction is > 1 exactly where it failed.
    out.bound_fraction = std::max(*out.bound_fraction, BoundFraction(D, bound, g));
  }
  return out;
}

}  // namespace

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank > 0 ? rank - 1 : 0)];
}

ResultError MeasureError(TensorView y, const OracleResult& oracle,
                         const std::vector<ElementBound>& bounds) {
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
               const conformance::Tolerance& tolerance) {
  Outcome out;
  auto plan = PlanMatMul({a.dtype(), a.dims(), b.dims()});
  if (!plan.ok()) {
    out.message = plan.status().ToString();
    return out;
  }
  auto oracle = ExactMatMul(*plan, a.view(), b.view());
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

FuzzReport RunFuzz(const FuzzOptions& options, const BackendRegistry& registry, std::ostream* log) {
  FuzzReport report;
  // Index into report.expectations of each entry of options.expectations (-1: a SKIP entry).
  std::vector<int> xfail_index;
  if (options.expectations != nullptr) {
    for (const conformance::Expectation& e : options.expectations->entries) {
      if (e.kind != conformance::Expectation::Kind::kXFail) {
        xfail_index.push_back(-1);
        continue;
      }
      xfail_index.push_back(static_cast<int>(report.expectations.size()));
      report.expectations.push_back({e.case_pattern, e.backend_pattern, e.reason, e.link});
    }
  }
  const Clock::time_point start = Clock::now();
  std::vector<std::string> names =
      options.backends.empty() ? registry.DefaultNames() : options.backends;
  std::vector<std::unique_ptr<Backend>> backends;
  for (const std::string& name : names) {
    auto backend = registry.Create(name);
    if (!backend.ok()) {
      report.error = "backend '" + name + "' cannot start: " + backend.status().ToString();
      return report;
    }
    backends.push_back(std::move(*backend));
    BackendStats stats;
    stats.name = name;
    report.stats.backends.push_back(std::move(stats));
  }
  std::map<DType, std::int64_t> by_dtype;
  // Per (backend index, dtype): every result's worst ULP error and bound fraction.
  std::map<std::pair<std::size_t, DType>, std::pair<std::vector<double>, std::vector<double>>>
      errors;
  // Per (backend index, dtype): results with NaN/inf inputs reaching Y, and those with a wrong
  // IEEE special.
  std::map<std::pair<std::size_t, DType>, std::pair<std::int64_t, std::int64_t>> specials;
  for (std::int64_t i = 0; i < options.cases; ++i) {
    if (i % options.shard.count != options.shard.index - 1) continue;
    if (options.stop != nullptr && *options.stop != 0) {
      report.interrupted_by = static_cast<int>(*options.stop);
      break;
    }
    if (options.seconds > 0 && SecondsSince(start) >= options.seconds) break;
    if (options.stop_after > 0 &&
        static_cast<std::int64_t>(report.findings.size()) >= options.stop_after) {
      break;
    }
    const std::int64_t index = options.first + i;
    Problem problem = GenerateProblem(options.seed, index, options.generator);
    const DType dtype = problem.a.dtype();
    ++by_dtype[dtype];
    ++report.stats.problems;
    auto plan = PlanMatMul(problem.desc());
    if (!plan.ok()) {  // The generator makes only valid problems; say so loudly if not.
      report.error = "generated an invalid problem (seed " + std::to_string(options.seed) +
                     ", index " + std::to_string(index) + "): " + plan.status().ToString();
      return report;
    }
    auto oracle = ExactMatMul(*plan, problem.a.view(), problem.b.view());
    if (!oracle.ok()) {
      report.error = "oracle: " + oracle.status().ToString();
      return report;
    }
    for (std::size_t bi = 0; bi < backends.size(); ++bi) {
      Backend& backend = *backends[bi];
      BackendStats& stats = report.stats.backends[bi];
      const Arithmetic arithmetic = backend.DeclaredArithmetic(dtype);
      const conformance::Expectation* expected = nullptr;
      ExpectationOutcome* expected_outcome = nullptr;
      if (options.expectations != nullptr) {
        expected = options.expectations->Find(FuzzCaseName(dtype, problem.values), names[bi]);
      }
      if (expected != nullptr) {
        const int entry = xfail_index[expected - options.expectations->entries.data()];
        if (entry < 0) {
          ++stats.verdicts[Verdict::kSkip];
          continue;
        }
        expected_outcome = &report.expectations[entry];
        ++expected_outcome->matched;
      }
      const std::vector<ElementBound> bounds = OracleBounds(*oracle, arithmetic, plan->k);
      Outcome outcome =
          RunPrepared(backend, *plan, problem.a, problem.b, *oracle, bounds, options.tolerance);
      ++report.stats.results;
      ++stats.by_dtype[dtype][outcome.verdict];
      // RunPrepared gives none of an expectations file's verdicts (XFAIL, XPASS, SKIP).
      ++stats.verdicts[outcome.verdict];
      const bool xfailed =
          expected_outcome != nullptr &&
          conformance::ApplyXFail(outcome.verdict, options.rule) == Verdict::kXFail;
      if (outcome.judgement) {
        report.stats.elements += outcome.judgement->bound.elements;
        report.stats.unbounded_elements += outcome.judgement->bound.unbounded;
        if (IsFloat(dtype)) {
          const ResultError error = MeasureError(outcome.y.view(), *oracle, bounds);
          auto& [ulps, fractions] = errors[{bi, dtype}];
          ulps.push_back(error.max_ulp);
          if (error.bound_fraction) fractions.push_back(*error.bound_fraction);
          std::int64_t special_elements = 0;
          const bool specials_correct = SpecialsCorrect(outcome.y.view(), bounds, special_elements);
          auto& [special_results, special_wrong] = specials[{bi, dtype}];
          if (special_elements > 0) {
            ++special_results;
            if (!specials_correct) ++special_wrong;
          }
          if (static_cast<std::int64_t>(report.errors.size()) < options.max_error_records) {
            report.errors.push_back({index, names[bi], dtype, plan->k, error});
          } else {
            report.errors_capped = true;
          }
        }
      }
      std::string kind;
      std::string thread_difference;
      if (xfailed) {
        // Declared: shown and exported like any failure, not counted as one.
        ++expected_outcome->failures;
        ++stats.verdicts[Verdict::kXFail];
        kind = "XFAIL";
      } else if (conformance::FailsUnder(outcome.verdict, options.rule)) {
        ++report.stats.failures;
        kind = std::string(VerdictName(outcome.verdict));
      } else if (options.check_threads && outcome.verdict != Verdict::kUnsupported) {
        thread_difference = ThreadDifference(registry, names[bi], *plan, problem.a, problem.b);
        if (!thread_difference.empty()) {
          ++stats.nondeterministic;
          kind = "NONDETERMINISTIC";
        }
      }
      if (kind.empty()) continue;
      if (static_cast<std::int64_t>(report.findings.size()) >= options.max_findings) continue;

      Finding f;
      f.kind = kind;
      if (kind == "XFAIL") f.expectation = expected->reason + " (" + expected->link + ")";
      f.backend = names[bi];
      f.seed = options.seed;
      f.index = index;
      f.dtype = dtype;
      f.form = problem.form;
      f.values = problem.values;
      f.original = problem.desc();
      const std::string library_path = PluginLibraryPath(backend);
      const std::string driver_command = runtime::DriverCommandOf(backend);
      f.replay = ReplayLine(options, f, library_path, driver_command);
      if (kind == "NONDETERMINISTIC") {
        f.minimal = f.original;
        f.a = Clone(problem.a);
        f.b = Clone(problem.b);
        f.message = thread_difference;
      } else {
        ShrinkOptions shrink;
        shrink.seconds = options.shrink ? options.shrink_seconds : 0;
        shrink.arithmetic = arithmetic;
        shrink.tolerance = options.tolerance;
        shrink.keeps_failing = [&, original = outcome.verdict](Verdict v) {
          return v == original || (original != Verdict::kError && v == Verdict::kFail);
        };
        const Clock::time_point shrink_start = Clock::now();
        ShrinkResult shrunk = Shrink(backend, problem.a, problem.b, shrink);
        report.stats.shrink_seconds += SecondsSince(shrink_start);
        f.shrink_steps = shrunk.steps;
        f.shrink_timed_out = shrunk.timed_out;
        f.minimal = {dtype, shrunk.a.dims(), shrunk.b.dims()};
        f.a = std::move(shrunk.a);
        f.b = std::move(shrunk.b);
        f.message = shrunk.outcome.message;
        if (shrunk.outcome.judgement) f.worst = shrunk.outcome.judgement->bound.worst;
      }
      if (auto min_plan = PlanMatMul(f.minimal); min_plan.ok()) {
        if (auto min_oracle = ExactMatMul(*min_plan, f.a.view(), f.b.view()); min_oracle.ok()) {
          f.expected = std::move(min_oracle->y);
        }
      }
      if (!options.export_dir.empty()) {
        const std::filesystem::path dir = std::filesystem::path(options.export_dir) / CaseName(f);
        Status written = conformance::WriteMatMulNodeTest(dir, f.a, f.b, f.expected, "mm-fuzz");
        if (written.ok()) {
          written = conformance::WriteFileAtomically(
              dir / "README.md", ExportReadme(options, f, dir, library_path, driver_command));
        }
        f.exported = written.ok() ? dir.string() : "(not written: " + written.ToString() + ")";
      }
      if (log) {
        *log << f.kind << " " << f.backend << " " << DTypeName(dtype) << " "
             << f.original.ToString() << " (" << f.form << ", " << f.values << ")\n"
             << "  minimal: " << f.minimal.ToString() << " after " << f.shrink_steps
             << " shrink steps" << (f.shrink_timed_out ? " (time limit)" : "") << "\n"
             << "  " << f.message << "\n"
             << "  replay: " << f.replay << "\n";
        if (!f.expectation.empty()) *log << "  expected failure: " << f.expectation << "\n";
        if (!f.exported.empty()) *log << "  exported: " << f.exported << "\n";
      }
      report.findings.push_back(std::move(f));
    }
  }
  for (const auto& [dtype, count] : by_dtype) {
    report.stats.problems_by_dtype.emplace_back(std::string(DTypeName(dtype)), count);
  }
  for (auto& [key, values] : errors) {
    auto& [ulps, fractions] = values;
    ErrorStats e;
    e.backend = names[key.first];
    e.dtype = key.second;
    e.problems = static_cast<std::int64_t>(ulps.size());
    e.p99_ulp = Percentile(ulps, 0.99);
    e.worst_ulp = ulps.empty() ? 0 : ulps.back();
    if (!fractions.empty()) {
      e.p99_bound_fraction = Percentile(fractions, 0.99);
      e.worst_bound_fraction = fractions.back();
    }
    if (auto it = specials.find(key); it != specials.end()) {
      e.special_problems = it->second.first;
      e.special_wrong = it->second.second;
    }
    report.error_stats.push_back(std::move(e));
  }
  report.stats.seconds = SecondsSince(start);
  return report;
}

}  // namespace mm::fuzz
