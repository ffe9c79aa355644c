#include "mm/conformance/report/report_files.h"

#include <utility>
#include <vector>

#include "mm/conformance/report/json_report.h"
#include "mm/conformance/report/junit_report.h"
#include "mm/conformance/report/markdown_report.h"
#include "mm/engine/io/output_file.h"

namespace mm::conformance {

struct ReportFiles::Renderers {
  std::vector<std::pair<std::unique_ptr<ReportRenderer>, std::ostream*>> streams;
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

void ReportFiles::AddStream(std::unique_ptr<ReportRenderer> renderer, std::ostream& out) {
  renderers_->streams.emplace_back(std::move(renderer), &out);
}

void ReportFiles::Add(Result result) {
  Count(summary_, result);
  if (expectations_ != nullptr) CountMatch(*expectations_, result);
  if (result.resources) resources_.Add(result.backend, *result.resources);
  for (auto& [renderer, out] : renderers_->streams) renderer->Add(result);
  if (renderers_->json) renderers_->json->Add(result);
  if (renderers_->junit) renderers_->junit->Add(result);
  if (renderers_->markdown) renderers_->markdown->Add(result);
}

Status ReportFiles::Finish(const Report& report, const std::function<void()>& after_streams) {
  const ReportHeader header = MakeReportHeader(report, summary_);
  for (auto& [renderer, out] : renderers_->streams) renderer->Finish(header, *out);
  if (after_streams) after_streams();
  const std::pair<const std::string*, ReportRenderer*> files[] = {
      {&json_, renderers_->json.get()},
      {&junit_, renderers_->junit.get()},
      {&markdown_, renderers_->markdown.get()}};
  for (const auto& file : files) {
    // A plain pointer, not a structured binding: clang 14 (the libFuzzer build) refuses a lambda
    // that captures one.
    ReportRenderer* renderer = file.second;
    if (renderer == nullptr) continue;
    MM_RETURN_IF_ERROR(io::WriteFileAtomically(
        *file.first, [&](std::ostream& out) { renderer->Finish(header, out); }));
  }
  return OkStatus();
}

}  // namespace mm::conformance
