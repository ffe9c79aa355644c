#include "mm/conformance/fuzz/fuzz_merge.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "mm/conformance/fuzz/fuzz_report_writer.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/engine/dtype.h"

namespace mm::fuzz {
namespace {

using conformance::ToleranceRule;
using conformance::Verdict;
using nlohmann::ordered_json;

double ToNumber(const ordered_json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    return s == "-inf" ? -HUGE_VAL : HUGE_VAL;
  }
  return v.get<double>();
}

// A verdict's position in the Verdict enum (conformance/judging/verdict.h), the order a report
// lists them; an unknown name after every verdict.
int VerdictOrder(const std::string& name) {
  const auto verdict = conformance::VerdictFromName(name);
  return static_cast<int>(verdict.ok() ? static_cast<std::size_t>(*verdict)
                                       : conformance::kAllVerdicts.size());
}

int DTypeOrder(const std::string& name) {
  auto d = DTypeFromName(name);
  return d.ok() ? static_cast<int>(*d) : 1000;
}

// Whether a report with these counts fails its campaign, as FuzzReport::ExitCode decides it: an
// error, a failing result, or a finding other than a declared XFAIL (a NONDETERMINISTIC one only
// under --require-deterministic).
bool FailsCampaign(const ordered_json& report, std::int64_t failures) {
  if (report.contains("error") || failures > 0) return true;
  const bool require_deterministic = report.at("options").at("require_deterministic").get<bool>();
  for (const auto& f : report.at("findings")) {
    const std::string kind = f.at("kind").get<std::string>();
    if (kind == "XFAIL") continue;
    if (kind != "NONDETERMINISTIC" || require_deterministic) return true;
  }
  return false;
}

// The results each verdict count of a report stands for, as mm-fuzz counts them.
constexpr std::array<Verdict, 6> kCountedVerdicts = {Verdict::kPass,        Verdict::kFail,
                                                     Verdict::kBound,       Verdict::kImprecise,
                                                     Verdict::kUnsupported, Verdict::kError};

// Checks that every problem index a shard's report names (records and findings) is one of the
// shard `index`/`count` of the campaign's problems first .. first + cases - 1.
Status CheckIndices(const std::string& which, const ordered_json& j, int index, int count) {
  const auto first = j.at("options").at("first").get<std::int64_t>();
  const auto cases = j.at("options").at("cases").get<std::int64_t>();
  for (const char* list : {"problems", "findings"}) {
    for (const auto& r : j.at(list)) {
      const auto i = r.at("index").get<std::int64_t>();
      if (i < first || i - first >= cases || (i - first) % count != index - 1) {
        return InvalidArgumentError(
            which + ": \"" + list + "\" names problem " + std::to_string(i) +
            ", which is not one of shard " + std::to_string(index) + "/" + std::to_string(count) +
            "'s problems of " + std::to_string(first) + " .. " + std::to_string(first + cases - 1));
      }
    }
  }
  return OkStatus();
}

// The counts of a shard's report derived from its verdicts: results, failing results (under the
// report's rule, less XFAIL), and judged float results per (backend, dtype).
struct DerivedCounts {
  std::int64_t results = 0, failing = 0;
  std::map<std::pair<std::string, std::string>, std::int64_t> judged;
};

// Sums a shard's verdict counts per backend and checks them against its counts by dtype.
Status DeriveCounts(const ordered_json& stats, ToleranceRule rule, DerivedCounts& d,
                    const std::function<Status(const std::string&)>& disagree) {
  for (const auto& [name, counts] : stats.at("backends").items()) {
    const ordered_json none = ordered_json::object();
    const ordered_json& by_dtype =
        stats.at("by_dtype").contains(name) ? stats.at("by_dtype").at(name) : none;
    std::int64_t backend_failing = 0;
    for (Verdict v : kCountedVerdicts) {
      const std::string verdict(VerdictName(v));
      const auto n = counts.at(verdict).get<std::int64_t>();
      std::int64_t sum = 0;
      for (const auto& [dtype, verdicts] : by_dtype.items()) {
        const auto m = verdicts.value(verdict, std::int64_t{0});
        sum += m;
        const auto dt = ElementTypeFromName(dtype);
        if (!dt.ok()) return disagree("unknown dtype '" + dtype + "'");
        if (IsFloat(*dt) && v != Verdict::kUnsupported && v != Verdict::kError) {
          d.judged[{name, dtype}] += m;
        }
      }
      if (n < 0 || sum != n) {
        return disagree(name + " " + verdict + ": " + std::to_string(n) + " in all, " +
                        std::to_string(sum) + " by dtype");
      }
      d.results += n;
      if (FailsUnder(v, rule)) backend_failing += n;
    }
    const auto xfail = counts.at("XFAIL").get<std::int64_t>();
    if (xfail < 0 || xfail > backend_failing) {
      return disagree(name + ": " + std::to_string(xfail) + " XFAIL of " +
                      std::to_string(backend_failing) + " failing results");
    }
    d.failing += backend_failing - xfail;
  }
  return OkStatus();
}

// Checks a shard's totals (results, failures, problems) against what its verdicts count.
Status CheckTotals(const ordered_json& stats, const DerivedCounts& d, const std::string& tolerance,
                   const std::function<Status(const std::string&)>& disagree) {
  if (d.results != stats.at("results").get<std::int64_t>()) {
    return disagree("\"results\" is " + stats.at("results").dump() + ", the verdicts count " +
                    std::to_string(d.results));
  }
  if (d.failing != stats.at("failures").get<std::int64_t>()) {
    return disagree("\"failures\" is " + stats.at("failures").dump() + ", the verdicts count " +
                    std::to_string(d.failing) + " failing under --tolerance " + tolerance);
  }
  std::int64_t problems = 0;
  for (const auto& [dtype, n] : stats.at("problems_by_dtype").items()) {
    problems += n.get<std::int64_t>();
  }
  if (problems != stats.at("problems").get<std::int64_t>() ||
      d.results > problems * static_cast<std::int64_t>(stats.at("backends").size())) {
    return disagree("\"problems\" is " + stats.at("problems").dump() + ", " +
                    std::to_string(problems) + " by dtype, for " + std::to_string(d.results) +
                    " results");
  }
  return OkStatus();
}

// Checks a shard's per-problem records, findings and exit code against its counts.
Status CheckRecords(const ordered_json& j, DerivedCounts& d, ToleranceRule rule,
                    const std::function<Status(const std::string&)>& disagree) {
  // A shard keeps every record (problems_capped is false): one per judged float result.
  std::map<std::pair<std::string, std::string>, std::int64_t> records;
  for (const auto& r : j.at("problems")) {
    ++records[{r.at("backend").get<std::string>(), r.at("dtype").get<std::string>()}];
  }
  std::erase_if(d.judged, [](const auto& entry) { return entry.second == 0; });
  if (records != d.judged) return disagree("per-problem records against judged float results");
  std::int64_t failing_findings = 0;
  for (const auto& f : j.at("findings")) {
    const auto verdict = conformance::VerdictFromName(f.at("kind").get<std::string>());
    if (verdict.ok() && FailsUnder(*verdict, rule)) ++failing_findings;
  }
  const auto max_findings = j.at("options").at("max_findings").get<std::int64_t>();
  const bool all_kept = static_cast<std::int64_t>(j.at("findings").size()) < max_findings;
  if (failing_findings > d.failing || (all_kept && failing_findings != d.failing)) {
    return disagree(std::to_string(failing_findings) + " failing findings for " +
                    std::to_string(d.failing) + " failing results");
  }
  if (j.at("exit_code").get<int>() != (FailsCampaign(j, d.failing) ? 1 : 0)) {
    return disagree("\"exit_code\" is " + j.at("exit_code").dump());
  }
  return OkStatus();
}

// Checks that one shard's report agrees with itself: its verdict counts with its counts by dtype,
// its results and failures (derived again under its --tolerance rule) with those counts, its
// per-problem records and findings with its judged and failing results, and its exit code with
// all of them. The error names the report and what disagrees.
Status CheckShardCounts(const std::string& which, const ordered_json& j) {
  const std::function<Status(const std::string&)> disagree = [&](const std::string& what) {
    return InvalidArgumentError(which + ": its counts disagree with its own records (" + what +
                                "); the report was altered or damaged, run the shard again");
  };
  const std::string tolerance = j.at("options").at("tolerance").get<std::string>();
  if (tolerance != "onnx" && tolerance != "bound") {
    return disagree("\"options\".\"tolerance\" is '" + tolerance + "'");
  }
  const auto rule = tolerance == "onnx" ? ToleranceRule::kOnnx : ToleranceRule::kBound;
  const ordered_json& stats = j.at("stats");
  if (!stats.contains("by_dtype")) {
    return InvalidArgumentError(which +
                                " has no \"by_dtype\" counts to check its verdicts against "
                                "(written by an older mm-fuzz?); run the shard again");
  }
  DerivedCounts d;
  MM_RETURN_IF_ERROR(DeriveCounts(stats, rule, d, disagree));
  // Accuracy records are MatMul's: a family operator's float results (Gemm) have none.
  if (j.at("options").at("op") != "MatMul") d.judged.clear();
  MM_RETURN_IF_ERROR(CheckTotals(stats, d, tolerance, disagree));
  return CheckRecords(j, d, rule, disagree);
}

// The names of a report's backends, in its order.
std::vector<std::string> BackendNames(const ordered_json& report) {
  std::vector<std::string> names;
  for (const auto& [name, counts] : report.at("stats").at("backends").items()) {
    names.push_back(name);
  }
  return names;
}

// Checks that shard report `j` (`which`, from `path`) is of the same campaign as `first` (from
// `first_path`): shard count, version, options, backends and record limit.
Status CheckSameCampaign(const std::string& which, const ordered_json& j, int count,
                         const ordered_json& first, const std::string& first_path) {
  auto foreign = [&](const std::string& what) {
    return InvalidArgumentError(which + " is not from the same campaign as " + first_path + ": " +
                                what + " differ");
  };
  if (j.at("shard").at("count").get<int>() != count) return foreign("shard counts");
  if (j.at("version") != first.at("version")) return foreign("mm versions");
  for (const auto& [key, value] : first.at("options").items()) {
    if (!j.at("options").contains(key) || j.at("options").at(key) != value) {
      return foreign("options (\"" + key + "\")");
    }
  }
  if (j.at("options").size() != first.at("options").size()) return foreign("options");
  if (BackendNames(j) != BackendNames(first)) return foreign("backends");
  if (j.at("problems_limit") != first.at("problems_limit")) return foreign("record limits");
  return OkStatus();
}

// Checks shard report `i` of `shards`, adding its index to `seen`; the first sets `count`.
Status CheckShard(const std::vector<ShardReport>& shards, std::size_t i, int& count,
                  std::set<int>& seen) {
  const ordered_json& j = shards[i].json;
  const std::string& path = shards[i].path;
  if (!j.is_object() || j.value("tool", "") != "mm-fuzz") {
    return InvalidArgumentError(path + ": not an mm-fuzz report (\"tool\" is not mm-fuzz)");
  }
  if (!j.contains("shard")) {
    return InvalidArgumentError(path + ": not a shard's report (run with --shard I/N)");
  }
  const int index = j.at("shard").at("index").get<int>();
  const int n = j.at("shard").at("count").get<int>();
  const std::string which =
      path + " (shard " + std::to_string(index) + "/" + std::to_string(n) + ")";
  if (i == 0) count = n;
  MM_RETURN_IF_ERROR(CheckSameCampaign(which, j, count, shards.front().json, shards.front().path));
  if (!seen.insert(index).second) {
    return InvalidArgumentError(which + ": shard " + std::to_string(index) + "/" +
                                std::to_string(count) + " is given twice");
  }
  if (j.at("problems_capped").get<bool>()) {
    return InvalidArgumentError(which +
                                " kept only part of its per-problem records; a shard "
                                "keeps them all, so this report is not a shard's");
  }
  if (j.contains("interrupted")) {
    return InvalidArgumentError(which + " is of an interrupted run; run the shard again");
  }
  if (n < 1 || index < 1 || index > n) {
    return InvalidArgumentError(which + " is not a shard I/N with 1 <= I <= N");
  }
  MM_RETURN_IF_ERROR(CheckIndices(which, j, index, n));
  return CheckShardCounts(which, j);
}

// Checks every shard and that together they are shards 1/N .. N/N.
Status CheckShards(const std::vector<ShardReport>& shards) {
  std::set<int> seen;
  int count = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    MM_RETURN_IF_ERROR(CheckShard(shards, i, count, seen));
  }
  for (int index = 1; index <= count; ++index) {
    if (!seen.count(index)) {
      return InvalidArgumentError("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                  " is missing; a merged report must cover every shard");
    }
  }
  return OkStatus();
}

// The shards' counts summed into `stats` (the first shard's): totals, times, problems by dtype
// (in dtype order) and verdicts per backend.
void SumCounts(const std::vector<ShardReport>& shards, ordered_json& stats) {
  for (const char* key : {"problems", "results", "elements", "unbounded_elements", "failures",
                          "outside_standard_range"}) {
    if (!stats.contains(key)) continue;  // outside_standard_range: family operators' only.
    std::int64_t sum = 0;
    for (const auto& s : shards) sum += s.json.at("stats").at(key).get<std::int64_t>();
    stats[key] = sum;
  }
  double seconds = 0, shrink_seconds = 0;
  for (const auto& s : shards) {
    seconds += s.json.at("stats").at("seconds").get<double>();
    shrink_seconds += s.json.at("stats").at("shrink_seconds").get<double>();
  }
  stats["seconds"] = seconds;
  stats["shrink_seconds"] = shrink_seconds;
  const auto problems = stats["problems"].get<std::int64_t>();
  stats["problems_per_second"] = JsonNumber(
      seconds > shrink_seconds ? static_cast<double>(problems) / (seconds - shrink_seconds) : 0.0);
  std::map<std::pair<int, std::string>, std::int64_t> by_dtype;
  for (const auto& s : shards) {
    for (const auto& [name, n] : s.json.at("stats").at("problems_by_dtype").items()) {
      by_dtype[{DTypeOrder(name), name}] += n.get<std::int64_t>();
    }
  }
  stats["problems_by_dtype"] = ordered_json::object();
  for (const auto& [key, n] : by_dtype) stats["problems_by_dtype"][key.second] = n;
  for (auto& [name, counts] : stats["backends"].items()) {
    for (auto& [verdict, n] : counts.items()) {
      std::int64_t sum = 0;
      for (const auto& s : shards) {
        sum += s.json.at("stats").at("backends").at(name).at(verdict).get<std::int64_t>();
      }
      n = sum;
    }
  }
}

// Verdicts of backend `name` per dtype, summed; dtypes and verdicts in the unsharded report's
// order.
ordered_json SumByDType(const std::vector<ShardReport>& shards, const std::string& name) {
  std::map<std::pair<int, std::string>, std::map<std::pair<int, std::string>, std::int64_t>> sums;
  for (const auto& s : shards) {
    const ordered_json& b = s.json.at("stats").at("by_dtype");
    if (!b.contains(name)) continue;
    for (const auto& [dtype, verdicts] : b.at(name).items()) {
      auto& row = sums[{DTypeOrder(dtype), dtype}];
      for (const auto& [verdict, n] : verdicts.items()) {
        row[{VerdictOrder(verdict), verdict}] += n.get<std::int64_t>();
      }
    }
  }
  ordered_json dtypes = ordered_json::object();
  for (const auto& [dtype, row] : sums) {
    ordered_json verdicts = ordered_json::object();
    for (const auto& [verdict, n] : row) verdicts[verdict.second] = n;
    dtypes[dtype.second] = verdicts;
  }
  return dtypes;
}

// The IEEE-specials counts of (backend, dtype) `e`, summed over the shards' problems, into `e`
// (when any shard has them).
void SumSpecials(const std::vector<ShardReport>& shards, ordered_json& e) {
  std::int64_t special_problems = 0, special_wrong = 0;
  bool has_specials = false;
  for (const auto& s : shards) {
    for (const auto& st : s.json.at("statistics")) {
      if (st.at("backend") != e["backend"] || st.at("dtype") != e["dtype"]) continue;
      if (!st.contains("special_problems")) continue;
      has_specials = true;
      special_problems += st.at("special_problems").get<std::int64_t>();
      special_wrong += st.at("special_wrong").get<std::int64_t>();
    }
  }
  if (has_specials) {
    e["special_problems"] = special_problems;
    e["special_wrong"] = special_wrong;
  }
}

// The accuracy statistics from every record (in the unsharded run's order), per (backend,
// dtype) in that order too.
ordered_json MergedStatistics(const std::vector<ShardReport>& shards,
                              const std::vector<ordered_json>& records,
                              const std::vector<std::string>& backends) {
  const auto backend_position = [&](const std::string& name) {
    return std::find(backends.begin(), backends.end(), name) - backends.begin();
  };
  std::map<std::pair<std::ptrdiff_t, int>, std::pair<std::vector<double>, std::vector<double>>>
      errors;
  for (const auto& r : records) {
    auto& [ulps, fractions] = errors[{backend_position(r.at("backend").get<std::string>()),
                                      DTypeOrder(r.at("dtype").get<std::string>())}];
    ulps.push_back(ToNumber(r.at("max_ulp")));
    if (!r.at("bound_fraction").is_null()) fractions.push_back(ToNumber(r.at("bound_fraction")));
  }
  ordered_json statistics = ordered_json::array();
  for (auto& [key, values] : errors) {
    auto& [ulps, fractions] = values;
    ordered_json e;
    e["backend"] = backends[static_cast<std::size_t>(key.first)];
    e["dtype"] = DTypeName(static_cast<DType>(key.second));
    e["problems"] = ulps.size();
    const double p99 = Percentile(ulps, 0.99);
    e["worst_ulp"] = JsonNumber(ulps.empty() ? 0 : ulps.back());
    e["p99_ulp"] = JsonNumber(p99);
    if (fractions.empty()) {
      e["worst_bound_fraction"] = nullptr;
      e["p99_bound_fraction"] = nullptr;
    } else {
      const double f99 = Percentile(fractions, 0.99);
      e["worst_bound_fraction"] = JsonNumber(fractions.back());
      e["p99_bound_fraction"] = JsonNumber(f99);
    }
    SumSpecials(shards, e);
    statistics.push_back(e);
  }
  return statistics;
}

// The shards' `list` ("problems" or "findings") in the unsharded run's order: by problem index
// (a problem runs whole in one shard, its backends in order, so a stable sort keeps the rest).
std::vector<ordered_json> ByIndex(const std::vector<ShardReport>& shards, const char* list) {
  std::vector<ordered_json> all;
  for (const auto& s : shards) {
    for (const auto& r : s.json.at(list)) all.push_back(r);
  }
  std::stable_sort(all.begin(), all.end(), [](const ordered_json& a, const ordered_json& b) {
    return a.at("index").get<std::int64_t>() < b.at("index").get<std::int64_t>();
  });
  return all;
}

// The first shard's error, then the exit code, as FuzzReport::ExitCode decides it ("error"
// before "exit_code", as in a run's report).
void SetErrorAndExitCode(const std::vector<ShardReport>& shards, ordered_json& merged) {
  merged.erase("error");
  merged.erase("exit_code");
  for (const auto& s : shards) {
    if (s.json.contains("error")) {
      merged["error"] = s.json.at("error");
      break;
    }
  }
  const bool failed = FailsCampaign(merged, merged["stats"]["failures"].get<std::int64_t>());
  merged["exit_code"] = failed ? 1 : 0;
}

// The merged report of shards already checked.
ordered_json Merge(const std::vector<ShardReport>& shards) {
  ordered_json merged = shards.front().json;
  merged.erase("shard");
  ordered_json& stats = merged["stats"];
  SumCounts(shards, stats);
  const std::vector<std::string> backends = BackendNames(merged);
  if (stats.contains("by_dtype")) {
    ordered_json per_backend = ordered_json::object();
    for (const std::string& name : backends) per_backend[name] = SumByDType(shards, name);
    stats["by_dtype"] = per_backend;
  }
  std::vector<ordered_json> records = ByIndex(shards, "problems");
  std::vector<ordered_json> findings = ByIndex(shards, "findings");
  merged["statistics"] = MergedStatistics(shards, records, backends);
  const auto limit = merged.at("problems_limit").get<std::int64_t>();
  merged["problems_capped"] = static_cast<std::int64_t>(records.size()) > limit;
  if (static_cast<std::int64_t>(records.size()) > limit) records.resize(limit);
  merged["problems"] = records;
  const auto max_findings = merged.at("options").at("max_findings").get<std::int64_t>();
  if (static_cast<std::int64_t>(findings.size()) > max_findings) findings.resize(max_findings);
  merged["findings"] = findings;
  SetErrorAndExitCode(shards, merged);
  return merged;
}

}  // namespace

StatusOr<ordered_json> MergeFuzzReports(const std::vector<ShardReport>& shards) {
  if (shards.empty()) return InvalidArgumentError("no shard report to merge");
  try {
    MM_RETURN_IF_ERROR(CheckShards(shards));
    return Merge(shards);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("malformed mm-fuzz report: ") + e.what());
  }
}

}  // namespace mm::fuzz
