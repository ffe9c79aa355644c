// A conformance run as mm-conformance makes it, in steps a program calls in order: backends and
// data roots from the options (LoadBackends), the run's options and worker launcher (PrepareRun),
// the cases (DiscoverCases), the report's header and what a resumed run keeps (DescribeRun), the
// results into the reports (RunIntoReports) and the end of the report (FinishReport).
#ifndef MM_CONFORMANCE_SESSION_SESSION_H_
#define MM_CONFORMANCE_SESSION_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/conformance/cli/names.h"
#include "mm/conformance/isolation/worker_launcher.h"
#include "mm/conformance/judging/compare.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/official/official_corpus.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/report/report_files.h"
#include "mm/conformance/running/outputs_backend.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/running/stop_signals.h"
#include "mm/conformance/session/resume.h"
#include "mm/engine/registry.h"

namespace mm::conformance {

// Everything the mm-conformance command line can say. Defaults are the behaviour without options.
struct ConformanceOptions {
  std::vector<std::string> backend_libs;  // Plugin paths, in order (after MM_BACKEND_LIBS's).
  std::vector<std::string> backend_cmds;  // Drivers, "NAME=COMMAND" (--backend-cmd), in order.
  std::vector<std::string> data_dirs;
  std::vector<std::string> backends;  // In order, each name once.
  std::vector<std::string> cases;
  std::optional<NamePattern> filter, exclude;  // --filter, --exclude.
  Tolerance tolerance;
  std::string rule = "onnx";  // --tolerance: "onnx" or "bound".
  bool no_builtin = false, strict = false, require_official = false, list = false,
       list_tests = false, quiet = false, version = false;
  std::optional<int> skip_exit_code;
  std::string json, junit, markdown;
  // Running: in worker processes unless no_isolate; jobs 0 means one per core.
  bool no_isolate = false;
  int jobs = 0;
  double timeout_seconds = 60;
  // Per worker, in MiB; unset: DefaultMemoryLimitBytes(jobs); 0: no limit.
  std::optional<std::int64_t> memory_limit_mib;
  std::string resume;  // A JSON report of this run whose finished results are kept.
  Shard shard;
  std::string expectations;  // Empty: RunEnvironment::expectations, when set.
  // Outputs trees judged as backends: "NAME=DIR" and "NAME=ARITHMETIC", in order given.
  std::vector<std::string> outputs, outputs_arithmetic;
  bool self_check = false;  // --self-check: run only the self-check (RunEnvironment::self_check).
};

// The self-check over `roots` (plus the built-in cases when `builtin`) in `jobs` worker processes,
// printing to `out` (only the misses and the summary when `quiet`); returns the exit code.
using SelfCheckCommand = std::function<int(const std::vector<DataRoot>& roots, bool builtin,
                                           int jobs, bool quiet, std::ostream& out)>;

// What a run takes from its program besides the options.
struct RunEnvironment {
  const BackendRegistry* builtin = nullptr;  // The built-in backends (required).
  const char* onnx_data = nullptr;           // MM_ONNX_DATA (nullptr when unset).
  const char* expectations = nullptr;        // MM_EXPECTATIONS (nullptr when unset).
  // What --self-check runs (mm::self_check::RunSelfCheckCommand in mm-conformance); empty: a usage
  // error.
  SelfCheckCommand self_check;
  // For tests: called with "load-backends", "discover" and "describe" at those points of a run's
  // start, so a test can deliver a signal at a known point. Empty: nothing is called.
  std::function<void(const char* stage)> on_stage;
};

// A run built from options, step by step (the order of this header's functions).
struct ConformanceRun {
  BackendRegistry registry;           // The built-ins, plugins, drivers and outputs trees.
  std::vector<std::string> backends;  // The selected ones, in order.
  std::vector<DataRoot> roots;
  std::vector<OutputsTree> outputs_trees;
  Report report;  // The header so far (no results).
  RunOptions run;
  std::unique_ptr<WorkerLauncher> launcher;
  std::optional<ScopedAutoDeviations> auto_deviations;
  DiscoverOptions discover;
  Catalog catalog;
  OfficialReport official;
  bool official_failed = false;  // --require-official and the corpus is incomplete or altered.
  std::vector<CaseStart> selected, to_run;
  std::optional<Resumed> resumed;
};

// Registers the plugins (MM_BACKEND_LIBS, --backend-lib), drivers and outputs trees into
// run.registry, selects run.backends and resolves run.roots. The error names the option.
Status LoadBackends(const ConformanceOptions& options, const RunEnvironment& env,
                    ConformanceRun& run);

// Loads the expectations (--expectations, else env.expectations; not when listing), fills run.run
// from the options and starts the worker launcher (its failure is said on `err`; the workers are
// then forked from this process). The error names the expectations file.
Status PrepareRun(const ConformanceOptions& options, const RunEnvironment& env, ConformanceRun& run,
                  std::ostream& err);

// Finds the selected cases (--case, --filter, --exclude) and checks the official corpus.
void DiscoverCases(const ConformanceOptions& options, const RunEnvironment& env,
                   ConformanceRun& run);

// --list: the data roots, cases, skipped and shadowed models, the official corpus and backends.
void PrintList(const ConformanceRun& run, std::ostream& out);

// Fills the report's header, describes the backends and, with --resume, finds what the previous
// report finished (run.to_run is the rest; refused results are said on `err`). The error is
// --resume's.
Status DescribeRun(const ConformanceOptions& options, const RunEnvironment& env,
                   ConformanceRun& run, std::ostream& err);

// `reports` with the console on `out` and the files of the options; the error names what cannot
// be created.
Status OpenReports(const ConformanceOptions& options, ConformanceRun& run, std::ostream& out,
                   ReportFiles& reports);

// Runs run.to_run into `reports` (the kept results of a resumed run in their place), stopping at
// a signal of `stop`; marks report.interrupted then. The error is --resume's (the previous report
// changed while it was read).
Status RunIntoReports(ConformanceRun& run, const StopOnSignals& stop, ReportFiles& reports);

// Sets the report's resources and exit code, finishes `reports` and says on `err` what the user
// must know (a missing official corpus, no case, an interruption). Returns the exit code
// (kExitUsage when a file cannot be written, said on `err`).
int FinishReport(const ConformanceOptions& options, ConformanceRun& run, ReportFiles& reports,
                 std::ostream& err);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_SESSION_SESSION_H_
