// Writing the files mm's tools produce (reports, manifests, calibration tables) so that a reader
// sees the old file or the whole new one, and no link planted beside them redirects the write.
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
// (a link at PATH is replaced, not followed). No fsync: this guards against a killed process, not
// a lost machine. On error the temporary file is removed, PATH is unchanged and the error names
// PATH. A process killed while writing may leave the temporary file behind, never a partial PATH.
Status WriteFileAtomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);

// The same with the whole content given.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content);

}  // namespace mm::io

#endif  // MM_ENGINE_IO_OUTPUT_FILE_H_
