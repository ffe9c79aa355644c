#include "mm/engine/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace mm::io {
namespace {

// What a file that is not a regular file is, for the message that refuses it.
std::string_view WhatItIs(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string TooLarge(const std::string& name, std::uint64_t max_bytes) {
  return name + ": larger than the " + std::to_string(max_bytes) + "-byte limit for this file";
}

}  // namespace

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      name_(std::move(other.name_)),
      max_bytes_(other.max_bytes_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    name_ = std::move(other.name_);
    max_bytes_ = other.max_bytes_;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::string> InputFile::ReadAll() {
  // The size is a hint only: a file may grow, or report 0 (/proc); max_bytes + 1 is the bound.
  // One byte more than the size sees the end (or growth) without a second buffer.
  std::string bytes(static_cast<std::size_t>(std::min(size_, max_bytes_)) + 1, '\0');
  std::size_t done = 0;
  while (true) {
    if (done == bytes.size()) {
      const std::uint64_t grown = std::max<std::uint64_t>(2 * bytes.size(), 1 << 16);
      bytes.resize(static_cast<std::size_t>(std::min(grown, max_bytes_ + 1)));
    }
    const ssize_t got = ::read(fd_, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return DataLossError(name_ + ": read error after " + std::to_string(done) +
                           " bytes: " + std::strerror(errno));
    }
    if (got == 0) {
      bytes.resize(done);
      return bytes;
    }
    done += static_cast<std::size_t>(got);
    if (done > max_bytes_) return ResourceExhaustedError(TooLarge(name_, max_bytes_));
  }
}

std::FILE* InputFile::ReleaseToStdio() {
  const int fd = std::exchange(fd_, -1);
  std::FILE* file = ::fdopen(fd, "rb");
  if (file == nullptr) ::close(fd);
  return file;
}

std::string InputName(const std::filesystem::path& path, const InputKind& kind) {
  return std::string(kind.name) + " '" + path.string() + "'";
}

StatusOr<InputFile> OpenInputFile(const std::filesystem::path& path, const InputKind& kind) {
  std::string name = InputName(path, kind);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) return NotFoundError(name + ": no such file");
    // open(O_RDONLY) of a socket fails with ENXIO; say what it is, as for the others.
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
      return InvalidArgumentError(name + ": " + std::string(WhatItIs(info.st_mode)) +
                                  ", not a regular file");
    }
    return DataLossError(name + ": cannot open: " + std::strerror(error));
  }
  InputFile file(fd, 0, std::move(name), kind.max_bytes);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return DataLossError(file.name() + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    return InvalidArgumentError(file.name() + ": " + std::string(WhatItIs(info.st_mode)) +
                                ", not a regular file");
  }
  file.size_ = static_cast<std::uint64_t>(info.st_size);
  if (file.size_ > kind.max_bytes) {
    return ResourceExhaustedError(file.name() + ": " + std::to_string(file.size_) +
                                  " bytes, larger than the " + std::to_string(kind.max_bytes) +
                                  "-byte limit for this file");
  }
  // Reads of a regular file never return EAGAIN, but a stdio stream over it must not see
  // O_NONBLOCK either.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

StatusOr<std::string> ReadInputFile(const std::filesystem::path& path, const InputKind& kind) {
  MM_ASSIGN_OR_RETURN(InputFile file, OpenInputFile(path, kind));
  return file.ReadAll();
}

}  // namespace mm::io
