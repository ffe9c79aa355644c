#include "conformance/official/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path.string() + ": cannot open");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return InternalError("OpenSSL: cannot start a SHA-256 digest");
  }
  std::array<char, 1 << 16> buffer;
  while (in) {
    in.read(buffer.data(), buffer.size());
    if (in.gcount() > 0 &&
        EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(in.gcount())) != 1) {
      return InternalError("OpenSSL: SHA-256 update failed");
    }
  }
  if (in.bad()) return DataLossError(path.string() + ": read error");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) != 1) {
    return InternalError("OpenSSL: SHA-256 final failed");
  }
  return ToHex(digest.data(), size);
}

}  // namespace mm::conformance
