// A fresh directory for one test, under the system's temporary directory.
#ifndef MM_ENGINE_TESTING_TEMP_DIR_H_
#define MM_ENGINE_TESTING_TEMP_DIR_H_

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <string_view>

namespace mm::testing {

// Creates <temp>/<prefix>_<pid>_<n> (n counts the directories of the process), empty; removes it
// with all it holds at the end, read-only entries included.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "mm_test") {
    static std::atomic<int> counter{0};
    path_ =
        std::filesystem::temp_directory_path() /
        (std::string(prefix) + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    // What a test made read-only (a copy of read-only data, say) must be writable to be removed.
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace mm::testing

#endif  // MM_ENGINE_TESTING_TEMP_DIR_H_
