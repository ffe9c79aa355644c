#include "conformance/tools/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <optional>
#include <regex>

#include "conformance/loader/catalog.h"
#include "conformance/loader/matmul_case.h"
#include "engine/machine.h"
#include "conformance/official/official_corpus.h"
#include "conformance/report/report.h"
#include "conformance/runner.h"

namespace mm::conformance {
namespace {

constexpr std::string_view kHelp =
    R"(mm-conformance: does each MatMul backend compute what ONNX says (numpy.matmul)?

Usage: mm-conformance [options]

Loads ONNX node-test cases (a directory with model.onnx and test_data_set_N/{input_K,output_0}.pb),
runs every (case, data set) on every backend, and compares each result with the expected output
(pass iff |actual - expected| <= atol + rtol * |expected|; NaN equals NaN; inf must match; integers
exact; shape and dtype equal) and with the reference backend's result (three-way).

Where cases come from (a name found twice: the first source wins, the other is shadowed):
  --data-dir DIR      a folder of case directories (like ONNX's data/node) or one case directory;
                      repeatable. When given, MM_ONNX_DATA and the defaults are not used.
  MM_ONNX_DATA        colon-separated data directories, used when no --data-dir is given.
  defaults            when neither is given: /usr/share/libonnx-testdata/data/node (Debian's
                      libonnx-testdata) and third_party/onnx-testdata/node, when present.
  built-in cases      the 9 worked examples of the ONNX MatMul page (test_cc_matmul_*), always
                      appended last unless --no-builtin.
Models that are not MatMul cases are listed as skipped (with the reason), never run.

Selecting:
  --backend NAME      run this backend (repeatable; default: all of {backends})
  --case NAME         run only the case with exactly this name (repeatable)
  --filter REGEX      run only cases whose name matches REGEX (ECMAScript, partial match)
  --exclude REGEX     skip cases whose name matches REGEX
  --no-builtin        leave out the built-in cases

Judging:
  --rtol X            relative tolerance (default 1e-3, ONNX's)
  --atol X            absolute tolerance (default 1e-7, ONNX's)
  --strict            count UNSUPPORTED as a failure
  --require-official  exit 3 unless all 7 official ONNX MatMul node tests are found with their
                      official bytes (SHA-256 of every file is built in)

Output:
  --list              list cases (with source), skipped models and why, shadowed names, the
                      official corpus and the backends; runs nothing
  --list-tests        print "CASE<TAB>BACKEND" per test, for ctest registration; runs nothing
  --json FILE         write the JSON report (summary, results, official, skipped)
  --junit FILE        write JUnit XML (one testcase per case, data set and backend)
  --markdown FILE     write a Markdown report (verdict matrix, details, official corpus)
  --quiet             print only the summary, not one line per case and backend
  --skip-exit-code N  exit N when every result is UNSUPPORTED (for ctest's SKIP_RETURN_CODE)
  --help, --version

Exit codes:
  0  every selected result passed (UNSUPPORTED allowed unless --strict)
  1  any FAIL or ERROR (or UNSUPPORTED under --strict)
  2  usage error, unwritable report, or no MatMul case found
  3  --require-official and an official case is missing or altered

Examples:
  mm-conformance                                      # default data, every backend
  MM_ONNX_DATA=../shared/onnx-node-tests/node mm-conformance --require-official
  mm-conformance --backend reference --filter 'bcast|4d' --junit conformance.xml
)";

struct Options {
  std::vector<std::string> data_dirs;
  std::vector<std::string> backends;
  std::vector<std::string> cases;
  std::optional<std::regex> filter, exclude;
  Tolerance tolerance;
  bool no_builtin = false, strict = false, require_official = false, list = false,
       list_tests = false, quiet = false;
  std::optional<int> skip_exit_code;
  std::string json, junit, markdown;
};

std::optional<double> ParseDouble(const std::string& text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Parses `args` into `options`; on error returns the message for a usage error.
std::optional<std::string> Parse(const std::vector<std::string>& args, Options& options, bool& help,
                                 bool& version) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    auto flag = [&](bool& target) -> std::optional<std::string> {
      if (inline_value) return arg + " takes no value";
      target = true;
      return std::nullopt;
    };
    auto value = [&](std::string& target) -> std::optional<std::string> {
      if (inline_value) {
        target = *inline_value;
      } else if (i + 1 < args.size()) {
        target = args[++i];
      } else {
        return arg + " needs a value";
      }
      if (target.empty()) return arg + " needs a non-empty value";
      return std::nullopt;
    };
    std::string v;
    std::optional<std::string> error;
    if (arg == "--help" || arg == "-h") {
      error = flag(help);
    } else if (arg == "--version") {
      error = flag(version);
    } else if (arg == "--data-dir") {
      if (!(error = value(v))) options.data_dirs.push_back(v);
    } else if (arg == "--backend") {
      // A backend named twice runs once.
      if (!(error = value(v)) && std::find(options.backends.begin(), options.backends.end(), v) ==
                                     options.backends.end()) {
        options.backends.push_back(v);
      }
    } else if (arg == "--case") {
      if (!(error = value(v))) options.cases.push_back(v);
    } else if (arg == "--filter" || arg == "--exclude") {
      if (!(error = value(v))) {
        try {
          (arg == "--filter" ? options.filter : options.exclude) = std::regex(v);
        } catch (const std::regex_error& e) {
          error = arg + ": invalid regular expression '" + v + "': " + e.what();
        }
      }
    } else if (arg == "--rtol" || arg == "--atol") {
      if (!(error = value(v))) {
        auto parsed = ParseDouble(v);
        if (!parsed || !std::isfinite(*parsed) || *parsed < 0) {
          error = arg + ": '" + v + "' is not a finite number >= 0";
        } else {
          (arg == "--rtol" ? options.tolerance.rtol : options.tolerance.atol) = *parsed;
        }
      }
    } else if (arg == "--skip-exit-code") {
      if (!(error = value(v))) {
        int code = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
        if (ec != std::errc() || end != v.data() + v.size() || code < 4 || code > 255) {
          error = "--skip-exit-code: '" + v + "' must be an integer in 4..255 (0-3 have meanings)";
        } else {
          options.skip_exit_code = code;
        }
      }
    } else if (arg == "--json") {
      error = value(options.json);
    } else if (arg == "--junit") {
      error = value(options.junit);
    } else if (arg == "--markdown") {
      error = value(options.markdown);
    } else if (arg == "--no-builtin") {
      error = flag(options.no_builtin);
    } else if (arg == "--strict") {
      error = flag(options.strict);
    } else if (arg == "--require-official") {
      error = flag(options.require_official);
    } else if (arg == "--list") {
      error = flag(options.list);
    } else if (arg == "--list-tests") {
      error = flag(options.list_tests);
    } else if (arg == "--quiet" || arg == "-q") {
      error = flag(options.quiet);
    } else {
      error = "unknown argument '" + args[i] + "'";
    }
    if (error) return error;
  }
  if (options.list && options.list_tests) return "--list and --list-tests exclude each other";
  return std::nullopt;
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

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

int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& registry,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err) {
  Options options;
  bool help = false, version = false;
  if (auto error = Parse(args, options, help, version)) {
    err << "mm-conformance: " << *error << "\nTry 'mm-conformance --help'.\n";
    return kExitUsage;
  }
  if (help) {
    std::string text(kHelp);
    text.replace(text.find("{backends}"), 10, Joined(registry.Names()));
    out << text;
    return kExitPassed;
  }
  if (version) {
    out << "mm-conformance " << MM_VERSION << " (ONNX MatMul node tests; official corpus: ONNX "
        << "v1.22.0, " << OfficialCases().size() << " cases)\n";
    return kExitPassed;
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
  } else if (sum.fail + sum.error > 0 || (options.strict && sum.unsupported > 0)) {
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
