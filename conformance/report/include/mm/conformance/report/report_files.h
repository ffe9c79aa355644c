// The reports of a run (the console, JSON, JUnit, Markdown), written as results arrive.
#ifndef MM_CONFORMANCE_REPORT_REPORT_FILES_H_
#define MM_CONFORMANCE_REPORT_REPORT_FILES_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "mm/conformance/judging/resources.h"
#include "mm/conformance/report/renderer.h"
#include "mm/conformance/report/report.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// The one fan-out of a run's (or a merge's) results: every renderer (ReportRenderer) gets each
// result once, in order. Files (JSON, JUnit, Markdown) are rendered into temporary spool files, so
// memory does not grow with the results; Finish assembles each file (WriteFileAtomically: a new
// file of an unpredictable name beside PATH, renamed over PATH) byte for byte as ToJson,
// ToJUnitXml and ToMarkdown render the same report. A stream renderer (the console) writes to its
// stream. It also keeps what every report ends with: the summary, the resource figures and each
// expectation's matches.
class ReportFiles final : public ResultSink {
 public:
  ReportFiles();
  ~ReportFiles() override;
  ReportFiles(const ReportFiles&) = delete;
  ReportFiles& operator=(const ReportFiles&) = delete;
  // The formats to write (an empty path: not written); `header` gives the run's backends,
  // tolerance, rule and strictness (its results are not looked at). The error says what cannot
  // be created.
  Status Open(const std::string& json, const std::string& junit, const std::string& markdown,
              const Report& header);
  // Adds `renderer`, whose Finish writes to `out` (the console), before the files.
  void AddStream(std::unique_ptr<ReportRenderer> renderer, std::ostream& out);
  // Counts each result of `expectations` (which must outlive this) it decides (CountMatch).
  void CountMatches(Expectations* expectations) { expectations_ = expectations; }
  void Add(Result result) override;
  const Summary& summary() const { return summary_; }
  // The resource figures of the results so far, for `backends` in that order.
  std::vector<BackendResources> Resources(const std::vector<std::string>& backends) const {
    return resources_.Finish(backends);
  }
  // Finishes the stream renderers, calls `after_streams` (when given), then writes every file for
  // `report` (its own results not looked at) with the summary; the error names the file that
  // cannot be written.
  Status Finish(const Report& report, const std::function<void()>& after_streams = {});

  struct Renderers;

 private:
  std::string json_, junit_, markdown_;
  std::unique_ptr<Renderers> renderers_;
  Summary summary_;
  ResourceTally resources_;
  Expectations* expectations_ = nullptr;
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_FILES_H_
