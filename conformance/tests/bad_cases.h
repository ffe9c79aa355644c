// Every kind of bad input the loader must refuse, as a table of case writers: each writes a valid
// float MatMul case, then breaks exactly one thing. Shared by the loader tests (which check the
// message) and the CLI tests (which check the exit code and that nothing passes or crashes).
#ifndef MM_CONFORMANCE_TESTS_BAD_CASES_H_
#define MM_CONFORMANCE_TESTS_BAD_CASES_H_

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace mm::conformance::testing {

struct BadCase {
  std::string why;
  // Writes the broken case as directory `name` under `root`.
  std::function<void(const std::filesystem::path& root, const std::string& name)> write;
  std::string expected_message;  // A substring of the error.
  std::string bad_file;          // The file the message must name ("" when it is the directory).
};

// Prints the row's `why` in test output.
inline void PrintTo(const BadCase& row, std::ostream* os) { *os << row.why; }

// The table: one row per kind of bad input the loader must refuse (docs/conformance.md).
const std::vector<BadCase>& BadCases();

}  // namespace mm::conformance::testing

#endif  // MM_CONFORMANCE_TESTS_BAD_CASES_H_
