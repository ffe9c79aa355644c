// Writing the files mm's tools produce (reports, manifests, node tests, calibration tables) so that
// a reader sees the old file or the whole new one, and no link planted beside them redirects the
// write: the one writer of every such file.
#ifndef MM_ENGINE_IO_OUTPUT_FILE_H_
#define MM_ENGINE_IO_OUTPUT_FILE_H_

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

#include "mm/engine/status.h"

namespace mm::io {

// Writes the file at `path` whole or not at all: `write` streams the content into a new file that
// WriteFileAtomically creates in PATH's directory with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC under an
// unpredictable name (".NAME.XXXXXX", mkostemp), so an existing file or link of any name is never
// opened; the file is given the mode a new file gets (0666 less the umask) and renamed over PATH
// (a link at PATH to a regular file is replaced, not followed). No fsync: this guards against a
// killed process, not a lost machine. On error the temporary file is removed, PATH is unchanged
// and the error names PATH. A process killed while writing may leave the temporary file behind,
// never a partial PATH.
// Except where WrittenInPlace(PATH): then PATH is opened for writing (following links) and
// written in place, never renamed over: `--json /dev/null` as root leaves the device a device,
// a FIFO's reader gets the content, and a descriptor's regular file is appended to.
Status WriteFileAtomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);

// Whether `path`, followed through its links, is a process's descriptor (/dev/stdout,
// /dev/fd/N, /proc/self/fd/N: a link leading into /proc).
bool IsProcessDescriptor(const std::filesystem::path& path);

// Whether WriteFileAtomically writes `path` in place: it names an existing file (links followed)
// that is neither a regular file nor a directory (a character or block device, a FIFO, a socket),
// or a process's descriptor (IsProcessDescriptor).
bool WrittenInPlace(const std::filesystem::path& path);

// The same with the whole content given.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content);

}  // namespace mm::io

#endif  // MM_ENGINE_IO_OUTPUT_FILE_H_
