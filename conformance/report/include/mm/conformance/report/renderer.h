// What every report format written as results arrive is made of: the renderer interface
// ReportFiles drives, and the temporary files (spools) that keep rendered results out of memory.
#ifndef MM_CONFORMANCE_REPORT_RENDERER_H_
#define MM_CONFORMANCE_REPORT_RENDERER_H_

#include <cstddef>
#include <cstdio>
#include <ostream>
#include <string_view>

#include "mm/conformance/report/report.h"
#include "mm/conformance/report/report_header.h"

namespace mm::conformance {

// One report format, rendered as results arrive: Add each result in run order, then Finish.
class ReportRenderer {
 public:
  virtual ~ReportRenderer() = default;
  // False when a temporary file it needs could not be created.
  virtual bool ok() const = 0;
  virtual void Add(const Result& r) = 0;
  // Writes the whole report with `header` (MakeReportHeader's, made once for every format) to
  // `out`.
  virtual void Finish(const ReportHeader& header, std::ostream& out) = 0;
};

// A temporary file holding rendered parts of a report until Finish puts them in place.
class Spool {
 public:
  // Buffered in 256 KiB: a report writes a few hundred bytes per result.
  Spool() : file_(std::tmpfile()) {
    if (file_ != nullptr) std::setvbuf(file_, nullptr, _IOFBF, 1 << 18);
  }
  ~Spool() {
    if (file_ != nullptr) std::fclose(file_);
  }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  bool ok() const { return file_ != nullptr && !failed_; }
  bool empty() const { return bytes_ == 0; }
  void Write(std::string_view text) {
    if (file_ == nullptr) return;
    failed_ |= std::fwrite(text.data(), 1, text.size(), file_) != text.size();
    bytes_ += text.size();
  }
  // Appends everything written so far to `out`.
  void CopyTo(std::ostream& out) {
    if (file_ == nullptr) return;
    std::fflush(file_);
    std::rewind(file_);
    char buffer[1 << 16];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) out.write(buffer, n);
    std::fseek(file_, 0, SEEK_END);
  }

 private:
  std::FILE* file_;
  bool failed_ = false;
  std::size_t bytes_ = 0;
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_RENDERER_H_
