#include "conformance/tools/cli.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include "backends/plugin/plugin_backend.h"
#include "conformance/loader/catalog.h"
#include "conformance/loader/matmul_case.h"
#include "conformance/official/official_corpus.h"
#include "conformance/report/merge.h"
#include "conformance/report/report.h"
#include "conformance/runner.h"
#include "conformance/tools/cli_options.h"
#include "conformance/worker_pool.h"

namespace mm::conformance {
namespace {

using cli::Joined;

Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return NotFoundError("cannot open '" + path + "' for writing");
  file << contents;
  file.close();
  if (!file) return DataLossError("cannot write '" + path + "'");
  return OkStatus();
}

// Writes each report whose path is not empty; returns the report's exit code, or kExitUsage when
// a file cannot be written.
int WriteReports(const Report& report, const std::string& json, const std::string& junit,
                 const std::string& markdown, std::ostream& err) {
  using Writer = std::string (*)(const Report&);
  for (const auto& [path, writer] : {std::pair<const std::string&, Writer>{json, ToJson},
                                     std::pair<const std::string&, Writer>{junit, ToJUnitXml},
                                     std::pair<const std::string&, Writer>{markdown, ToMarkdown}}) {
    if (path.empty()) continue;
    Status written = WriteFile(path, writer(report));
    if (!written.ok()) {
      err << "mm-conformance: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return report.exit_code;
}

void PrintList(const Catalog& catalog, const OfficialReport& official,
               const BackendRegistry& registry, const std::vector<std::string>& backends,
               std::ostream& out) {
  out << "data roots (first wins):\n";
  if (catalog.roots.empty()) out << "  (none)\n";
  for (const DataRoot& root : catalog.roots) {
    out << "  " << PrintableText(root.path.string()) << " (" << root.origin << ")\n";
  }
  std::size_t width = 4;
  for (const CaseEntry& c : catalog.cases) width = std::max(width, c.name.size());
  out << "MatMul cases (" << catalog.cases.size() << "):\n";
  for (const CaseEntry& c : catalog.cases) {
    out << "  " << std::left << std::setw(static_cast<int>(width + 2)) << PrintableText(c.name);
    if (c.model) {
      out << std::setw(9) << DTypeName(c.model->a.dtype) << "opset " << c.model->opset
          << " (MatMul-" << c.model->matmul_version << "), " << c.data_sets.size() << " data set"
          << (c.data_sets.size() == 1 ? "" : "s") << ", ";
    } else {
      out << "INVALID (" << PrintableText(c.error.message()) << "), ";
    }
    out << PrintableText(c.dir.empty() ? c.source : c.dir.string());
    if (IsOfficialCase(c.name)) {
      for (const OfficialStatus& s : official.cases) {
        if (s.name == c.name) out << " [official: " << OfficialStateName(s.state) << "]";
      }
    }
    out << "\n";
  }
  out << "skipped (" << catalog.skipped.size() << "):\n";
  for (const SkippedModel& s : catalog.skipped) {
    out << "  " << PrintableText(s.name) << ": " << PrintableText(s.reason) << " ("
        << PrintableText(s.dir.string()) << ")\n";
  }
  if (!catalog.shadowed.empty()) {
    out << "shadowed (" << catalog.shadowed.size() << "):\n";
    for (const ShadowedCase& s : catalog.shadowed) {
      out << "  " << PrintableText(s.name) << " at " << PrintableText(s.dir.string()) << " ("
          << PrintableText(s.winner) << " wins)\n";
    }
  }
  out << "official corpus: " << official.Count(OfficialStatus::State::kIntact) << " of "
      << official.cases.size() << " intact\n";
  for (const OfficialStatus& s : official.cases) {
    out << "  " << std::setw(20) << s.name << OfficialStateName(s.state);
    if (!s.dir.empty()) out << " at " << s.dir.string();
    for (const std::string& p : s.problems) out << "\n    " << p;
    out << "\n";
  }
  out << "backends (selected: " << Joined(backends) << "):\n";
  for (const std::string& name : registry.Names()) {
    out << "  " << std::setw(12) << name << registry.Description(name) << "\n";
  }
  const std::vector<std::string> unavailable = registry.UnavailableNames();
  if (!unavailable.empty()) {
    out << "backends not available on this machine (" << unavailable.size() << "):\n";
    for (const std::string& name : unavailable) {
      out << "  " << std::setw(12) << name << registry.Description(name) << "\n"
          << "  " << std::setw(12) << "" << "not available: " << registry.UnavailableReason(name)
          << "\n";
    }
  }
}

}  // namespace

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
  std::vector<Report> shards;
  for (const std::string& path : options.inputs) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    auto report = ReportFromJson(text.str());
    if (!in || !report.ok()) {
      err << "mm-conformance merge: " << path << ": "
          << (report.ok() ? "cannot read" : report.status().message()) << "\n";
      return kExitUsage;
    }
    shards.push_back(std::move(report).value());
  }
  auto merged = MergeShardReports(shards);
  if (!merged.ok()) {
    err << "mm-conformance merge: " << merged.status().message() << "\n";
    return kExitUsage;
  }
  WriteConsole(*merged, out, options.quiet);
  return WriteReports(*merged, options.json, options.junit, options.markdown, err);
}

int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err,
                      const char* env_expectations) {
  if (!args.empty() && args.front() == "merge") {
    return RunMergeCli({args.begin() + 1, args.end()}, out, err);
  }
  CliOptions options;
  std::string help;
  if (auto error = ParseConformanceArgs(args, builtin.Names(), options, help)) {
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
  // The built-in backends plus the plugins of MM_BACKEND_LIBS and --backend-lib.
  BackendRegistry registry = builtin;
  const Status loaded =
      RegisterBackendLibraries(registry, BackendLibrariesToLoad(options.backend_libs));
  if (!loaded.ok()) {
    err << "mm-conformance: " << loaded.message() << "\n";
    return kExitUsage;
  }
  std::vector<std::string> backends = options.backends;
  if (backends.empty()) backends = registry.Names();
  for (const std::string& name : backends) {
    if (const std::string why = registry.UnavailableReason(name); !why.empty()) {
      err << "mm-conformance: backend '" << name << "' is not available on this machine: " << why
          << "\n";
      return kExitUsage;
    }
    if (!registry.Contains(name)) {
      err << "mm-conformance: unknown backend '" << name
          << "'; this build has: " << Joined(registry.Names()) << "\n";
      return kExitUsage;
    }
  }
  auto roots = ResolveDataRoots(options.data_dirs, env_onnx_data, DefaultDataRoots());
  if (!roots.ok()) {
    err << "mm-conformance: " << roots.status().message() << "\n";
    return kExitUsage;
  }

  DiscoverOptions discover;
  discover.builtin = !options.no_builtin;
  discover.select = [&options](const std::string& name) {
    if (!options.cases.empty() &&
        std::find(options.cases.begin(), options.cases.end(), name) == options.cases.end()) {
      return false;
    }
    if (options.filter && !std::regex_search(name, *options.filter)) return false;
    if (options.exclude && std::regex_search(name, *options.exclude)) return false;
    return true;
  };
  const Catalog catalog = Discover(*roots, discover);
  const OfficialReport official = CheckOfficialCorpus(*roots);
  const bool official_failed = options.require_official && !official.complete();

  if (options.list_tests) {
    for (const CaseEntry& c : catalog.cases) {
      for (const std::string& b : backends) out << PrintableText(c.name) << "\t" << b << "\n";
    }
    return kExitPassed;
  }
  if (options.list) {
    PrintList(catalog, official, registry, backends, out);
    if (official_failed) {
      err << "mm-conformance: --require-official: the official corpus is incomplete or altered\n";
      return kExitOfficial;
    }
    return catalog.cases.empty() ? kExitUsage : kExitPassed;
  }

  Report report;
  report.version = MM_VERSION;
  report.tolerance = options.tolerance;
  report.rule = options.rule == "bound" ? ToleranceRule::kBound : ToleranceRule::kOnnx;
  report.strict = options.strict;
  report.require_official = options.require_official;
  report.backends = backends;
  for (const std::string& name : registry.UnavailableNames()) {
    report.unavailable_backends.push_back({name, registry.UnavailableReason(name)});
  }
  report.machine = DescribeMachine();
  report.loader_versions = LoaderVersions();
  report.roots = catalog.roots;
  report.skipped = catalog.skipped;
  report.shadowed = catalog.shadowed;
  report.official = official;
  report.shard = options.shard;
  if (options.expectations.empty() && env_expectations != nullptr) {
    options.expectations = env_expectations;
  }
  if (!options.expectations.empty()) {
    auto loaded = LoadExpectations(options.expectations);
    if (!loaded.ok()) {
      err << "mm-conformance: " << loaded.status().message() << "\n";
      return kExitUsage;
    }
    report.expectations = std::move(loaded).value();
  }
  RunOptions run;
  run.backends = backends;
  run.tolerance = options.tolerance;
  run.rule = report.rule;
  run.isolate = !options.no_isolate;
  run.jobs = options.jobs > 0 ? options.jobs
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  run.timeout_seconds = options.timeout_seconds;
  run.shard = options.shard;
  run.expectations = report.expectations ? &*report.expectations : nullptr;
  report.results = RunConformance(catalog, registry, run);
  if (report.expectations) CountMatches(*report.expectations, report.results);
  // Created only now: the parent must not start any backend (threads, oneDNN state) before the
  // workers are forked.
  report.backend_info = run.isolate ? DescribeBackendsInChild(registry, backends)
                                    : DescribeBackends(registry, backends);

  report.exit_code = ExitCodeOf(report, !catalog.cases.empty(), options.skip_exit_code);

  WriteConsole(report, out, options.quiet);
  if (catalog.cases.empty()) {
    err << "mm-conformance: no MatMul case found"
        << (catalog.roots.empty() ? " (no data root exists and built-ins are off)" : "")
        << "; see --list\n";
  }
  if (official_failed) {
    err << "mm-conformance: --require-official: the official corpus is incomplete or altered\n";
  }
  return WriteReports(report, options.json, options.junit, options.markdown, err);
}

}  // namespace mm::conformance
