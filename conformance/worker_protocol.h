// The wire protocol between the parent of an isolated run and its workers (worker_pool.h): typed
// frames over a stream socket, their payloads CBOR.
#ifndef MM_CONFORMANCE_WORKER_PROTOCOL_H_
#define MM_CONFORMANCE_WORKER_PROTOCOL_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "conformance/runner.h"

namespace mm::conformance {

// Messages are frames: a 4-byte little-endian payload length, a type byte, and the payload (CBOR).
enum MessageType : char {
  kTask = 'T',    // Parent -> worker: {"case", "data_set", "backend", "reference_missing"}.
  kStage = 'S',   // Worker -> parent: {"stage", "data_set", "backend", "reference_missing",
                  // "about" (a Result)}.
  kResult = 'R',  // Worker -> parent: a Result.
  kDone = 'D',    // Worker -> parent: the task is finished: {"retire"}: and the worker leaves.
  kRetire = 'X',  // Worker -> parent: past the memory limit on the result just sent; it leaves.
};

// Writes all of `bytes` to socket `fd`; false when the peer is gone or on an error.
bool WriteAll(int fd, const std::string& bytes);

// Sends one frame of `type` with `payload`; false as WriteAll.
bool SendFrame(int fd, MessageType type, const nlohmann::json& payload);

// Takes one whole frame off the front of `buffer`, if there is one. Throws nlohmann's exceptions
// on a payload that is not CBOR.
std::optional<std::pair<MessageType, nlohmann::json>> PopFrame(std::string& buffer);

// Blocking read of one frame (worker side). nullopt at end of file or on error.
std::optional<std::pair<MessageType, nlohmann::json>> ReadFrame(int fd, std::string& buffer);

// Where a task starts or a stage is, as a payload's fields {"data_set", "backend",
// "reference_missing"}, and back.
nlohmann::json ProgressJson(const CaseProgress& at);
CaseProgress ProgressFromJson(const nlohmann::json& j);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_WORKER_PROTOCOL_H_
