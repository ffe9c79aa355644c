// Whole files read and written by tests.
#ifndef MM_ENGINE_TESTING_FILES_H_
#define MM_ENGINE_TESTING_FILES_H_

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace mm::testing {

// The bytes of the file at `path`; empty when it cannot be read (the test's assertions on the
// content say what was expected).
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces the file at `path` with `text`, byte for byte.
inline void WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace mm::testing

#endif  // MM_ENGINE_TESTING_FILES_H_
