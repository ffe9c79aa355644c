// The wire protocol between the parent of an isolated run and its workers (worker_pool.h): typed
// frames over a stream socket, their payloads in a compact binary form. The parent decodes one
// frame per result while its workers compute, so the form is chosen to cost little on both ends:
// fixed-width little-endian numbers and length-prefixed strings, in a fixed order, no keys.
#ifndef MM_CONFORMANCE_ISOLATION_WORKER_PROTOCOL_H_
#define MM_CONFORMANCE_ISOLATION_WORKER_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/running/runner.h"

namespace mm::conformance {

// Messages are frames: a 4-byte little-endian payload length, a type byte, and the payload.
enum MessageType : char {
  kTask = 'T',       // Parent -> worker: EncodeTask.
  kStage = 'S',      // Worker -> parent: EncodeStage.
  kResult = 'R',     // Worker -> parent: a Result (EncodeResult).
  kDone = 'D',       // Worker -> parent: the task is finished: one byte, 1 when the worker leaves.
  kRetire = 'X',     // Worker -> parent: past the memory limit on the result just sent; it leaves.
  kDescribe = 'Q',   // Parent -> describing child: the backends to describe (EncodeStrings).
  kDescribed = 'B',  // Describing child -> parent: one backend's RunsOn() (EncodeStrings).
};

// Appends payload parts in the wire form. Numbers are little-endian; a string is its length
// (4 bytes) and its bytes; dims are a count and the values.
class WireWriter {
 public:
  explicit WireWriter(std::string& out) : out_(out) {}
  void U8(std::uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void U64(std::uint64_t value);
  void I64(std::int64_t value) { U64(static_cast<std::uint64_t>(value)); }
  void F64(double value);  // Its bits: NaN payloads and signed zeros survive.
  void Str(std::string_view text);
  void DimsOf(const Dims& dims);

 private:
  std::string& out_;
};

// Reads what WireWriter wrote. Every read checks that the bytes are there: past the end, or on a
// value out of range, it fails (ok() becomes false and stays so) and returns a zero value.
class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  std::uint8_t U8();
  std::uint64_t U64();
  std::int64_t I64() { return static_cast<std::int64_t>(U64()); }
  double F64();
  std::string Str();
  Dims DimsOf();
  // Marks the payload as garbled (a value out of range).
  void Fail() { ok_ = false; }
  bool ok() const { return ok_; }
  bool at_end() const { return in_.empty(); }

 private:
  bool Take(std::size_t n, const char*& bytes);
  std::string_view in_;
  bool ok_ = true;
};

// Every field of `result`, in the order of conformance/results/result_schema.h.
void EncodeResult(const Result& result, WireWriter& out);
// The inverse of EncodeResult: every field reads back equal (NaNs as NaN with their bits).
// False when the bytes are truncated or a value is out of range (a verdict or dtype that does not
// exist).
bool DecodeResult(WireReader& in, Result& result);

// A task: the case's index in the catalog and where in it to start, and the case itself for a
// worker that holds no catalog (one forked by a WorkerLauncher). A case sent is a valid one read
// from files or built in: its model, its source and directory, and its data sets' names and files
// (a list that follows ONNX's layout arrives written out); an in-memory case (make_data_set)
// cannot be sent.
struct TaskMessage {
  std::size_t case_index = 0;
  CaseProgress from;
  std::optional<CaseEntry> entry;
  // Unique among the tasks a pool sends: every answer about the task carries it (AnswerTag).
  std::uint64_t id = 0;
};
std::string EncodeTask(const TaskMessage& task);
std::optional<TaskMessage> DecodeTask(std::string_view payload);

// A stage announcement: which stage, where, and the result being worked on (identity fields).
struct StageMessage {
  CaseEvents::Stage stage = CaseEvents::Stage::kLoad;
  CaseProgress at;
  Result about;
};
std::string EncodeStage(CaseEvents::Stage stage, const CaseProgress& at, const Result& about);
std::optional<StageMessage> DecodeStage(std::string_view payload);

// What starts every message a worker sends about a task (kStage, kResult, kDone, kRetire): the
// task's id and the answer's number within the task (0, 1, 2, ...). The parent takes only the next
// answer of the task it is waiting for, so an answer from a process it did not ask (one a backend
// forked, a copy of the worker) is recognised as unrequested, never taken as a result.
struct AnswerTag {
  std::uint64_t task_id = 0;
  std::uint32_t number = 0;
};
// Appends one frame of `type`: `tag`, then `payload`.
void AppendAnswer(std::string& out, MessageType type, const AnswerTag& tag,
                  std::string_view payload);
// The tag of an answer's payload, and the payload after it; nullopt when it is too short.
std::optional<std::pair<AnswerTag, std::string_view>> SplitAnswer(std::string_view payload);

// A list of strings, and back (nullopt when garbled).
std::string EncodeStrings(const std::vector<std::string>& strings);
std::optional<std::vector<std::string>> DecodeStrings(std::string_view payload);

// Writes all of `bytes` to socket `fd`; false when the peer is gone or on an error.
bool WriteAll(int fd, std::string_view bytes);

// Appends one frame of `type` with `payload` to `out`.
void AppendFrame(std::string& out, MessageType type, std::string_view payload);

// Sends one frame of `type` with `payload`; false as WriteAll.
bool SendFrame(int fd, MessageType type, std::string_view payload);

// One frame off the wire; `payload` views the reader's buffer until its next Append or Pop.
struct Frame {
  MessageType type;
  std::string_view payload;
};

// The bytes read from one socket, cut into frames. Consumed bytes are dropped in batches, not
// one frame at a time, so a read that holds many frames costs a single move.
class FrameReader {
 public:
  void Append(const char* bytes, std::size_t n);
  // The next whole frame, if one has arrived.
  std::optional<Frame> Pop();
  void Clear();

 private:
  std::string buffer_;
  std::size_t start_ = 0;  // Where the first unconsumed byte is.
};

// Blocking read of one frame (worker side). nullopt at end of file or on error.
std::optional<Frame> ReadFrame(int fd, FrameReader& reader);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_ISOLATION_WORKER_PROTOCOL_H_
