// Declared deviations of backends: a JSON file listing, per case and backend pattern, results
// expected to fail (XFAIL) or not to be run at all (SKIP), each with a mandatory reason and link.
// This is the file mm's tools take as --expectations (or MM_EXPECTATIONS); the conformance harness
// applies it to results (conformance/judging/expectations.h) and auto leaves out what it declares
// (backends/auto/auto_deviations.h).
//
//   {"expectations": [
//     {"case": "test_matmul_*", "backend": "onednn", "expect": "XFAIL",
//      "reason": "oneDNN 2.6 rounds bf16 twice", "link": "https://example.org/issue/12"},
//     {"case": "test_big_*", "backend": "*", "expect": "SKIP", "reason": "...", "link": "..."}]}
//
// Patterns are shell globs (fnmatch: *, ?, [...]) over the whole case or backend name. An entry may
// also name "data_set" (a glob too; default every data set of the case), and "unless_cpu_has": CPU
// features as /proc/cpuinfo's flags name them (["avx512bw", "avx512vl"]), for a deviation of a
// code path a library leaves on a CPU with all of them: the entry then does not apply there, and
// the reports say so. An item may name alternatives, "avx512_vnni|avx_vnni" (any one of them
// counts), for a library that leaves the path on a CPU with either.
#ifndef MM_BACKENDS_DEVIATIONS_DEVIATIONS_FILE_H_
#define MM_BACKENDS_DEVIATIONS_DEVIATIONS_FILE_H_

#include <filesystem>
#include <set>
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
  // The entry applies only on a CPU lacking one of these features; empty: on every CPU. An item
  // "a|b" is had when the CPU has a or b.
  std::vector<std::string> unless_cpu_has{};

  // Empty where the entry applies on a CPU with `cpu_features`; else why not ("this CPU has
  // avx512bw, avx512vl", naming the alternative of an item it has).
  std::string NotApplicableOn(const std::set<std::string>& cpu_features) const;
};

// The running CPU's features, as /proc/cpuinfo's first "flags" line names them (read once; empty
// where it cannot be read, so that every conditioned entry applies).
const std::set<std::string>& RunningCpuFeatures();

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
// or "link", an "expect" other than XFAIL or SKIP, an "unless_cpu_has" that is not a non-empty
// array of non-empty strings (nor of alternatives "a|b" each non-empty), unknown keys (a typo must
// not silently widen or void an entry), a "case", "backend" or "data_set" pattern holding a control
// character (C0 with NUL, DEL, C1; named by its code, io::CheckPatternText).
StatusOr<DeviationsFile> ParseDeviationsFile(std::string_view text, std::string_view source);

// Reads and parses the file at `path` by io::ReadInputFile's rules (io::kExpectationsFile: a
// regular file within that kind's size cap; NOT_FOUND when missing, INVALID_ARGUMENT for a FIFO,
// device or directory, RESOURCE_EXHAUSTED when larger), errors naming --expectations and the file.
StatusOr<DeviationsFile> LoadDeviationsFile(const std::filesystem::path& path);

}  // namespace mm

#endif  // MM_BACKENDS_DEVIATIONS_DEVIATIONS_FILE_H_
