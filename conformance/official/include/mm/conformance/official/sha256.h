// SHA-256 digests (OpenSSL's libcrypto), as lowercase hex.
#ifndef MM_CONFORMANCE_OFFICIAL_SHA256_H_
#define MM_CONFORMANCE_OFFICIAL_SHA256_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "mm/engine/status.h"

namespace mm::conformance {

// The SHA-256 of `bytes`, 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);

// The SHA-256 of a file's contents, read by io::OpenInputFile's rules (io::kOnnxFile: a regular
// file of at most 1 GiB; a FIFO or device refused at once); errors name the file.
StatusOr<std::string> Sha256HexOfFile(const std::filesystem::path& path);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_OFFICIAL_SHA256_H_
