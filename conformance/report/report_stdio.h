// Internal to the report library (not published): a JSON report opened for reading, shared by
// ReadReportHeader and ResultReader (report_reader.h).
#ifndef MM_CONFORMANCE_REPORT_REPORT_STDIO_H_
#define MM_CONFORMANCE_REPORT_REPORT_STDIO_H_

#include <cstdio>
#include <memory>
#include <string>

#include "mm/engine/status.h"

namespace mm::conformance {

using StdioFile = std::unique_ptr<std::FILE, decltype(&std::fclose)>;

// The report at `path`, opened by io::OpenInputFile's rules (io::kConformanceReportFile); the
// error names the file.
StatusOr<StdioFile> OpenReport(const std::string& path);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_STDIO_H_
