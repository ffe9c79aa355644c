// Reading mm-fuzz --json reports back (mm-fuzz merge): the file by io::ReadInputFile's rules, the
// text checked field by field before anything uses it, so a hostile or broken report is a clear
// error naming the file, the field and what was expected, never a crash.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_REPORT_READER_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_REPORT_READER_H_

#include <string>
#include <string_view>

#include "mm/conformance/fuzz/fuzz_merge.h"
#include "mm/engine/status.h"

namespace mm::fuzz {

// Parses the text of an mm-fuzz --json report (never throws); `name` names it in messages and
// becomes the ShardReport's path. INVALID_ARGUMENT naming `name` and the field for: invalid JSON
// (with its byte offset), nesting deeper than io::kMaxJsonDepth, a "tool" other than mm-fuzz, and
// every field mm-fuzz merge reads that is missing, of the wrong type or out of range: counts and
// limits below 0, a shard index outside 1..count, a per-problem record or finding whose backend
// is not one of the report's backends or whose dtype is not a dtype.
StatusOr<ShardReport> ParseFuzzReport(std::string_view text, std::string_view name);

// Reads the report at `path` (io::kFuzzReportFile: a regular file of at most 2 GiB; a FIFO,
// device or directory refused at once) and parses it with ParseFuzzReport.
StatusOr<ShardReport> ReadFuzzReport(const std::string& path);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_REPORT_READER_H_
