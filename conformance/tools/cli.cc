#include "mm/conformance/tools/cli.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/onednn/onednn_settings.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/auto_expectations.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/loader/matmul_case.h"
#include "mm/conformance/official/official_corpus.h"
#include "mm/conformance/outputs_backend.h"
#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/escape.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/report/report_files.h"
#include "mm/conformance/result_check.h"
#include "mm/conformance/runner.h"
#include "mm/conformance/stop_signals.h"
#include "mm/conformance/tools/cli_options.h"
#include "mm/conformance/worker_pool.h"
#include "mm/version.h"

namespace mm::conformance {
namespace {

using cli::Joined;
using cli::NewNames;

SelfCheckCommand g_self_check = nullptr;
StartHook g_start_hook = nullptr;

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
    out << PrintableText(c.dir_is == CaseEntry::DirIs::kNone ? c.source() : c.dir());
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
  if (const std::string hint = MissingOfficialHint(official); !hint.empty()) {
    out << "  " << hint << "\n";
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
          << "  " << std::setw(12) << ""
          << "not available: " << registry.UnavailableReason(name) << "\n";
    }
  }
}

// What a resumed run takes from its previous report: per case index, how many of its results
// (a prefix, in run order) are kept, and where each case not finished starts; the rule the kept
// results were checked under, and how many results were refused by it.
struct Resumed {
  std::string path;
  std::vector<std::uint32_t> keep;
  std::vector<CaseStart> to_run;
  ResultRules rules;
  std::int64_t inconsistent = 0;
};

// Checks that `path` is a report of the same run as `now` (same mm, cases, backends, tolerance,
// rule and expectations) and finds what it already finished: per case, the results in run order
// up to the first one that is out of place, repeated or not consistent with itself
// (CheckResultConsistent under `now`'s rule); that one and the rest of its case run again. The
// error names the file and the difference.
StatusOr<Resumed> LoadResumed(const std::string& path, const Report& now, const Catalog& catalog,
                              const std::vector<CaseStart>& selected) {
  MM_ASSIGN_OR_RETURN(Report before, ReadReportHeader(path));
  const std::string refused = "'" + path + "' is not a report of this run: ";
  if (before.selection.fingerprint.empty()) {
    return InvalidArgumentError(refused +
                                "it does not say which cases it selected (a merged report, or "
                                "one written by an older mm)");
  }
  if (before.version != now.version) {
    return InvalidArgumentError(refused + "it was written by mm " + before.version +
                                ", this is mm " + now.version);
  }
  if (before.backends != now.backends) {
    return InvalidArgumentError(refused + "it ran the backends " + Joined(before.backends) +
                                ", this run selects " + Joined(now.backends) +
                                " (give the same --backend and --backend-lib options)");
  }
  if (before.rule != now.rule) {
    return InvalidArgumentError(refused + "it was judged under --tolerance " +
                                (before.rule == ToleranceRule::kOnnx ? "onnx" : "bound") +
                                ", this run under " +
                                (now.rule == ToleranceRule::kOnnx ? "onnx" : "bound"));
  }
  if (before.tolerance.rtol != now.tolerance.rtol || before.tolerance.atol != now.tolerance.atol) {
    return InvalidArgumentError(refused + "its --rtol/--atol differ from this run's");
  }
  if (before.expectations.has_value() != now.expectations.has_value() ||
      (before.expectations && before.expectations->source != now.expectations->source)) {
    return InvalidArgumentError(refused + "its --expectations file differs from this run's");
  }
  if (before.selection.fingerprint != now.selection.fingerprint ||
      before.selection.cases != now.selection.cases ||
      before.selection.results != now.selection.results) {
    return InvalidArgumentError(
        refused + "it selected other cases (" + std::to_string(before.selection.cases) +
        " cases, " + std::to_string(before.selection.results) + " results), this run selects " +
        std::to_string(now.selection.cases) + " cases, " + std::to_string(now.selection.results) +
        " results (give the same data, --case, --filter, --exclude and --shard options)");
  }
  Resumed resumed;
  resumed.path = path;
  resumed.keep.assign(catalog.cases.size(), 0);
  resumed.rules = {now.tolerance, now.rule, now.expectations ? &*now.expectations : nullptr};
  // A case outside the selection is never taken: its results stay closed from the start.
  std::vector<bool> closed(catalog.cases.size(), true);
  for (const CaseStart& c : selected) closed[c.case_index] = false;
  std::size_t last_case = 0;  // Results of an earlier case after a later one's are not taken.
  const std::size_t nb = now.backends.size();
  ResultReader reader;
  MM_RETURN_IF_ERROR(reader.Open(path));
  while (true) {
    MM_ASSIGN_OR_RETURN(std::optional<Result> r, reader.Next());
    if (!r) break;
    const auto c = static_cast<std::size_t>(r->case_index);
    if (r->case_index < 0 || c >= catalog.cases.size() || catalog.cases[c].name != r->case_name) {
      return InvalidArgumentError(refused + "it holds a result of case '" + r->case_name +
                                  "' at index " + std::to_string(r->case_index) +
                                  ", which this run has not");
    }
    // Results are kept while they are the next ones the case would give; the rest runs again.
    const CaseEntry& entry = catalog.cases[c];
    const std::size_t k = resumed.keep[c];
    bool next = !closed[c] && c >= last_case && k < ResultsOfCase(catalog, c, nb) &&
                r->backend == now.backends[k % nb] &&
                (!entry.model || r->data_set == entry.data_sets.name(k / nb));
    last_case = std::max(last_case, c);
    if (next && !CheckResultConsistent(*r, resumed.rules).ok()) {
      ++resumed.inconsistent;
      next = false;
    }
    if (next) {
      ++resumed.keep[c];
    } else {
      closed[c] = true;
    }
  }
  for (const CaseStart& c : selected) {
    const std::size_t total = ResultsOfCase(catalog, c.case_index, nb);
    std::uint32_t& k = resumed.keep[c.case_index];
    if (k >= total) continue;
    if (!catalog.cases[c.case_index].model) k = 0;  // An invalid case's results come together.
    resumed.to_run.push_back({c.case_index, k / nb, k % nb});
  }
  return resumed;
}

// Puts the kept results of the previous report in front of the new ones, in catalog order. Each
// is checked again as it is taken: a file changed since LoadResumed read it is an error.
class ResumeMerger final : public ResultSink {
 public:
  ResumeMerger(const Resumed& resumed, ResultSink& next)
      : resumed_(resumed), next_(next), taken_(resumed.keep.size(), 0) {
    status_ = reader_.Open(resumed.path);
    Advance();
  }
  void Add(Result r) override {
    Drain(r.case_index);
    next_.Add(std::move(r));
  }
  // Gives the kept results after the last new one; the first reading error, if any.
  Status Finish() {
    Drain(std::numeric_limits<std::int64_t>::max());
    return status_;
  }

 private:
  void Advance() {
    head_.reset();
    if (!status_.ok()) return;
    auto r = reader_.Next();
    if (!r.ok()) {
      status_ = r.status();
      return;
    }
    head_ = std::move(r).value();
  }
  void Drain(std::int64_t upto) {
    while (head_ && head_->case_index <= upto) {
      const auto c = static_cast<std::size_t>(head_->case_index);
      if (c < taken_.size() && taken_[c] < resumed_.keep[c]) {
        if (Status consistent = CheckResultConsistent(*head_, resumed_.rules); !consistent.ok()) {
          status_ = InvalidArgumentError("'" + resumed_.path + "' changed while it was read: " +
                                         ResultIdentity(*head_) + ": " + consistent.message());
          head_.reset();
          return;
        }
        ++taken_[c];
        next_.Add(std::move(*head_));
      }
      Advance();
    }
  }
  const Resumed& resumed_;
  ResultSink& next_;
  ResultReader reader_;
  Status status_;
  std::optional<Result> head_;
  std::vector<std::uint32_t> taken_;
};

// Gives the extra results of an outputs tree (by case index) after the last result of their case:
// before the first result of a later case, or at Finish.
class ExtrasMerger final : public ResultSink {
 public:
  ExtrasMerger(std::multimap<std::int64_t, Result>& extras, ResultSink& next)
      : extras_(extras), next_(next) {}
  void Add(Result r) override {
    Drain(r.case_index - 1);
    next_.Add(std::move(r));
  }
  // Gives the extras not given yet.
  void Finish() { Drain(std::numeric_limits<std::int64_t>::max()); }

 private:
  void Drain(std::int64_t upto) {
    while (!extras_.empty() && extras_.begin()->first <= upto) {
      next_.Add(std::move(extras_.begin()->second));
      extras_.erase(extras_.begin());
    }
  }
  std::multimap<std::int64_t, Result>& extras_;
  ResultSink& next_;
};

}  // namespace

Selection SelectionOf(const Catalog& catalog, const std::vector<CaseStart>& selected,
                      std::size_t num_backends) {
  std::uint64_t combined = 0;
  Selection selection;
  for (const CaseStart& c : selected) {
    std::uint64_t hash = 14695981039346656037ull;
    auto mix = [&hash](std::string_view text) {
      for (unsigned char ch : text) {
        hash ^= ch;
        hash *= 1099511628211ull;
      }
      hash ^= 0xff;
      hash *= 1099511628211ull;
    };
    const CaseEntry& entry = catalog.cases[c.case_index];
    mix(std::to_string(c.case_index));
    mix(entry.name);
    for (std::size_t d = 0; d < entry.data_sets.size(); ++d) mix(entry.data_sets.name(d));
    combined ^= hash;
    ++selection.cases;
    selection.results +=
        static_cast<std::int64_t>(ResultsOfCase(catalog, c.case_index, num_backends));
  }
  selection.fingerprint = FingerprintText(combined);
  return selection;
}

void SetSelfCheckCommand(SelfCheckCommand command) { g_self_check = command; }

void SetStartHookForTesting(StartHook hook) { g_start_hook = hook; }

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
  // The shards' headers first (checked as one run), then their results read one at a time and
  // merged in catalog order: memory does not grow with the results.
  std::vector<Report> shards;
  for (const std::string& path : options.inputs) {
    auto header = ReadReportHeader(path);
    if (!header.ok()) {
      err << "mm-conformance merge: " << header.status().message() << "\n";
      return kExitUsage;
    }
    shards.push_back(std::move(header).value());
  }
  auto merged = MergeShardHeaders(shards, options.inputs);
  if (!merged.ok()) {
    err << "mm-conformance merge: " << merged.status().message() << "\n";
    return kExitUsage;
  }
  Report& report = *merged;
  std::size_t name_width = 4, backend_width = 7;
  for (const std::string& b : report.backends) backend_width = std::max(backend_width, b.size());
  auto fail = [&](const Status& status) {
    err << "mm-conformance merge: " << status.message() << "\n";
    return kExitUsage;
  };
  // A first pass checks every result before anything is written, so a refused merge leaves no
  // report; it also finds the console's column width (the longest case name).
  for (std::size_t i = 0; i < shards.size(); ++i) {
    ShardResultCheck check(report);
    check.Start(shards[i], "'" + options.inputs[i] + "'");
    ResultReader reader;
    if (Status opened = reader.Open(options.inputs[i]); !opened.ok()) return fail(opened);
    while (true) {
      auto r = reader.Next();
      if (!r.ok()) return fail(r.status());
      if (!*r) break;
      if (Status checked = check.Add(**r); !checked.ok()) return fail(checked);
      name_width = std::max(name_width, (*r)->case_name.size());
    }
    if (Status complete = check.Finish(); !complete.ok()) return fail(complete);
  }
  // The second pass checks again what it merges: a file changed in between is refused too.
  std::vector<ShardResultCheck> checks;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    checks.emplace_back(report);
    checks.back().Start(shards[i], "'" + options.inputs[i] + "'");
  }
  std::vector<std::unique_ptr<ResultReader>> readers;
  std::vector<std::optional<Result>> heads;
  for (const std::string& path : options.inputs) {
    readers.push_back(std::make_unique<ResultReader>());
    if (Status opened = readers.back()->Open(path); !opened.ok()) return fail(opened);
    auto r = readers.back()->Next();
    if (!r.ok()) return fail(r.status());
    heads.push_back(std::move(r).value());
  }
  ConsoleWriter console(out, options.quiet, report.tolerance, name_width, backend_width);
  ReportFiles files;
  if (Status opened = files.Open(options.json, options.junit, options.markdown, report);
      !opened.ok()) {
    return fail(opened);
  }
  if (report.expectations) {
    for (Expectation& e : report.expectations->entries) e.matched = 0;
  }
  Summary summary;
  ResourceTally resources;
  while (true) {
    // Each case ran whole in one shard, in order: the smallest case index next (ties keep the
    // shards' order).
    std::optional<std::size_t> next;
    for (std::size_t i = 0; i < heads.size(); ++i) {
      if (heads[i] && (!next || heads[i]->case_index < heads[*next]->case_index)) next = i;
    }
    if (!next) break;
    Result r = std::move(*heads[*next]);
    if (Status checked = checks[*next].Add(r); !checked.ok()) return fail(checked);
    auto following = readers[*next]->Next();
    if (!following.ok()) return fail(following.status());
    heads[*next] = std::move(following).value();
    Count(summary, r);
    if (report.expectations) CountMatch(*report.expectations, r);
    if (r.resources) resources.Add(r.backend, *r.resources);
    console.Add(r);
    files.Add(r);
  }
  for (const ShardResultCheck& check : checks) {
    if (Status complete = check.Finish(); !complete.ok()) return fail(complete);
  }
  report.resources = resources.Finish(report.backends);
  report.exit_code = ExitCodeOfSummary(report, summary, summary.total() > 0);
  console.Finish(report, summary);
  if (Status written = files.Finish(report, summary); !written.ok()) return fail(written);
  return report.exit_code;
}

int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err,
                      const char* env_expectations) {
  if (!args.empty() && args.front() == "merge") {
    return RunMergeCli({args.begin() + 1, args.end()}, out, err);
  }
  // From the start: a signal while the cases are found or the backends probed stops the run before
  // its first result, and the reports are still written (empty, marked interrupted).
  StopOnSignals stop;
  CliOptions options;
  std::string help;
  if (auto error = ParseConformanceArgs(args, builtin.DefaultNames(), options, help)) {
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
  if (g_start_hook != nullptr) g_start_hook("load-backends");
  BackendRegistry registry = builtin;
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
  if (!loaded.ok()) {
    err << "mm-conformance: " << loaded.message() << "\n";
    return kExitUsage;
  }
  // What --backend-lib and --outputs name is, without --backend, all that runs.
  std::vector<std::string> named = NewNames(before_flags, registry.Names());
  // Outputs trees (--outputs), judged as backends of their given names.
  std::vector<OutputsTree> outputs_trees;
  {
    std::map<std::string, std::string> arithmetic;
    for (const std::string& text : options.outputs_arithmetic) {
      auto split = SplitNameValue(text, "--outputs-arithmetic");
      if (!split.ok()) {
        err << "mm-conformance: " << split.status().message() << "\n";
        return kExitUsage;
      }
      arithmetic[split->first] = split->second;
    }
    for (const std::string& text : options.outputs) {
      auto split = SplitNameValue(text, "--outputs");
      Status status = split.status();
      if (split.ok()) {
        OutputsSpec spec{split->first, split->second, {}};
        if (auto it = arithmetic.find(spec.name); it != arithmetic.end()) {
          status = ParseArithmeticSpec(it->second, spec.arithmetic)
                       .WithContext("--outputs-arithmetic " + spec.name);
          arithmetic.erase(it);
        }
        auto tree = status.ok() ? LoadOutputsTree(std::move(spec)) : StatusOr<OutputsTree>(status);
        status = tree.ok() ? RegisterOutputsBackend(registry, *tree) : tree.status();
        if (status.ok()) {
          named.push_back(tree->spec.name);
          outputs_trees.push_back(std::move(tree).value());
        }
      }
      if (!status.ok()) {
        err << "mm-conformance: " << status.message() << "\n";
        return kExitUsage;
      }
    }
    if (!arithmetic.empty()) {
      err << "mm-conformance: --outputs-arithmetic " << arithmetic.begin()->first
          << ": no --outputs " << arithmetic.begin()->first << "=DIR is given\n";
      return kExitUsage;
    }
  }
  std::vector<std::string> backends = options.backends;
  if (backends.empty()) backends = named.empty() ? registry.DefaultNames() : named;
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

  if (options.self_check) {
    if (g_self_check == nullptr) {
      err << "mm-conformance: --self-check is not available in this program\n";
      return kExitUsage;
    }
    // One worker unless -j says otherwise: the self-check is a few hundred tiny results.
    return g_self_check(*roots, !options.no_builtin, options.jobs > 0 ? options.jobs : 1,
                        options.quiet, out);
  }

  // The run's options come before its cases: isolated workers are forked from a launcher started
  // here, before discovery, so that no worker holds the catalog (a copy of it in every worker was
  // most of their memory on a large corpus).
  Report report;
  report.rule = options.rule == "bound" ? ToleranceRule::kBound : ToleranceRule::kOnnx;
  const bool listing = options.list || options.list_tests;
  if (options.expectations.empty() && env_expectations != nullptr) {
    options.expectations = env_expectations;
  }
  if (!listing && !options.expectations.empty()) {
    auto loaded = LoadExpectations(options.expectations);
    if (!loaded.ok()) {
      err << "mm-conformance: " << loaded.status().message() << "\n";
      return kExitUsage;
    }
    report.expectations = std::move(loaded).value();
  }
  // auto never chooses a backend these expectations declare deviating (in the workers too: they
  // are forked from here on).
  std::optional<ScopedAutoDeviations> auto_deviations;
  if (report.expectations) auto_deviations.emplace(AutoDeviationsOf(*report.expectations));
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
  if (run.isolate) {
    run.memory_limit_bytes = options.memory_limit_mib
                                 ? *options.memory_limit_mib * (std::int64_t{1} << 20)
                                 : DefaultMemoryLimitBytes(run.jobs);
  }
  // Drivers (--backend-cmd, numpy, ...) are held to the run's limits, in the workers too.
  runtime::SetDriverLimits({run.timeout_seconds, run.memory_limit_bytes});
  std::unique_ptr<WorkerLauncher> launcher;
  if (run.isolate && !listing) {
    auto started = WorkerLauncher::Start(registry, run);
    if (started.ok()) {
      launcher = std::move(started).value();
      run.launcher = launcher.get();
    } else {
      // The workers are then forked from here: the same results, with the catalog in each.
      err << "mm-conformance: " << started.status().message() << "\n";
    }
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
  if (g_start_hook != nullptr) g_start_hook("discover");
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

  report.version = MM_VERSION;
  report.tolerance = options.tolerance;
  report.strict = options.strict;
  report.require_official = options.require_official;
  report.backends = backends;
  for (const std::string& name : registry.UnavailableNames()) {
    report.unavailable_backends.push_back({name, registry.UnavailableReason(name)});
  }
  report.machine = DescribeMachine({kOneDnnMaxCpuIsaVariable});
  report.loader_versions = LoaderVersions();
  report.roots = catalog.roots;
  report.skipped = catalog.skipped;
  report.shadowed = catalog.shadowed;
  report.official = official;
  report.shard = options.shard;
  if (report.expectations) {
    for (Expectation& e : report.expectations->entries) e.matched = 0;
  }
  const std::vector<CaseStart> selected = CasesInShard(catalog, options.shard);
  report.selection = SelectionOf(catalog, selected, backends.size());
  report.run_selection = SelectionOf(catalog, CasesInShard(catalog, {}), backends.size());
  // Asked in a child process: the parent must not start any backend (threads, oneDNN state)
  // before the workers are forked.
  if (g_start_hook != nullptr) g_start_hook("describe");
  report.backend_info = run.isolate ? DescribeBackendsInChild(registry, backends, run.launcher)
                                    : DescribeBackends(registry, backends);

  // What a previous run already finished, when resuming: only the rest runs.
  std::vector<CaseStart> to_run = selected;
  std::optional<Resumed> resumed;
  if (!options.resume.empty()) {
    auto previous = LoadResumed(options.resume, report, catalog, selected);
    if (!previous.ok()) {
      err << "mm-conformance: --resume " << previous.status().message() << "\n";
      return kExitUsage;
    }
    resumed = std::move(previous).value();
    to_run = resumed->to_run;
    if (resumed->inconsistent > 0) {
      err << "mm-conformance: --resume " << options.resume << ": " << resumed->inconsistent
          << " result(s) not consistent with their own comparison, the expectations or the "
             "rule of this run; running them again\n";
    }
    Resumption taken{{options.resume}, 0, resumed->inconsistent};
    for (const CaseStart& c : selected) taken.taken += resumed->keep[c.case_index];
    report.resumed = std::move(taken);
  }

  std::size_t name_width = 4, backend_width = 7;
  for (const CaseStart& c : selected) {
    name_width = std::max(name_width, catalog.cases[c.case_index].name.size());
  }
  for (const std::string& b : backends) backend_width = std::max(backend_width, b.size());
  ConsoleWriter console(out, options.quiet, options.tolerance, name_width, backend_width);
  ReportFiles files;
  if (Status opened = files.Open(options.json, options.junit, options.markdown, report);
      !opened.ok()) {
    err << "mm-conformance: " << opened.message() << "\n";
    return kExitUsage;
  }
  // Every result, finished now or taken from the resumed report, goes through here once, in
  // catalog order.
  struct Everything final : ResultSink {
    void Add(Result r) override {
      Count(summary, r);
      if (expectations != nullptr) CountMatch(*expectations, r);
      if (r.resources) resources.Add(r.backend, *r.resources);
      const auto c = static_cast<std::size_t>(r.case_index);
      if (c < given.size()) ++given[c];
      console->Add(r);
      files->Add(r);
    }
    Summary summary;
    ResourceTally resources;
    Expectations* expectations = nullptr;
    std::vector<std::uint32_t> given;  // Results per case index.
    ConsoleWriter* console = nullptr;
    ReportFiles* files = nullptr;
  } everything;
  everything.expectations = report.expectations ? &*report.expectations : nullptr;
  everything.given.assign(catalog.cases.size(), 0);
  everything.console = &console;
  everything.files = &files;

  // Files of an outputs tree that no result reads are ERRORs too, given after their case's results.
  std::multimap<std::int64_t, Result> extras;
  for (const OutputsTree& tree : outputs_trees) {
    if (std::find(backends.begin(), backends.end(), tree.spec.name) == backends.end()) continue;
    for (Result& r : ExtraOutputResults(tree, catalog, discover.select, run.shard)) {
      ApplyExpectation(run.expectations, run.rule, r);
      extras.emplace(r.case_index, std::move(r));
    }
  }
  ExtrasMerger with_extras(extras, everything);

  bool finished = true;
  {
    run.stop = stop.flag();
    run.stop_fd = stop.fd();
    if (resumed) {
      ResumeMerger merger(*resumed, with_extras);
      finished = RunConformanceStreaming(catalog, registry, run, to_run, merger);
      // Interrupted again: every result already finished is kept, the taken ones included.
      const Status rest = merger.Finish();
      if (!rest.ok()) {
        err << "mm-conformance: --resume " << rest.message() << "\n";
        return kExitUsage;
      }
    } else {
      finished = RunConformanceStreaming(catalog, registry, run, to_run, with_extras);
    }
    if (finished) with_extras.Finish();
    if (!finished) {
      Interruption interruption;
      interruption.signal = static_cast<int>(*stop.flag());
      interruption.expected = report.selection.results;
      for (const CaseStart& c : selected) {
        const std::uint32_t given = everything.given[c.case_index];
        interruption.results += given;
        if (given == 0) {
          interruption.not_run.push_back(catalog.cases[c.case_index].name);
        } else if (given < ResultsOfCase(catalog, c.case_index, backends.size())) {
          interruption.incomplete.push_back(catalog.cases[c.case_index].name);
        }
      }
      report.interrupted = std::move(interruption);
    }
    // A second signal from here on ends the process at once (StopOnSignals).
    report.resources = everything.resources.Finish(backends);
    report.exit_code = report.interrupted
                           ? 128 + report.interrupted->signal
                           : ExitCodeOfSummary(report, everything.summary, !catalog.cases.empty(),
                                               options.skip_exit_code);
    console.Finish(report, everything.summary);
    // Where the official cases are expected: the default roots, or roots that hold some of them.
    // A run over a folder of one's own cases is not told that it lacks ONNX's (--list still says).
    const bool own_roots_only =
        std::all_of(roots->begin(), roots->end(),
                    [](const DataRoot& root) { return root.origin != "default"; }) &&
        official.Count(OfficialStatus::State::kMissing) == static_cast<int>(official.cases.size());
    if (const std::string hint = MissingOfficialHint(official); !hint.empty() && !own_roots_only) {
      err << "mm-conformance: " << hint << "\n";
    }
    if (catalog.cases.empty()) {
      err << "mm-conformance: no MatMul case found"
          << (catalog.roots.empty() ? " (no data root exists and built-ins are off)" : "")
          << "; see --list\n";
    }
    if (official_failed) {
      err << "mm-conformance: --require-official: the official corpus is incomplete or altered\n";
    }
    if (report.interrupted) {
      err << "mm-conformance: " << InterruptionText(*report.interrupted)
          << "; the reports hold the finished results (--resume the JSON report to run the "
             "rest)\n";
    }
    if (Status written = files.Finish(report, everything.summary); !written.ok()) {
      err << "mm-conformance: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return report.exit_code;
}

}  // namespace mm::conformance
