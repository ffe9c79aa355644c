#include "mm/conformance/fuzz/fuzz_report_reader.h"

#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/family/op.h"

namespace mm::fuzz {
namespace {

using Field = io::JsonField<nlohmann::ordered_json>;
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

// A count: an integer >= 0.
Status Count(const Field& parent, std::string_view key) { return parent.IntAt(key, 0).status(); }

// A number as reports write it: a number, or "nan", "inf", "-inf"; null too when `nullable`.
Status ReportNumber(const Field& parent, std::string_view key, bool nullable) {
  MM_ASSIGN_OR_RETURN(const Field f, parent.Member(key));
  if (f.json().is_number() || (nullable && f.json().is_null())) return OkStatus();
  if (f.json().is_string()) {
    const std::string s = f.json().get<std::string>();
    if (s == "nan" || s == "inf" || s == "-inf") return OkStatus();
  }
  return f.Expected(nullable ? "a number, \"nan\", \"inf\", \"-inf\" or null"
                             : "a number, \"nan\", \"inf\" or \"-inf\"");
}

// `parent`'s dtype `key`: one of MatMul's, or with `element_types` int8 and uint8 too (a
// MatMulInteger or QLinearMatMul finding's dtype is A's).
Status KnownDType(const Field& parent, std::string_view key, bool element_types = false) {
  MM_ASSIGN_OR_RETURN(const Field f, parent.Member(key));
  MM_ASSIGN_OR_RETURN(const std::string name, f.String());
  const bool known = element_types ? ElementTypeFromName(name).ok() : DTypeFromName(name).ok();
  if (!known) return f.Error("'" + name + "' is not a dtype");
  return OkStatus();
}

Status KnownBackend(const Field& parent, const std::set<std::string>& backends) {
  MM_ASSIGN_OR_RETURN(const Field f, parent.Member("backend"));
  MM_ASSIGN_OR_RETURN(const std::string name, f.String());
  if (!backends.count(name)) {
    return f.Error("'" + name + "' is not one of the report's backends (stats.backends)");
  }
  return OkStatus();
}

// {name: {verdict: count}}, the verdict counts of stats.backends and of each stats.by_dtype row.
Status VerdictCounts(const Field& counts) {
  MM_ASSIGN_OR_RETURN(const auto verdicts, counts.Members());
  for (const auto& [verdict, n] : verdicts) MM_RETURN_IF_ERROR(n.Int(0).status());
  return OkStatus();
}

StatusOr<std::set<std::string>> CheckStats(const Field& root) {
  MM_ASSIGN_OR_RETURN(const Field stats, root.Member("stats"));
  for (const char* key : {"problems", "results", "elements", "unbounded_elements", "failures"}) {
    MM_RETURN_IF_ERROR(Count(stats, key));
  }
  MM_RETURN_IF_ERROR(stats.NumberAt("seconds").status());
  MM_RETURN_IF_ERROR(stats.NumberAt("shrink_seconds").status());
  MM_ASSIGN_OR_RETURN(const Field by_dtype_counts, stats.Member("problems_by_dtype"));
  MM_RETURN_IF_ERROR(VerdictCounts(by_dtype_counts));
  std::set<std::string> backends;
  MM_ASSIGN_OR_RETURN(const Field backends_field, stats.Member("backends"));
  MM_ASSIGN_OR_RETURN(const auto members, backends_field.Members());
  for (const auto& [name, counts] : members) {
    MM_RETURN_IF_ERROR(VerdictCounts(counts));
    backends.insert(name);
  }
  MM_ASSIGN_OR_RETURN(const std::optional<Field> by_dtype, stats.OptionalMember("by_dtype"));
  if (by_dtype) {
    MM_ASSIGN_OR_RETURN(const auto rows, by_dtype->Members());
    for (const auto& [name, dtypes] : rows) {
      if (!backends.count(name)) {
        return dtypes.Error("'" + name + "' is not one of the report's backends (stats.backends)");
      }
      MM_ASSIGN_OR_RETURN(const auto per_dtype, dtypes.Members());
      for (const auto& [dtype, counts] : per_dtype) {
        if (!ElementTypeFromName(dtype).ok()) return counts.Error("'" + dtype + "' is not a dtype");
        MM_RETURN_IF_ERROR(VerdictCounts(counts));
      }
    }
  }
  return backends;
}

Status CheckRecords(const Field& root, const std::set<std::string>& backends) {
  MM_ASSIGN_OR_RETURN(const Field problems, root.Member("problems"));
  MM_ASSIGN_OR_RETURN(const std::vector<Field> records, problems.Elements());
  for (const Field& r : records) {
    MM_RETURN_IF_ERROR(Count(r, "index"));
    MM_RETURN_IF_ERROR(KnownBackend(r, backends));
    MM_RETURN_IF_ERROR(KnownDType(r, "dtype"));
    MM_RETURN_IF_ERROR(ReportNumber(r, "max_ulp", /*nullable=*/false));
    MM_RETURN_IF_ERROR(ReportNumber(r, "bound_fraction", /*nullable=*/true));
  }
  MM_ASSIGN_OR_RETURN(const Field findings_field, root.Member("findings"));
  MM_ASSIGN_OR_RETURN(const std::vector<Field> findings, findings_field.Elements());
  for (const Field& f : findings) {
    MM_RETURN_IF_ERROR(Count(f, "index"));
    MM_RETURN_IF_ERROR(f.StringAt("kind").status());
    MM_RETURN_IF_ERROR(KnownBackend(f, backends));
    MM_RETURN_IF_ERROR(KnownDType(f, "dtype", /*element_types=*/true));
    MM_RETURN_IF_ERROR(f.StringAt("replay").status());
  }
  MM_ASSIGN_OR_RETURN(const Field statistics_field, root.Member("statistics"));
  MM_ASSIGN_OR_RETURN(const std::vector<Field> statistics, statistics_field.Elements());
  for (const Field& s : statistics) {
    MM_RETURN_IF_ERROR(s.StringAt("backend").status());
    MM_RETURN_IF_ERROR(s.StringAt("dtype").status());
    for (const char* key : {"special_problems", "special_wrong"}) {
      MM_ASSIGN_OR_RETURN(const std::optional<Field> n, s.OptionalMember(key));
      if (n) MM_RETURN_IF_ERROR(n->Int(0).status());
    }
  }
  return OkStatus();
}

// The operator of the run ("options"."op") and of each finding, checked; a report written before
// mm-fuzz had --op has none and is read as MatMul's (the field added).
Status ReadOperators(nlohmann::ordered_json& j, std::string_view name) {
  const Field root(j, std::string(name));
  MM_ASSIGN_OR_RETURN(const Field options, root.Member("options"));
  MM_ASSIGN_OR_RETURN(const std::optional<Field> op, options.OptionalMember("op"));
  if (op) {
    MM_ASSIGN_OR_RETURN(const std::string text, op->String());
    if (!family::OpFromName(text).ok()) return op->Error("'" + text + "' is not an operator");
  }
  MM_ASSIGN_OR_RETURN(const std::vector<Field> findings, root.Member("findings")->Elements());
  for (const Field& f : findings) {
    MM_ASSIGN_OR_RETURN(const std::optional<Field> finding_op, f.OptionalMember("op"));
    if (!finding_op) continue;
    MM_ASSIGN_OR_RETURN(const std::string text, finding_op->String());
    if (!family::OpFromName(text).ok())
      return finding_op->Error("'" + text + "' is not an operator");
  }
  if (!op) j["options"]["op"] = "MatMul";
  for (auto& f : j["findings"]) {
    if (!f.contains("op")) f["op"] = "MatMul";
  }
  return OkStatus();
}

}  // namespace

StatusOr<ShardReport> ParseFuzzReport(std::string_view text, std::string_view name) {
  MM_ASSIGN_OR_RETURN(nlohmann::ordered_json j, io::ParseOrderedJson(text, name));
  const Field root(j, std::string(name));
  if (!j.is_object() || !j.contains("tool") || j["tool"] != "mm-fuzz") {
    return root.Error("not an mm-fuzz report (\"tool\" is not mm-fuzz)");
  }
  MM_RETURN_IF_ERROR(root.StringAt("version").status());
  MM_ASSIGN_OR_RETURN(const Field options, root.Member("options"));
  MM_ASSIGN_OR_RETURN(const Field seed, options.Member("seed"));
  MM_RETURN_IF_ERROR(seed.UInt().status());
  MM_RETURN_IF_ERROR(Count(options, "max_findings"));
  MM_RETURN_IF_ERROR(options.BoolAt("require_deterministic").status());
  MM_ASSIGN_OR_RETURN(const std::optional<Field> shard, root.OptionalMember("shard"));
  if (shard) {
    MM_ASSIGN_OR_RETURN(const std::int64_t count, shard->IntAt("count", 1, kIntMax));
    MM_RETURN_IF_ERROR(shard->IntAt("index", 1, count).status());
  }
  MM_RETURN_IF_ERROR(Count(root, "problems_limit"));
  MM_RETURN_IF_ERROR(root.BoolAt("problems_capped").status());
  MM_ASSIGN_OR_RETURN(const std::set<std::string> backends, CheckStats(root));
  MM_RETURN_IF_ERROR(CheckRecords(root, backends));
  MM_ASSIGN_OR_RETURN(const std::optional<Field> error, root.OptionalMember("error"));
  if (error) MM_RETURN_IF_ERROR(error->String().status());
  MM_RETURN_IF_ERROR(root.IntAt("exit_code", 0, 255).status());
  MM_RETURN_IF_ERROR(ReadOperators(j, name));
  return ShardReport{std::string(name), std::move(j)};
}

StatusOr<ShardReport> ReadFuzzReport(const std::string& path) {
  MM_ASSIGN_OR_RETURN(const std::string text, io::ReadInputFile(path, io::kFuzzReportFile));
  MM_ASSIGN_OR_RETURN(ShardReport report, ParseFuzzReport(text, path));
  return report;
}

}  // namespace mm::fuzz
