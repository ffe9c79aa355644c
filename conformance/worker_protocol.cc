#include "conformance/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mm::conformance {

using nlohmann::json;

bool WriteAll(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    // MSG_NOSIGNAL: a dead peer is an error here, not a SIGPIPE that kills the process.
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool SendFrame(int fd, MessageType type, const json& payload) {
  const std::vector<std::uint8_t> body = json::to_cbor(payload);
  std::string frame(5 + body.size(), '\0');
  const auto size = static_cast<std::uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  frame[4] = type;
  std::memcpy(frame.data() + 5, body.data(), body.size());
  return WriteAll(fd, frame);
}

std::optional<std::pair<MessageType, json>> PopFrame(std::string& buffer) {
  if (buffer.size() < 5) return std::nullopt;
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size |= std::uint32_t{static_cast<unsigned char>(buffer[i])} << (8 * i);
  if (buffer.size() < 5 + std::size_t{size}) return std::nullopt;
  const auto type = static_cast<MessageType>(buffer[4]);
  json payload = json::from_cbor(buffer.begin() + 5, buffer.begin() + 5 + size, true, false);
  buffer.erase(0, 5 + std::size_t{size});
  return std::pair{type, std::move(payload)};
}

std::optional<std::pair<MessageType, json>> ReadFrame(int fd, std::string& buffer) {
  char chunk[4096];
  while (true) {
    if (auto frame = PopFrame(buffer)) return frame;
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

json ProgressJson(const CaseProgress& at) {
  return {{"data_set", at.data_set},
          {"backend", at.backend},
          {"reference_missing", at.reference_missing}};
}

CaseProgress ProgressFromJson(const json& j) {
  return {j.at("data_set").get<std::size_t>(), j.at("backend").get<std::size_t>(),
          j.at("reference_missing").get<std::string>()};
}

}  // namespace mm::conformance
