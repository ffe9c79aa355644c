#include "mm/engine/io/paths.h"

#include <string>
#include <system_error>

namespace mm::io {
namespace fs = std::filesystem;
namespace {

// Whether `path` is `root` or under it; both lexically normal.
bool Under(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    // A trailing separator of the root is an empty last element.
    if (r->empty() && std::next(r) == root.end()) break;
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

}  // namespace

fs::path ReportedPath(const fs::path& path, const fs::path& tree) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec || !path.is_absolute()) return path;
  const fs::path normal = path.lexically_normal();
  const bool ours = !tree.empty() && tree.is_absolute() && Under(normal, tree.lexically_normal());
  if (!Under(normal, cwd) && !ours) return path;
  const fs::path relative = normal.lexically_relative(cwd);
  return relative.empty() ? path : relative;
}

RootDir::RootDir(const fs::path& root) : given_(root) {
  std::error_code ec;
  resolved_ = fs::canonical(root, ec);
  if (ec) resolved_ = fs::absolute(root, ec).lexically_normal();
}

Status RootDir::Check(const fs::path& path, std::string_view what) const {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(path, ec);
  if (ec || Under(resolved.lexically_normal(), resolved_)) return OkStatus();
  return InvalidArgumentError("'" + path.string() + "' leads outside " + std::string(what) + " '" +
                              given_.string() + "' through a symbolic link (to '" +
                              resolved.string() + "'); links may only point inside it");
}

}  // namespace mm::io
