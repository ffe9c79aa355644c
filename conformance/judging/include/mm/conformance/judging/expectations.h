// Known failures, declared: a JSON file listing, per case and backend pattern, results expected to
// fail (XFAIL) or not to be run at all (SKIP), each with a mandatory reason and link. An expected
// failure that fails is XFAIL (not a failure of the run); one that passes is XPASS and fails the
// run, so the list cannot rot; an entry that matches nothing is reported.
//
//   {"expectations": [
//     {"case": "test_matmul_*", "backend": "onednn", "expect": "XFAIL",
//      "reason": "oneDNN 2.6 rounds bf16 twice", "link": "https://example.org/issue/12"},
//     {"case": "test_big_*", "backend": "*", "expect": "SKIP", "reason": "...", "link": "..."}]}
//
// Patterns are shell globs (fnmatch: *, ?, [...]) over the whole case or backend name. An entry may
// also name "data_set" (a glob too; default every data set of the case) and "unless_cpu_has" (CPU
// features: on a CPU with all of them the entry matches nothing, and the reports say why).
#ifndef MM_CONFORMANCE_JUDGING_EXPECTATIONS_H_
#define MM_CONFORMANCE_JUDGING_EXPECTATIONS_H_

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/status.h"

namespace mm::conformance {

// One entry of an expectations file.
struct Expectation {
  enum class Kind { kXFail, kSkip };
  std::string case_pattern;
  std::string backend_pattern;
  Kind kind = Kind::kXFail;
  std::string reason;  // Never empty.
  std::string link;    // Never empty.
  // How many results it decided in this run (filled by the runner's callers; see CountMatches).
  std::int64_t matched = 0;
  // The data sets it applies to, a glob too ("data_set" in the file, optional; default every data
  // set): for a case whose data sets differ, e.g. a sequence whose later problem alone fails.
  std::string data_set_pattern = "*";
  // "unless_cpu_has" in the file (empty: every CPU), and why the entry does not apply on the CPU
  // the file was read on ("this CPU has avx512bw, ..."; empty where it applies).
  std::vector<std::string> unless_cpu_has{};
  std::string not_here{};

  // `data_set` is empty where none is known (the fuzzer's problems): only "*" matches it. An
  // entry that does not apply here (not_here) matches nothing.
  bool Matches(std::string_view case_name, std::string_view backend,
               std::string_view data_set = {}) const;
};

// "XFAIL" or "SKIP".
std::string_view ExpectationKindName(Expectation::Kind kind);

// The entries of one file, in file order; the first entry matching a result decides it.
struct Expectations {
  std::string source;  // The file's path, for messages.
  std::vector<Expectation> entries;

  // The first entry matching (case, backend, data set), or nullptr.
  const Expectation* Find(std::string_view case_name, std::string_view backend,
                          std::string_view data_set = {}) const;
};

// Parses the JSON text of an expectations file (never throws). INVALID_ARGUMENT naming `source`
// and the entry (index and case pattern) for: unparsable JSON (with its byte offset), nesting
// deeper than io::kMaxJsonDepth, no "expectations" array, a missing or empty
// "case", "backend", "reason" or "link", an "expect" other than XFAIL or SKIP, unknown keys (a
// typo must not silently widen or void an entry), a pattern holding a control character (a NUL
// would cut "*\u0000name" down to "*"; named by its code, io::CheckPatternText). Entries are judged
// against `cpu_features` (default: the running CPU's, RunningCpuFeatures()).
StatusOr<Expectations> ParseExpectations(std::string_view text, std::string_view source,
                                         const std::set<std::string>* cpu_features = nullptr);

// Reads and parses the file at `path` by io::ReadInputFile's rules (io::kExpectationsFile: a
// regular file within that kind's size cap; NOT_FOUND when missing, INVALID_ARGUMENT for a FIFO,
// device or directory, RESOURCE_EXHAUSTED when larger), errors naming --expectations and the file.
StatusOr<Expectations> LoadExpectations(const std::filesystem::path& path);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_EXPECTATIONS_H_
