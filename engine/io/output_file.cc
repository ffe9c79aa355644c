#include "mm/engine/io/output_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <fstream>
#include <string>

namespace mm::io {
namespace {

namespace fs = std::filesystem;

// The process's umask, read without changing it (umask(2) would, for every thread at once).
mode_t CurrentUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), 0, 8));
  }
  return 022;
}

std::string Quoted(const fs::path& path) { return "'" + path.string() + "'"; }

// Streams `write` into the open descriptor `fd`, which it closes; false when anything failed.
bool WriteAndClose(int fd, const std::function<void(std::ostream&)>& write) {
  // The filebuf owns fd and closes it.
  __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary);
  std::ostream out(&buffer);
  write(out);
  out.flush();
  const bool ok = static_cast<bool>(out);
  return buffer.close() != nullptr && ok;
}

// Writes into the existing file at `path` itself, never replacing it: a device, a FIFO, or a
// process's descriptor (/dev/stdout). NOT_FOUND when what `path` names turns out to be a regular
// file reached otherwise (replaced since it was looked at): the caller writes it atomically.
Status WriteInPlace(const fs::path& path, bool descriptor,
                    const std::function<void(std::ostream&)>& write) {
  // No O_TRUNC: a device or FIFO has nothing to truncate; a descriptor's file is appended to.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    return DataLossError("cannot open " + Quoted(path) + " for writing: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (S_ISREG(st.st_mode) && !descriptor)) {
    ::close(fd);
    return NotFoundError("replaced");
  }
  // The file behind a descriptor (stdout redirected to a file) holds what was written to it
  // before: append, as the descriptor itself does.
  if (S_ISREG(st.st_mode)) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_APPEND);
  if (!WriteAndClose(fd, write)) {
    return DataLossError("cannot write " + Quoted(path) + ": " + std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace

bool IsProcessDescriptor(const fs::path& path) {
  fs::path p = path;
  // As many links as the kernel follows (MAXSYMLINKS).
  for (int hop = 0; hop < 40; ++hop) {
    std::error_code ec;
    const fs::path parent = fs::canonical(p.has_parent_path() ? p.parent_path() : ".", ec);
    if (ec) return false;
    auto part = parent.begin();
    if (part != parent.end() && ++part != parent.end() && *part == "proc") return true;
    if (!fs::is_symlink(p, ec)) return false;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) return false;
    p = target.is_absolute() ? target : parent / target;
  }
  return false;
}

bool WrittenInPlace(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    return true;
  }
  return IsProcessDescriptor(path);
}

Status WriteFileAtomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  if (path.filename().empty()) return InvalidArgumentError(Quoted(path) + " is not a file name");
  if (WrittenInPlace(path)) {
    Status in_place = WriteInPlace(path, IsProcessDescriptor(path), write);
    if (in_place.code() != StatusCode::kNotFound) return in_place;
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string name = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = mkostemp(name.data(), O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return NotFoundError("cannot open " + Quoted(path) + " for writing: cannot create a file in " +
                         Quoted(dir) + ": " + std::strerror(errno));
  }
  // The mode a file created by open(2) would get; mkostemp gives 0600.
  static const mode_t mode = 0666 & ~CurrentUmask();
  bool ok = ::fchmod(fd, mode) == 0;
  ok = WriteAndClose(fd, write) && ok;
  std::error_code ec;
  if (ok) fs::rename(name, path, ec);
  if (!ok || ec) {
    const std::string why = ec ? ec.message() : std::string(std::strerror(errno));
    fs::remove(name, ec);
    return DataLossError("cannot write " + Quoted(path) + ": " + why);
  }
  return OkStatus();
}

Status WriteFileAtomically(const fs::path& path, std::string_view content) {
  return WriteFileAtomically(path, [content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

}  // namespace mm::io
