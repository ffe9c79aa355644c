#include "mm/conformance/official/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "mm/engine/io/input_file.h"

namespace mm::conformance {
namespace {

std::string ToHex(const unsigned char* digest, unsigned int size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (unsigned int i = 0; i < size; ++i) {
    hex += kDigits[digest[i] >> 4];
    hex += kDigits[digest[i] & 0xF];
  }
  return hex;
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  // EVP_Digest only fails on allocation failure inside OpenSSL; an empty digest then fails every
  // comparison, which is the safe outcome for a tripwire.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    return {};
  }
  return ToHex(digest.data(), size);
}

StatusOr<std::string> Sha256HexOfFile(const std::filesystem::path& path) {
  MM_ASSIGN_OR_RETURN(io::InputFile file, io::OpenInputFile(path, io::kOnnxFile));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return InternalError("OpenSSL: cannot start a SHA-256 digest");
  }
  std::array<char, 1 << 16> buffer;
  std::uint64_t total = 0;
  while (true) {
    const ssize_t got = ::read(file.fd(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return DataLossError(file.name() + ": read error: " + std::strerror(errno));
    if (got == 0) break;
    // A file that grows while it is read is still bounded.
    total += static_cast<std::uint64_t>(got);
    if (total > file.max_bytes()) {
      return ResourceExhaustedError(file.name() + ": larger than the " +
                                    std::to_string(file.max_bytes()) + "-byte limit for this file");
    }
    if (EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(got)) != 1) {
      return InternalError("OpenSSL: SHA-256 update failed");
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) != 1) {
    return InternalError("OpenSSL: SHA-256 final failed");
  }
  return ToHex(digest.data(), size);
}

}  // namespace mm::conformance
