#include "mm/conformance/report/report_paths.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "mm/engine/io/output_file.h"

namespace mm::conformance {

namespace fs = std::filesystem;

bool SameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec_a, ec_b;
  if (fs::exists(a, ec_a) && fs::exists(b, ec_b)) {
    const bool same = fs::equivalent(a, b, ec_a);
    return !ec_a && same;
  }
  // One or both do not exist (yet): compare where they would be created.
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec_a), ec_a);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec_b), ec_b);
  return !ec_a && !ec_b && ca == cb;
}

Status CheckDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [option_a, a] = outputs[i];
      const auto& [option_b, b] = outputs[j];
      if (a.empty() || b.empty() || !SameFile(a, b)) continue;
      return InvalidArgumentError(option_a + " and " + option_b + " name the same file ('" + a +
                                  "', '" + b + "'): each report needs its own");
    }
  }
  return OkStatus();
}

namespace {

std::string Named(const std::string& option, const std::string& path) {
  return option + " '" + path + "'";
}

// OK when a file can be created in the directory of `path` (one is, and removed at once: the
// only test that holds for root, read-only file systems and ACLs alike).
Status CheckDirectoryTakesFiles(const std::string& option, const fs::path& path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string probe = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = mkostemp(probe.data(), O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return InvalidArgumentError(Named(option, path.string()) +
                                " cannot be written: cannot create a file in '" + dir.string() +
                                "': " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return OkStatus();
}

// OK when the report at `path` can be written: in place (io::WrittenInPlace) when it is open for
// writing, else atomically in its directory.
Status CheckWritable(const std::string& option, const fs::path& path) {
  if (path.filename().empty()) {
    return InvalidArgumentError(Named(option, path.string()) + " is not a file name");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return InvalidArgumentError(Named(option, path.string()) +
                                  " cannot be written: " + std::strerror(errno));
    }
    return CheckDirectoryTakesFiles(option, path);
  }
  if (S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(Named(option, path.string()) + " is a directory, not a file");
  }
  if (S_ISSOCK(st.st_mode)) {
    return InvalidArgumentError(Named(option, path.string()) + " is a socket, not a file");
  }
  if (io::WrittenInPlace(path)) {
    if (::access(path.c_str(), W_OK) != 0) {
      return InvalidArgumentError(Named(option, path.string()) +
                                  " cannot be written: " + std::strerror(errno));
    }
    return OkStatus();
  }
  return CheckDirectoryTakesFiles(option, path);
}

struct FileId {
  dev_t device;
  ino_t inode;
  bool operator==(const FileId& o) const { return device == o.device && inode == o.inode; }
};

std::optional<FileId> IdOf(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The report of `outputs` that is the file `file` (of input `in`), unless `in` allows it.
Status CheckNotAnInput(const std::vector<std::pair<std::string, std::string>>& outputs,
                       const std::vector<std::optional<FileId>>& ids, const RunInput& in,
                       const fs::path& file) {
  const std::optional<FileId> id = IdOf(file);
  if (!id) return OkStatus();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!ids[i] || !(*ids[i] == *id) || outputs[i].first == in.may_be) continue;
    const std::string what = file == fs::path(in.path)
                                 ? in.what + " '" + in.path + "'"
                                 : "'" + file.string() + "', a file of " + in.what;
    return InvalidArgumentError(Named(outputs[i].first, outputs[i].second) + " is " + what +
                                ", which this run reads: a report must not overwrite its input");
  }
  return OkStatus();
}

}  // namespace

Status CheckReportPaths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<RunInput>& inputs) {
  MM_RETURN_IF_ERROR(CheckDistinctOutputs(outputs));
  std::vector<std::optional<FileId>> ids;
  bool any_exists = false;
  for (const auto& [option, path] : outputs) {
    if (!path.empty()) MM_RETURN_IF_ERROR(CheckWritable(option, path));
    ids.push_back(path.empty() ? std::nullopt : IdOf(path));
    any_exists = any_exists || ids.back().has_value();
  }
  // Only a file that exists can be an input: nothing to look through otherwise.
  if (!any_exists) return OkStatus();
  for (const RunInput& in : inputs) {
    std::error_code ec;
    if (in.path.empty()) continue;
    if (!fs::is_directory(in.path, ec)) {
      MM_RETURN_IF_ERROR(CheckNotAnInput(outputs, ids, in, in.path));
      continue;
    }
    // A case (DIR/test_data_set_N/input_0.pb) or an outputs tree (DIR/CASE/test_data_set_N/...).
    auto it = fs::recursive_directory_iterator(in.path,
                                               fs::directory_options::follow_directory_symlink |
                                                   fs::directory_options::skip_permission_denied,
                                               ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() >= 2) it.disable_recursion_pending();
      if (it->is_regular_file(ec)) {
        MM_RETURN_IF_ERROR(CheckNotAnInput(outputs, ids, in, it->path()));
      }
    }
  }
  return OkStatus();
}

}  // namespace mm::conformance
