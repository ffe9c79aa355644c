#include "mm/conformance/report/merge.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/output_file.h"
#include "mm/conformance/report/report_files.h"
#include "mm/conformance/results/result_json.h"
#include "mm/conformance/running/outputs_backend.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"

namespace mm::conformance {
namespace {

using nlohmann::json;

// One result of a report is a few hundred bytes; a longer one is not a result mm wrote.
constexpr std::size_t kMaxResultBytes = 16 << 20;

using Field = io::JsonField<json>;

// Member `key` of `parent` as a string, or `fallback` when absent (an older report).
StatusOr<std::string> OptionalString(const Field& parent, std::string_view key,
                                     std::string fallback = {}) {
  MM_ASSIGN_OR_RETURN(const std::optional<Field> f, parent.OptionalMember(key));
  if (!f) return fallback;
  return f->String();
}

StatusOr<int> IntAt(const Field& parent, std::string_view key) {
  MM_ASSIGN_OR_RETURN(const std::int64_t v, parent.IntAt(key, std::numeric_limits<int>::min(),
                                                         std::numeric_limits<int>::max()));
  return static_cast<int>(v);
}

StatusOr<double> DoubleAt(const Field& parent, std::string_view key) {
  MM_ASSIGN_OR_RETURN(const Field f, parent.Member(key));
  auto v = DoubleFromJson(f.json());
  if (!v.ok()) return f.Error(v.status().message());
  return v;
}

// Each element of array `key`, read by `read`.
template <class F>
Status EachOf(const Field& parent, std::string_view key, F&& read) {
  MM_ASSIGN_OR_RETURN(const Field list, parent.Member(key));
  MM_ASSIGN_OR_RETURN(const std::vector<Field> elements, list.Elements());
  for (const Field& e : elements) MM_RETURN_IF_ERROR(read(e));
  return OkStatus();
}

Status ReadHeader(const Field& r, Report& report) {
  MM_ASSIGN_OR_RETURN(report.version, r.StringAt("version"));
  MM_ASSIGN_OR_RETURN(const Field tolerance, r.Member("tolerance"));
  MM_ASSIGN_OR_RETURN(report.tolerance.rtol, DoubleAt(tolerance, "rtol"));
  MM_ASSIGN_OR_RETURN(report.tolerance.atol, DoubleAt(tolerance, "atol"));
  // Reports from before the rule was recorded were judged by ONNX's tolerance.
  MM_ASSIGN_OR_RETURN(const std::string rule, OptionalString(tolerance, "rule", "onnx"));
  if (rule != "onnx" && rule != "bound") {
    return tolerance.Error("rule '" + rule + "' is neither 'onnx' nor 'bound'");
  }
  report.rule = rule == "bound" ? ToleranceRule::kBound : ToleranceRule::kOnnx;
  MM_ASSIGN_OR_RETURN(report.strict, r.BoolAt("strict"));
  MM_ASSIGN_OR_RETURN(report.require_official, r.BoolAt("require_official"));
  MM_ASSIGN_OR_RETURN(const std::optional<Field> shard, r.OptionalMember("shard"));
  if (shard) {
    MM_ASSIGN_OR_RETURN(report.shard.index, IntAt(*shard, "index"));
    MM_ASSIGN_OR_RETURN(report.shard.count, IntAt(*shard, "count"));
  }
  MM_ASSIGN_OR_RETURN(const Field backends, r.Member("backends"));
  MM_ASSIGN_OR_RETURN(report.backends, backends.Strings());
  // What the first shard's machine and backends were: shards of a CI matrix may run on
  // different machines, and the merged report says what its first shard saw.
  MM_ASSIGN_OR_RETURN(const std::optional<Field> runs_on, r.OptionalMember("runs_on"));
  if (runs_on) {
    for (const std::string& name : report.backends) {
      MM_ASSIGN_OR_RETURN(std::string text, OptionalString(*runs_on, name));
      report.backend_info.push_back({name, {}, std::move(text)});
    }
  }
  MM_ASSIGN_OR_RETURN(const std::optional<Field> unavailable,
                      r.OptionalMember("unavailable_backends"));
  if (unavailable) {
    MM_ASSIGN_OR_RETURN(const auto members, unavailable->Members());
    for (const auto& [name, why] : members) {
      MM_ASSIGN_OR_RETURN(std::string text, why.String());
      report.unavailable_backends.emplace_back(name, std::move(text));
    }
  }
  MM_ASSIGN_OR_RETURN(const std::optional<Field> machine, r.OptionalMember("machine"));
  if (machine) {
    MachineInfo& m = report.machine;
    MM_ASSIGN_OR_RETURN(m.cpu_model, OptionalString(*machine, "cpu_model"));
    MM_ASSIGN_OR_RETURN(const std::optional<Field> cpus, machine->OptionalMember("logical_cpus"));
    if (cpus) {
      MM_ASSIGN_OR_RETURN(const std::int64_t n, cpus->Int(0, std::numeric_limits<int>::max()));
      m.logical_cpus = static_cast<int>(n);
    }
    MM_ASSIGN_OR_RETURN(m.cpu_features, OptionalString(*machine, "cpu_features"));
    MM_ASSIGN_OR_RETURN(m.omp_num_threads, OptionalString(*machine, "omp_num_threads"));
    MM_ASSIGN_OR_RETURN(std::string onednn_isa, OptionalString(*machine, "onednn_max_cpu_isa"));
    m.kernel_variables = {{"ONEDNN_MAX_CPU_ISA", std::move(onednn_isa)}};
    MM_ASSIGN_OR_RETURN(m.os, OptionalString(*machine, "os"));
    MM_ASSIGN_OR_RETURN(m.compiler, OptionalString(*machine, "compiler"));
    MM_ASSIGN_OR_RETURN(report.loader_versions, OptionalString(*machine, "loader"));
  }
  MM_RETURN_IF_ERROR(EachOf(r, "data_roots", [&](const Field& root) -> Status {
    MM_ASSIGN_OR_RETURN(std::string path, root.StringAt("path"));
    MM_ASSIGN_OR_RETURN(std::string origin, root.StringAt("origin"));
    report.roots.push_back({path, std::move(origin)});
    return OkStatus();
  }));
  MM_ASSIGN_OR_RETURN(report.exit_code, IntAt(r, "exit_code"));
  return OkStatus();
}

Status ReadOfficial(const Field& r, Report& report) {
  MM_ASSIGN_OR_RETURN(const Field official, r.Member("official"));
  MM_RETURN_IF_ERROR(EachOf(official, "found", [&](const Field& found) -> Status {
    MM_ASSIGN_OR_RETURN(std::string name, found.StringAt("case"));
    MM_ASSIGN_OR_RETURN(std::string dir, found.StringAt("dir"));
    report.official.cases.push_back({name, OfficialStatus::State::kIntact, dir, {}});
    return OkStatus();
  }));
  MM_RETURN_IF_ERROR(EachOf(official, "missing", [&](const Field& missing) -> Status {
    MM_ASSIGN_OR_RETURN(std::string name, missing.String());
    report.official.cases.push_back({name, OfficialStatus::State::kMissing, {}, {}});
    return OkStatus();
  }));
  MM_RETURN_IF_ERROR(EachOf(official, "altered", [&](const Field& altered) -> Status {
    MM_ASSIGN_OR_RETURN(std::string name, altered.StringAt("case"));
    MM_ASSIGN_OR_RETURN(std::string dir, altered.StringAt("dir"));
    MM_ASSIGN_OR_RETURN(const Field problems, altered.Member("problems"));
    MM_ASSIGN_OR_RETURN(std::vector<std::string> list, problems.Strings());
    report.official.cases.push_back({name, OfficialStatus::State::kAltered, dir, list});
    return OkStatus();
  }));
  std::sort(report.official.cases.begin(), report.official.cases.end(),
            [](const OfficialStatus& a, const OfficialStatus& b) { return a.name < b.name; });
  return OkStatus();
}

Status ReadRunState(const Field& r, Report& report) {
  MM_RETURN_IF_ERROR(EachOf(r, "skipped", [&](const Field& s) -> Status {
    MM_ASSIGN_OR_RETURN(std::string name, s.StringAt("case"));
    MM_ASSIGN_OR_RETURN(std::string dir, s.StringAt("dir"));
    MM_ASSIGN_OR_RETURN(std::string reason, s.StringAt("reason"));
    report.skipped.push_back({name, dir, reason});
    return OkStatus();
  }));
  MM_ASSIGN_OR_RETURN(const std::optional<Field> e, r.OptionalMember("expectations"));
  if (e) {
    Expectations expectations;
    MM_ASSIGN_OR_RETURN(expectations.source, e->StringAt("file"));
    MM_RETURN_IF_ERROR(EachOf(*e, "entries", [&](const Field& entry) -> Status {
      Expectation x;
      MM_ASSIGN_OR_RETURN(x.case_pattern, entry.StringAt("case"));
      MM_ASSIGN_OR_RETURN(x.backend_pattern, entry.StringAt("backend"));
      MM_ASSIGN_OR_RETURN(x.data_set_pattern, OptionalString(entry, "data_set", "*"));
      MM_ASSIGN_OR_RETURN(const std::string kind, entry.StringAt("expect"));
      x.kind = kind == "SKIP" ? Expectation::Kind::kSkip : Expectation::Kind::kXFail;
      MM_ASSIGN_OR_RETURN(x.reason, entry.StringAt("reason"));
      MM_ASSIGN_OR_RETURN(x.link, entry.StringAt("link"));
      MM_ASSIGN_OR_RETURN(x.matched, entry.IntAt("matched"));
      MM_ASSIGN_OR_RETURN(x.not_here, OptionalString(entry, "not_here", ""));
      expectations.entries.push_back(std::move(x));
      return OkStatus();
    }));
    report.expectations = std::move(expectations);
  }
  const auto selection_of = [](const Field& sel, Selection& out) -> Status {
    MM_ASSIGN_OR_RETURN(out.cases, sel.IntAt("cases"));
    MM_ASSIGN_OR_RETURN(out.results, sel.IntAt("results"));
    MM_ASSIGN_OR_RETURN(out.fingerprint, sel.StringAt("fingerprint"));
    return OkStatus();
  };
  MM_ASSIGN_OR_RETURN(const std::optional<Field> sel, r.OptionalMember("selection"));
  if (sel) {
    MM_RETURN_IF_ERROR(selection_of(*sel, report.selection));
    MM_ASSIGN_OR_RETURN(const std::optional<Field> run, sel->OptionalMember("run"));
    if (run) MM_RETURN_IF_ERROR(selection_of(*run, report.run_selection));
  }
  MM_ASSIGN_OR_RETURN(const std::optional<Field> resumed, r.OptionalMember("resumed"));
  if (resumed) {
    Resumption resumption;
    MM_ASSIGN_OR_RETURN(const Field files, resumed->Member("files"));
    MM_ASSIGN_OR_RETURN(resumption.files, files.Strings());
    MM_ASSIGN_OR_RETURN(resumption.taken, resumed->IntAt("taken"));
    MM_ASSIGN_OR_RETURN(resumption.rerun, resumed->IntAt("rerun_inconsistent"));
    report.resumed = std::move(resumption);
  }
  MM_ASSIGN_OR_RETURN(const std::optional<Field> i, r.OptionalMember("interrupted"));
  if (i) {
    Interruption interruption;
    MM_ASSIGN_OR_RETURN(interruption.signal, IntAt(*i, "signal_number"));
    MM_ASSIGN_OR_RETURN(interruption.results, i->IntAt("results"));
    MM_ASSIGN_OR_RETURN(interruption.expected, i->IntAt("of"));
    MM_ASSIGN_OR_RETURN(const Field not_run, i->Member("cases_not_run"));
    MM_ASSIGN_OR_RETURN(interruption.not_run, not_run.Strings());
    MM_ASSIGN_OR_RETURN(const Field incomplete, i->Member("cases_incomplete"));
    MM_ASSIGN_OR_RETURN(interruption.incomplete, incomplete.Strings());
    report.interrupted = std::move(interruption);
  }
  return EachOf(r, "shadowed", [&](const Field& s) -> Status {
    MM_ASSIGN_OR_RETURN(std::string name, s.StringAt("case"));
    MM_ASSIGN_OR_RETURN(std::string dir, s.StringAt("dir"));
    MM_ASSIGN_OR_RETURN(std::string winner, s.StringAt("winner"));
    report.shadowed.push_back({name, dir, winner});
    return OkStatus();
  });
}

// The report in `j`, every field typed; errors name `name`, the field and what was expected.
StatusOr<Report> ReportFromParsed(const json& j, std::string_view name) {
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(std::string(name) +
                                ": not a JSON report (unparsable or not an object)");
  }
  if (!j.contains("tool") || j["tool"] != "mm-conformance") {
    return InvalidArgumentError(std::string(name) +
                                ": not an mm-conformance report (\"tool\" is not mm-conformance)");
  }
  const Field r(j, std::string(name));
  Report report;
  MM_RETURN_IF_ERROR(ReadHeader(r, report));
  MM_ASSIGN_OR_RETURN(const Field results, r.Member("results"));
  MM_ASSIGN_OR_RETURN(const std::vector<Field> list, results.Elements());
  for (const Field& e : list) {
    auto result = ResultFromJson(e.json());
    if (!result.ok()) return result.status().WithContext(e.Where());
    report.results.push_back(std::move(result).value());
  }
  MM_RETURN_IF_ERROR(ReadOfficial(r, report));
  MM_RETURN_IF_ERROR(ReadRunState(r, report));
  // Derived from the results, as the run did: the header's copy is for readers, not read back.
  report.resources = TallyResources(report.results, report.backends);
  return report;
}

// "shard.json (shard 2/3)", or "report 2 (shard 2/3)" without names.
std::string ShardName(const Report& s, const std::vector<std::string>& names, std::size_t i) {
  return (i < names.size() ? "'" + names[i] + "'" : "report " + std::to_string(i + 1)) +
         " (shard " + std::to_string(s.shard.index) + "/" + std::to_string(s.shard.count) + ")";
}

// Whether two expectations files have the same entries (their counts aside).
bool SameEntries(const Expectations& a, const Expectations& b) {
  if (a.source != b.source || a.entries.size() != b.entries.size()) return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const Expectation &x = a.entries[i], &y = b.entries[i];
    if (x.case_pattern != y.case_pattern || x.backend_pattern != y.backend_pattern ||
        x.data_set_pattern != y.data_set_pattern || x.kind != y.kind || x.reason != y.reason ||
        x.link != y.link) {
      return false;
    }
  }
  return true;
}

std::optional<std::uint64_t> FingerprintValue(const std::string& text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.size() != 16 || ec != std::errc() || end != text.data() + text.size()) return {};
  return value;
}

// The shards are the parts of one selection: each records the whole run's (older reports do
// not), the same one, and their own selections combine into it.
Status CheckSelections(const std::vector<Report>& shards, const std::vector<std::string>& names) {
  const Selection& run = shards.front().run_selection;
  std::uint64_t combined = 0;
  std::int64_t cases = 0, results = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Report& s = shards[i];
    const std::string which = ShardName(s, names, i);
    const auto own = FingerprintValue(s.selection.fingerprint);
    if (!own || !FingerprintValue(s.run_selection.fingerprint)) {
      return InvalidArgumentError(which +
                                  " does not record which cases it and the whole run selected "
                                  "(\"selection\" with \"run\"): written by an older mm? "
                                  "Run the shards again with this mm to merge them");
    }
    const Selection& r = s.run_selection;
    if (r.fingerprint != run.fingerprint || r.cases != run.cases || r.results != run.results) {
      return InvalidArgumentError(which + " is a shard of another selection than " +
                                  ShardName(shards.front(), names, 0) + " (" +
                                  std::to_string(r.cases) + " cases, " + std::to_string(r.results) +
                                  " results against " + std::to_string(run.cases) + " cases, " +
                                  std::to_string(run.results) +
                                  "): give the same data, --case, --filter and --exclude "
                                  "options to every shard");
    }
    if (s.selection.cases < 0 || s.selection.results < 0) {
      return InvalidArgumentError(which + " records a negative selection");
    }
    combined ^= *own;
    cases += s.selection.cases;
    results += s.selection.results;
  }
  if (FingerprintText(combined) != run.fingerprint || cases != run.cases ||
      results != run.results) {
    return InvalidArgumentError(
        "the shards' selections (" + std::to_string(cases) + " cases, " + std::to_string(results) +
        " results, fingerprint " + FingerprintText(combined) + ") are not the whole run's (" +
        std::to_string(run.cases) + " cases, " + std::to_string(run.results) +
        " results, fingerprint " + run.fingerprint + "): the shards are not of one run");
  }
  return OkStatus();
}

}  // namespace

StatusOr<Report> ReportFromJson(std::string_view text, std::string_view name) {
  MM_ASSIGN_OR_RETURN(const json j, io::ParseJson(text, name));
  return ReportFromParsed(j, name);
}

namespace {

// Thrown by ReadReportHeader's parser callback at a nesting too deep, and caught there.
struct TooDeep {};

using StdioFile = std::unique_ptr<std::FILE, decltype(&std::fclose)>;

StatusOr<StdioFile> OpenReport(const std::string& path) {
  MM_ASSIGN_OR_RETURN(io::InputFile file, io::OpenInputFile(path, io::kConformanceReportFile));
  const std::string name = file.name();
  StdioFile stream(file.ReleaseToStdio(), &std::fclose);
  if (stream == nullptr) return DataLossError(name + ": cannot open: " + std::strerror(errno));
  return stream;
}

}  // namespace

StatusOr<Report> ReadReportHeader(const std::string& path) {
  MM_ASSIGN_OR_RETURN(StdioFile file, OpenReport(path));
  // Each result is dropped as soon as it is parsed: the header alone stays.
  std::string key;
  const json::parser_callback_t drop_results = [&key](int depth, json::parse_event_t event,
                                                      json& parsed) {
    if (depth > io::kMaxJsonDepth) throw TooDeep();
    if (event == json::parse_event_t::key && depth == 1) key = parsed.get<std::string>();
    return !(event == json::parse_event_t::object_end && depth == 2 && key == "results");
  };
  json j;
  try {
    j = json::parse(file.get(), drop_results, /*allow_exceptions=*/true);
  } catch (const TooDeep&) {
    return InvalidArgumentError("'" + path + "': not a JSON report: nested deeper than " +
                                std::to_string(io::kMaxJsonDepth) + " levels");
  } catch (const json::exception& e) {
    return InvalidArgumentError("'" + path + "': not a JSON report: " + e.what());
  }
  return ReportFromParsed(j, "'" + path + "'");
}

ResultReader::~ResultReader() {
  if (file_ != nullptr) std::fclose(file_);
}

int ResultReader::Get() { return getc_unlocked(file_); }

Status ResultReader::Open(const std::string& path) {
  path_ = path;
  MM_ASSIGN_OR_RETURN(StdioFile file, OpenReport(path));
  file_ = file.release();
  // Finds the key "results" of the top-level object, skipping strings and nested values.
  int depth = 0;
  std::string last_string;
  bool after_key = false;
  for (int c = Get(); c != EOF; c = Get()) {
    if (c == '"') {
      last_string.clear();
      for (c = Get(); c != EOF && c != '"'; c = Get()) {
        if (c == '\\') c = Get();
        // Only a key as short as "results" matters: a long string is not kept.
        if (last_string.size() <= 8) last_string += static_cast<char>(c);
      }
      after_key = depth == 1;
      continue;
    }
    if (c == ':' && after_key && last_string == "results") {
      for (c = Get(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = Get()) {
      }
      if (c != '[') break;
      return OkStatus();
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') after_key = false;
  }
  return InvalidArgumentError("'" + path + "': not a JSON report (no \"results\" array)");
}

StatusOr<std::optional<Result>> ResultReader::Next() {
  if (done_) return std::optional<Result>();
  int c = Get();
  while (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',') c = Get();
  if (c == ']') {
    done_ = true;
    return std::optional<Result>();
  }
  const std::string where = "'" + path_ + "': results[" + std::to_string(index_) + "]";
  if (c != '{') return InvalidArgumentError(where + ": not an object");
  std::string text(1, '{');
  int depth = 1;
  const auto too_long = [&] {
    return InvalidArgumentError(where + ": longer than " + std::to_string(kMaxResultBytes) +
                                " bytes");
  };
  while (depth > 0) {
    c = Get();
    if (c == EOF) return InvalidArgumentError(where + ": the file ends inside it");
    text += static_cast<char>(c);
    if (text.size() > kMaxResultBytes) return too_long();
    if (c == '"') {
      for (c = Get(); c != EOF && c != '"'; c = Get()) {
        if (text.size() > kMaxResultBytes) return too_long();
        text += static_cast<char>(c);
        if (c == '\\') {
          c = Get();
          if (c == EOF) break;
          text += static_cast<char>(c);
        }
      }
      if (c == EOF) return InvalidArgumentError(where + ": the file ends inside it");
      text += '"';
    } else if (c == '{' || c == '[') {
      if (++depth > io::kMaxJsonDepth) {
        return InvalidArgumentError(where + ": nested deeper than " +
                                    std::to_string(io::kMaxJsonDepth) + " levels");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  MM_ASSIGN_OR_RETURN(const json parsed, io::ParseJson(text, where));
  auto result = ResultFromJson(parsed);
  if (!result.ok()) return result.status().WithContext(where);
  ++index_;
  return std::optional<Result>(std::move(result).value());
}

namespace {

int ExitCode(const Report& report, const Summary& sum,
             const std::vector<BackendResources>& resources, bool any_case,
             std::optional<int> skip_exit_code) {
  ExitFacts facts;
  facts.rule = report.rule;
  facts.strict = report.strict;
  facts.official_failed = report.require_official && !report.official.complete();
  facts.any_case = any_case;
  facts.resource_findings = BackendsWithFindings(resources);
  facts.skip_exit_code = skip_exit_code;
  return ExitCodeOf(sum, facts);
}

}  // namespace

int ExitCodeOf(const Report& report, bool any_case, std::optional<int> skip_exit_code) {
  return ExitCode(report, Summarize(report.results),
                  TallyResources(report.results, report.backends), any_case, skip_exit_code);
}

int ExitCodeOfSummary(const Report& report, const Summary& sum, bool any_case,
                      std::optional<int> skip_exit_code) {
  return ExitCode(report, sum, report.resources, any_case, skip_exit_code);
}

StatusOr<Report> MergeShardHeaders(const std::vector<Report>& shards,
                                   const std::vector<std::string>& names) {
  if (shards.empty()) return InvalidArgumentError("no shard report to merge");
  const Report& first = shards.front();
  const int count = first.shard.count;
  std::set<int> seen;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Report& s = shards[i];
    const std::string which = ShardName(s, names, i);
    auto differs = [&](const char* what) {
      return InvalidArgumentError(which + " is not from the same run as " +
                                  ShardName(first, names, 0) + ": " + what + " differ");
    };
    if (s.interrupted) {
      return FailedPreconditionError(
          which + " is of an interrupted run (" + std::to_string(s.interrupted->results) + " of " +
          std::to_string(s.interrupted->expected) + " results); finish it with --resume first");
    }
    if (s.shard.count != count) return differs("shard counts");
    if (!seen.insert(s.shard.index).second) {
      return InvalidArgumentError(which + ": shard " + std::to_string(s.shard.index) + "/" +
                                  std::to_string(count) + " is given twice");
    }
    if (s.version != first.version) return differs("mm versions");
    if (s.tolerance.rtol != first.tolerance.rtol || s.tolerance.atol != first.tolerance.atol) {
      return differs("tolerances");
    }
    if (s.rule != first.rule) return differs("--tolerance rules");
    if (s.strict != first.strict || s.require_official != first.require_official) {
      return differs("--strict / --require-official settings");
    }
    if (s.backends != first.backends) return differs("backends");
    if (s.expectations.has_value() != first.expectations.has_value() ||
        (s.expectations && !SameEntries(*s.expectations, *first.expectations))) {
      return differs("expectations files");
    }
    if (s.roots.size() != first.roots.size()) return differs("data roots");
    for (std::size_t r = 0; r < s.roots.size(); ++r) {
      if (s.roots[r].path != first.roots[r].path) return differs("data roots");
    }
  }
  for (int index = 1; index <= count; ++index) {
    if (!seen.count(index)) {
      return InvalidArgumentError("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                  " is missing; a merged report must cover every shard");
    }
  }
  MM_RETURN_IF_ERROR(CheckSelections(shards, names));
  Report merged = first;
  merged.shard = {1, 1};
  merged.selection = first.run_selection;
  merged.results.clear();
  merged.resumed.reset();
  for (const Report& s : shards) {
    if (!s.resumed) continue;
    if (!merged.resumed) merged.resumed.emplace();
    merged.resumed->files.insert(merged.resumed->files.end(), s.resumed->files.begin(),
                                 s.resumed->files.end());
    merged.resumed->taken += s.resumed->taken;
    merged.resumed->rerun += s.resumed->rerun;
  }
  return merged;
}

ShardResultCheck::ShardResultCheck(const Report& merged)
    : rules_{merged.tolerance, merged.rule, merged.expectations ? &*merged.expectations : nullptr} {
}

void ShardResultCheck::Start(const Report& shard, std::string name) {
  shard_ = shard.shard;
  expected_ = shard.selection.results;
  name_ = std::move(name) + " (shard " + std::to_string(shard_.index) + "/" +
          std::to_string(shard_.count) + ")";
  results_ = 0;
  case_index_ = -1;
  keys_.clear();
  trajectories_ = {};
}

Status ShardResultCheck::Add(const Result& r) {
  const std::string refused = name_ + ": the result of " + ResultIdentity(r) + " ";
  if (!InShard(r.case_name, shard_)) {
    return InvalidArgumentError(refused + "is not of shard " + std::to_string(shard_.index) + "/" +
                                std::to_string(shard_.count) +
                                " (its case belongs to another shard)");
  }
  if (r.case_index < case_index_) {
    return InvalidArgumentError(refused + "comes after a later case's results");
  }
  if (r.case_index != case_index_) {
    case_index_ = r.case_index;
    case_name_ = r.case_name;
    keys_.clear();
  } else if (r.case_name != case_name_) {
    return InvalidArgumentError(refused + "has the case index " + std::to_string(r.case_index) +
                                " of case '" + case_name_ + "'");
  }
  if (Status consistent = CheckResultConsistent(r, rules_); !consistent.ok()) {
    return InvalidArgumentError(refused + "is not consistent with itself: " + consistent.message());
  }
  if (r.resources)
    trajectories_.Add(r.backend, *r.resources, ResultIdentity(r), TensorBytesBound(r));
  // A file of an outputs tree that no result reads is an ERROR of its own, beside the selection's
  // results (several may name one case and data set): never a verdict that passes.
  if (r.vs_reference == kExtraOutputReference) {
    if (r.vs_expected || r.verdict == Verdict::kUnsupported) {
      return InvalidArgumentError(refused + "is an extra output's, which is never judged");
    }
    return OkStatus();
  }
  if (!keys_.insert({r.data_set, r.backend}).second) {
    return InvalidArgumentError(refused + "is given twice");
  }
  ++results_;
  return OkStatus();
}

Status ShardResultCheck::Finish() const {
  // Growth figures lowered below what the results' successive figures show hide a leak.
  if (const auto disagree = trajectories_.Finish(); !disagree.empty()) {
    return InvalidArgumentError(
        name_ + ": the result of " + disagree.front().result +
        " is not consistent with the results before it: " + disagree.front().why);
  }
  if (results_ != expected_) {
    return InvalidArgumentError(name_ + " holds " + std::to_string(results_) +
                                " results, but its selection has " + std::to_string(expected_));
  }
  return OkStatus();
}

StatusOr<Report> MergeShardReports(const std::vector<Report>& shards) {
  MM_ASSIGN_OR_RETURN(Report merged, MergeShardHeaders(shards, {}));
  ShardResultCheck check(merged);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    check.Start(shards[i], "report " + std::to_string(i + 1));
    for (const Result& r : shards[i].results) MM_RETURN_IF_ERROR(check.Add(r));
    MM_RETURN_IF_ERROR(check.Finish());
    merged.results.insert(merged.results.end(), shards[i].results.begin(), shards[i].results.end());
  }
  // Each case runs whole in one shard, in order: sorting by case keeps its own order.
  std::stable_sort(merged.results.begin(), merged.results.end(),
                   [](const Result& a, const Result& b) { return a.case_index < b.case_index; });
  // An entry matched nothing only if it matched nothing in every shard.
  if (merged.expectations) CountMatches(*merged.expectations, merged.results);
  merged.resources = TallyResources(merged.results, merged.backends);
  merged.exit_code = ExitCodeOf(merged, !merged.results.empty());
  return merged;
}

namespace {

StatusOr<std::vector<Report>> ReadShardHeaders(const std::vector<std::string>& inputs) {
  std::vector<Report> shards;
  for (const std::string& path : inputs) {
    MM_ASSIGN_OR_RETURN(Report header, ReadReportHeader(path));
    shards.push_back(std::move(header));
  }
  return shards;
}

// A first pass over every shard's results: checks all of them before anything is written, so a
// refused merge leaves no report. Gives the longest case name (the console's column width).
StatusOr<std::size_t> CheckShardResults(const Report& merged, const std::vector<Report>& shards,
                                        const std::vector<std::string>& inputs) {
  std::size_t name_width = 4;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    ShardResultCheck check(merged);
    check.Start(shards[i], "'" + inputs[i] + "'");
    ResultReader reader;
    MM_RETURN_IF_ERROR(reader.Open(inputs[i]));
    while (true) {
      MM_ASSIGN_OR_RETURN(std::optional<Result> r, reader.Next());
      if (!r) break;
      MM_RETURN_IF_ERROR(check.Add(*r));
      name_width = std::max(name_width, r->case_name.size());
    }
    MM_RETURN_IF_ERROR(check.Finish());
  }
  return name_width;
}

// The second pass: every shard's results into `sink`, checked again (a file changed in between is
// refused too). Each case ran whole in one shard, in order: the smallest case index comes next
// (ties keep the shards' order).
Status MergeShardResults(const Report& merged, const std::vector<Report>& shards,
                         const std::vector<std::string>& inputs, ResultSink& sink) {
  std::vector<ShardResultCheck> checks;
  std::vector<std::unique_ptr<ResultReader>> readers;
  std::vector<std::optional<Result>> heads;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    checks.emplace_back(merged);
    checks.back().Start(shards[i], "'" + inputs[i] + "'");
    readers.push_back(std::make_unique<ResultReader>());
    MM_RETURN_IF_ERROR(readers.back()->Open(inputs[i]));
    MM_ASSIGN_OR_RETURN(std::optional<Result> first, readers.back()->Next());
    heads.push_back(std::move(first));
  }
  while (true) {
    std::optional<std::size_t> next;
    for (std::size_t i = 0; i < heads.size(); ++i) {
      if (heads[i] && (!next || heads[i]->case_index < heads[*next]->case_index)) next = i;
    }
    if (!next) break;
    Result r = std::move(*heads[*next]);
    MM_RETURN_IF_ERROR(checks[*next].Add(r));
    MM_ASSIGN_OR_RETURN(heads[*next], readers[*next]->Next());
    sink.Add(std::move(r));
  }
  for (const ShardResultCheck& check : checks) MM_RETURN_IF_ERROR(check.Finish());
  return OkStatus();
}

}  // namespace

StatusOr<int> MergeShardReports(const MergeOptions& options, std::ostream& out) {
  std::vector<RunInput> inputs;
  for (const std::string& path : options.inputs) inputs.push_back({"the shard report", path, ""});
  MM_RETURN_IF_ERROR(CheckReportPaths(
      {{"--json", options.json}, {"--junit", options.junit}, {"--markdown", options.markdown}},
      inputs));
  MM_ASSIGN_OR_RETURN(std::vector<Report> shards, ReadShardHeaders(options.inputs));
  MM_ASSIGN_OR_RETURN(Report report, MergeShardHeaders(shards, options.inputs));
  MM_ASSIGN_OR_RETURN(const std::size_t name_width,
                      CheckShardResults(report, shards, options.inputs));
  std::size_t backend_width = 7;
  for (const std::string& b : report.backends) backend_width = std::max(backend_width, b.size());
  ReportFiles reports;
  MM_RETURN_IF_ERROR(reports.Open(options.json, options.junit, options.markdown, report));
  reports.AddStream(std::make_unique<ConsoleWriter>(out, options.quiet, report.tolerance,
                                                    name_width, backend_width),
                    out);
  if (report.expectations) {
    for (Expectation& e : report.expectations->entries) e.matched = 0;
    reports.CountMatches(&*report.expectations);
  }
  MM_RETURN_IF_ERROR(MergeShardResults(report, shards, options.inputs, reports));
  report.resources = reports.Resources(report.backends);
  const Summary& summary = reports.summary();
  report.exit_code = ExitCodeOfSummary(report, summary, summary.total() > 0);
  MM_RETURN_IF_ERROR(reports.Finish(report));
  return report.exit_code;
}

}  // namespace mm::conformance
