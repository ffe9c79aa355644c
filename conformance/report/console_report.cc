#include "mm/conformance/report/console_report.h"

#include <algorithm>
#include <iomanip>

#include "mm/conformance/report/escape.h"

namespace mm::conformance {
namespace {

struct Row {
  std::string case_name;
  std::string backend;
  Verdict verdict = Verdict::kPass;
  std::vector<const Result*> results;
};

std::string ErrorsText(const Result& r) {
  if (!r.vs_expected || !r.vs_expected->mismatch.empty()) return "";
  return "max abs " + FormatShort(r.vs_expected->max_abs_error) + ", max rel " +
         FormatShort(r.vs_expected->max_rel_error);
}

bool IsMatMulResult(const Result& r) { return r.op == "MatMul"; }

// Groups contiguous results of one case into rows by backend, in order of first appearance.
std::vector<Row> CaseRows(const std::vector<Result>& results) {
  std::vector<Row> rows;
  for (const Result& r : results) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) {
      return row.backend == r.backend && row.case_name == r.case_name;
    });
    if (it == rows.end()) {
      rows.push_back({r.case_name, r.backend, r.verdict, {}});
      it = rows.end() - 1;
    }
    it->verdict = WorseVerdict(it->verdict, r.verdict);
    it->results.push_back(&r);
  }
  return rows;
}

}  // namespace

ConsoleWriter::ConsoleWriter(std::ostream& out, bool quiet, const Tolerance& tolerance,
                             std::size_t name_width, std::size_t backend_width)
    : out_(out),
      quiet_(quiet),
      tolerance_(tolerance),
      name_width_(std::max<std::size_t>(4, name_width)),
      backend_width_(std::max<std::size_t>(7, backend_width)) {}

void ConsoleWriter::Add(const Result& result) {
  if (!pending_.empty() && pending_.back().case_name != result.case_name) FlushCase();
  pending_.push_back(result);
}

void ConsoleWriter::FlushCase() {
  const std::vector<Row> rows = CaseRows(pending_);
  rows_ += static_cast<std::int64_t>(rows.size());
  for (const Row& row : quiet_ ? std::vector<Row>() : rows) {
    const Result& first = *row.results.front();
    // The line shows the data set that decided the verdict (the first with the worst verdict).
    const Result* decisive = row.results.front();
    for (const Result* r : row.results) {
      if (r->verdict == row.verdict) {
        decisive = r;
        break;
      }
    }
    std::ostream& out = out_;
    out << std::left << std::setw(12) << VerdictName(row.verdict) << std::setw(name_width_ + 2)
        << PrintableText(row.case_name) << std::setw(backend_width_ + 2) << row.backend
        << std::setw(9) << (first.dtype ? std::string(DTypeName(*first.dtype)) : std::string("-"))
        << std::setw(22) << DescOf(first);
    // A longer description (a family operator's name and its shapes) keeps a space after it.
    if (DescOf(first).size() >= 22) out << ' ';
    if (row.results.size() > 1) out << "[" << row.results.size() << " data sets] ";
    switch (row.verdict) {
      case Verdict::kPass:
        // A family result's figures are its judgement's description (ErrorsText is MatMul's).
        out << (IsMatMulResult(*decisive) ? ErrorsText(*decisive)
                                          : PrintableText(decisive->message))
            << "; vs reference: " << decisive->vs_reference;
        break;
      case Verdict::kFail:
      case Verdict::kBound:
      case Verdict::kImprecise:
        out << PrintableText(decisive->data_set) << ": " << PrintableText(decisive->message) << " ["
            << ToleranceText(tolerance_) << "]; vs reference: " << decisive->vs_reference;
        break;
      case Verdict::kUnsupported:
      case Verdict::kError:
      case Verdict::kXFail:
      case Verdict::kXPass:
      case Verdict::kSkip:
        out << PrintableText(decisive->message);
        break;
    }
    if (!decisive->support_note.empty())
      out << " (by conversion: " << decisive->support_note << ")";
    if (!decisive->implementation.empty()) out << " [ran: " << decisive->implementation << "]";
    out << "\n";
  }
  // A data set's suspect expected Y is the case's, not a backend's: said once per case.
  std::vector<std::string> suspects;
  for (const Result& r : pending_) {
    if (r.data_suspect.empty()) continue;
    if (std::find(suspects.begin(), suspects.end(), r.data_suspect) != suspects.end()) continue;
    suspects.push_back(r.data_suspect);
    ++suspect_data_sets_;
    if (!quiet_) out_ << "  suspect data: " << PrintableText(r.data_suspect) << "\n";
  }
  pending_.clear();
  // Lines leave now, not when a buffer fills: an interrupted or killed run has shown them.
  if (!quiet_) out_.flush();
}

void ConsoleWriter::WriteOfficialCorpus(const ReportHeader& h) {
  // A run over data roots that hold none of the 7 (one's own cases, a corpus of deviations) gets
  // no verdict on them unless it asked for them (--require-official); --list still says it.
  // The family's official cases the roots hold are judged on a line of their own.
  if (!h.official.judged && h.official.family_found == 0) return;
  std::ostream& out = out_;
  if (h.official.judged) {
    out << "official corpus: " << h.official.intact << " of " << h.official.cases << " intact";
    if (h.official.missing) out << ", " << h.official.missing << " missing";
    if (h.official.altered) out << ", " << h.official.altered << " ALTERED";
    out << (h.run->require_official ? " (required)" : "") << "\n";
  }
  if (h.official.family_found > 0) {
    out << "official family corpus: " << h.official.family_intact << " of "
        << h.official.family_found << " found intact";
    if (h.official.family_altered) out << ", " << h.official.family_altered << " ALTERED";
    out << "\n";
  }
  for (const OfficialStatus& s : h.run->official.cases) {
    if (s.state == OfficialStatus::State::kIntact) continue;
    if (s.state == OfficialStatus::State::kMissing && !h.official.judged) continue;
    out << "  " << OfficialStateName(s.state) << ": " << s.name;
    if (!s.dir.empty()) out << " at " << PrintableText(s.dir.string());
    for (const std::string& p : s.problems) out << "\n    " << PrintableText(p);
    out << "\n";
  }
}

void ConsoleWriter::WriteModelsAndMachine(const ReportHeader& h) {
  const Report& report = *h.run;
  std::ostream& out = out_;
  if (!report.skipped.empty()) {
    out << report.skipped.size() << " model(s) skipped (not MatMul cases); --list shows them\n";
  }
  for (const ShadowedCase& s : report.shadowed) {
    out << "shadowed: " << PrintableText(s.name) << " at " << PrintableText(s.dir.string()) << " ("
        << PrintableText(s.winner) << " wins)\n";
  }
  out << "machine: " << PrintableText(report.machine.ToString()) << "\n";
  for (const auto& [name, runs_on] : h.runs_on) {
    out << "  " << name << ": " << PrintableText(runs_on) << "\n";
  }
  for (const auto& [name, why] : report.unavailable_backends) {
    out << "  " << name << ": not available: " << PrintableText(why) << "\n";
  }
}

void ConsoleWriter::WriteExpectations(const ReportHeader& h) {
  if (!h.expectations) return;
  const Expectations& expectations = *h.run->expectations;
  const int elsewhere = h.expectations->elsewhere;
  out_ << "expectations: " << expectations.entries.size() << " entries from "
       << PrintableText(expectations.source) << ", " << h.expectations->unmatched
       << " matching nothing"
       << (elsewhere ? ", " + std::to_string(elsewhere) + " not for this CPU" : "") << "\n";
  for (const Expectation& e : expectations.entries) {
    if (e.matched) continue;
    // An entry of another CPU's code path is shown too: its deviation is not tested here.
    out_ << (e.not_here.empty() ? "  matches nothing: " : "  not for this CPU: ")
         << ExpectationKindName(e.kind) << " case " << PrintableText(e.case_pattern) << " backend "
         << PrintableText(e.backend_pattern) << " ("
         << PrintableText(e.not_here.empty() ? e.reason : e.not_here + "; " + e.reason) << ")\n";
  }
}

void ConsoleWriter::WriteSummary(const ReportHeader& h) {
  const Summary& sum = h.summary;
  out_ << "summary: " << sum.total() << " results (" << rows_
       << " case x backend): " << sum[Verdict::kPass] << " PASS, " << sum[Verdict::kFail]
       << " FAIL, " << sum[Verdict::kUnsupported] << " UNSUPPORTED"
       << (h.run->strict && sum[Verdict::kUnsupported] ? " (failures under --strict)" : "") << ", "
       << sum[Verdict::kError] << " ERROR" << h.gap_count << ", " << sum[Verdict::kBound]
       << " BOUND, " << sum[Verdict::kImprecise] << " IMPRECISE (" << h.rule_verdict
       << " fails under --tolerance " << h.rule_name << ")" << h.declared << "; exit "
       << h.run->exit_code << "\n";
}

void ConsoleWriter::Finish(const ReportHeader& h) {
  if (!pending_.empty()) FlushCase();
  std::ostream& out = out_;
  if (!quiet_) out << "\n";
  WriteOfficialCorpus(h);
  WriteModelsAndMachine(h);
  WriteExpectations(h);
  if (!h.interruption.empty()) out << h.interruption << " (--resume the JSON report to finish)\n";
  if (suspect_data_sets_ > 0) {
    out << "suspect data: " << suspect_data_sets_
        << " data set(s) whose expected Y is not the exact product of their inputs within the "
           "bound "
           "of their own type (\"suspect data\" lines above; the backends are judged against the "
           "exact product all the same)\n";
  }
  // What the calls left behind: a line per backend past a threshold
  // (conformance/judging/resources.h).
  for (const std::string& line : h.resource_lines) out << PrintableText(line) << "\n";
  if (!h.resumption.empty()) out << "resumed: " << PrintableText(h.resumption) << "\n";
  WriteSummary(h);
  out.flush();
}

void ConsoleWriter::Finish(const ReportHeader& header, std::ostream&) { Finish(header); }

void WriteConsole(const Report& report, std::ostream& out, bool quiet) {
  std::size_t name_width = 4, backend_width = 7;
  for (const Result& r : report.results) {
    name_width = std::max(name_width, r.case_name.size());
    backend_width = std::max(backend_width, r.backend.size());
  }
  ConsoleWriter writer(out, quiet, report.tolerance, name_width, backend_width);
  for (const Result& r : report.results) writer.Add(r);
  writer.Finish(MakeReportHeader(report, Summarize(report.results)));
}

}  // namespace mm::conformance
