#include "mm/conformance/report/report_reader.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "mm/conformance/results/result_json.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "report_stdio.h"

namespace mm::conformance {
namespace {

using nlohmann::json;
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

// The run's options: version, tolerance and its rule, strictness, shard.
Status ReadOptions(const Field& r, Report& report) {
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
  return OkStatus();
}

// The backends, what each runs on, and those not available.
Status ReadBackends(const Field& r, Report& report) {
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
  return OkStatus();
}

Status ReadMachine(const Field& r, Report& report) {
  MM_ASSIGN_OR_RETURN(const std::optional<Field> machine, r.OptionalMember("machine"));
  if (!machine) return OkStatus();
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
  return OkStatus();
}

Status ReadHeader(const Field& r, Report& report) {
  MM_RETURN_IF_ERROR(ReadOptions(r, report));
  MM_RETURN_IF_ERROR(ReadBackends(r, report));
  MM_RETURN_IF_ERROR(ReadMachine(r, report));
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

Status ReadExpectations(const Field& r, Report& report) {
  MM_ASSIGN_OR_RETURN(const std::optional<Field> e, r.OptionalMember("expectations"));
  if (!e) return OkStatus();
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
  return OkStatus();
}

Status ReadSelection(const Field& sel, Selection& out) {
  MM_ASSIGN_OR_RETURN(out.cases, sel.IntAt("cases"));
  MM_ASSIGN_OR_RETURN(out.results, sel.IntAt("results"));
  MM_ASSIGN_OR_RETURN(out.fingerprint, sel.StringAt("fingerprint"));
  return OkStatus();
}

// The selection, and what was resumed or interrupted.
Status ReadProgress(const Field& r, Report& report) {
  MM_ASSIGN_OR_RETURN(const std::optional<Field> sel, r.OptionalMember("selection"));
  if (sel) {
    MM_RETURN_IF_ERROR(ReadSelection(*sel, report.selection));
    MM_ASSIGN_OR_RETURN(const std::optional<Field> run, sel->OptionalMember("run"));
    if (run) MM_RETURN_IF_ERROR(ReadSelection(*run, report.run_selection));
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
  MM_RETURN_IF_ERROR(ReadExpectations(r, report));
  MM_RETURN_IF_ERROR(ReadProgress(r, report));
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

// Thrown by ReadReportHeader's parser callback at a nesting too deep, and caught there.
struct TooDeep {};

}  // namespace

StatusOr<StdioFile> OpenReport(const std::string& path) {
  MM_ASSIGN_OR_RETURN(io::InputFile file, io::OpenInputFile(path, io::kConformanceReportFile));
  const std::string name = file.name();
  StdioFile stream(file.ReleaseToStdio(), &std::fclose);
  if (stream == nullptr) return DataLossError(name + ": cannot open: " + std::strerror(errno));
  return stream;
}

StatusOr<Report> ReportFromJson(std::string_view text, std::string_view name) {
  MM_ASSIGN_OR_RETURN(const json j, io::ParseJson(text, name));
  return ReportFromParsed(j, name);
}

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

}  // namespace mm::conformance
