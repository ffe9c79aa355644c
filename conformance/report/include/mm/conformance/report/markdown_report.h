// The Markdown report.
#ifndef MM_CONFORMANCE_REPORT_MARKDOWN_REPORT_H_
#define MM_CONFORMANCE_REPORT_MARKDOWN_REPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "mm/conformance/report/renderer.h"
#include "mm/conformance/report/report.h"

namespace mm::conformance {

// Markdown: summary, the machine and what each backend runs on, a case x backend verdict matrix,
// the details of every result (with what computed it), the official corpus table, skipped and
// shadowed lists.
std::string ToMarkdown(const Report& report);
// ToMarkdown as results arrive (the same bytes), for ReportFiles: the matrix's columns are
// `backends`.
std::unique_ptr<ReportRenderer> NewMarkdownRenderer(const std::vector<std::string>& backends);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_MARKDOWN_REPORT_H_
