#include "conformance/tools/cli.h"

#include <algorithm>
#include <fstream>
#include <iomanip>

#include "backends/plugin/plugin_backend.h"
#include "conformance/loader/catalog.h"
#include "conformance/loader/matmul_case.h"
#include "conformance/official/official_corpus.h"
#include "conformance/report/report.h"
#include "conformance/runner.h"
#include "conformance/tools/cli_options.h"
#include "engine/machine.h"

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
    if (c.loaded) {
      out << std::setw(9) << DTypeName(c.loaded->dtype) << "opset " << c.loaded->opset
          << " (MatMul-" << c.loaded->matmul_version << "), " << c.loaded->data_sets.size()
          << " data set" << (c.loaded->data_sets.size() == 1 ? "" : "s") << ", ";
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
}

}  // namespace

int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err) {
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
  report.backend_info = DescribeBackends(registry, backends);
  report.machine = DescribeMachine();
  report.loader_versions = LoaderVersions();
  report.roots = catalog.roots;
  report.skipped = catalog.skipped;
  report.shadowed = catalog.shadowed;
  report.official = official;
  report.results = RunConformance(catalog, registry, {backends, options.tolerance});

  const Summary sum = Summarize(report.results);
  if (official_failed) {
    report.exit_code = kExitOfficial;
  } else if (catalog.cases.empty()) {
    report.exit_code = kExitUsage;
  } else if (sum.fail + sum.error > 0 ||
             (report.rule == ToleranceRule::kOnnx ? sum.bound : sum.imprecise) > 0 ||
             (options.strict && sum.unsupported > 0)) {
    report.exit_code = kExitFailed;
  } else if (options.skip_exit_code && sum.unsupported == sum.total() && sum.total() > 0) {
    report.exit_code = *options.skip_exit_code;
  } else {
    report.exit_code = kExitPassed;
  }

  WriteConsole(report, out, options.quiet);
  if (catalog.cases.empty()) {
    err << "mm-conformance: no MatMul case found"
        << (catalog.roots.empty() ? " (no data root exists and built-ins are off)" : "")
        << "; see --list\n";
  }
  if (official_failed) {
    err << "mm-conformance: --require-official: the official corpus is incomplete or altered\n";
  }
  using Writer = std::string (*)(const Report&);
  for (const auto& [path, writer] :
       {std::pair<const std::string&, Writer>{options.json, ToJson},
        std::pair<const std::string&, Writer>{options.junit, ToJUnitXml},
        std::pair<const std::string&, Writer>{options.markdown, ToMarkdown}}) {
    if (path.empty()) continue;
    Status written = WriteFile(path, writer(report));
    if (!written.ok()) {
      err << "mm-conformance: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return report.exit_code;
}

}  // namespace mm::conformance
