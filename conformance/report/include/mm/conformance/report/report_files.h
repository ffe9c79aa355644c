// The report files of a run (JSON, JUnit, Markdown), written as results arrive.
#ifndef MM_CONFORMANCE_REPORT_REPORT_FILES_H_
#define MM_CONFORMANCE_REPORT_REPORT_FILES_H_

#include <memory>
#include <string>

#include "mm/conformance/report/report.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// The JSON, JUnit and Markdown files of one run, written as results arrive: each result is
// rendered once, into temporary spool files, so memory does not grow with the results; Finish
// assembles each file (WriteFileAtomically: a new file of an unpredictable name beside PATH,
// renamed over PATH) byte for byte as ToJson, ToJUnitXml and ToMarkdown render the same report.
class ReportFiles {
 public:
  ReportFiles();
  ~ReportFiles();
  ReportFiles(const ReportFiles&) = delete;
  ReportFiles& operator=(const ReportFiles&) = delete;
  // The formats to write (an empty path: not written); `header` gives the run's backends,
  // tolerance, rule and strictness (its results are not looked at). The error says what cannot
  // be created.
  Status Open(const std::string& json, const std::string& junit, const std::string& markdown,
              const Report& header);
  void Add(const Result& result);
  // Writes every file for `report` (its own results not looked at) with `summary`; the error
  // names the file that cannot be written.
  Status Finish(const Report& report, const Summary& summary);

  struct Renderers;

 private:
  std::string json_, junit_, markdown_;
  std::unique_ptr<Renderers> renderers_;
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_FILES_H_
