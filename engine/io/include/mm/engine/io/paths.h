// Walking a tree the user named (an --outputs tree, a data root) without leaving it: a symbolic
// link inside it may point anywhere, so each one is resolved and checked before it is followed.
#ifndef MM_ENGINE_IO_PATHS_H_
#define MM_ENGINE_IO_PATHS_H_

#include <filesystem>
#include <string_view>

#include "mm/engine/status.h"

namespace mm::io {

// A tree's root, resolved once (symbolic links and "..", as the kernel would), for InsideRoot.
class RootDir {
 public:
  // `root` as given (for messages) and resolved; when it cannot be resolved, every path is
  // checked lexically against `root` as given.
  explicit RootDir(const std::filesystem::path& root);

  const std::filesystem::path& given() const { return given_; }
  const std::filesystem::path& resolved() const { return resolved_; }

  // OK when `path` (at or under the root, as a walk reaches it) resolves, every link in it
  // followed, to the root or a path under it, or cannot be resolved (then it leads nowhere).
  // Otherwise INVALID_ARGUMENT "'<path>' leads outside <what> '<root>' through a symbolic link
  // (to '<target>'); ...". Resolves the whole path: call it where a link was met, or once per
  // file read.
  Status Check(const std::filesystem::path& path, std::string_view what) const;

 private:
  std::filesystem::path given_;
  std::filesystem::path resolved_;
};

// `path` as reports name it, so that no report carries the absolute path of the machine's checkout
// or working directory: an absolute path at or under the working directory, or under `tree` (mm's
// own files: its source tree), becomes relative to the working directory, lexically ("backends/x"
// or "../../backends/x"), and still names the same file from there; any other path is returned as
// given. Resolves nothing: a symbolic link stays one.
std::filesystem::path ReportedPath(const std::filesystem::path& path,
                                   const std::filesystem::path& tree = {});

}  // namespace mm::io

#endif  // MM_ENGINE_IO_PATHS_H_
