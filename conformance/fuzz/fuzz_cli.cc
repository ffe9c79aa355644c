#include "mm/conformance/fuzz/fuzz_cli.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/auto_expectations.h"
#include "mm/conformance/fuzz/fair.h"
#include "mm/conformance/fuzz/fuzz_merge.h"
#include "mm/conformance/fuzz/fuzz_report_reader.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/report/output_file.h"
#include "mm/conformance/shape_classes/shape_classes.h"
#include "mm/conformance/stop_signals.h"
#include "mm/conformance/tools/cli_options.h"
#include "mm/engine/testdata/onnx_matmul_examples.h"
#include "mm/version.h"

namespace mm::fuzz {
namespace {

namespace cli = conformance::cli;
using nlohmann::ordered_json;

constexpr const char* kDescription =
    R"(mm-fuzz: differential fuzzing of the MatMul backends against an exact oracle.

Generates random MatMul problems from --seed (every numpy.matmul form, edge sizes, wide K, value
families from small integers to extremes, NaN/inf and integer wraparound), runs each on every
selected backend with Y poisoned before every execute, and judges each result by two rules:
ONNX's fixed tolerance (|got - expected| <= atol + rtol |expected|) and the K-aware error bound of
the backend's declared accumulation type (gamma_K sum|a||b| + half an ULP of the output;
engine/error_bound.h). Verdicts: PASS (both hold), FAIL (neither), BOUND (outside the tolerance,
within the bound), IMPRECISE (within the tolerance, beyond the bound), UNSUPPORTED, ERROR.
Each failure is shrunk to a minimal problem and printed with the command line that replays it.)";

constexpr const char* kFooter = R"(Environment:
  OMP_WAIT_POLICY  when unset, the tool runs itself again with it passive: idle OpenMP threads
                   sleep between cases instead of spinning; a value you set is kept

Exit codes:
  0  nothing failed
  1  any FAIL or ERROR; IMPRECISE under --tolerance bound (the default); BOUND under
     --tolerance onnx; a thread-count difference under --require-deterministic
  2  usage error or unwritable output (merge: a missing, repeated or foreign shard)

Examples:
  mm-fuzz --seed 7 --cases 20000                      # every backend, every dtype
  mm-fuzz --backend onednn --dtype bfloat16 --time 60 --export-dir findings
  mm-fuzz generate --out corpus --cases 10000 --seed 1   # fair under ONNX's rule
  mm-fuzz export-builtin --out builtin                # the built-in cases, as node tests
  mm-fuzz --seed 7 --cases 100000 --shard 2/4 --json s2.json   # one of 4 shards
  mm-fuzz merge --json campaign.json s1.json s2.json s3.json s4.json)";

struct CliOptions {
  FuzzOptions fuzz;
  std::vector<std::string> dtypes;
  std::string tolerance = "bound";
  bool no_shrink = false, quiet = false, version = false;
  std::string json;
  std::string expectations;               // --expectations FILE, else MM_EXPECTATIONS.
  std::vector<std::string> backend_libs;  // Plugins to load (after MM_BACKEND_LIBS's).
  std::vector<std::string> backend_cmds;  // Drivers, "NAME=COMMAND" (--backend-cmd).
  // generate
  std::string out_dir;
  std::int64_t generate_cases = 100;
  std::int64_t cases_per_dtype = 0;  // generate --cases-per-dtype N; 0: --cases decides.
  bool keep_unfair = false;
  bool overwrite = false;  // generate --overwrite: write into a directory that is not empty.
  bool sharded = false;    // --shard given (1/1 included): the report is a shard's.
  bool large = false;      // --large: the large-shape family (--large-products, else sized).
  // merge
  std::vector<std::string> merge_inputs;
};

std::string Join(const std::vector<std::string>& items) { return cli::Joined(items); }

// A validator for an integer option of type T (>= 0): decimal digits only, no sign, within T's
// range; the value is rewritten in canonical decimal so CLI11's conversion reads the same number.
template <class T>
CLI::Validator DecimalInteger() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        T x = 0;
        const char* end = v.data() + v.size();
        const auto [ptr, ec] = std::from_chars(v.data(), end, x);
        if (v.empty() || v[0] == '-' || ec != std::errc() || ptr != end || x < 0) {
          return "'" + v + "' is not an integer from 0 to " +
                 std::to_string(std::numeric_limits<T>::max());
        }
        v = std::to_string(x);
        return "";
      },
      "");
}

// The per-problem records a report keeps (FuzzOptions::max_error_records); a shard keeps all of
// them, so that merged percentiles come from every record.
const std::int64_t kErrorRecordLimit = FuzzOptions{}.max_error_records;

std::unique_ptr<CLI::App> MakeApp(CliOptions& o, const std::vector<std::string>& backends,
                                  CLI::App*& generate, CLI::App*& merge) {
  auto app = std::make_unique<CLI::App>(kDescription, "mm-fuzz");
  app->footer(kFooter);
  app->formatter(std::make_shared<cli::HelpFormatter>());
  app->get_formatter()->label("OPTIONS", "options");
  app->get_formatter()->column_width(28);
  app->option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::string> dtype_names;
  for (DType d : kAllDTypes) dtype_names.emplace_back(DTypeName(d));
  const auto dtype_check = CLI::Validator(
      [](std::string& v) -> std::string {
        auto d = DTypeFromName(v);
        return d.ok() ? "" : d.status().message();
      },
      "");
  // Decimal digits only, in range, rewritten in canonical form: CLI11 converts with strtoull's
  // base 0, which reads "010" as 8, wraps "-1" and saturates what overflows, so two different
  // seeds would name one campaign.
  const auto positive = DecimalInteger<std::int64_t>();
  const auto seed_check = DecimalInteger<std::uint64_t>();

  auto add_problem_options = [&](CLI::App& a) {
    a.option_defaults()->group("Problems");
    a.add_option("--seed", o.fuzz.seed,
                 "random seed; the same seed gives the same problems on "
                 "any machine (default 1)")
        ->option_text("S")
        ->transform(seed_check);
    a.add_option("--first", o.fuzz.first, "index of the first problem (default 0)")
        ->option_text("I")
        ->transform(positive);
    a.add_option_function<std::vector<std::string>>(
         "--dtype",
         [&o](const std::vector<std::string>& names) {
           for (const auto& n : names) cli::AppendOnce(o.dtypes, n);
         },
         "only this dtype (repeatable; default: all of " + Join(dtype_names) + ")")
        ->option_text("NAME")
        ->check(dtype_check)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    a.add_option("--max-elements", o.fuzz.generator.max_elements,
                 "largest element count of A, B and Y (default 16384)")
        ->option_text("N")
        ->transform(positive);
    a.add_flag("--large", o.large,
               "the large-shape family only: K up to 16384, A, B and Y up to 16M elements, "
               "2-D, batched, broadcast and matrix-vector forms, judged by the fast oracle");
    a.add_option("--large-products", o.fuzz.generator.large_products,
                 "with --large: products (batch*M*N*K) per problem (default: sized to --time "
                 "and the threads, else 2^36 = 4096^3)")
        ->option_text("N")
        ->transform(positive);
  };

  add_problem_options(*app);
  app->add_option("--cases", o.fuzz.cases,
                  "number of problems (default 1000; with --time, at "
                  "most this many)")
      ->option_text("N")
      ->transform(positive);
  app->add_option("--time", o.fuzz.seconds, "time budget in seconds, shrinking included")
      ->option_text("SECONDS")
      ->check(cli::FiniteNonNegative());
  app->add_option_function<std::string>(
         "--shard",
         [&o](const std::string& v) {
           conformance::ParseShard(v, o.fuzz.shard);
           o.sharded = true;
         },
         "run shard I of N (1-based): problems first + i with i mod N = I - 1, a disjoint 1/N "
         "of the campaign, the same on every machine; combine the shards' --json reports with "
         "'mm-fuzz merge'")
      ->option_text("I/N")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            conformance::Shard shard;
            auto error = conformance::ParseShard(v, shard);
            return error ? *error : "";
          },
          ""));
  app->option_defaults()->group("Backends");
  app->add_option_function<std::vector<std::string>>(
         "--backend",
         [&o](const std::vector<std::string>& names) {
           for (const auto& n : names) cli::AppendOnce(o.fuzz.backends, n);
         },
         "run this backend (repeatable; default: all of " + Join(backends) +
             " and MM_BACKEND_LIBS's plugins, or, when --backend-lib or --backend-cmd is given, "
             "only the backends those name)")
      ->option_text("NAME")
      ->check(cli::NonEmpty())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--backend-lib", o.backend_libs,
                  "load the backend plugin at PATH (see docs/plugins.md); repeatable. "
                  "MM_BACKEND_LIBS (colon-separated paths) is loaded first. A plugin that cannot "
                  "be loaded is a usage error (2) naming the file.")
      ->option_text("PATH")
      ->check(cli::NonEmpty())
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--backend-cmd", o.backend_cmds,
                  "start COMMAND, a driver speaking mm's runtime protocol (a MatMul of another "
                  "runtime; see docs/runtime-protocol.md), as backend NAME; repeatable. A driver "
                  "that cannot start or says no valid hello is a usage error (2).")
      ->option_text("NAME=COMMAND")
      ->check(cli::NonEmpty())
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_flag("--check-threads", o.fuzz.check_threads,
                "also run each problem at 1 thread and at all cores on fresh backends and report "
                "results that differ bit for bit (a finding, not a failure)");
  app->add_flag("--require-deterministic", o.fuzz.require_deterministic,
                "with --check-threads: a bitwise difference is a failure");
  app->option_defaults()->group("Judging");
  app->add_option("--tolerance", o.tolerance,
                  "which rule decides the exit code: 'bound' (default: BOUND passes, IMPRECISE "
                  "fails) or 'onnx' (BOUND fails, IMPRECISE passes)")
      ->option_text("bound|onnx")
      ->check(CLI::IsMember({"bound", "onnx"}));
  app->add_option("--rtol", o.fuzz.tolerance.rtol, "ONNX relative tolerance (default 1e-3)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  app->add_option("--atol", o.fuzz.tolerance.atol, "ONNX absolute tolerance (default 1e-7)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  app->option_defaults()->group("Findings");
  app->add_flag("--no-shrink", o.no_shrink, "report failures as found, unshrunk");
  app->add_option("--shrink-time", o.fuzz.shrink_seconds,
                  "time limit for shrinking each failure (default 2 s)")
      ->option_text("SECONDS")
      ->check(cli::FiniteNonNegative());
  app->add_option("--max-findings", o.fuzz.max_findings,
                  "shrink and report at most N failures; later ones are counted (default 20)")
      ->option_text("N")
      ->transform(positive);
  app->add_option("--export-dir", o.fuzz.export_dir,
                  "write each minimal failing problem there as an ONNX node test")
      ->option_text("DIR")
      ->check(cli::NonEmpty());
  app->add_option("--expectations", o.expectations,
                  "known deviations: mm-conformance's expectations file (docs/conformance.md), "
                  "matched by case 'fuzz/<dtype>/<value family>' and backend. A failure an XFAIL "
                  "entry matches is shown and exported as XFAIL, not counted as a failure; an "
                  "XFAIL entry this run did not see is reported (a fixed library, or a problem "
                  "not reached). Default: MM_EXPECTATIONS")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  app->option_defaults()->group("Output");
  app->add_option("--json", o.json, "write the findings and the run's statistics as JSON")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  app->add_flag("-q,--quiet", o.quiet, "print only the summary and the findings");
  app->add_flag("--version", o.version, "print the version and exit");
  app->set_help_flag("-h,--help", "print this help and exit")->group("Output");

  generate = app->add_subcommand("generate", "write random problems as ONNX node tests");
  generate->formatter(app->get_formatter());
  generate->footer(
      "Writes DIR/test_mm_fuzz_s<seed>_<dtype>_<index>/ (model.onnx, test_data_set_0/input_0.pb,\n"
      "input_1.pb, output_0.pb = the exact product correctly rounded to the dtype), and\n"
      "DIR/README.md and DIR/manifest.json saying which rule the corpus is fair under: a corpus\n"
      "for any runtime, byte-identical for the same seed.\n"
      "By default only fair problems are written: every implementation that sums in float32\n"
      "(double for double) in any order passes them under ONNX's rule (--rtol, --atol; NaN\n"
      "equals NaN). Problem index I that is not fair is replaced by the next index of the seed;\n"
      "the manifest lists each replaced index and why.\n"
      "DIR must be new or empty, unless --overwrite is given.");
  generate->option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  generate->add_option("--out", o.out_dir, "directory to write test_mm_fuzz_* cases into")
      ->option_text("DIR")
      ->required()
      ->check(cli::NonEmpty());
  generate->add_flag("--overwrite", o.overwrite,
                     "write into DIR even if it is not empty (a corpus written before, or any "
                     "other files): files of the same names are replaced, others are left as they "
                     "are");
  CLI::Option* generate_cases =
      generate->add_option("--cases", o.generate_cases, "number of cases (default 100)")
          ->option_text("N")
          ->transform(positive);
  generate
      ->add_option("--cases-per-dtype", o.cases_per_dtype,
                   "N cases of every dtype selected (all, or those of --dtype), instead of "
                   "--cases' random mix; case I of a dtype is still problem I of the seed for "
                   "that dtype (replayed with --first I --cases 1 --dtype DTYPE); not with --cases")
      ->option_text("N")
      ->transform(positive)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v == "0" ? "'0' cases of each dtype would write nothing; give N >= 1" : "";
          },
          ""))
      ->excludes(generate_cases);
  generate->add_flag("--keep-unfair", o.keep_unfair,
                     "also write problems a correct implementation may fail under ONNX's "
                     "tolerance (overflow, order-dependent NaN/inf, a K-aware bound beyond it): "
                     "for runs judged by the bound (mm-conformance --tolerance bound)");
  generate
      ->add_option("--rtol", o.fuzz.tolerance.rtol,
                   "relative tolerance the corpus is fair under (default 1e-3)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  generate
      ->add_option("--atol", o.fuzz.tolerance.atol,
                   "absolute tolerance the corpus is fair under (default 1e-7)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  add_problem_options(*generate);

  merge = app->add_subcommand(
      "merge", "combine the --json reports of shards 1/N .. N/N into the campaign's report");
  merge->formatter(app->get_formatter());
  merge->footer(
      "Every shard exactly once, all of one campaign (same version and options), or a usage\n"
      "error (2) naming the report. The merged report is the unsharded campaign's (counts,\n"
      "findings, per-problem records, percentiles from every record, exit code); its seconds\n"
      "are the shards' sum. Exits with the campaign's exit code.");
  merge->option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  merge->add_option("--json", o.json, "write the merged report there")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  merge->add_flag("-q,--quiet", o.quiet, "print only the summary");
  merge->add_option("reports", o.merge_inputs, "the shards' JSON reports")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return app;
}

ordered_json Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

ordered_json ToJson(const FuzzOptions& options, const std::vector<std::string>& dtypes,
                    const std::string& tolerance, bool sharded, const FuzzReport& report,
                    int exit_code) {
  ordered_json j;
  j["tool"] = "mm-fuzz";
  j["version"] = MM_VERSION;
  j["options"] = {{"seed", options.seed},
                  {"first", options.first},
                  {"cases", options.cases},
                  {"time", options.seconds},
                  {"backends", options.backends},
                  {"dtypes", dtypes},
                  {"tolerance", tolerance},
                  {"rtol", options.tolerance.rtol},
                  {"atol", options.tolerance.atol},
                  {"max_elements", options.generator.max_elements},
                  {"large_products", options.generator.large_products},
                  {"check_threads", options.check_threads},
                  {"require_deterministic", options.require_deterministic},
                  {"max_findings", options.max_findings}};
  if (sharded) {
    j["shard"] = {{"index", options.shard.index}, {"count", options.shard.count}};
  }
  if (report.interrupted_by != 0) {
    j["interrupted"] = {{"signal_number", report.interrupted_by},
                        {"problems", report.stats.problems},
                        {"of", options.cases}};
  }
  const FuzzStats& s = report.stats;
  ordered_json stats = {{"problems", s.problems},
                        {"results", s.results},
                        {"elements", s.elements},
                        {"unbounded_elements", s.unbounded_elements},
                        {"failures", s.failures},
                        {"seconds", s.seconds},
                        {"shrink_seconds", s.shrink_seconds},
                        {"problems_per_second",
                         Number(s.seconds > s.shrink_seconds ? static_cast<double>(s.problems) /
                                                                   (s.seconds - s.shrink_seconds)
                                                             : 0.0)}};
  stats["problems_by_dtype"] = ordered_json::object();
  for (const auto& [dtype, count] : s.problems_by_dtype) stats["problems_by_dtype"][dtype] = count;
  stats["backends"] = ordered_json::object();
  for (const BackendStats& b : s.backends) {
    ordered_json counts = ordered_json::object();
    for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kBound, Verdict::kImprecise,
                      Verdict::kUnsupported, Verdict::kError}) {
      counts[std::string(VerdictName(v))] = b.verdicts[v];
    }
    counts["NONDETERMINISTIC"] = b.nondeterministic;
    counts["XFAIL"] = b.verdicts[Verdict::kXFail];
    counts["SKIP"] = b.verdicts[Verdict::kSkip];
    stats["backends"][b.name] = counts;
  }
  // The same verdicts per backend and dtype: {backend: {dtype: {verdict: count}}}.
  stats["by_dtype"] = ordered_json::object();
  for (const BackendStats& b : s.backends) {
    ordered_json per_dtype = ordered_json::object();
    for (const auto& [dtype, counts] : b.by_dtype) {
      ordered_json verdicts = ordered_json::object();
      for (const auto& [verdict, count] : counts)
        verdicts[std::string(VerdictName(verdict))] = count;
      per_dtype[std::string(DTypeName(dtype))] = verdicts;
    }
    stats["by_dtype"][b.name] = per_dtype;
  }
  j["stats"] = stats;
  // Accuracy, for the comparison report (docs/benchmarks.md): float dtypes only (integers are
  // judged exactly; their failures are findings).
  const auto optional_number = [](const std::optional<double>& v) -> ordered_json {
    return v ? Number(*v) : ordered_json(nullptr);
  };
  j["statistics"] = ordered_json::array();
  for (const ErrorStats& e : report.error_stats) {
    j["statistics"].push_back({{"backend", e.backend},
                               {"dtype", DTypeName(e.dtype)},
                               {"problems", e.problems},
                               {"worst_ulp", Number(e.worst_ulp)},
                               {"p99_ulp", Number(e.p99_ulp)},
                               {"worst_bound_fraction", optional_number(e.worst_bound_fraction)},
                               {"p99_bound_fraction", optional_number(e.p99_bound_fraction)},
                               {"special_problems", e.special_problems},
                               {"special_wrong", e.special_wrong}});
  }
  j["problems"] = ordered_json::array();
  for (const ErrorRecord& r : report.errors) {
    j["problems"].push_back({{"index", r.index},
                             {"backend", r.backend},
                             {"dtype", DTypeName(r.dtype)},
                             {"k", r.k},
                             {"max_ulp", Number(r.error.max_ulp)},
                             {"bound_fraction", optional_number(r.error.bound_fraction)}});
  }
  j["problems_capped"] = report.errors_capped;
  j["problems_limit"] = kErrorRecordLimit;
  j["findings"] = ordered_json::array();
  for (const Finding& f : report.findings) {
    ordered_json fj = {{"kind", f.kind},
                       {"expectation", f.expectation},
                       {"backend", f.backend},
                       {"dtype", DTypeName(f.dtype)},
                       {"seed", f.seed},
                       {"index", f.index},
                       {"form", f.form},
                       {"values", f.values},
                       {"a_shape", f.original.a_dims},
                       {"b_shape", f.original.b_dims},
                       {"minimal_a_shape", f.minimal.a_dims},
                       {"minimal_b_shape", f.minimal.b_dims},
                       {"shrink_steps", f.shrink_steps},
                       {"shrink_timed_out", f.shrink_timed_out},
                       {"message", f.message},
                       {"replay", f.replay},
                       {"exported", f.exported}};
    if (f.worst) {
      fj["worst"] = {{"index", f.worst->index},
                     {"expected", f.worst->expected},
                     {"got", f.worst->actual},
                     {"abs_error", Number(f.worst->abs_error)},
                     {"bound", Number(f.worst->allowed)}};
    }
    j["findings"].push_back(fj);
  }
  j["expectations"] = ordered_json::array();
  for (const ExpectationOutcome& e : report.expectations) {
    j["expectations"].push_back({{"case", e.case_pattern},
                                 {"backend", e.backend_pattern},
                                 {"reason", e.reason},
                                 {"link", e.link},
                                 {"matched", e.matched},
                                 {"failures", e.failures}});
  }
  if (!report.error.empty()) j["error"] = report.error;
  j["exit_code"] = exit_code;
  return j;
}

// What auto runs on, as absolute paths: a replay line runs in another directory too.
FuzzOptions::AutoContext AutoContextOf(const AutoOptions& options,
                                       const std::string& expectations) {
  auto absolute = [](const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).string();
  };
  std::string exclude;
  for (const std::string& name : options.exclude) exclude += (exclude.empty() ? "" : ",") + name;
  return {absolute(options.table_path), exclude, absolute(expectations)};
}

// Why a corpus is fair, in words, for its README and manifest.
std::string FairnessRule(const CliOptions& o) {
  const auto& t = o.fuzz.tolerance;
  if (o.keep_unfair) {
    return "none: every generated problem is kept (--keep-unfair), also those a correct "
           "implementation may fail under ONNX's tolerance; judge it by the K-aware error bound "
           "(mm-conformance --tolerance bound)";
  }
  return "ONNX's rule (|got - expected| <= atol + rtol |expected| with rtol " +
         conformance::FormatDouble(t.rtol) + ", atol " + conformance::FormatDouble(t.atol) +
         ", NaN equals NaN, integers exact) for any implementation that sums the products in "
         "float32 (double for double; float16 and bfloat16 widened to float32) in any order, "
         "subnormals flushed or not, and rounds once to the output type";
}

// Unless --overwrite: refuses a DIR that holds anything (its README.md would be replaced without a
// word), a corpus written there before included. Returns the usage error, or "".
std::string RefuseNonEmptyOut(const CliOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (o.overwrite || !fs::is_directory(o.out_dir, ec)) return "";
  fs::directory_iterator entries(o.out_dir, ec);
  if (ec) return "cannot read '" + o.out_dir + "': " + ec.message();
  if (entries == fs::directory_iterator()) return "";
  return "'" + o.out_dir + "' is not empty (it holds '" + entries->path().filename().string() +
         "'); give a new or empty directory, or --overwrite to write the corpus into it (files "
         "of the same names are replaced)";
}

// The cases of a corpus written so far, and the problems replaced as unfair.
struct Written {
  std::int64_t written = 0;
  ordered_json cases = ordered_json::array(), replaced = ordered_json::array();
};

// Writes `count` cases of `generator`'s problems (fair ones unless --keep-unfair) from index
// o.fuzz.first on into o.out_dir, adding them to `w`. Returns the exit code (kExitClean when all
// were written), with the error said on `err`.
int WriteCases(const CliOptions& o, const GeneratorOptions& generator, std::int64_t count,
               Written& w, std::ostream& err) {
  namespace fs = std::filesystem;
  // Never loop forever on options that make fair problems rare.
  constexpr std::int64_t kMaxReplacedInARow = 10000;
  std::int64_t written = 0, in_a_row = 0;
  for (std::int64_t index = o.fuzz.first; written < count; ++index) {
    Problem p = GenerateProblem(o.fuzz.seed, index, generator);
    auto plan = PlanMatMul(p.desc());
    auto oracle = plan.ok() ? ExactMatMul(*plan, p.a.view(), p.b.view())
                            : StatusOr<OracleResult>(plan.status());
    auto y = oracle.ok() ? CorrectlyRounded(*plan, p.a.view(), p.b.view(), *oracle)
                         : StatusOr<Tensor>(oracle.status());
    if (!y.ok()) {
      err << "mm-fuzz generate: problem " << index << ": " << y.status().ToString() << "\n";
      return kExitFailed;
    }
    const std::string dtype(DTypeName(p.a.dtype()));
    if (!o.keep_unfair) {
      const std::string reason =
          UnfairReason(*plan, p.a.view(), p.b.view(), *oracle, y->view(), o.fuzz.tolerance);
      if (!reason.empty()) {
        w.replaced.push_back({{"index", index},
                              {"dtype", dtype},
                              {"a_shape", p.a.dims()},
                              {"b_shape", p.b.dims()},
                              {"values", p.values},
                              {"reason", reason}});
        if (++in_a_row >= kMaxReplacedInARow) {
          err << "mm-fuzz generate: " << kMaxReplacedInARow
              << " problems in a row are not fair (up to index " << index
              << "); these options make fair problems too rare (see --keep-unfair)\n";
          return kExitFailed;
        }
        continue;
      }
    }
    in_a_row = 0;
    const std::string name =
        "test_mm_fuzz_s" + std::to_string(o.fuzz.seed) + "_" + dtype + "_" + std::to_string(index);
    const Status st =
        conformance::WriteMatMulNodeTest(fs::path(o.out_dir) / name, p.a, p.b, *y, "mm-fuzz");
    if (!st.ok()) {
      err << "mm-fuzz generate: " << st.message() << "\n";
      return kExitUsage;
    }
    w.cases.push_back({{"case", name},
                       {"index", index},
                       {"dtype", dtype},
                       {"form", p.form},
                       {"values", p.values},
                       {"a_shape", p.a.dims()},
                       {"b_shape", p.b.dims()}});
    ++written;
    ++w.written;
  }
  return kExitClean;
}

int Generate(const CliOptions& o, std::ostream& out, std::ostream& err) {
  namespace fs = std::filesystem;
  if (const std::string refused = RefuseNonEmptyOut(o); !refused.empty()) {
    err << "mm-fuzz generate: " << refused << "\n";
    return kExitUsage;
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) {
    err << "mm-fuzz generate: cannot create '" << o.out_dir << "': " << ec.message() << "\n";
    return kExitUsage;
  }
  GeneratorOptions generator = o.fuzz.generator;
  for (const auto& name : o.dtypes) generator.dtypes.push_back(DTypeFromName(name).value());
  Written w;
  if (o.cases_per_dtype > 0) {
    // One pass per dtype: its problems are the seed's for that dtype alone, so each dtype gets
    // exactly N and every case still replays by its index.
    std::vector<DType> dtypes = generator.dtypes;
    if (dtypes.empty()) dtypes.assign(kAllDTypes.begin(), kAllDTypes.end());
    for (DType dtype : dtypes) {
      generator.dtypes = {dtype};
      if (const int code = WriteCases(o, generator, o.cases_per_dtype, w, err);
          code != kExitClean) {
        return code;
      }
    }
  } else if (const int code = WriteCases(o, generator, o.generate_cases, w, err);
             code != kExitClean) {
    return code;
  }
  const std::int64_t written = w.written;
  const ordered_json& cases = w.cases;
  const ordered_json& replaced = w.replaced;
  // No time, host or path: the same seed gives the same bytes everywhere.
  ordered_json manifest;
  manifest["tool"] = "mm-fuzz generate";
  manifest["version"] = MM_VERSION;
  manifest["seed"] = o.fuzz.seed;
  manifest["first"] = o.fuzz.first;
  manifest["cases"] = written;
  if (o.cases_per_dtype > 0) manifest["cases_per_dtype"] = o.cases_per_dtype;
  manifest["dtypes"] = o.dtypes;
  manifest["max_elements"] = o.fuzz.generator.max_elements;
  if (o.large) manifest["large_products"] = o.fuzz.generator.large_products;
  manifest["fair_under"] = o.keep_unfair ? "none" : "onnx";
  manifest["rtol"] = o.fuzz.tolerance.rtol;
  manifest["atol"] = o.fuzz.tolerance.atol;
  manifest["rule"] = FairnessRule(o);
  manifest["expected_output"] =
      "the exact product of the inputs, correctly rounded to the dtype (nearest even); IEEE's "
      "NaN or infinity where a NaN or infinite input reaches the element";
  manifest["replaced"] = replaced;
  manifest["case_list"] = cases;
  std::ostringstream readme;
  readme << "# MatMul corpus generated by mm-fuzz\n\n"
         << written << " ONNX node tests (`test_mm_fuzz_s<seed>_<dtype>_<index>/`), seed "
         << o.fuzz.seed << ", problem indices from " << o.fuzz.first << ", written by `mm-fuzz "
         << MM_VERSION << "`:\n\n```sh\nmm-fuzz generate --out DIR "
         << (o.cases_per_dtype > 0 ? "--cases-per-dtype " + std::to_string(o.cases_per_dtype)
                                   : "--cases " + std::to_string(o.generate_cases))
         << " --seed " << o.fuzz.seed;
  if (o.fuzz.first != 0) readme << " --first " << o.fuzz.first;
  for (const auto& d : o.dtypes) readme << " --dtype " << d;
  if (o.fuzz.generator.max_elements != GeneratorOptions{}.max_elements) {
    readme << " --max-elements " << o.fuzz.generator.max_elements;
  }
  if (o.large) readme << " --large --large-products " << o.fuzz.generator.large_products;
  if (o.fuzz.tolerance.rtol != conformance::Tolerance{}.rtol) {
    readme << " --rtol " << conformance::FormatDouble(o.fuzz.tolerance.rtol);
  }
  if (o.fuzz.tolerance.atol != conformance::Tolerance{}.atol) {
    readme << " --atol " << conformance::FormatDouble(o.fuzz.tolerance.atol);
  }
  if (o.keep_unfair) readme << " --keep-unfair";
  readme << "\n```\n\nFair under: " << FairnessRule(o) << ".\n\n"
         << "Expected outputs: " << manifest["expected_output"].get<std::string>() << ".\n\n";
  if (!o.keep_unfair) {
    readme << replaced.size()
           << " generated problems were not fair and were replaced by the next index of the "
              "seed; `manifest.json` lists them with the reason (`replaced`) and every case "
              "(`case_list`). Case `..._<index>` is problem `<index>` of the seed: `mm-fuzz "
              "--seed "
           << o.fuzz.seed << " --first <index> --cases 1 --dtype <dtype>` fuzzes it again.\n";
  }
  for (Status written :
       {conformance::WriteFileAtomically(fs::path(o.out_dir) / "manifest.json",
                                         manifest.dump(2) + "\n"),
        conformance::WriteFileAtomically(fs::path(o.out_dir) / "README.md", readme.str())}) {
    if (!written.ok()) {
      err << "mm-fuzz generate: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  out << "mm-fuzz generate: wrote " << written << " cases ("
      << (o.cases_per_dtype > 0 ? std::to_string(o.cases_per_dtype) + " per dtype, " : "")
      << "seed " << o.fuzz.seed << ", first " << o.fuzz.first << ") to " << o.out_dir;
  if (o.keep_unfair) {
    out << ", unfair problems kept\n";
  } else {
    out << ", fair under ONNX's rule; " << replaced.size() << " unfair problems replaced\n";
  }
  return kExitClean;
}

// The export-builtin subcommand: writes mm's built-in cases as node tests into o.out_dir.
CLI::App* AddExportBuiltin(CLI::App& app, CliOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "export-builtin",
      "write mm-conformance's built-in cases (the ONNX MatMul page's worked examples and the "
      "shape-class catalogue) as ONNX node tests, for a runtime judged from its outputs "
      "(mm-conformance --outputs)");
  sub->formatter(app.get_formatter());
  sub->footer(
      "Writes DIR/test_cc_matmul_*/ and DIR/mm_shape_*/ (model.onnx, test_data_set_N/input_0.pb,\n"
      "input_1.pb, output_0.pb): the cases mm-conformance runs as built-ins, with the same names.\n"
      "A sequence case (mm_shape_seq_*) has several data sets and a model with symbolic dims:\n"
      "run them in order through one session.");
  sub->option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  sub->add_option("--out", o.out_dir, "directory to write the cases into")
      ->option_text("DIR")
      ->required()
      ->check(cli::NonEmpty());
  return sub;
}

// The node test of a shape-class case: its data sets in order; a sequence's model declares every
// dim symbolic ("a_0", "b_1", "y_0"...), so a runtime runs all of them through one model.
StatusOr<conformance::NodeTest> ShapeCaseNodeTest(const conformance::ShapeCase& shape_case) {
  conformance::ModelProtoOptions options;
  options.opset = conformance::OpsetFor(shape_case.dtype);
  options.graph_name = shape_case.name;
  options.producer_name = "mm-fuzz";
  conformance::NodeTest test;
  for (std::size_t d = 0; d < shape_case.shape_class->problems.size(); ++d) {
    MM_ASSIGN_OR_RETURN(conformance::DataSet set, conformance::ShapeCaseDataSet(shape_case, d));
    if (d == 0) {
      test.model = conformance::MatMulModelProto(GetDTypeInfo(shape_case.dtype).onnx_enum,
                                                 set.a.dims(), set.b.dims(), set.y.dims(), options);
    }
    test.data_sets.push_back(
        {{conformance::TensorToProto(set.a, "a"), conformance::TensorToProto(set.b, "b")},
         {conformance::TensorToProto(set.y, "y")}});
  }
  if (shape_case.shape_class->sequence()) {
    onnx::GraphProto& graph = *test.model.mutable_graph();
    for (auto* values : {graph.mutable_input(), graph.mutable_output()}) {
      for (onnx::ValueInfoProto& value : *values) {
        auto* dims = value.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
        for (int i = 0; i < dims->size(); ++i) {
          dims->at(i).set_dim_param(value.name() + "_" + std::to_string(i));
        }
      }
    }
  }
  return test;
}

int ExportBuiltin(const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto examples = BuiltinExamples();
  if (!examples.ok()) {
    err << "mm-fuzz export-builtin: " << examples.status().message() << "\n";
    return kExitFailed;
  }
  for (const ExampleCase& example : *examples) {
    const Status st =
        conformance::WriteMatMulNodeTest(std::filesystem::path(o.out_dir) / example.name, example.a,
                                         example.b, example.y, "mm-fuzz");
    if (!st.ok()) {
      err << "mm-fuzz export-builtin: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  const std::vector<conformance::ShapeCase> shape_cases = conformance::ShapeCases();
  for (const conformance::ShapeCase& shape_case : shape_cases) {
    auto test = ShapeCaseNodeTest(shape_case);
    if (!test.ok()) {
      err << "mm-fuzz export-builtin: " << shape_case.name << ": " << test.status().message()
          << "\n";
      return kExitFailed;
    }
    const Status st =
        conformance::WriteNodeTest(std::filesystem::path(o.out_dir) / shape_case.name, *test);
    if (!st.ok()) {
      err << "mm-fuzz export-builtin: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  out << "mm-fuzz export-builtin: wrote " << examples->size() + shape_cases.size() << " cases ("
      << examples->size() << " examples of the ONNX MatMul page, " << shape_cases.size()
      << " of the shape-class catalogue) to " << o.out_dir << "\n";
  return kExitClean;
}

int Merge(const CliOptions& o, std::ostream& out, std::ostream& err) {
  std::vector<ShardReport> shards;
  for (const std::string& path : o.merge_inputs) {
    auto shard = ReadFuzzReport(path);
    if (!shard.ok()) {
      err << "mm-fuzz merge: " << shard.status().message() << "\n";
      return kExitUsage;
    }
    shards.push_back(std::move(shard).value());
  }
  auto merged = MergeFuzzReports(shards);
  if (!merged.ok()) {
    err << "mm-fuzz merge: " << merged.status().message() << "\n";
    return kExitUsage;
  }
  const ordered_json& m = *merged;
  const ordered_json& s = m.at("stats");
  if (!o.quiet) {
    for (const auto& [name, counts] : s.at("backends").items()) {
      out << "  " << std::left << std::setw(10) << name;
      for (const auto& [verdict, n] : counts.items()) out << " " << verdict << " " << n;
      out << "\n";
    }
    for (const auto& f : m.at("findings")) {
      out << f.at("kind").get<std::string>() << " " << f.at("backend").get<std::string>() << " "
          << f.at("dtype").get<std::string>() << "\n  replay: " << f.at("replay").get<std::string>()
          << "\n";
    }
  }
  out << "summary: " << shards.size() << " shards merged: seed " << m.at("options").at("seed")
      << ", " << s.at("problems") << " problems, " << s.at("results") << " results, "
      << s.at("failures") << " failing, " << m.at("findings").size() << " findings; exit "
      << m.at("exit_code") << "\n";
  if (!o.json.empty()) {
    if (Status written = conformance::WriteFileAtomically(o.json, m.dump(2) + "\n");
        !written.ok()) {
      err << "mm-fuzz merge: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return m.at("exit_code").get<int>();
}

}  // namespace

int RunFuzzCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
               std::ostream& out, std::ostream& err) {
  CliOptions o;
  CLI::App* generate = nullptr;
  CLI::App* merge = nullptr;
  std::unique_ptr<CLI::App> app = MakeApp(o, builtin.DefaultNames(), generate, merge);
  CLI::App* export_builtin = AddExportBuiltin(*app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << (generate->parsed()         ? generate->help()
            : merge->parsed()          ? merge->help()
            : export_builtin->parsed() ? export_builtin->help()
                                       : app->help());
    return kExitClean;
  } catch (const CLI::ParseError& e) {
    err << "mm-fuzz: " << e.what() << "\nTry 'mm-fuzz --help'.\n";
    return kExitUsage;
  }
  if (o.version) {
    out << "mm-fuzz " << MM_VERSION << "\n";
    return kExitClean;
  }
  // The last problem's index, first + cases - 1, must be an index too: a replay line names it.
  const std::int64_t cases = !generate->parsed()     ? o.fuzz.cases
                             : o.cases_per_dtype > 0 ? o.cases_per_dtype
                                                     : o.generate_cases;
  if (cases > 0 && o.fuzz.first > std::numeric_limits<std::int64_t>::max() - (cases - 1)) {
    err << "mm-fuzz: --first " << o.fuzz.first << " with --cases " << cases
        << ": the last problem's index would be past " << std::numeric_limits<std::int64_t>::max()
        << "\nTry 'mm-fuzz --help'.\n";
    return kExitUsage;
  }
  if (o.fuzz.generator.large_products > 0 && !o.large) {
    err << "mm-fuzz: --large-products needs --large\nTry 'mm-fuzz --help'.\n";
    return kExitUsage;
  }
  if (o.large && o.fuzz.generator.large_products == 0) {
    o.fuzz.generator.large_products =
        LargeProductsFor(generate->parsed() ? 0 : o.fuzz.seconds, omp_get_max_threads());
  }
  if (generate->parsed()) return Generate(o, out, err);
  if (export_builtin->parsed()) return ExportBuiltin(o, out, err);
  if (merge->parsed()) return Merge(o, out, err);

  // The built-in backends plus the plugins of MM_BACKEND_LIBS and --backend-lib and the drivers of
  // --backend-cmd.
  BackendRegistry registry = builtin;
  Status loaded = RegisterBackendLibraries(registry, BackendLibrariesToLoad({}));
  const std::vector<std::string> before_flags = registry.Names();
  if (loaded.ok()) loaded = RegisterBackendLibraries(registry, o.backend_libs);
  if (loaded.ok()) loaded = runtime::RegisterCommandBackends(registry, o.backend_cmds);
  if (!loaded.ok()) {
    err << "mm-fuzz: " << loaded.message() << "\n";
    return kExitUsage;
  }
  // As in mm-conformance: what --backend-lib and --backend-cmd name is, without --backend, all
  // that runs (a plugin under test is not drowned in the built-ins' results).
  if (o.fuzz.backends.empty()) o.fuzz.backends = cli::NewNames(before_flags, registry.Names());

  for (const std::string& name : o.fuzz.backends) {
    if (const std::string why = registry.UnavailableReason(name); !why.empty()) {
      err << "mm-fuzz: backend '" << name << "' is not available on this machine: " << why << "\n";
      return kExitUsage;
    }
    if (!registry.Contains(name)) {
      err << "mm-fuzz: unknown backend '" << name << "'; this build has: " << Join(registry.Names())
          << "\nTry 'mm-fuzz --help'.\n";
      return kExitUsage;
    }
  }
  std::optional<conformance::Expectations> expectations;
  if (o.expectations.empty()) {
    if (const char* env = std::getenv("MM_EXPECTATIONS"); env != nullptr) o.expectations = env;
  }
  if (!o.expectations.empty()) {
    auto parsed = conformance::LoadExpectations(o.expectations);
    if (!parsed.ok()) {
      err << "mm-fuzz: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    expectations = std::move(parsed).value();
    o.fuzz.expectations = &*expectations;
  }
  // auto never chooses a backend the expectations declare deviating, and its replay lines say
  // what it ran on.
  std::optional<ScopedAutoDeviations> auto_deviations;
  if (expectations) auto_deviations.emplace(conformance::AutoDeviationsOf(*expectations));
  o.fuzz.auto_context = AutoContextOf(AutoOptions::FromEnvironment(), o.expectations);
  for (const auto& name : o.dtypes) o.fuzz.generator.dtypes.push_back(DTypeFromName(name).value());
  o.fuzz.rule = o.tolerance == "onnx" ? Rule::kOnnx : Rule::kBound;
  o.fuzz.shrink = !o.no_shrink;
  if (o.sharded) o.fuzz.max_error_records = std::numeric_limits<std::int64_t>::max();
  // Options that change which problems are generated or how they are judged go into every
  // replay line.
  std::ostringstream replay;
  if (o.fuzz.generator.max_elements != GeneratorOptions{}.max_elements) {
    replay << " --max-elements " << o.fuzz.generator.max_elements;
  }
  if (o.large) replay << " --large --large-products " << o.fuzz.generator.large_products;
  if (o.fuzz.rule == Rule::kOnnx) replay << " --tolerance onnx";
  if (o.fuzz.tolerance.rtol != conformance::Tolerance{}.rtol) {
    replay << " --rtol " << conformance::FormatDouble(o.fuzz.tolerance.rtol);
  }
  if (o.fuzz.tolerance.atol != conformance::Tolerance{}.atol) {
    replay << " --atol " << conformance::FormatDouble(o.fuzz.tolerance.atol);
  }
  o.fuzz.replay_options = replay.str().empty() ? "" : replay.str().substr(1);

  std::ostringstream findings_log;
  FuzzReport report;
  {
    // SIGINT/SIGTERM stop the run before its next problem and the JSON is written with what was
    // done; a second signal ends the process at once.
    conformance::StopOnSignals stop;
    o.fuzz.stop = stop.flag();
    report = RunFuzz(o.fuzz, registry, &findings_log);
  }
  const int code = report.interrupted_by ? 128 + report.interrupted_by : report.ExitCode(o.fuzz);
  if (report.interrupted_by) {
    err << "mm-fuzz: interrupted by signal " << report.interrupted_by << " after "
        << report.stats.problems << " of " << o.fuzz.cases << " problems\n";
  }
  out << findings_log.str();
  if (!report.error.empty()) err << "mm-fuzz: " << report.error << "\n";

  const FuzzStats& s = report.stats;
  const double run_seconds = s.seconds - s.shrink_seconds;
  if (!o.quiet) {
    for (const BackendStats& b : s.backends) {
      out << "  " << std::left << std::setw(10) << b.name;
      for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kBound, Verdict::kImprecise,
                        Verdict::kUnsupported, Verdict::kError}) {
        out << " " << VerdictName(v) << " " << b.verdicts[v];
      }
      if (o.fuzz.check_threads) out << " NONDETERMINISTIC " << b.nondeterministic;
      if (o.fuzz.expectations != nullptr)
        out << " XFAIL " << b.verdicts[Verdict::kXFail] << " SKIP " << b.verdicts[Verdict::kSkip];
      out << "\n";
    }
    out << "  problems by dtype:";
    for (const auto& [dtype, count] : s.problems_by_dtype) out << " " << dtype << " " << count;
    out << "\n";
  }
  // Every declared deviation, seen or not: a library that got fixed shows here (and as XPASS in
  // mm-conformance, which runs the deviation's minimal node test).
  for (const ExpectationOutcome& e : report.expectations) {
    out << "expected failure " << e.case_pattern << " on " << e.backend_pattern << ": "
        << (e.failures > 0 ? "XFAIL, seen " + std::to_string(e.failures) + " of " +
                                 std::to_string(e.matched) + " problems"
            : e.matched > 0 ? "not seen in " + std::to_string(e.matched) +
                                  " problems (XPASS? a fixed library, or no triggering problem)"
                            : "matched no problem")
        << "\n";
  }
  out << "summary: seed " << o.fuzz.seed;
  if (o.sharded) out << ", shard " << o.fuzz.shard.index << "/" << o.fuzz.shard.count;
  out << ", " << s.problems << " problems x " << s.backends.size() << " backends = " << s.results
      << " results, " << s.elements << " elements (" << s.unbounded_elements << " unbounded); "
      << s.failures << " failing, " << report.findings.size() << " findings; " << std::fixed
      << std::setprecision(2) << s.seconds << " s (" << std::setprecision(0)
      << (run_seconds > 0 ? static_cast<double>(s.problems) / run_seconds : 0.0)
      << " problems/s without shrinking); exit " << code << "\n";
  if (!o.json.empty()) {
    const std::string json =
        ToJson(o.fuzz, o.dtypes, o.tolerance, o.sharded, report, code).dump(2) + "\n";
    if (Status written = conformance::WriteFileAtomically(o.json, json); !written.ok()) {
      err << "mm-fuzz: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return code;
}

}  // namespace mm::fuzz
