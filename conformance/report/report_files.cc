#include "mm/conformance/report/report_files.h"

#include "mm/conformance/report/json_report.h"
#include "mm/conformance/report/junit_report.h"
#include "mm/conformance/report/markdown_report.h"
#include "mm/conformance/report/output_file.h"

namespace mm::conformance {

struct ReportFiles::Renderers {
  std::unique_ptr<ReportRenderer> json, junit, markdown;
};

ReportFiles::ReportFiles() : renderers_(std::make_unique<Renderers>()) {}
ReportFiles::~ReportFiles() = default;

Status ReportFiles::Open(const std::string& json, const std::string& junit,
                         const std::string& markdown, const Report& header) {
  json_ = json;
  junit_ = junit;
  markdown_ = markdown;
  if (!json.empty()) renderers_->json = NewJsonRenderer();
  if (!junit.empty()) {
    renderers_->junit =
        NewJUnitRenderer(header.backends, header.tolerance, header.rule, header.strict);
  }
  if (!markdown.empty()) renderers_->markdown = NewMarkdownRenderer(header.backends);
  if ((renderers_->json && !renderers_->json->ok()) ||
      (renderers_->junit && !renderers_->junit->ok()) ||
      (renderers_->markdown && !renderers_->markdown->ok())) {
    return DataLossError("cannot create a temporary file for the reports (TMPDIR)");
  }
  return OkStatus();
}

void ReportFiles::Add(const Result& result) {
  if (renderers_->json) renderers_->json->Add(result);
  if (renderers_->junit) renderers_->junit->Add(result);
  if (renderers_->markdown) renderers_->markdown->Add(result);
}

Status ReportFiles::Finish(const Report& report, const Summary& summary) {
  if (renderers_->json) {
    MM_RETURN_IF_ERROR(WriteFileAtomically(
        json_, [&](std::ostream& out) { renderers_->json->Finish(report, summary, out); }));
  }
  if (renderers_->junit) {
    MM_RETURN_IF_ERROR(WriteFileAtomically(
        junit_, [&](std::ostream& out) { renderers_->junit->Finish(report, summary, out); }));
  }
  if (renderers_->markdown) {
    MM_RETURN_IF_ERROR(WriteFileAtomically(
        markdown_, [&](std::ostream& out) { renderers_->markdown->Finish(report, summary, out); }));
  }
  return OkStatus();
}

}  // namespace mm::conformance
