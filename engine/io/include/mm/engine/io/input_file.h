// One rule for every file mm reads: a regular file only (a FIFO, device, directory or socket is
// refused at once, naming the option and the file), no larger than a cap stated per kind of file,
// opened so that nothing blocks (O_NONBLOCK: a FIFO's open returns at once).
#ifndef MM_ENGINE_IO_INPUT_FILE_H_
#define MM_ENGINE_IO_INPUT_FILE_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "mm/engine/status.h"

namespace mm::io {

// What a file is read as: the option or role that names it in messages ("--expectations",
// "outputs manifest") and the largest size accepted.
struct InputKind {
  std::string_view name;
  std::uint64_t max_bytes = 0;
};

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// The caps, one per kind of file mm reads. Each is far above any real file of its kind and far
// below what would exhaust memory when the file is read whole (or, for reports, streamed).
// mm-conformance/mm-fuzz --expectations (and auto's): a list of known failures.
inline constexpr InputKind kExpectationsFile{"--expectations", 16 * kMiB};
// mm_outputs.json of an --outputs tree: one record per data set a runtime wrote no output for.
inline constexpr InputKind kOutputsManifestFile{"outputs manifest", 256 * kMiB};
// auto's calibration table (MM_AUTO_TABLE), and mm-bench's partial tables: at most
// kMaxAutoTableCells (4096) cells of well under 2 KiB each.
inline constexpr InputKind kCalibrationTableFile{"calibration table", 8 * kMiB};
// A JSON report read back by --resume or `mm-conformance merge`: streamed result by result, so
// only a bound against a file that never ends.
inline constexpr InputKind kConformanceReportFile{"JSON report", 256 * kGiB};
// An mm-fuzz --json report read back by `mm-fuzz merge` (parsed whole).
inline constexpr InputKind kFuzzReportFile{"mm-fuzz report", 2 * kGiB};
// model.onnx and the input_K.pb / output_K.pb of a node test (protobuf itself stops at 2 GiB).
inline constexpr InputKind kOnnxFile{"ONNX file", 1 * kGiB};

// An open regular file (read-only, close-on-exec), closed when destroyed.
class InputFile {
 public:
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  int fd() const { return fd_; }
  // The size fstat gave when the file was opened (0 for /proc-like files that do not know it).
  std::uint64_t size() const { return size_; }
  // "<kind> '<path>'", the way every message about the file starts.
  const std::string& name() const { return name_; }
  std::uint64_t max_bytes() const { return max_bytes_; }

  // Reads the rest of the file whole; RESOURCE_EXHAUSTED when it holds more than max_bytes()
  // (reading stops at max_bytes() + 1: a file that grows, or reports size 0, is still bounded);
  // DATA_LOSS on a read error.
  StatusOr<std::string> ReadAll();

  // Hands the descriptor to a stdio stream (nullptr with errno set on failure; the descriptor is
  // then closed). The InputFile is empty afterwards.
  std::FILE* ReleaseToStdio();

 private:
  friend StatusOr<InputFile> OpenInputFile(const std::filesystem::path&, const InputKind&);
  InputFile(int fd, std::uint64_t size, std::string name, std::uint64_t max_bytes)
      : fd_(fd), size_(size), name_(std::move(name)), max_bytes_(max_bytes) {}

  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string name_;
  std::uint64_t max_bytes_ = 0;
};

// "<kind> '<path>'": how messages name a file.
std::string InputName(const std::filesystem::path& path, const InputKind& kind);

// Opens `path` as `kind` with O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY (so a FIFO never
// blocks) and checks it with fstat. NOT_FOUND when it does not exist; INVALID_ARGUMENT when it is
// not a regular file, saying what it is (a FIFO, a character device, a block device, a directory,
// a socket); RESOURCE_EXHAUSTED when it is larger than kind.max_bytes; DATA_LOSS when it cannot be
// opened otherwise. Every message starts with InputName(path, kind).
StatusOr<InputFile> OpenInputFile(const std::filesystem::path& path, const InputKind& kind);

// OpenInputFile, then ReadAll: the whole file as bytes, under the same rules.
StatusOr<std::string> ReadInputFile(const std::filesystem::path& path, const InputKind& kind);

}  // namespace mm::io

#endif  // MM_ENGINE_IO_INPUT_FILE_H_
