// Declared deviations of backends: a JSON file listing, per case and backend pattern, results
// expected to fail (XFAIL) or not to be run at all (SKIP), each with a mandatory reason and link.
// This is the file mm's tools take as --expectations (or MM_EXPECTATIONS); the conformance harness
// applies it to results (conformance/expectations.h) and auto leaves out what it declares
// (backends/auto/auto_deviations.h).
//
//   {"expectations": [
//     {"case": "test_matmul_*", "backend": "onednn", "expect": "XFAIL",
//      "reason": "oneDNN 2.6 rounds bf16 twice", "link": "https://example.org/issue/12"},
//     {"case": "test_big_*", "backend": "*", "expect": "SKIP", "reason": "...", "link": "..."}]}
//
// Patterns are shell globs (fnmatch: *, ?, [...]) over the whole case or backend name. An entry may
// also name "data_set" (a glob too; default every data set of the case).
#ifndef MM_BACKENDS_DEVIATIONS_DEVIATIONS_FILE_H_
#define MM_BACKENDS_DEVIATIONS_DEVIATIONS_FILE_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/status.h"

namespace mm {

// One entry of a deviations file.
struct DeclaredDeviation {
  enum class Kind { kXFail, kSkip };
  std::string case_pattern;
  std::string backend_pattern;
  std::string data_set_pattern = "*";  // "data_set" in the file, optional.
  Kind kind = Kind::kXFail;
  std::string reason;  // Never empty.
  std::string link;    // Never empty.
};

// "XFAIL" or "SKIP".
std::string_view DeclaredDeviationKindName(DeclaredDeviation::Kind kind);

// The entries of one file, in file order.
struct DeviationsFile {
  std::string source;  // The file's path, for messages.
  std::vector<DeclaredDeviation> entries;
};

// Parses the JSON text of a deviations file (never throws). INVALID_ARGUMENT naming `source` and
// the entry (index and case pattern) for: unparsable JSON (with its byte offset), nesting deeper
// than io::kMaxJsonDepth, no "expectations" array, a missing or empty "case", "backend", "reason"
// or "link", an "expect" other than XFAIL or SKIP, unknown keys (a typo must not silently widen or
// void an entry), a "case", "backend" or "data_set" pattern holding a control character (C0 with
// NUL, DEL, C1; named by its code, io::CheckPatternText).
StatusOr<DeviationsFile> ParseDeviationsFile(std::string_view text, std::string_view source);

// Reads and parses the file at `path` by io::ReadInputFile's rules (io::kExpectationsFile: a
// regular file within that kind's size cap; NOT_FOUND when missing, INVALID_ARGUMENT for a FIFO,
// device or directory, RESOURCE_EXHAUSTED when larger), errors naming --expectations and the file.
StatusOr<DeviationsFile> LoadDeviationsFile(const std::filesystem::path& path);

}  // namespace mm

#endif  // MM_BACKENDS_DEVIATIONS_DEVIATIONS_FILE_H_
