#include "mm/conformance/fuzz/fuzz_report_writer.h"

#include <cmath>
#include <optional>

#include "mm/version.h"

namespace mm::fuzz {
namespace {

using nlohmann::ordered_json;

// The verdicts a report counts per backend, in its order.
constexpr Verdict kJudgedVerdicts[] = {Verdict::kPass,      Verdict::kFail,        Verdict::kBound,
                                       Verdict::kImprecise, Verdict::kUnsupported, Verdict::kError};

ordered_json OptionalNumber(const std::optional<double>& v) {
  return v ? JsonNumber(*v) : ordered_json(nullptr);
}

ordered_json OptionsJson(const FuzzOptions& options, const ReportOptions& given) {
  return {{"op", family::OpName(options.op)},
          {"seed", options.seed},
          {"first", options.first},
          {"cases", options.cases},
          {"time", options.seconds},
          {"backends", options.backends},
          {"dtypes", given.dtypes},
          {"tolerance", given.tolerance},
          {"rtol", options.tolerance.rtol},
          {"atol", options.tolerance.atol},
          {"max_elements", options.generator.max_elements},
          {"large_products", options.generator.large_products},
          {"check_threads", options.check_threads},
          {"require_deterministic", options.require_deterministic},
          {"max_findings", options.max_findings}};
}

// A backend's counts: the judged verdicts, then NONDETERMINISTIC, XFAIL and SKIP.
ordered_json BackendCountsJson(const BackendStats& b) {
  ordered_json counts = ordered_json::object();
  for (Verdict v : kJudgedVerdicts) counts[std::string(VerdictName(v))] = b.verdicts[v];
  counts["NONDETERMINISTIC"] = b.nondeterministic;
  counts["XFAIL"] = b.verdicts[Verdict::kXFail];
  counts["SKIP"] = b.verdicts[Verdict::kSkip];
  return counts;
}

// A backend's verdicts per dtype: {dtype: {verdict: count}}.
ordered_json ByDTypeJson(const BackendStats& b) {
  ordered_json per_dtype = ordered_json::object();
  for (const auto& [dtype, counts] : b.by_dtype) {
    ordered_json verdicts = ordered_json::object();
    for (const auto& [verdict, count] : counts) verdicts[std::string(VerdictName(verdict))] = count;
    per_dtype[std::string(DTypeName(dtype))] = verdicts;
  }
  return per_dtype;
}

ordered_json StatsJson(const FuzzStats& s, family::Op op) {
  const double run_seconds = s.seconds - s.shrink_seconds;
  ordered_json stats = {
      {"problems", s.problems},
      {"results", s.results},
      {"elements", s.elements},
      {"unbounded_elements", s.unbounded_elements},
      {"failures", s.failures},
      {"seconds", s.seconds},
      {"shrink_seconds", s.shrink_seconds},
      {"problems_per_second",
       JsonNumber(run_seconds > 0 ? static_cast<double>(s.problems) / run_seconds : 0.0)}};
  if (op != family::Op::kMatMul) stats["outside_standard_range"] = s.outside_standard_range;
  stats["problems_by_dtype"] = ordered_json::object();
  for (const auto& [dtype, count] : s.problems_by_dtype) stats["problems_by_dtype"][dtype] = count;
  stats["backends"] = ordered_json::object();
  for (const BackendStats& b : s.backends) stats["backends"][b.name] = BackendCountsJson(b);
  stats["by_dtype"] = ordered_json::object();
  for (const BackendStats& b : s.backends) stats["by_dtype"][b.name] = ByDTypeJson(b);
  return stats;
}

// Accuracy, for the comparison report (docs/benchmarks.md): float dtypes only (integers are
// judged exactly; their failures are findings).
ordered_json StatisticsJson(const std::vector<ErrorStats>& error_stats) {
  ordered_json out = ordered_json::array();
  for (const ErrorStats& e : error_stats) {
    out.push_back({{"backend", e.backend},
                   {"dtype", DTypeName(e.dtype)},
                   {"problems", e.problems},
                   {"worst_ulp", JsonNumber(e.worst_ulp)},
                   {"p99_ulp", JsonNumber(e.p99_ulp)},
                   {"worst_bound_fraction", OptionalNumber(e.worst_bound_fraction)},
                   {"p99_bound_fraction", OptionalNumber(e.p99_bound_fraction)},
                   {"special_problems", e.special_problems},
                   {"special_wrong", e.special_wrong}});
  }
  return out;
}

ordered_json ProblemsJson(const std::vector<ErrorRecord>& records) {
  ordered_json out = ordered_json::array();
  for (const ErrorRecord& r : records) {
    out.push_back({{"index", r.index},
                   {"backend", r.backend},
                   {"dtype", DTypeName(r.dtype)},
                   {"k", r.k},
                   {"max_ulp", JsonNumber(r.error.max_ulp)},
                   {"bound_fraction", OptionalNumber(r.error.bound_fraction)}});
  }
  return out;
}

ordered_json FindingJson(const Finding& f) {
  ordered_json fj = {{"kind", f.kind},
                     {"expectation", f.expectation},
                     {"backend", f.backend},
                     {"op", family::OpName(f.op)},
                     {"dtype", DTypeName(f.dtype)},
                     {"seed", f.seed},
                     {"index", f.index},
                     {"form", f.form},
                     {"values", f.values},
                     {"a_shape", f.original.a_dims},
                     {"b_shape", f.original.b_dims},
                     {"minimal_a_shape", f.minimal.a_dims},
                     {"minimal_b_shape", f.minimal.b_dims},
                     {"shrink_steps", f.shrink_steps},
                     {"shrink_timed_out", f.shrink_timed_out},
                     {"message", f.message},
                     {"replay", f.replay},
                     {"exported", f.exported}};
  if (f.op != family::Op::kMatMul) {
    fj["problem"] = f.problem;
    fj["minimal_problem"] = f.minimal_problem;
    fj["outside_standard_range"] = f.outside_int32 > 0;
    fj["types"] = ordered_json::object();
    for (const auto& [name, dtype] : f.types) fj["types"][name] = DTypeName(dtype);
  }
  if (f.worst) {
    fj["worst"] = {{"index", f.worst->index},
                   {"expected", f.worst->expected},
                   {"got", f.worst->actual},
                   {"abs_error", JsonNumber(f.worst->abs_error)},
                   {"bound", JsonNumber(f.worst->allowed)}};
  }
  return fj;
}

ordered_json ExpectationsJson(const std::vector<ExpectationOutcome>& outcomes) {
  ordered_json out = ordered_json::array();
  for (const ExpectationOutcome& e : outcomes) {
    out.push_back({{"case", e.case_pattern},
                   {"backend", e.backend_pattern},
                   {"reason", e.reason},
                   {"link", e.link},
                   {"matched", e.matched},
                   {"failures", e.failures}});
  }
  return out;
}

}  // namespace

ordered_json JsonNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

ordered_json FuzzReportToJson(const FuzzOptions& options, const ReportOptions& given,
                              const FuzzReport& report, int exit_code) {
  ordered_json j;
  j["tool"] = "mm-fuzz";
  j["version"] = MM_VERSION;
  j["options"] = OptionsJson(options, given);
  if (given.sharded) {
    j["shard"] = {{"index", options.shard.index}, {"count", options.shard.count}};
  }
  if (report.interrupted_by != 0) {
    j["interrupted"] = {{"signal_number", report.interrupted_by},
                        {"problems", report.stats.problems},
                        {"of", options.cases}};
  }
  j["stats"] = StatsJson(report.stats, options.op);
  j["statistics"] = StatisticsJson(report.error_stats);
  j["problems"] = ProblemsJson(report.errors);
  j["problems_capped"] = report.errors_capped;
  // The records a run keeps by default (FuzzOptions::max_error_records); a shard keeps all of
  // them, so that merged percentiles come from every record, and the merge cuts to this limit.
  j["problems_limit"] = FuzzOptions{}.max_error_records;
  j["findings"] = ordered_json::array();
  for (const Finding& f : report.findings) j["findings"].push_back(FindingJson(f));
  j["expectations"] = ExpectationsJson(report.expectations);
  if (!report.error.empty()) j["error"] = report.error;
  j["exit_code"] = exit_code;
  return j;
}

}  // namespace mm::fuzz
