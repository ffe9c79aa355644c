// The console report: a line per (case, backend) as results arrive, then the summary.
#ifndef MM_CONFORMANCE_REPORT_CONSOLE_REPORT_H_
#define MM_CONFORMANCE_REPORT_CONSOLE_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <vector>

#include "mm/conformance/report/renderer.h"
#include "mm/conformance/report/report.h"

namespace mm::conformance {

// One line per (case, backend) unless `quiet`, its verdict the worst over the case's data sets;
// then the official corpus, skipped and shadowed counts and the summary.
void WriteConsole(const Report& report, std::ostream& out, bool quiet = false);

// WriteConsole as results arrive: the lines of a case are printed (and flushed, whatever `out`
// is: a terminal, a file, a pipe) as soon as a result of the next case or Finish comes. Results
// of one case must be contiguous (as every run gives them). A renderer like the report files'
// (ReportFiles::AddStream), writing to its own stream as results arrive.
class ConsoleWriter final : public ReportRenderer {
 public:
  // `name_width` and `backend_width`: the longest case and backend name (columns are 2 wider).
  ConsoleWriter(std::ostream& out, bool quiet, const Tolerance& tolerance, std::size_t name_width,
                std::size_t backend_width);
  bool ok() const override { return true; }
  void Add(const Result& result) override;
  // The pending lines, then everything after them: the official corpus, skipped and shadowed
  // models, the machine, expectations, the interruption and the summary of `header`.
  void Finish(const ReportHeader& header);
  // Finish(header), to the stream given at construction (which `out` must be).
  void Finish(const ReportHeader& header, std::ostream& out) override;

 private:
  void FlushCase();
  // The official corpus's state, when the run holds one of its cases or requires them.
  void WriteOfficialCorpus(const ReportHeader& h);
  // The skipped and shadowed models, the machine and what each backend runs on.
  void WriteModelsAndMachine(const ReportHeader& h);
  // The expectations file and its entries that matched nothing.
  void WriteExpectations(const ReportHeader& h);
  // The "summary:" line.
  void WriteSummary(const ReportHeader& h);
  std::ostream& out_;
  bool quiet_;
  Tolerance tolerance_;
  std::size_t name_width_, backend_width_;
  std::vector<Result> pending_;  // The current case's results.
  std::int64_t rows_ = 0;
  std::int64_t suspect_data_sets_ = 0;  // Data sets whose expected Y is suspect (data_suspect).
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_CONSOLE_REPORT_H_
