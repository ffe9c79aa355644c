#include "mm/conformance/fuzz/fuzz_cli.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "fuzz_commands.h"
#include "mm/conformance/cli/cli_support.h"
#include "mm/conformance/report/console_stream.h"
#include "mm/conformance/report/report_paths.h"
#include "mm/version.h"

namespace mm::fuzz {
namespace {

namespace cli = conformance::cli;

constexpr const char* kDescription =
    R"(mm-fuzz: differential fuzzing of the MatMul backends against an exact oracle.

Generates random MatMul problems from --seed (every numpy.matmul form, edge sizes, wide K, value
families from small integers to extremes, NaN/inf and integer wraparound), runs each on every
selected backend with Y poisoned before every execute, and judges each result by two rules:
ONNX's fixed tolerance (|got - expected| <= atol + rtol |expected|) and the K-aware error bound of
the backend's declared accumulation type (gamma_K sum|a||b| + half an ULP of the output;
mm/oracle/error_bound.h). Verdicts: PASS (both hold), FAIL (neither), BOUND (outside the tolerance,
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

std::string Join(const std::vector<std::string>& items) { return cli::Joined(items); }

// A validator for an integer option of type T (>= 0): decimal digits only, no sign, within T's
// range; the value is rewritten in canonical decimal so CLI11's conversion reads the same number.
// (CLI11 converts with strtoull's base 0, which reads "010" as 8, wraps "-1" and saturates what
// overflows, so two different seeds would name one campaign.)
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

// Usage: the name of a dtype.
CLI::Validator DTypeCheck() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        auto d = DTypeFromName(v);
        return d.ok() ? "" : d.status().message();
      },
      "");
}

// The application: mm-fuzz's help layout, and every option taking its last value.
void ConfigureApp(CLI::App& app) {
  app.footer(kFooter);
  app.formatter(std::make_shared<cli::HelpFormatter>());
  app.get_formatter()->label("OPTIONS", "options");
  app.get_formatter()->column_width(28);
  app.option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
}

// The options that choose the problems (the run's and generate's).
void AddProblemOptions(CLI::App& a, FuzzCliOptions& o) {
  std::vector<std::string> dtype_names;
  for (DType d : kAllDTypes) dtype_names.emplace_back(DTypeName(d));
  a.option_defaults()->group("Problems");
  a.add_option_function<std::string>(
       "--op", [&o](const std::string& v) { o.fuzz.op = family::OpFromName(v).value(); },
       "the operator: MatMul (default), Gemm, MatMulInteger or QLinearMatMul (its value families "
       "aim at its failure modes; docs/differential-fuzzing.md)")
      ->option_text("OP")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            auto op = family::OpFromName(v);
            return op.ok() ? "" : std::string(op.status().message());
          },
          ""));
  a.add_option("--seed", o.fuzz.seed,
               "random seed; the same seed gives the same problems on "
               "any machine (default 1)")
      ->option_text("S")
      ->transform(DecimalInteger<std::uint64_t>());
  a.add_option("--first", o.fuzz.first, "index of the first problem (default 0)")
      ->option_text("I")
      ->transform(DecimalInteger<std::int64_t>());
  a.add_option_function<std::vector<std::string>>(
       "--dtype",
       [&o](const std::vector<std::string>& names) {
         for (const auto& n : names) cli::AppendOnce(o.dtypes, n);
       },
       "only this dtype (repeatable; default: all of " + Join(dtype_names) + ")")
      ->option_text("NAME")
      ->check(DTypeCheck())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  a.add_option("--max-elements", o.fuzz.generator.max_elements,
               "largest element count of A, B and Y (default 16384)")
      ->option_text("N")
      ->transform(DecimalInteger<std::int64_t>());
  a.add_flag("--large", o.large,
             "the large-shape family only: K up to 16384, A, B and Y up to 16M elements, "
             "2-D, batched, broadcast and matrix-vector forms, judged by the fast oracle");
  a.add_option("--large-products", o.fuzz.generator.large_products,
               "with --large: products (batch*M*N*K) per problem (default: sized to --time "
               "and the threads, else 2^36 = 4096^3)")
      ->option_text("N")
      ->transform(DecimalInteger<std::int64_t>());
}

// How many problems, of which operator, for how long, which shard.
void AddCampaignOptions(CLI::App& app, FuzzCliOptions& o) {
  app.add_option("--cases", o.fuzz.cases,
                 "number of problems (default 1000; with --time, at "
                 "most this many)")
      ->option_text("N")
      ->transform(DecimalInteger<std::int64_t>());
  app.add_option("--time", o.fuzz.seconds, "time budget in seconds, shrinking included")
      ->option_text("SECONDS")
      ->check(cli::FiniteNonNegative());
  app.add_option_function<std::string>(
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
}

// Which backends run.
void AddBackendOptions(CLI::App& app, FuzzCliOptions& o, const std::vector<std::string>& backends) {
  app.option_defaults()->group("Backends");
  app.add_option_function<std::vector<std::string>>(
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
  app.add_option("--backend-lib", o.backend_libs,
                 "load the backend plugin at PATH (see docs/plugins.md); repeatable. "
                 "MM_BACKEND_LIBS (colon-separated paths) is loaded first. A plugin that cannot "
                 "be loaded is a usage error (2) naming the file.")
      ->option_text("PATH")
      ->check(cli::NonEmpty())
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--backend-cmd", o.backend_cmds,
                 "start COMMAND, a driver speaking mm's runtime protocol (a MatMul of another "
                 "runtime; see docs/runtime-protocol.md), as backend NAME; repeatable. A driver "
                 "that cannot start or says no valid hello is a usage error (2).")
      ->option_text("NAME=COMMAND")
      ->check(cli::NonEmpty())
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--check-threads", o.fuzz.check_threads,
               "also run each problem at 1 thread and at all cores on fresh backends and report "
               "results that differ bit for bit (a finding, not a failure)");
  app.add_flag("--require-deterministic", o.fuzz.require_deterministic,
               "with --check-threads: a bitwise difference is a failure");
}

// Which rule judges.
void AddJudgingOptions(CLI::App& app, FuzzCliOptions& o) {
  app.option_defaults()->group("Judging");
  app.add_option("--tolerance", o.tolerance,
                 "which rule decides the exit code: 'bound' (default: BOUND passes, IMPRECISE "
                 "fails) or 'onnx' (BOUND fails, IMPRECISE passes)")
      ->option_text("bound|onnx")
      ->check(CLI::IsMember({"bound", "onnx"}));
  app.add_option("--rtol", o.fuzz.tolerance.rtol, "ONNX relative tolerance (default 1e-3)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  app.add_option("--atol", o.fuzz.tolerance.atol, "ONNX absolute tolerance (default 1e-7)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
}

// What is done with a failure.
void AddFindingsOptions(CLI::App& app, FuzzCliOptions& o) {
  app.option_defaults()->group("Findings");
  app.add_flag("--no-shrink", o.no_shrink, "report failures as found, unshrunk");
  app.add_option("--shrink-time", o.fuzz.shrink_seconds,
                 "time limit for shrinking each failure (default 2 s)")
      ->option_text("SECONDS")
      ->check(cli::FiniteNonNegative());
  app.add_option("--max-findings", o.fuzz.max_findings,
                 "shrink and report at most N failures; later ones are counted (default 20)")
      ->option_text("N")
      ->transform(DecimalInteger<std::int64_t>());
  app.add_option("--export-dir", o.fuzz.export_dir,
                 "write each minimal failing problem there as an ONNX node test")
      ->option_text("DIR")
      ->check(cli::NonEmpty());
  app.add_option("--expectations", o.expectations,
                 "known deviations: mm-conformance's expectations file (docs/conformance.md), "
                 "matched by case 'fuzz/<dtype>/<value family>' (with --op: "
                 "'fuzz/<op>/<types>/<form>/<value family>') and backend. A failure an XFAIL "
                 "entry matches is shown and exported as XFAIL, not counted as a failure; an "
                 "XFAIL entry this run did not see is reported (a fixed library, or a problem "
                 "not reached). Default: MM_EXPECTATIONS")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
}

// What is printed and written.
void AddOutputOptions(CLI::App& app, FuzzCliOptions& o) {
  app.option_defaults()->group("Output");
  app.add_option("--json", o.json, "write the findings and the run's statistics as JSON")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  app.add_flag("-q,--quiet", o.quiet, "print only the summary and the findings");
  app.add_flag("--version", o.version, "print the version and exit");
  app.set_help_flag("-h,--help", "print this help and exit")->group("Output");
}

// The generate subcommand: a corpus of node tests.
CLI::App* AddGenerateCommand(CLI::App& app, FuzzCliOptions& o) {
  CLI::App* sub = app.add_subcommand("generate", "write random problems as ONNX node tests");
  sub->formatter(app.get_formatter());
  sub->footer(
      "Writes DIR/test_mm_fuzz_s<seed>_<dtype>_<index>/ (model.onnx, test_data_set_0/input_0.pb,\n"
      "input_1.pb, output_0.pb = the exact product correctly rounded to the dtype), and\n"
      "DIR/README.md and DIR/manifest.json saying which rule the corpus is fair under: a corpus\n"
      "for any runtime, byte-identical for the same seed.\n"
      "By default only fair problems are written: every implementation that sums in float32\n"
      "(double for double) in any order passes them under ONNX's rule (--rtol, --atol; NaN\n"
      "equals NaN). Problem index I that is not fair is replaced by the next index of the seed;\n"
      "the manifest lists each replaced index and why.\n"
      "DIR must be new or empty, unless --overwrite is given.\n"
      "With --op Gemm|MatMulInteger|QLinearMatMul: "
      "DIR/test_mm_fuzz_s<seed>_<op><version>_<types>_\n"
      "<index>/, the exact answer as output; --cases-per-dtype N writes N cases of each of the\n"
      "operator's signatures (version and types; docs/differential-fuzzing.md).");
  sub->option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  sub->add_option("--out", o.out_dir, "directory to write test_mm_fuzz_* cases into")
      ->option_text("DIR")
      ->required()
      ->check(cli::NonEmpty());
  sub->add_flag("--overwrite", o.overwrite,
                "write into DIR even if it is not empty (a corpus written before, or any "
                "other files): files of the same names are replaced, others are left as they "
                "are");
  CLI::Option* generate_cases =
      sub->add_option("--cases", o.generate_cases, "number of cases (default 100)")
          ->option_text("N")
          ->transform(DecimalInteger<std::int64_t>());
  sub->add_option("--cases-per-dtype", o.cases_per_dtype,
                  "N cases of every dtype selected (all, or those of --dtype), instead of "
                  "--cases' random mix; case I of a dtype is still problem I of the seed for "
                  "that dtype (replayed with --first I --cases 1 --dtype DTYPE); not with --cases")
      ->option_text("N")
      ->transform(DecimalInteger<std::int64_t>())
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v == "0" ? "'0' cases of each dtype would write nothing; give N >= 1" : "";
          },
          ""))
      ->excludes(generate_cases);
  sub->add_flag("--keep-unfair", o.keep_unfair,
                "also write problems a correct implementation may fail under ONNX's "
                "tolerance (overflow, order-dependent NaN/inf, a K-aware bound beyond it): "
                "for runs judged by the bound (mm-conformance --tolerance bound)");
  sub->add_option("--rtol", o.fuzz.tolerance.rtol,
                  "relative tolerance the corpus is fair under (default 1e-3)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  sub->add_option("--atol", o.fuzz.tolerance.atol,
                  "absolute tolerance the corpus is fair under (default 1e-7)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  AddProblemOptions(*sub, o);
  return sub;
}

// The merge subcommand: the shards' reports into the campaign's.
CLI::App* AddMergeCommand(CLI::App& app, FuzzCliOptions& o) {
  CLI::App* merge = app.add_subcommand(
      "merge", "combine the --json reports of shards 1/N .. N/N into the campaign's report");
  merge->formatter(app.get_formatter());
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
  return merge;
}

// The export-builtin subcommand: writes mm's built-in cases as node tests into o.out_dir.
CLI::App* AddExportBuiltin(CLI::App& app, FuzzCliOptions& o) {
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
// mm-fuzz's application and its subcommands, filling `o`.
struct App {
  std::unique_ptr<CLI::App> app;
  CLI::App* generate = nullptr;
  CLI::App* merge = nullptr;
  CLI::App* export_builtin = nullptr;
};

App MakeApp(FuzzCliOptions& o, const std::vector<std::string>& backends) {
  App a;
  a.app = std::make_unique<CLI::App>(kDescription, "mm-fuzz");
  CLI::App& app = *a.app;
  ConfigureApp(app);
  AddProblemOptions(app, o);
  AddCampaignOptions(app, o);
  AddBackendOptions(app, o, backends);
  AddJudgingOptions(app, o);
  AddFindingsOptions(app, o);
  AddOutputOptions(app, o);
  a.generate = AddGenerateCommand(app, o);
  a.merge = AddMergeCommand(app, o);
  a.export_builtin = AddExportBuiltin(app, o);
  return a;
}

// The usage error `message`, as mm-fuzz says one: kExitUsage.
int UsageError(const std::string& message, std::ostream& err) {
  err << "mm-fuzz: " << message << "\nTry 'mm-fuzz --help'.\n";
  return kExitUsage;
}

// Checks the options against each other and sizes --large's products when not given.
// --json checked before the run against what the run or merge reads (CheckReportPaths).
Status CheckFuzzReportPaths(const FuzzCliOptions& o) {
  if (o.command != FuzzCommand::kRun && o.command != FuzzCommand::kMerge) return OkStatus();
  std::vector<conformance::RunInput> inputs;
  for (const std::string& path : o.merge_inputs) inputs.push_back({"the shard report", path, ""});
  std::string expectations = o.expectations;
  if (const char* env = std::getenv("MM_EXPECTATIONS"); expectations.empty() && env != nullptr) {
    expectations = env;
  }
  if (o.command == FuzzCommand::kRun) {
    inputs.push_back({"the --expectations file", expectations, ""});
    for (const std::string& lib : o.backend_libs) {
      inputs.push_back({"the --backend-lib plugin", lib, ""});
    }
  }
  return conformance::CheckReportPaths({{"--json", o.json}}, inputs);
}

// What --op (not MatMul) cannot go with: --large and --check-threads (MatMul's), --dtype for the
// integer operators (they draw both int8 and uint8 themselves).
std::string OpConflict(const FuzzCliOptions& o) {
  const family::Op op = o.fuzz.op;
  if (op == family::Op::kMatMul) return "";
  const std::string with = "--op " + std::string(family::OpName(op)) + " with ";
  if (o.large) return with + "--large: the large family is MatMul's";
  if (o.fuzz.check_threads) return with + "--check-threads: thread checks are MatMul's";
  if (op != family::Op::kGemm && !o.dtypes.empty()) {
    return with + "--dtype: its problems draw int8 and uint8 for each side themselves";
  }
  return "";
}

std::optional<int> CheckOptions(FuzzCliOptions& o, std::ostream& err) {
  const bool generate = o.command == FuzzCommand::kGenerate;
  // The last problem's index, first + cases - 1, must be an index too: a replay line names it.
  const std::int64_t cases = !generate               ? o.fuzz.cases
                             : o.cases_per_dtype > 0 ? o.cases_per_dtype
                                                     : o.generate_cases;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (cases > 0 && o.fuzz.first > kMax - (cases - 1)) {
    return UsageError("--first " + std::to_string(o.fuzz.first) + " with --cases " +
                          std::to_string(cases) + ": the last problem's index would be past " +
                          std::to_string(kMax),
                      err);
  }
  if (const std::string conflict = OpConflict(o); !conflict.empty()) {
    return UsageError(conflict, err);
  }
  if (o.fuzz.generator.large_products > 0 && !o.large) {
    return UsageError("--large-products needs --large", err);
  }
  if (o.large && o.fuzz.generator.large_products == 0) {
    o.fuzz.generator.large_products =
        LargeProductsFor(generate ? 0 : o.fuzz.seconds, omp_get_max_threads());
  }
  if (Status paths = CheckFuzzReportPaths(o); !paths.ok())
    return UsageError(std::string(paths.message()), err);
  return std::nullopt;
}

}  // namespace

ParsedFuzzCli ParseFuzzCli(const std::vector<std::string>& args,
                           const std::vector<std::string>& backends, std::ostream& out,
                           std::ostream& err) {
  ParsedFuzzCli parsed;
  FuzzCliOptions& o = parsed.options;
  const App app = MakeApp(o, backends);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << (app.generate->parsed()         ? app.generate->help()
            : app.merge->parsed()          ? app.merge->help()
            : app.export_builtin->parsed() ? app.export_builtin->help()
                                           : app.app->help());
    parsed.exit_code = kExitClean;
    return parsed;
  } catch (const CLI::ParseError& e) {
    parsed.exit_code = UsageError(e.what(), err);
    return parsed;
  }
  if (o.version) {
    out << "mm-fuzz " << MM_VERSION << "\n";
    parsed.exit_code = kExitClean;
    return parsed;
  }
  o.command = app.generate->parsed()         ? FuzzCommand::kGenerate
              : app.export_builtin->parsed() ? FuzzCommand::kExportBuiltin
              : app.merge->parsed()          ? FuzzCommand::kMerge
                                             : FuzzCommand::kRun;
  parsed.exit_code = CheckOptions(o, err);
  return parsed;
}

}  // namespace mm::fuzz
