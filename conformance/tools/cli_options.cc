#include "mm/conformance/tools/cli_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "mm/conformance/report/report_paths.h"

namespace mm::conformance {
namespace {

constexpr const char* kDescription =
    R"(mm-conformance: does each MatMul backend compute what ONNX says (numpy.matmul)?

Loads ONNX node-test cases (a directory with model.onnx and test_data_set_N/{input_K,output_0}.pb),
runs every (case, data set) on every backend, and compares each result with the expected output
(pass iff |actual - expected| <= atol + rtol * |expected|; NaN equals NaN; inf must match; integers
exact; shape and dtype equal) and with the reference backend's result (three-way). Each result is
also judged against the exact product of its A and B, within the error bound of the backend's
declared arithmetic (gamma_K sum|a||b| plus half an ULP; mm/oracle/error_bound.h): PASS (both hold),
FAIL (neither), BOUND (outside the tolerance, within the bound), IMPRECISE (within the tolerance,
beyond the bound), UNSUPPORTED, ERROR. An expected output outside the bound of a computation in
its own type is reported as suspect data, never blamed on the backend.

Where cases come from (a name found twice: the first source wins, the other is shadowed):
  --data-dir DIR      the folders given (option below); then MM_ONNX_DATA and the defaults
                      are not used.
  MM_ONNX_DATA        colon-separated data directories, used when no --data-dir is given.
  defaults            when neither is given: /usr/share/libonnx-testdata/data/node (Debian's
                      libonnx-testdata) and third_party/onnx-testdata/node, when present.
  built-in cases      the 9 worked examples of the ONNX MatMul page (test_cc_matmul_*), always
                      appended last unless --no-builtin.
Models that are not MatMul cases are listed as skipped (with the reason), never run.)";

constexpr const char* kFooter = R"(Merging shard reports:
  mm-conformance merge R1.json R2.json ... [--json|--junit|--markdown FILE]
                      one report of shards 1/N .. N/N (each run with --json): the same results,
                      summary and exit code as the unsharded run; see mm-conformance merge --help

Environment:
  OMP_WAIT_POLICY  when unset, the tool runs itself again with it passive: idle OpenMP threads
                   sleep between cases instead of spinning; a value you set is kept

Exit codes:
  0  every selected result passed (UNSUPPORTED allowed unless --strict)
  1  any FAIL, ERROR or XPASS; BOUND (default) or IMPRECISE (--tolerance bound);
     UNSUPPORTED under --strict
  2  usage error, unwritable report, or no MatMul case found
  3  --require-official and an official case is missing or altered

Examples:
  mm-conformance                                      # default data, every backend
  MM_ONNX_DATA=../shared/onnx-node-tests/node mm-conformance --require-official
  mm-conformance --backend reference --filter 'bcast|4d' --junit conformance.xml
  mm-conformance --backend-lib ./libmy_matmul.so     # your MatMul, a plugin, alone
  mm-conformance --outputs rt=out/ --outputs-arithmetic rt=float32 --backend rt --backend onednn)";

// A repeatable option whose values are appended to `list`.
CLI::Option* AddList(CLI::App& app, const std::string& name, std::vector<std::string>& list,
                     const std::string& text, const std::string& help) {
  return app
      .add_option_function<std::vector<std::string>>(
          name,
          [&list](const std::vector<std::string>& values) {
            for (const std::string& v : values) list.push_back(v);
          },
          help)
      ->option_text(text)
      ->check(cli::NonEmpty())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// Two report options naming one file would leave only the report written last.
template <class Options>
std::optional<std::string> DistinctReports(const Options& options) {
  const Status distinct = CheckDistinctOutputs(
      {{"--json", options.json}, {"--junit", options.junit}, {"--markdown", options.markdown}});
  if (distinct.ok()) return std::nullopt;
  return distinct.message();
}

// Accepts a finite number of seconds > 0.
CLI::Validator PositiveSeconds() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        double parsed = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
        if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(parsed) ||
            parsed <= 0) {
          return "'" + v + "' is not a number of seconds > 0";
        }
        return "";
      },
      "");
}

// Accepts "I/N" as ParseShard does.
CLI::Validator ShardText() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        Shard shard;
        auto error = ParseShard(v, shard);
        return error ? *error : "";
      },
      "");
}

// Accepts an exit code of 4..255 (0-3 have meanings).
CLI::Validator SkipExitCode() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        int code = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
        if (ec != std::errc() || end != v.data() + v.size() || code < 4 || code > 255) {
          return "'" + v + "' must be an integer in 4..255 (0-3 have meanings)";
        }
        return "";
      },
      "");
}

// The "Backends" group: plugins, drivers and outputs trees.
void AddBackendOptions(CLI::App& app, CliOptions& options) {
  app.option_defaults()->group("Backends");
  AddList(app, "--backend-lib", options.backend_libs, "PATH",
          "load the backend plugin at PATH (a shared object built against "
          "mm/mm_backend_plugin.h; see docs/plugins.md); repeatable. Without --backend only "
          "the plugins given here (and --outputs' backends) run; name built-in backends with "
          "--backend to run them too. MM_BACKEND_LIBS (colon-separated paths) is loaded first "
          "(its plugins run by default unless --backend-lib or --outputs is given). A plugin that "
          "cannot be loaded is a usage error (2) naming the file and the problem.");
  AddList(app, "--backend-cmd", options.backend_cmds, "NAME=COMMAND",
          "start COMMAND, a driver speaking mm's runtime protocol (a MatMul of another runtime, "
          "e.g. a Python function through the SDK mm_runtime; see docs/runtime-protocol.md), as "
          "backend NAME; repeatable. Like --backend-lib's, its backends run alone unless "
          "--backend names others. Each worker starts its own driver; --timeout and "
          "--memory-limit hold for it too. A driver that cannot start or says no valid hello is "
          "a usage error (2).");

  AddList(app, "--outputs", options.outputs, "NAME=DIR",
          "judge the outputs another runtime wrote under DIR (DIR/<case>/test_data_set_N/"
          "output_0.pb, and optionally DIR/mm_outputs.json recording what it failed or refused) "
          "as backend NAME, like any backend; repeatable. Without --backend only the trees given "
          "here (and --backend-lib's plugins) are judged; name built-in backends with --backend "
          "to run them too. A missing, extra, malformed or wrongly typed or shaped output is an "
          "ERROR naming the file. See docs/conformance.md.");
  AddList(app, "--outputs-arithmetic", options.outputs_arithmetic,
          "NAME=ACC[+flush][,DTYPE:ACC[+flush]]",
          "the arithmetic the runtime of --outputs NAME declares, for its error bound: ACC "
          "(e.g. float32: every float dtype narrower than ACC accumulates in ACC, the others in "
          "themselves) and DTYPE:ACC items (float16:float32), later items overriding earlier "
          "ones. '+flush' after an item declares, for its dtypes, what a plugin's "
          "flushes_subnormals does: subnormal inputs may be read as zero and subnormal partial "
          "sums flushed to zero (bfloat16:float32+flush, an AVX512-BF16 dot product). Default: "
          "each dtype in itself, no flush, the loosest bound a correct implementation meets.");
}

// The "Selecting" group: which backends and cases run.
void AddSelectingOptions(CLI::App& app, CliOptions& options,
                         const std::vector<std::string>& backend_names) {
  app.option_defaults()->group("Selecting");
  app.add_option_function<std::vector<std::string>>(
         "--backend",
         [&options](const std::vector<std::string>& names) {
           for (const std::string& name : names) cli::AppendOnce(options.backends, name);
         },
         "run this backend (repeatable; default: all of " + cli::Joined(backend_names) +
             " and MM_BACKEND_LIBS's plugins, or, when --backend-lib, --backend-cmd or --outputs "
             "is given, only the backends those name)")
      ->option_text("NAME")
      ->check(cli::NonEmpty())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  AddList(app, "--case", options.cases, "NAME",
          "run only the case with exactly this name (repeatable)");
  app.add_option_function<std::string>(
         "--filter",
         [&options](const std::string& v) { options.filter = NamePattern::Compile(v).value(); },
         "run only cases whose name matches REGEX (RE2 syntax, partial match)")
      ->option_text("REGEX")
      ->check(cli::NonEmpty())
      ->check(cli::Regex());
  app.add_option_function<std::string>(
         "--exclude",
         [&options](const std::string& v) { options.exclude = NamePattern::Compile(v).value(); },
         "skip cases whose name matches REGEX")
      ->option_text("REGEX")
      ->check(cli::NonEmpty())
      ->check(cli::Regex());
  app.add_flag("--no-builtin", options.no_builtin, "leave out the built-in cases");
}

// The "Judging" group: tolerances, the rule, strictness, expectations.
void AddJudgingOptions(CLI::App& app, CliOptions& options) {
  app.option_defaults()->group("Judging");
  app.add_option("--rtol", options.tolerance.rtol, "relative tolerance (default 1e-3, ONNX's)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  app.add_option("--atol", options.tolerance.atol, "absolute tolerance (default 1e-7, ONNX's)")
      ->option_text("X")
      ->check(cli::FiniteNonNegative());
  app.add_option("--tolerance", options.rule,
                 "which rule decides the exit code: 'onnx' (default: ONNX's fixed tolerance; "
                 "BOUND fails, IMPRECISE passes) or 'bound' (the K-aware error bound of the "
                 "backend's declared arithmetic; BOUND passes, IMPRECISE fails)")
      ->option_text("onnx|bound")
      ->check(CLI::IsMember({"onnx", "bound"}));
  app.add_flag("--strict", options.strict, "count UNSUPPORTED as a failure");
  app.add_flag("--require-official", options.require_official,
               "exit 3 unless all 7 official ONNX MatMul node tests are found with their "
               "official bytes (SHA-256 of every file is built in)");

  app.add_option("--expectations", options.expectations,
                 "known failures: a JSON file of {case, backend, expect: XFAIL|SKIP, reason, "
                 "link} entries (patterns are globs). A declared failure that fails is XFAIL, one "
                 "that passes is XPASS and fails the run; SKIP is not run; entries matching "
                 "nothing are reported. Default: $MM_EXPECTATIONS when set")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
}

// The "Running" group's isolation and limits.
void AddRunningOptions(CLI::App& app, CliOptions& options) {
  app.option_defaults()->group("Running");
  app.add_flag("--no-isolate", options.no_isolate,
               "run every result in this process, one at a time (e.g. under a debugger); by "
               "default results run in reused worker processes, so a crash or hang costs only "
               "its own result (an ERROR naming the signal or the timeout)");
  app.add_flag("--self-check", options.self_check,
               "run only the self-check, which proves this harness can fail: deliberately wrong "
               "backends through the same judgement, worker isolation, reports and exit codes, "
               "on the default cases (and --data-dir's) plus cases built in memory; prints a "
               "line per planted fault with the verdict it got and the one it needed (--quiet: "
               "only the misses and the summary); exit 0 when every fault is caught so, 1 "
               "naming each missed one");
  app.add_option("-j,--jobs", options.jobs,
                 "worker processes running results in parallel (default: the number of cores); "
                 "reports list results in the same order whatever N is")
      ->option_text("N")
      ->check(CLI::Range(1, 1024));
  app.add_option("--timeout", options.timeout_seconds,
                 "a result running longer is an ERROR \"timed out after SECONDS s\" and its "
                 "worker is replaced (default 60; isolated runs)")
      ->option_text("SECONDS")
      ->check(PositiveSeconds());
  app.add_option_function<std::int64_t>(
         "--memory-limit", [&options](std::int64_t mib) { options.memory_limit_mib = mib; },
         "resident memory allowed per worker, in MiB: a result that goes past it is an ERROR "
         "naming the limit and its worker is replaced; a worker past 3/4 of it after a case is "
         "replaced before the next (default: half the machine's memory shared among the "
         "--jobs workers, at least 256; 0: no limit; isolated runs)")
      ->option_text("MIB")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
}

// The "Running" group's --resume and --shard.
void AddResumeOptions(CLI::App& app, CliOptions& options) {
  app.add_option("--resume", options.resume,
                 "keep the finished results of REPORT.json (the --json report of an interrupted "
                 "or partial run with the same cases, backends, tolerance and expectations; "
                 "anything else is refused, naming the difference) and run only the rest: the "
                 "reports are those of an uninterrupted run. REPORT.json may also be this run's "
                 "--json")
      ->option_text("REPORT.json")
      ->check(CLI::ExistingFile);
  app.add_option_function<std::string>(
         "--shard", [&options](const std::string& v) { ParseShard(v, options.shard); },
         "run shard I of N (1-based): a deterministic 1/N of the cases, by a hash of the case "
         "name, the same on every machine; merge the shards' --json reports with "
         "'mm-conformance merge'")
      ->option_text("I/N")
      ->check(ShardText());
}

// The "Output" group: listings and reports.
void AddOutputOptions(CLI::App& app, CliOptions& options) {
  app.option_defaults()->group("Output");
  CLI::Option* list =
      app.add_flag("--list", options.list,
                   "list cases (with source), skipped models and why, shadowed names, the "
                   "official corpus and the backends; runs nothing");
  CLI::Option* list_tests =
      app.add_flag("--list-tests", options.list_tests,
                   "print \"CASE<TAB>BACKEND\" per test, for ctest registration; runs nothing");
  list->excludes(list_tests);
  app.add_option("--json", options.json,
                 "write the JSON report (summary, results, official, "
                 "skipped)")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  app.add_option("--junit", options.junit,
                 "write JUnit XML (one testcase per case, data set and backend)")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  app.add_option("--markdown", options.markdown,
                 "write a Markdown report (verdict matrix, details, official corpus)")
      ->option_text("FILE")
      ->check(cli::NonEmpty());
  app.add_flag("-q,--quiet", options.quiet,
               "print only the summary, not one line per case and backend");
  app.add_option_function<int>(
         "--skip-exit-code", [&options](int code) { options.skip_exit_code = code; },
         "exit N when every result is UNSUPPORTED (for ctest's SKIP_RETURN_CODE)")
      ->option_text("N")
      ->check(SkipExitCode());
}

}  // namespace

std::unique_ptr<CLI::App> MakeConformanceApp(CliOptions& options,
                                             const std::vector<std::string>& backend_names) {
  auto app = std::make_unique<CLI::App>(kDescription, "mm-conformance");
  app->footer(kFooter);
  app->formatter(std::make_shared<cli::HelpFormatter>());
  app->get_formatter()->label("OPTIONS", "options");
  // A flag given a value (--strict=yes) is an error; an option given twice keeps its last value.
  app->option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app->option_defaults()->group("Where cases come from");
  AddList(*app, "--data-dir", options.data_dirs, "DIR",
          "a folder of case directories (like ONNX's data/node) or one case directory; "
          "repeatable. When given, MM_ONNX_DATA and the defaults are not used.");

  AddBackendOptions(*app, options);
  AddSelectingOptions(*app, options, backend_names);
  AddJudgingOptions(*app, options);
  AddRunningOptions(*app, options);
  AddResumeOptions(*app, options);
  AddOutputOptions(*app, options);
  app->add_flag("--version", options.version, "print the version and exit");
  app->set_help_flag("-h,--help", "print this help and exit")->group("Output");
  return app;
}

std::optional<std::string> ParseMergeArgs(const std::vector<std::string>& args,
                                          MergeOptions& options, std::string& help) {
  CLI::App app(
      "mm-conformance merge: one report from the --json reports of shards 1/N .. N/N of one run "
      "(every shard exactly once, same options), with the results in catalog order and the "
      "summary and exit code of the unsharded run.",
      "mm-conformance merge");
  app.formatter(std::make_shared<cli::HelpFormatter>());
  app.option_defaults()->disable_flag_override()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app.add_option("reports", options.inputs, "the shards' JSON reports")
      ->option_text("R.json...")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--json", options.json, "write the merged JSON report")->option_text("FILE");
  app.add_option("--junit", options.junit, "write the merged JUnit XML")->option_text("FILE");
  app.add_option("--markdown", options.markdown, "write the merged Markdown report")
      ->option_text("FILE");
  app.add_flag("-q,--quiet", options.quiet, "print only the summary");
  app.set_help_flag("-h,--help", "print this help and exit");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    help = app.help();
    return "";
  } catch (const CLI::ParseError& e) {
    return std::string(e.what());
  }
  return DistinctReports(options);
}

std::optional<std::string> ParseConformanceArgs(const std::vector<std::string>& args,
                                                const std::vector<std::string>& backend_names,
                                                CliOptions& options, std::string& help) {
  std::unique_ptr<CLI::App> app = MakeConformanceApp(options, backend_names);
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    help = app->help();
    return "";
  } catch (const CLI::ParseError& e) {
    return std::string(e.what());
  }
  return DistinctReports(options);
}

}  // namespace mm::conformance
