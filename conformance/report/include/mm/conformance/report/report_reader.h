// Reading the JSON reports of a run back: the report whole, its header alone, or its results one
// at a time, every field typed and checked.
#ifndef MM_CONFORMANCE_REPORT_REPORT_READER_H_
#define MM_CONFORMANCE_REPORT_REPORT_READER_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "mm/conformance/report/report.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// Parses a JSON report (ToJson's output) back into a Report (its resources tallied from its
// results, as the run tallied them); INVALID_ARGUMENT naming `name`, the
// key (and the result's position) when something is missing or malformed, the byte offset of
// invalid JSON, or nesting deeper than io::kMaxJsonDepth. Never throws.
StatusOr<Report> ReportFromJson(std::string_view text, std::string_view name = "JSON report");

// Reads the JSON report at `path` without its results (report.results stays empty), whatever
// their number: memory does not grow with them. The file is opened by io::OpenInputFile's rules
// (io::kConformanceReportFile: a FIFO, device or directory is refused at once). Errors name the
// file and the key.
StatusOr<Report> ReadReportHeader(const std::string& path);

// Reads the results of a JSON report one at a time, in file order, without holding the report in
// memory.
class ResultReader {
 public:
  ResultReader() = default;
  ~ResultReader();
  ResultReader(const ResultReader&) = delete;
  ResultReader& operator=(const ResultReader&) = delete;
  // Opens `path` (as ReadReportHeader does) and finds its top-level "results" array; the error
  // names the file.
  Status Open(const std::string& path);
  // The next result, or nullopt after the last. INVALID_ARGUMENT naming the file and the
  // result's position when it is malformed, longer than 16 MiB, nested deeper than
  // io::kMaxJsonDepth, or the file ends early.
  StatusOr<std::optional<Result>> Next();

 private:
  int Get();
  std::string path_;
  std::FILE* file_ = nullptr;
  std::int64_t index_ = 0;
  bool done_ = false;
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_READER_H_
