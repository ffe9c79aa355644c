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

}  // namespace

Status WriteFileAtomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  if (path.filename().empty()) return InvalidArgumentError(Quoted(path) + " is not a file name");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string name = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = mkostemp(name.data(), O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return NotFoundError("cannot open " + Quoted(path) + " for writing: cannot create a file in " +
                         Quoted(dir) + ": " + std::strerror(errno));
  }
  bool ok = true;
  {
    // The filebuf owns fd and closes it.
    __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    // The mode a file created by open(2) would get; mkostemp gives 0600.
    static const mode_t mode = 0666 & ~CurrentUmask();
    ok = static_cast<bool>(out) && ::fchmod(fd, mode) == 0;
    ok = buffer.close() != nullptr && ok;
  }
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
