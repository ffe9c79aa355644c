#include "mm/conformance/report/markdown_report.h"

#include <optional>
#include <sstream>

#include "mm/conformance/report/escape.h"

namespace mm::conformance {

namespace {

// The title, the tolerance, the counts, the resource findings, what was resumed or interrupted.
void WriteHeadline(const ReportHeader& h, std::ostream& out) {
  const Report& report = *h.run;
  const Summary& sum = h.summary;
  out << "# MatMul conformance report\n\n"
      << "mm-conformance " << MarkdownEscape(report.version) << "; tolerance: pass iff |actual - "
      << "expected| <= atol + rtol * |expected| (" << h.tolerance_text << "); integers exact.\n\n"
      << "**" << sum[Verdict::kPass] << " PASS, " << sum[Verdict::kFail] << " FAIL, "
      << sum[Verdict::kUnsupported] << " UNSUPPORTED, " << sum[Verdict::kError] << " ERROR"
      << h.gap_count << ", " << sum[Verdict::kBound] << " BOUND, " << sum[Verdict::kImprecise]
      << " IMPRECISE" << h.declared << "** of " << sum.total()
      << " results (case x data set x backend); exit code " << report.exit_code << ".\n\n";
  if (const int findings = h.resource_findings) {
    out << "**Resources: " << findings << " backend" << (findings == 1 ? "" : "s")
        << " past a threshold" << (report.strict ? " (failures under --strict)" : "")
        << "; see Resources.**\n\n";
  }
  if (!h.resumption.empty()) out << "Resumed: " << MarkdownEscape(h.resumption) << ".\n\n";
  if (report.interrupted) {
    const Interruption& i = *report.interrupted;
    out << "**Run " << MarkdownEscape(h.interruption) << ".**";
    if (!i.incomplete.empty()) {
      out << " Incomplete:";
      for (const std::string& c : i.incomplete) out << " " << MarkdownEscape(c);
      out << ".";
    }
    if (!i.not_run.empty()) {
      out << " Not run:";
      for (const std::string& c : i.not_run) out << " " << MarkdownEscape(c);
      out << ".";
    }
    out << "\n\n";
  }
}

// The machine, what each backend runs on and the backends not available.
void WriteMachine(const ReportHeader& h, std::ostream& out) {
  const Report& report = *h.run;
  const MachineInfo& m = report.machine;
  out << "## Machine\n\n| | |\n|---|---|\n"
      << "| CPU | " << MarkdownEscape(m.cpu_model) << ", " << m.logical_cpus << " logical CPUs |\n"
      << "| CPU features | " << MarkdownEscape(m.cpu_features) << " |\n"
      << "| OMP_NUM_THREADS | " << MarkdownEscape(m.omp_num_threads) << " |\n"
      << "| ONEDNN_MAX_CPU_ISA | " << MarkdownEscape(m.KernelVariable("ONEDNN_MAX_CPU_ISA"))
      << " |\n"
      << "| OS | " << MarkdownEscape(m.os) << " |\n"
      << "| Built with | " << MarkdownEscape(m.compiler) << " |\n"
      << "| Loader | " << MarkdownEscape(report.loader_versions) << " |\n";
  for (const auto& [name, runs_on] : h.runs_on) {
    out << "| " << MarkdownEscape(name) << " runs on | " << MarkdownEscape(runs_on) << " |\n";
  }
  for (const auto& [name, why] : report.unavailable_backends) {
    out << "| " << MarkdownEscape(name) << " | not available: " << MarkdownEscape(why) << " |\n";
  }
  out << "\n";
}

void WriteExpectations(const Expectations& expectations, std::ostream& out) {
  out << "\n## Expectations\n\nFrom " << MarkdownEscape(expectations.source)
      << " (the first matching entry decides a result).\n\n| Case | Backend | Expect | Reason "
         "| "
         "Link | Results |\n|---|---|---|---|---|---|\n";
  for (const Expectation& e : expectations.entries) {
    out << "| " << MarkdownEscape(e.case_pattern) << " | " << MarkdownEscape(e.backend_pattern)
        << " | " << ExpectationKindName(e.kind) << " | " << MarkdownEscape(e.reason) << " | "
        << MarkdownEscape(e.link) << " | "
        << (e.matched            ? std::to_string(e.matched)
            : e.not_here.empty() ? "**matches nothing**"
                                 : "not for this CPU (" + MarkdownEscape(e.not_here) + ")")
        << " |\n";
  }
}

void WriteOfficialCorpus(const ReportHeader& h, std::ostream& out) {
  out << "\n## Official corpus\n\n"
      << h.official.intact << " of " << h.official.cases
      << " official ONNX MatMul node tests found intact"
      << (h.run->require_official ? " (required)" : "") << ".";
  if (h.official.family_found > 0) {
    out << " " << h.official.family_intact << " of the " << h.official.family_found
        << " official node tests of MatMul's family found intact.";
  }
  out << "\n\n| Case | State | Where | Problems "
      << "|\n|---|---|---|---|\n";
  for (const OfficialStatus& s : h.run->official.cases) {
    std::string problems;
    for (const std::string& p : s.problems) problems += (problems.empty() ? "" : "; ") + p;
    out << "| " << MarkdownEscape(s.name) << " | " << OfficialStateName(s.state) << " | "
        << MarkdownEscape(s.dir.string()) << " | " << MarkdownEscape(problems) << " |\n";
  }
}

// The data roots, the shadowed cases and the skipped models.
void WriteDataRoots(const Report& report, std::ostream& out) {
  out << "\n## Data roots\n\n";
  if (report.roots.empty()) out << "(none: built-in cases only)\n";
  for (const DataRoot& root : report.roots) {
    out << "- " << MarkdownEscape(root.path.string()) << " (" << MarkdownEscape(root.origin)
        << ")\n";
  }
  if (!report.shadowed.empty()) {
    out << "\n## Shadowed\n\n";
    for (const ShadowedCase& s : report.shadowed) {
      out << "- " << MarkdownEscape(s.name) << " at " << MarkdownEscape(s.dir.string()) << " ("
          << MarkdownEscape(s.winner) << " wins)\n";
    }
  }
  if (!report.skipped.empty()) {
    out << "\n## Skipped models (not MatMul cases)\n\n<details><summary>" << report.skipped.size()
        << " models</summary>\n\n| Model | Reason |\n|---|---|\n";
    for (const SkippedModel& s : report.skipped) {
      out << "| " << MarkdownEscape(s.name) << " | " << MarkdownEscape(s.reason) << " |\n";
    }
    out << "\n</details>\n";
  }
}

// Markdown: the verdict matrix (a row per case, once its results are there) and the details (a
// row per result) are spooled; Finish writes the summary and machine above them.
class MarkdownRenderer final : public ReportRenderer {
 public:
  explicit MarkdownRenderer(const std::vector<std::string>& backends) : backends_(backends) {}
  bool ok() const override { return matrix_.ok() && details_.ok(); }
  void Add(const Result& r) override {
    if (!pending_.empty() && pending_.front().case_name != r.case_name) FlushCase();
    pending_.push_back(Cell{r.case_name, r.backend, r.verdict, r.dtype, DescOf(r)});
    const bool measured = r.vs_expected && r.vs_expected->mismatch.empty() && r.op == "MatMul";
    std::string message = r.message;
    if (!r.support_note.empty()) message += " (by conversion: " + r.support_note + ")";
    if (!r.data_suspect.empty()) message += " (suspect data: " + r.data_suspect + ")";
    std::ostringstream out;
    out << "| " << MarkdownEscape(r.case_name) << " | " << MarkdownEscape(r.data_set) << " | "
        << MarkdownEscape(r.backend) << " | " << VerdictName(r.verdict)
        << (IsConformanceGap(r) ? " (conformance gap)" : "") << " | "
        << (measured ? FormatShort(r.vs_expected->max_abs_error) : "-") << " | "
        << (measured ? FormatShort(r.vs_expected->max_rel_error) : "-") << " | "
        << MarkdownEscape(message) << " | " << MarkdownEscape(r.vs_reference) << " | "
        << MarkdownEscape(r.implementation.empty() ? "-" : r.implementation) << " |\n";
    details_.Write(out.str());
  }
  void Finish(const ReportHeader& h, std::ostream& out) override {
    if (!pending_.empty()) FlushCase();
    const Report& report = *h.run;
    WriteHeadline(h, out);
    WriteMachine(h, out);
    out << "## Verdicts\n\n| Case | dtype | A x B |";
    for (const std::string& b : report.backends) out << " " << MarkdownEscape(b) << " |";
    out << "\n|---|---|---|";
    for (std::size_t i = 0; i < report.backends.size(); ++i) out << "---|";
    out << "\n";
    matrix_.CopyTo(out);

    WriteResources(report, out);

    out << "\n## Details\n\n| Case | Data set | Backend | Verdict | Max abs | Max rel | Message | "
           "vs "
           "reference | Computed by |\n|---|---|---|---|---|---|---|---|---|\n";
    details_.CopyTo(out);

    if (report.expectations) WriteExpectations(*report.expectations, out);
    WriteOfficialCorpus(h, out);
    WriteDataRoots(report, out);
  }

 private:
  struct Cell {
    std::string case_name, backend;
    Verdict verdict;
    std::optional<DType> dtype;
    std::string desc;
  };
  // The section on what the backends' calls left behind: a row per backend with figures.
  static void WriteResources(const Report& report, std::ostream& out) {
    if (report.resources.empty()) return;
    out << "\n## Resources\n\nWhat each call left behind in the process that made it, per "
           "call after each process's first (conformance/judging/resources.h); a finding is a "
           "failure "
           "under --strict.\n\n| Backend | Calls after warm-up | Processes | Memory growth per "
           "call | Descriptors per call | Threads per call | Spinning threads | Finding "
           "|\n|---|---|---|---|---|---|---|---|\n";
    for (const BackendResources& f : report.resources) {
      std::string findings;
      for (const std::string& text : f.findings) findings += (findings.empty() ? "" : "; ") + text;
      out << "| " << MarkdownEscape(f.backend) << " | " << f.calls_after_warm_up << " | "
          << f.processes << " | " << ByteSize(f.RssGrowthPerCall()) << " | "
          << FormatShort(f.FdGrowthPerCall()) << " | " << FormatShort(f.ThreadGrowthPerCall())
          << " | " << f.spinning_threads << " (" << f.look_outs << " look-outs) | "
          << (findings.empty() ? "-" : "**" + MarkdownEscape(findings) + "**") << " |\n";
    }
  }

  // The matrix row of the case whose results are pending.
  void FlushCase() {
    const Cell& first = pending_.front();
    std::ostringstream out;
    out << "| " << MarkdownEscape(first.case_name) << " | "
        << (first.dtype ? std::string(DTypeName(*first.dtype)) : "-") << " | "
        << MarkdownEscape(first.desc) << " |";
    for (const std::string& b : backends_) {
      std::optional<Verdict> cell;
      for (const Cell& c : pending_) {
        if (c.backend == b) cell = cell ? WorseVerdict(*cell, c.verdict) : c.verdict;
      }
      out << " " << (cell ? std::string(VerdictName(*cell)) : "-") << " |";
    }
    out << "\n";
    matrix_.Write(out.str());
    pending_.clear();
  }

  std::vector<std::string> backends_;
  std::vector<Cell> pending_;
  Spool matrix_, details_;
};

}  // namespace

std::unique_ptr<ReportRenderer> NewMarkdownRenderer(const std::vector<std::string>& backends) {
  return std::make_unique<MarkdownRenderer>(backends);
}

std::string ToMarkdown(const Report& report) {
  MarkdownRenderer renderer(report.backends);
  for (const Result& r : report.results) renderer.Add(r);
  std::ostringstream out;
  renderer.Finish(MakeReportHeader(report, Summarize(report.results)), out);
  return out.str();
}

}  // namespace mm::conformance
