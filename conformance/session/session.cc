#include "mm/conformance/session/session.h"

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/onednn/onednn_settings.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/cli/names.h"
#include "mm/conformance/judging/auto_expectations.h"
#include "mm/conformance/loader/matmul_case.h"
#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/session/run.h"
#include "mm/version.h"

namespace mm::conformance {
namespace {

void AtStage(const RunEnvironment& env, const char* stage) {
  if (env.on_stage) env.on_stage(stage);
}

// The plugins of MM_BACKEND_LIBS and --backend-lib, then the drivers of --backend-cmd; gives the
// names the options added.
StatusOr<std::vector<std::string>> LoadPlugins(const ConformanceOptions& options,
                                               BackendRegistry& registry) {
  PluginLoadOptions plugin_options;
  plugin_options.isolate_probe = !options.no_isolate;
  plugin_options.probe_timeout_seconds = options.timeout_seconds;
  Status loaded = RegisterBackendLibraries(registry, BackendLibrariesToLoad({}), plugin_options);
  const std::vector<std::string> before_flags = registry.Names();
  if (loaded.ok()) {
    loaded = RegisterBackendLibraries(registry, options.backend_libs, plugin_options);
  }
  runtime::SetDriverLimits({options.timeout_seconds, 0});
  if (loaded.ok()) loaded = runtime::RegisterCommandBackends(registry, options.backend_cmds);
  MM_RETURN_IF_ERROR(loaded);
  return cli::NewNames(before_flags, registry.Names());
}

// The outputs trees of --outputs (with --outputs-arithmetic), registered as backends of their
// given names, which are appended to `named`.
Status LoadOutputsTrees(const ConformanceOptions& options, ConformanceRun& run,
                        std::vector<std::string>& named) {
  std::map<std::string, std::string> arithmetic;
  for (const std::string& text : options.outputs_arithmetic) {
    MM_ASSIGN_OR_RETURN(auto split, SplitNameValue(text, "--outputs-arithmetic"));
    arithmetic[split.first] = split.second;
  }
  for (const std::string& text : options.outputs) {
    MM_ASSIGN_OR_RETURN(auto split, SplitNameValue(text, "--outputs"));
    OutputsSpec spec{split.first, split.second, {}};
    if (auto it = arithmetic.find(spec.name); it != arithmetic.end()) {
      MM_RETURN_IF_ERROR(ParseArithmeticSpec(it->second, spec.arithmetic)
                             .WithContext("--outputs-arithmetic " + spec.name));
      arithmetic.erase(it);
    }
    MM_ASSIGN_OR_RETURN(OutputsTree tree, LoadOutputsTree(std::move(spec)));
    MM_RETURN_IF_ERROR(RegisterOutputsBackend(run.registry, tree));
    named.push_back(tree.spec.name);
    run.outputs_trees.push_back(std::move(tree));
  }
  if (!arithmetic.empty()) {
    const std::string& name = arithmetic.begin()->first;
    return InvalidArgumentError("--outputs-arithmetic " + name + ": no --outputs " + name +
                                "=DIR is given");
  }
  return OkStatus();
}

// --backend, or what the options named, or the registry's defaults; each available and known.
Status SelectBackends(const ConformanceOptions& options, const std::vector<std::string>& named,
                      ConformanceRun& run) {
  run.backends = options.backends;
  if (run.backends.empty()) run.backends = named.empty() ? run.registry.DefaultNames() : named;
  for (const std::string& name : run.backends) {
    if (const std::string why = run.registry.UnavailableReason(name); !why.empty()) {
      return InvalidArgumentError("backend '" + name +
                                  "' is not available on this machine: " + why);
    }
    if (!run.registry.Contains(name)) {
      return InvalidArgumentError("unknown backend '" + name +
                                  "'; this build has: " + cli::Joined(run.registry.Names()));
    }
  }
  return OkStatus();
}

// The run's options for the runner; `report` holds the rule and expectations.
RunOptions RunOptionsOf(const ConformanceOptions& options, const Report& report) {
  RunOptions run;
  run.tolerance = options.tolerance;
  run.rule = report.rule;
  run.isolate = !options.no_isolate;
  run.jobs = options.jobs > 0 ? options.jobs
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  run.timeout_seconds = options.timeout_seconds;
  run.shard = options.shard;
  run.expectations = report.expectations ? &*report.expectations : nullptr;
  if (run.isolate) {
    run.memory_limit_bytes = options.memory_limit_mib
                                 ? *options.memory_limit_mib * (std::int64_t{1} << 20)
                                 : DefaultMemoryLimitBytes(run.jobs);
  }
  return run;
}

// The header of the report: what the run is, before any result.
void FillReportHeader(const ConformanceOptions& options, ConformanceRun& run) {
  Report& report = run.report;
  report.version = MM_VERSION;
  report.tolerance = options.tolerance;
  report.strict = options.strict;
  report.require_official = options.require_official;
  report.backends = run.backends;
  for (const std::string& name : run.registry.UnavailableNames()) {
    report.unavailable_backends.push_back({name, run.registry.UnavailableReason(name)});
  }
  report.machine = DescribeMachine({kOneDnnMaxCpuIsaVariable});
  report.loader_versions = LoaderVersions();
  report.roots = run.catalog.roots;
  report.skipped = run.catalog.skipped;
  report.shadowed = run.catalog.shadowed;
  report.official = run.official;
  report.shard = options.shard;
  if (report.expectations) {
    for (Expectation& e : report.expectations->entries) e.matched = 0;
  }
  report.selection = SelectionOf(run.catalog, run.selected, run.backends.size());
  report.run_selection =
      SelectionOf(run.catalog, CasesInShard(run.catalog, {}), run.backends.size());
}

// What --resume keeps of its report; run.to_run is the rest.
Status Resume(const ConformanceOptions& options, ConformanceRun& run, std::ostream& err) {
  auto previous = LoadResumed(options.resume, run.report, run.catalog, run.selected);
  if (!previous.ok()) {
    return InvalidArgumentError("--resume " + std::string(previous.status().message()));
  }
  run.resumed = std::move(previous).value();
  run.to_run = run.resumed->to_run;
  if (run.resumed->inconsistent > 0) {
    err << "mm-conformance: --resume " << options.resume << ": " << run.resumed->inconsistent
        << " result(s) not consistent with their own comparison, resource figures, the "
           "expectations or the rule of this run; running them again (the first: "
        << run.resumed->first_inconsistency << ")\n";
  }
  Resumption taken{{options.resume}, 0, run.resumed->inconsistent};
  for (const CaseStart& c : run.selected) taken.taken += run.resumed->keep[c.case_index];
  run.report.resumed = std::move(taken);
  return OkStatus();
}

// Files of an outputs tree that no result reads: ERRORs too, given after their case's results.
ExtraResults ExtrasOf(const ConformanceRun& run) {
  ExtraResults extras;
  for (const OutputsTree& tree : run.outputs_trees) {
    if (std::find(run.backends.begin(), run.backends.end(), tree.spec.name) == run.backends.end()) {
      continue;
    }
    for (Result& r : ExtraOutputResults(tree, run.catalog, run.discover.select, run.run.shard)) {
      extras.emplace(r.case_index, std::move(r));
    }
  }
  return extras;
}

// Counts the results given per case index, on their way to `next`.
class CountPerCase final : public ResultSink {
 public:
  CountPerCase(std::size_t cases, ResultSink& next) : given_(cases, 0), next_(next) {}
  void Add(Result r) override {
    const auto c = static_cast<std::size_t>(r.case_index);
    if (c < given_.size()) ++given_[c];
    next_.Add(std::move(r));
  }
  const std::vector<std::uint32_t>& given() const { return given_; }

 private:
  std::vector<std::uint32_t> given_;
  ResultSink& next_;
};

// What an interrupted run says: which results were given of how many, and which cases were not
// run or not finished.
Interruption InterruptionOf(const ConformanceRun& run, int signal,
                            const std::vector<std::uint32_t>& given) {
  Interruption interruption;
  interruption.signal = signal;
  interruption.expected = run.report.selection.results;
  for (const CaseStart& c : run.selected) {
    const std::uint32_t n = given[c.case_index];
    interruption.results += n;
    if (n == 0) {
      interruption.not_run.push_back(run.catalog.cases[c.case_index].name);
    } else if (n < ResultsOfCase(run.catalog, c.case_index, run.backends.size())) {
      interruption.incomplete.push_back(run.catalog.cases[c.case_index].name);
    }
  }
  return interruption;
}

// What the user must know after the summary: a missing official corpus (where it is expected),
// no case at all, the official corpus required, an interruption.
void WriteNotes(const ConformanceRun& run, std::ostream& err) {
  // Where the official cases are expected: the default roots, or roots that hold some of them.
  // A run over a folder of one's own cases is not told that it lacks ONNX's (--list still says).
  const bool own_roots_only =
      std::all_of(run.roots.begin(), run.roots.end(),
                  [](const DataRoot& root) { return root.origin != "default"; }) &&
      run.official.Count(OfficialStatus::State::kMissing) ==
          static_cast<int>(run.official.cases.size());
  if (const std::string hint = MissingOfficialHint(run.official);
      !hint.empty() && !own_roots_only) {
    err << "mm-conformance: " << hint << "\n";
  }
  if (run.catalog.cases.empty()) {
    err << "mm-conformance: no MatMul case found"
        << (run.catalog.roots.empty() ? " (no data root exists and built-ins are off)" : "")
        << "; see --list\n";
  }
  if (run.official_failed) {
    err << "mm-conformance: --require-official: the official corpus is incomplete or altered\n";
  }
  if (run.report.interrupted) {
    err << "mm-conformance: " << InterruptionText(*run.report.interrupted)
        << "; the reports hold the finished results (--resume the JSON report to run the rest)\n";
  }
}

}  // namespace

Status LoadBackends(const ConformanceOptions& options, const RunEnvironment& env,
                    ConformanceRun& run) {
  AtStage(env, "load-backends");
  run.registry = *env.builtin;
  // What --backend-lib and --outputs name is, without --backend, all that runs.
  MM_ASSIGN_OR_RETURN(std::vector<std::string> named, LoadPlugins(options, run.registry));
  MM_RETURN_IF_ERROR(LoadOutputsTrees(options, run, named));
  MM_RETURN_IF_ERROR(SelectBackends(options, named, run));
  MM_ASSIGN_OR_RETURN(run.roots,
                      ResolveDataRoots(options.data_dirs, env.onnx_data, DefaultDataRoots()));
  return OkStatus();
}

Status PrepareRun(const ConformanceOptions& options, const RunEnvironment& env, ConformanceRun& run,
                  std::ostream& err) {
  // The run's options come before its cases: isolated workers are forked from a launcher started
  // here, before discovery, so that no worker holds the catalog.
  run.report.rule = options.rule == "bound" ? ToleranceRule::kBound : ToleranceRule::kOnnx;
  const bool listing = options.list || options.list_tests;
  std::string expectations = options.expectations;
  if (expectations.empty() && env.expectations != nullptr) expectations = env.expectations;
  if (!listing && !expectations.empty()) {
    MM_ASSIGN_OR_RETURN(run.report.expectations, LoadExpectations(expectations));
  }
  // auto never chooses a backend these expectations declare deviating (in the workers too: they
  // are forked from here on).
  if (run.report.expectations) {
    run.auto_deviations.emplace(AutoDeviationsOf(*run.report.expectations));
  }
  run.run = RunOptionsOf(options, run.report);
  run.run.backends = run.backends;
  // Drivers (--backend-cmd, numpy, ...) are held to the run's limits, in the workers too.
  runtime::SetDriverLimits({run.run.timeout_seconds, run.run.memory_limit_bytes});
  if (run.run.isolate && !listing) {
    auto started = WorkerLauncher::Start(run.registry, run.run);
    if (started.ok()) {
      run.launcher = std::move(started).value();
      run.run.launcher = run.launcher.get();
    } else {
      // The workers are then forked from here: the same results, with the catalog in each.
      err << "mm-conformance: " << started.status().message() << "\n";
    }
  }
  return OkStatus();
}

void DiscoverCases(const ConformanceOptions& options, const RunEnvironment& env,
                   ConformanceRun& run) {
  run.discover.builtin = !options.no_builtin;
  run.discover.select = [cases = options.cases, filter = options.filter,
                         exclude = options.exclude](const std::string& name) {
    if (!cases.empty() && std::find(cases.begin(), cases.end(), name) == cases.end()) {
      return false;
    }
    if (filter && !filter->Matches(name)) return false;
    if (exclude && exclude->Matches(name)) return false;
    return true;
  };
  AtStage(env, "discover");
  run.catalog = Discover(run.roots, run.discover);
  run.official = CheckOfficialCorpora(run.roots);
  run.official_failed = options.require_official && !run.official.complete();
  run.selected = CasesInShard(run.catalog, options.shard);
  run.to_run = run.selected;
}

Status DescribeRun(const ConformanceOptions& options, const RunEnvironment& env,
                   ConformanceRun& run, std::ostream& err) {
  FillReportHeader(options, run);
  // Asked in a child process: the parent must not start any backend (threads, oneDNN state)
  // before the workers are forked; and with --no-isolate too, since a backend that hangs while
  // describing itself can only be left behind by killing its process (--timeout, a stop).
  AtStage(env, "describe");
  run.report.backend_info =
      DescribeBackendsInChild(run.registry, run.backends, run.run.launcher, run.run.timeout_seconds,
                              &run.run.failed_to_start);
  // What a previous run already finished, when resuming: only the rest runs.
  if (!options.resume.empty()) MM_RETURN_IF_ERROR(Resume(options, run, err));
  return OkStatus();
}

Status OpenReports(const ConformanceOptions& options, ConformanceRun& run, std::ostream& out,
                   ReportFiles& reports) {
  std::size_t name_width = 4, backend_width = 7;
  for (const CaseStart& c : run.selected) {
    name_width = std::max(name_width, run.catalog.cases[c.case_index].name.size());
  }
  for (const std::string& b : run.backends) backend_width = std::max(backend_width, b.size());
  MM_RETURN_IF_ERROR(reports.Open(options.json, options.junit, options.markdown, run.report));
  reports.AddStream(std::make_unique<ConsoleWriter>(out, options.quiet, options.tolerance,
                                                    name_width, backend_width),
                    out);
  if (run.report.expectations) reports.CountMatches(&*run.report.expectations);
  return OkStatus();
}

Status RunIntoReports(ConformanceRun& run, const StopOnSignals& stop, ReportFiles& reports) {
  // Every result, finished now or taken from the resumed report, goes through `counted` once, in
  // catalog order.
  CountPerCase counted(run.catalog.cases.size(), reports);
  run.run.stop = stop.flag();
  run.run.stop_fd = stop.fd();
  bool finished;
  if (run.resumed) {
    ResumeMerger merger(*run.resumed, counted);
    finished = RunConformanceStreaming(run.catalog, run.registry, run.run, run.to_run, merger,
                                       ExtrasOf(run));
    // Interrupted again: every result already finished is kept, the taken ones included.
    if (Status rest = merger.Finish(); !rest.ok()) {
      return InvalidArgumentError("--resume " + std::string(rest.message()));
    }
  } else {
    finished = RunConformanceStreaming(run.catalog, run.registry, run.run, run.to_run, counted,
                                       ExtrasOf(run));
  }
  if (!finished) {
    run.report.interrupted = InterruptionOf(run, static_cast<int>(*stop.flag()), counted.given());
  }
  return OkStatus();
}

int FinishReport(const ConformanceOptions& options, ConformanceRun& run, ReportFiles& reports,
                 std::ostream& err) {
  // A second signal from here on ends the process at once (StopOnSignals).
  Report& report = run.report;
  report.resources = reports.Resources(run.backends);
  report.exit_code = report.interrupted
                         ? 128 + report.interrupted->signal
                         : ExitCodeOfSummary(report, reports.summary(), !run.catalog.cases.empty(),
                                             options.skip_exit_code);
  const Status written = reports.Finish(report, [&] { WriteNotes(run, err); });
  if (!written.ok()) {
    err << "mm-conformance: " << written.message() << "\n";
    return kExitUsage;
  }
  return report.exit_code;
}

}  // namespace mm::conformance
