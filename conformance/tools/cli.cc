#include "mm/conformance/tools/cli.h"

#include "mm/backends/auto/auto_backend.h"
#include "mm/conformance/official/official_corpus.h"
#include "mm/conformance/report/console_stream.h"
#include "mm/conformance/report/escape.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report_files.h"
#include "mm/conformance/report/report_paths.h"
#include "mm/conformance/running/stop_signals.h"
#include "mm/conformance/tools/cli_options.h"
#include "mm/version.h"

namespace mm::conformance {
namespace {

int UsageError(const Status& status, std::ostream& err) {
  err << "mm-conformance: " << status.message() << "\n";
  return kExitUsage;
}

int RunMergeCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  MergeOptions options;
  std::string help;
  if (auto error = ParseMergeArgs(args, options, help)) {
    if (error->empty()) {
      out << help;
      return kExitPassed;
    }
    err << "mm-conformance merge: " << *error << "\nTry 'mm-conformance merge --help'.\n";
    return kExitUsage;
  }
  const StatusOr<int> merged = MergeShardReports(options, out);
  if (!merged.ok()) {
    err << "mm-conformance merge: " << merged.status().message() << "\n";
    return kExitUsage;
  }
  return *merged;
}

// --list and --list-tests, after discovery.
int ListCases(const ConformanceOptions& options, const ConformanceRun& run, std::ostream& out,
              std::ostream& err) {
  if (options.list_tests) {
    for (const CaseEntry& c : run.catalog.cases) {
      for (const std::string& b : run.backends) out << PrintableText(c.name) << "\t" << b << "\n";
    }
    return kExitPassed;
  }
  PrintList(run, out);
  if (run.official_failed) {
    err << "mm-conformance: --require-official: the official corpus is incomplete or altered\n";
    return kExitOfficial;
  }
  return run.catalog.cases.empty() ? kExitUsage : kExitPassed;
}

// The report paths of `options` checked against what the run reads (CheckReportPaths): before
// the run, so that an unwritable report or one naming an input is found before any result.
Status CheckRunReportPaths(const ConformanceOptions& options, const RunEnvironment& env,
                           const ConformanceRun& run) {
  std::string expectations = options.expectations;
  if (expectations.empty() && env.expectations != nullptr) expectations = env.expectations;
  // --resume's report may be the new --json: it is read whole before that is written.
  std::vector<RunInput> inputs = {{"the --expectations file", expectations, ""},
                                  {"the --resume report", options.resume, "--json"}};
  for (const std::string& lib : options.backend_libs) {
    inputs.push_back({"the --backend-lib plugin", lib, ""});
  }
  for (const OutputsTree& tree : run.outputs_trees) {
    inputs.push_back({"the outputs tree of --outputs " + tree.spec.name, tree.spec.dir, ""});
  }
  for (const CaseEntry& c : run.catalog.cases) {
    if (!c.dir().empty()) inputs.push_back({"case '" + PrintableText(c.name) + "'", c.dir(), ""});
  }
  return CheckReportPaths(
      {{"--json", options.json}, {"--junit", options.junit}, {"--markdown", options.markdown}},
      inputs);
}

// The run of the parsed `options`: the steps of conformance/session/session.h in order.
int Run(const ConformanceOptions& options, const RunEnvironment& env, const StopOnSignals& stop,
        std::ostream& out, std::ostream& err) {
  ConformanceRun run;
  if (Status s = LoadBackends(options, env, run); !s.ok()) return UsageError(s, err);
  if (options.self_check) {
    if (!env.self_check) {
      err << "mm-conformance: --self-check is not available in this program\n";
      return kExitUsage;
    }
    // One worker unless -j says otherwise: the self-check is a few hundred tiny results.
    return env.self_check(run.roots, !options.no_builtin, options.jobs > 0 ? options.jobs : 1,
                          options.quiet, out);
  }
  if (Status s = PrepareRun(options, env, run, err); !s.ok()) return UsageError(s, err);
  DiscoverCases(options, env, run);
  if (options.list || options.list_tests) return ListCases(options, run, out, err);
  if (Status s = CheckRunReportPaths(options, env, run); !s.ok()) return UsageError(s, err);
  if (Status s = DescribeRun(options, env, run, err); !s.ok()) return UsageError(s, err);
  ReportFiles reports;
  if (Status s = OpenReports(options, run, out, reports); !s.ok()) return UsageError(s, err);
  if (Status s = RunIntoReports(run, stop, reports); !s.ok()) return UsageError(s, err);
  return FinishReport(options, run, reports, err);
}

}  // namespace

namespace {

// RunConformanceCli onto console streams.
int RunCli(const std::vector<std::string>& args, const RunEnvironment& env, std::ostream& out,
           std::ostream& err) {
  if (!args.empty() && args.front() == "merge") {
    return RunMergeCli({args.begin() + 1, args.end()}, out, err);
  }
  // From the start: a signal while the cases are found or the backends probed stops the run before
  // its first result, and the reports are still written (empty, marked interrupted).
  StopOnSignals stop;
  // auto's first use in this process (a calibration, a wait for its table's lock) ends with it.
  const ScopedAutoStop auto_stop(stop.flag());
  CliOptions options;
  std::string help;
  if (auto error = ParseConformanceArgs(args, env.builtin->DefaultNames(), options, help)) {
    if (error->empty()) {
      out << help;
      return kExitPassed;
    }
    err << "mm-conformance: " << *error << "\nTry 'mm-conformance --help'.\n";
    return kExitUsage;
  }
  if (options.version) {
    out << "mm-conformance " << MM_VERSION << " (ONNX MatMul node tests; official corpus: ONNX "
        << "v1.22.0, " << OfficialCases().size() << " cases)\n";
    return kExitPassed;
  }
  return Run(options, env, stop, out, err);
}

}  // namespace

int RunConformanceCli(const std::vector<std::string>& args, const RunEnvironment& env,
                      std::ostream& out, std::ostream& err) {
  // Once, here, for every line: what came from outside (names, paths, patterns, drivers' and
  // plugins' texts) cannot drive the terminal.
  ConsoleStream console_out(out), console_err(err);
  return RunCli(args, env, console_out, console_err);
}

int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err,
                      const char* env_expectations) {
  RunEnvironment env;
  env.builtin = &builtin;
  env.onnx_data = env_onnx_data;
  env.expectations = env_expectations;
  return RunConformanceCli(args, env, out, err);
}

}  // namespace mm::conformance
