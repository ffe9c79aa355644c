#include "mm/conformance/report/json_report.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mm/conformance/report/escape.h"
#include "mm/conformance/results/result_json.h"

namespace mm::conformance {
namespace {

using Json = nlohmann::ordered_json;

// A string for JSON: valid UTF-8 always (nlohmann refuses anything else).
Json JsonText(std::string_view text) { return ValidUtf8(text); }

// Non-finite numbers are not JSON: "nan", "inf", "-inf" instead.
Json JsonNumber(double value) {
  if (!std::isfinite(value)) return FormatDouble(value);
  return value;
}

Json MachineJson(const Report& report) {
  const MachineInfo& m = report.machine;
  return {{"cpu_model", JsonText(m.cpu_model)},
          {"logical_cpus", m.logical_cpus},
          {"cpu_features", JsonText(m.cpu_features)},
          {"omp_num_threads", JsonText(m.omp_num_threads)},
          {"onednn_max_cpu_isa", JsonText(m.KernelVariable("ONEDNN_MAX_CPU_ISA"))},
          {"os", JsonText(m.os)},
          {"compiler", JsonText(m.compiler)},
          {"loader", JsonText(report.loader_versions)}};
}

Json SelectionJson(const Selection& selection) {
  return {{"cases", selection.cases},
          {"results", selection.results},
          {"fingerprint", selection.fingerprint}};
}

// Per backend, what its calls left behind, and the thresholds its findings were judged by.
Json ResourcesJson(const ReportHeader& h) {
  const Report& report = *h.run;
  Json backends = Json::object();
  for (const BackendResources& f : report.resources) {
    Json findings = Json::array();
    for (const std::string& text : f.findings) findings.push_back(JsonText(text));
    backends[ValidUtf8(f.backend)] = {{"calls", f.calls},
                                      {"processes", f.processes},
                                      {"calls_after_warm_up", f.calls_after_warm_up},
                                      {"rss_growth_per_call_bytes", f.RssGrowthPerCall()},
                                      {"fd_growth_per_call", f.FdGrowthPerCall()},
                                      {"thread_growth_per_call", f.ThreadGrowthPerCall()},
                                      {"peak_rss_bytes", f.peak_rss_bytes},
                                      {"look_outs", f.look_outs},
                                      {"spinning_look_outs", f.spinning_look_outs},
                                      {"spinning_threads", f.spinning_threads},
                                      {"findings", std::move(findings)}};
  }
  const Json thresholds = {{"rss_growth_per_call_bytes", kLeakBytesPerCall},
                           {"min_calls_for_rss", kMinLeakCalls},
                           {"min_left_open", kMinLeftOpen},
                           {"calls_per_left_open", kCallsPerLeftOpen},
                           {"look_out_delay_ms", kLookOutDelay.count()},
                           {"spinning_cpu_share", kSpinningShare}};
  return {{"thresholds", thresholds},
          {"backends_with_findings", h.resource_findings},
          {"backends", std::move(backends)}};
}

// The run's options: the tool, its version, the tolerance and its rule, the shard, the selection
// and what was resumed.
void AddOptions(Json& j, const ReportHeader& h) {
  const Report& report = *h.run;
  j["tool"] = "mm-conformance";
  j["version"] = JsonText(report.version);
  j["tolerance"] = {{"rtol", JsonNumber(report.tolerance.rtol)},
                    {"atol", JsonNumber(report.tolerance.atol)},
                    {"rule", h.rule_name}};
  j["strict"] = report.strict;
  j["require_official"] = report.require_official;
  j["shard"] = {{"index", report.shard.index}, {"count", report.shard.count}};
  if (!report.selection.fingerprint.empty()) {
    j["selection"] = SelectionJson(report.selection);
    if (!report.run_selection.fingerprint.empty()) {
      j["selection"]["run"] = SelectionJson(report.run_selection);
    }
  }
  if (report.resumed) {
    Json files = Json::array();
    for (const std::string& f : report.resumed->files) files.push_back(JsonText(f));
    j["resumed"] = {{"files", std::move(files)},
                    {"taken", report.resumed->taken},
                    {"rerun_inconsistent", report.resumed->rerun}};
  }
}

// The backends, what they run on, the machine and the data roots.
void AddBackendsAndMachine(Json& j, const ReportHeader& h) {
  const Report& report = *h.run;
  j["backends"] = Json::array();
  for (const std::string& b : report.backends) j["backends"].push_back(JsonText(b));
  j["runs_on"] = Json::object();
  for (const auto& [name, runs_on] : h.runs_on) j["runs_on"][ValidUtf8(name)] = JsonText(runs_on);
  j["unavailable_backends"] = Json::object();
  for (const auto& [name, why] : report.unavailable_backends) {
    j["unavailable_backends"][ValidUtf8(name)] = JsonText(why);
  }
  j["machine"] = MachineJson(report);
  j["data_roots"] = Json::array();
  for (const DataRoot& root : report.roots) {
    j["data_roots"].push_back(
        {{"path", JsonText(root.path.string())}, {"origin", JsonText(root.origin)}});
  }
}

Json SummaryJson(const Summary& sum) {
  return {{"total", sum.total()},
          {"PASS", sum[Verdict::kPass]},
          {"FAIL", sum[Verdict::kFail]},
          {"UNSUPPORTED", sum[Verdict::kUnsupported]},
          {"ERROR", sum[Verdict::kError]},
          {"BOUND", sum[Verdict::kBound]},
          {"IMPRECISE", sum[Verdict::kImprecise]},
          {"XFAIL", sum[Verdict::kXFail]},
          {"XPASS", sum[Verdict::kXPass]},
          {"SKIP", sum[Verdict::kSkip]},
          {"conformance_gaps", sum.gaps}};
}

Json InterruptedJson(const Interruption& i) {
  Json not_run = Json::array(), incomplete = Json::array();
  for (const std::string& c : i.not_run) not_run.push_back(JsonText(c));
  for (const std::string& c : i.incomplete) incomplete.push_back(JsonText(c));
  return {{"signal", SignalName(i.signal)},
          {"signal_number", i.signal},
          {"results", i.results},
          {"of", i.expected},
          {"cases_not_run", std::move(not_run)},
          {"cases_incomplete", std::move(incomplete)}};
}

Json OfficialJson(const OfficialReport& official) {
  Json found = Json::array(), missing = Json::array(), altered = Json::array();
  for (const OfficialStatus& s : official.cases) {
    switch (s.state) {
      case OfficialStatus::State::kIntact:
        found.push_back({{"case", JsonText(s.name)}, {"dir", JsonText(s.dir.string())}});
        break;
      case OfficialStatus::State::kMissing:
        missing.push_back(JsonText(s.name));
        break;
      case OfficialStatus::State::kAltered: {
        Json problems = Json::array();
        for (const std::string& p : s.problems) problems.push_back(JsonText(p));
        altered.push_back({{"case", JsonText(s.name)},
                           {"dir", JsonText(s.dir.string())},
                           {"problems", std::move(problems)}});
        break;
      }
    }
  }
  return {{"complete", official.complete()},
          {"found", std::move(found)},
          {"missing", std::move(missing)},
          {"altered", std::move(altered)}};
}

// The models skipped (not MatMul cases) and the cases shadowed by a first source.
void AddSkippedAndShadowed(Json& j, const Report& report) {
  j["skipped"] = Json::array();
  for (const SkippedModel& s : report.skipped) {
    j["skipped"].push_back({{"case", JsonText(s.name)},
                            {"dir", JsonText(s.dir.string())},
                            {"reason", JsonText(s.reason)}});
  }
  j["shadowed"] = Json::array();
  for (const ShadowedCase& s : report.shadowed) {
    j["shadowed"].push_back({{"case", JsonText(s.name)},
                             {"dir", JsonText(s.dir.string())},
                             {"winner", JsonText(s.winner)}});
  }
}

Json ExpectationsJson(const Expectations& expectations) {
  Json entries = Json::array();
  for (const Expectation& e : expectations.entries) {
    entries.push_back({{"case", JsonText(e.case_pattern)},
                       {"backend", JsonText(e.backend_pattern)},
                       {"expect", std::string(ExpectationKindName(e.kind))},
                       {"reason", JsonText(e.reason)},
                       {"link", JsonText(e.link)},
                       {"matched", e.matched}});
    if (e.data_set_pattern != "*") entries.back()["data_set"] = JsonText(e.data_set_pattern);
    if (!e.unless_cpu_has.empty()) entries.back()["unless_cpu_has"] = e.unless_cpu_has;
    if (!e.not_here.empty()) entries.back()["not_here"] = JsonText(e.not_here);
  }
  return {{"file", JsonText(expectations.source)}, {"entries", std::move(entries)}};
}

// Replaces the first `marker` in `text` by what `fill` writes, writing everything to `out`.
template <class Fill>
void Splice(std::ostream& out, const std::string& text, const std::string& marker, Fill fill) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) {
    out << text;
    return;
  }
  out.write(text.data(), static_cast<std::streamsize>(at));
  fill();
  const std::string rest = text.substr(at + marker.size());
  out << rest;
}

constexpr const char* kResultsMarker = "\"@@mm-conformance-results@@\"";

class JsonRenderer final : public ReportRenderer {
 public:
  bool ok() const override { return spool_.ok(); }
  void Add(const Result& r) override {
    if (!spool_.empty()) spool_.Write(",\n");
    // Results carry text from files and backends: invalid UTF-8 becomes U+FFFD here.
    // One line per result, without building the result's JSON: half the bytes of the indented
    // form (a report of a million results is 1.4 GB indented), and a line per result for tools
    // that read lines.
    spool_.Write("    ");
    spool_.Write(writer_.Render(r, ResultJsonWriter::kOneLine));
  }
  void Finish(const ReportHeader& h, std::ostream& out) override {
    const Report& report = *h.run;
    Json j;
    AddOptions(j, h);
    AddBackendsAndMachine(j, h);
    j["summary"] = SummaryJson(h.summary);
    j["resources"] = ResourcesJson(h);
    j["exit_code"] = report.exit_code;
    if (report.interrupted) j["interrupted"] = InterruptedJson(*report.interrupted);
    // The results are spliced in where this marker is dumped.
    j["results"] = std::string(kResultsMarker).substr(1, std::strlen(kResultsMarker) - 2);
    j["official"] = OfficialJson(report.official);
    AddSkippedAndShadowed(j, report);
    if (report.expectations) j["expectations"] = ExpectationsJson(*report.expectations);
    const std::string text = j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
    Splice(out, text, std::string("\"results\": ") + kResultsMarker, [&] {
      out << "\"results\": ";
      if (spool_.empty()) {
        out << "[]";
        return;
      }
      out << "[\n";
      spool_.CopyTo(out);
      out << "\n  ]";
    });
  }

 private:
  Spool spool_;
  ResultJsonWriter writer_;
};

}  // namespace

std::unique_ptr<ReportRenderer> NewJsonRenderer() { return std::make_unique<JsonRenderer>(); }

std::string ToJson(const Report& report) {
  JsonRenderer renderer;
  for (const Result& r : report.results) renderer.Add(r);
  std::ostringstream out;
  renderer.Finish(MakeReportHeader(report, Summarize(report.results)), out);
  return out.str();
}

}  // namespace mm::conformance
