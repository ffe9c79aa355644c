// A fuzz run from parsed options (fuzz_cli.h): built, run, its report finished; RunFuzzCli chains
// the parsing, the subcommands and the run.
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "fuzz_commands.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/cli/names.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/fuzz/fuzz_report_writer.h"
#include "mm/conformance/judging/auto_expectations.h"
#include "mm/conformance/report/console_stream.h"
#include "mm/conformance/running/stop_signals.h"
#include "mm/engine/io/output_file.h"

namespace mm::fuzz {
namespace {

namespace cli = conformance::cli;

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

// The built-in backends plus the plugins of MM_BACKEND_LIBS and --backend-lib and the drivers of
// --backend-cmd; the backends to run: --backend's, else (as in mm-conformance) what
// --backend-lib and --backend-cmd add, so a plugin under test is not drowned in the built-ins'
// results.
Status LoadBackends(const FuzzCliOptions& cli, FuzzRun& run) {
  MM_RETURN_IF_ERROR(RegisterBackendLibraries(run.registry, BackendLibrariesToLoad({})));
  const std::vector<std::string> before_flags = run.registry.Names();
  MM_RETURN_IF_ERROR(RegisterBackendLibraries(run.registry, cli.backend_libs));
  MM_RETURN_IF_ERROR(runtime::RegisterCommandBackends(run.registry, cli.backend_cmds));
  if (run.options.backends.empty()) {
    run.options.backends = cli::NewNames(before_flags, run.registry.Names());
  }
  for (const std::string& name : run.options.backends) {
    if (const std::string why = run.registry.UnavailableReason(name); !why.empty()) {
      return InvalidArgumentError("backend '" + name +
                                  "' is not available on this machine: " + why);
    }
    if (!run.registry.Contains(name)) {
      return InvalidArgumentError("unknown backend '" + name + "'; this build has: " +
                                  cli::Joined(run.registry.Names()) + "\nTry 'mm-fuzz --help'.");
    }
  }
  return OkStatus();
}

// --expectations FILE, else MM_EXPECTATIONS: loaded, with auto's deviations taken from it (auto
// never chooses a backend the expectations declare deviating) and what auto runs on for its
// replay lines.
Status LoadExpectations(const FuzzCliOptions& cli, FuzzRun& run) {
  std::string path = cli.expectations;
  if (path.empty()) {
    if (const char* env = std::getenv("MM_EXPECTATIONS"); env != nullptr) path = env;
  }
  if (!path.empty()) {
    MM_ASSIGN_OR_RETURN(conformance::Expectations parsed, conformance::LoadExpectations(path));
    run.expectations = std::make_unique<conformance::Expectations>(std::move(parsed));
    run.options.expectations = run.expectations.get();
    run.auto_deviations =
        std::make_unique<ScopedAutoDeviations>(conformance::AutoDeviationsOf(*run.expectations));
  }
  run.options.auto_context = AutoContextOf(AutoOptions::FromEnvironment(), path);
  return OkStatus();
}

// The options that change which problems are generated or how they are judged, as the words
// every replay line carries.
std::string ReplayOptions(const FuzzCliOptions& cli, const FuzzOptions& o) {
  std::ostringstream replay;
  if (o.generator.max_elements != GeneratorOptions{}.max_elements) {
    replay << " --max-elements " << o.generator.max_elements;
  }
  if (cli.large) replay << " --large --large-products " << o.generator.large_products;
  if (o.rule == Rule::kOnnx) replay << " --tolerance onnx";
  if (o.tolerance.rtol != conformance::Tolerance{}.rtol) {
    replay << " --rtol " << conformance::FormatDouble(o.tolerance.rtol);
  }
  if (o.tolerance.atol != conformance::Tolerance{}.atol) {
    replay << " --atol " << conformance::FormatDouble(o.tolerance.atol);
  }
  return replay.str().empty() ? "" : replay.str().substr(1);
}

// A backend's counts as the console shows them.
void PrintBackendCounts(const BackendStats& b, const FuzzOptions& options, std::ostream& out) {
  out << "  " << std::left << std::setw(10) << b.name;
  for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kBound, Verdict::kImprecise,
                    Verdict::kUnsupported, Verdict::kError}) {
    out << " " << VerdictName(v) << " " << b.verdicts[v];
  }
  if (options.check_threads) out << " NONDETERMINISTIC " << b.nondeterministic;
  if (options.expectations != nullptr) {
    out << " XFAIL " << b.verdicts[Verdict::kXFail] << " SKIP " << b.verdicts[Verdict::kSkip];
  }
  out << "\n";
}

// Every declared deviation, seen or not: a library that got fixed shows here (and as XPASS in
// mm-conformance, which runs the deviation's minimal node test).
void PrintExpectations(const std::vector<ExpectationOutcome>& outcomes, std::ostream& out) {
  for (const ExpectationOutcome& e : outcomes) {
    out << "expected failure " << e.case_pattern << " on " << e.backend_pattern << ": "
        << (e.failures > 0 ? "XFAIL, seen " + std::to_string(e.failures) + " of " +
                                 std::to_string(e.matched) + " problems"
            : e.matched > 0 ? "not seen in " + std::to_string(e.matched) +
                                  " problems (XPASS? a fixed library, or no triggering problem)"
                            : "matched no problem")
        << "\n";
  }
}

void PrintSummary(const FuzzCliOptions& cli, const FuzzOptions& o, const FuzzReport& report,
                  int code, std::ostream& out) {
  const FuzzStats& s = report.stats;
  const double run_seconds = s.seconds - s.shrink_seconds;
  out << "summary: ";
  if (o.op != family::Op::kMatMul) out << family::OpName(o.op) << ", ";
  out << "seed " << o.seed;
  if (cli.sharded) out << ", shard " << o.shard.index << "/" << o.shard.count;
  out << ", " << s.problems << " problems x " << s.backends.size() << " backends = " << s.results
      << " results, " << s.elements << " elements (" << s.unbounded_elements << " unbounded); "
      << s.failures << " failing, " << report.findings.size() << " findings; ";
  if (o.op != family::Op::kMatMul) {
    out << s.outside_standard_range << " problems outside the standard's range; ";
  }
  out << std::fixed << std::setprecision(2) << s.seconds << " s (" << std::setprecision(0)
      << (run_seconds > 0 ? static_cast<double>(s.problems) / run_seconds : 0.0)
      << " problems/s without shrinking); exit " << code << "\n";
}

}  // namespace

StatusOr<std::unique_ptr<FuzzRun>> BuildFuzzRun(const FuzzCliOptions& cli,
                                                const BackendRegistry& builtin) {
  auto run = std::make_unique<FuzzRun>();
  run->registry = builtin;
  run->options = cli.fuzz;
  MM_RETURN_IF_ERROR(LoadBackends(cli, *run));
  MM_RETURN_IF_ERROR(LoadExpectations(cli, *run));
  FuzzOptions& o = run->options;
  for (const auto& name : cli.dtypes) o.generator.dtypes.push_back(DTypeFromName(name).value());
  o.rule = cli.tolerance == "onnx" ? Rule::kOnnx : Rule::kBound;
  o.shrink = !cli.no_shrink;
  if (cli.sharded) o.max_error_records = std::numeric_limits<std::int64_t>::max();
  o.replay_options = ReplayOptions(cli, o);
  return run;
}

FuzzReport RunFuzzCampaign(FuzzRun& run, std::ostream* log) {
  conformance::StopOnSignals stop;
  // auto's first use (a calibration, a wait for its table's lock) ends on the same request.
  const ScopedAutoStop auto_stop(stop.flag());
  run.options.stop = stop.flag();
  FuzzReport report = RunFuzz(run.options, run.registry, log);
  run.options.stop = nullptr;
  return report;
}

int FuzzExitCode(const FuzzRun& run, const FuzzReport& report) {
  return report.interrupted_by ? 128 + report.interrupted_by : report.ExitCode(run.options);
}

int FinishFuzzReport(const FuzzCliOptions& cli, const FuzzRun& run, const FuzzReport& report,
                     const std::string& findings_log, std::ostream& out, std::ostream& err) {
  const FuzzOptions& o = run.options;
  const int code = FuzzExitCode(run, report);
  if (report.interrupted_by) {
    err << "mm-fuzz: interrupted by signal " << report.interrupted_by << " after "
        << report.stats.problems << " of " << o.cases << " problems"
        << (report.abandoned ? " (the last one cut short: a backend's call was still running)" : "")
        << "\n";
  }
  out << findings_log;
  if (!report.error.empty()) err << "mm-fuzz: " << report.error << "\n";
  if (!cli.quiet) {
    for (const BackendStats& b : report.stats.backends) PrintBackendCounts(b, o, out);
    out << "  problems by dtype:";
    for (const auto& [dtype, count] : report.stats.problems_by_dtype) {
      out << " " << dtype << " " << count;
    }
    out << "\n";
  }
  PrintExpectations(report.expectations, out);
  PrintSummary(cli, o, report, code, out);
  if (!cli.json.empty()) {
    const ReportOptions given{cli.dtypes, cli.tolerance, cli.sharded};
    const std::string json = FuzzReportToJson(o, given, report, code).dump(2) + "\n";
    if (Status written = io::WriteFileAtomically(cli.json, json); !written.ok()) {
      err << "mm-fuzz: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return code;
}

int RunFuzzCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
               std::ostream& raw_out, std::ostream& raw_err) {
  // Once, here, for every line: what came from outside cannot drive the terminal.
  conformance::ConsoleStream out(raw_out), err(raw_err);
  ParsedFuzzCli parsed = ParseFuzzCli(args, builtin.DefaultNames(), out, err);
  if (parsed.exit_code) return *parsed.exit_code;
  const FuzzCliOptions& o = parsed.options;
  switch (o.command) {
    case FuzzCommand::kGenerate:
      return Generate(o, out, err);
    case FuzzCommand::kExportBuiltin:
      return ExportBuiltin(o, out, err);
    case FuzzCommand::kMerge:
      return Merge(o, out, err);
    case FuzzCommand::kRun:
      break;
  }
  auto run = BuildFuzzRun(o, builtin);
  if (!run.ok()) {
    err << "mm-fuzz: " << run.status().message() << "\n";
    return kExitUsage;
  }
  std::ostringstream findings_log;
  const FuzzReport report = RunFuzzCampaign(**run, &findings_log);
  const int code = FinishFuzzReport(o, **run, report, findings_log.str(), out, err);
  if (report.abandoned) {
    // A thread is still inside a backend's call, using the run's backends: the process ends now,
    // its reports written, rather than destroying them under it.
    out.flush();
    err.flush();
    std::_Exit(code);
  }
  return code;
}

}  // namespace mm::fuzz
