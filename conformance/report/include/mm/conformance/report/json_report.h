// The JSON report.
#ifndef MM_CONFORMANCE_REPORT_JSON_REPORT_H_
#define MM_CONFORMANCE_REPORT_JSON_REPORT_H_

#include <memory>
#include <string>

#include "mm/conformance/report/renderer.h"
#include "mm/conformance/report/report.h"

namespace mm::conformance {

// JSON (written with nlohmann-json): {"tool", "version", "tolerance", "strict",
// "require_official", "shard", "backends", "runs_on" {backend: text}, "machine" {...},
// "data_roots", "summary", "exit_code", "results" (ResultToJson each), "official", "skipped",
// "shadowed", "expectations"?}; non-finite numbers as the strings "nan", "inf", "-inf"; invalid
// UTF-8 replaced by U+FFFD.
std::string ToJson(const Report& report);
// ToJson as results arrive (the same bytes), for ReportFiles.
std::unique_ptr<ReportRenderer> NewJsonRenderer();

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_JSON_REPORT_H_
