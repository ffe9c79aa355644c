// The runtime protocol (docs/runtime-protocol.md): how mm talks to a driver program that runs a
// MatMul in another runtime (numpy, PyTorch, ONNX Runtime...) over the driver's stdin and stdout.
// Every message is one frame: an 8-byte prefix (u32 little-endian header length, u32 data length),
// a JSON object (the header), then raw data (tensors, row-major, little-endian). This file holds
// the encoding of mm's requests and the checks of everything a driver sends; nothing a driver
// sends makes mm allocate more than kMaxHeaderBytes or the Y buffer mm already owns.
#ifndef MM_BACKENDS_CMD_RUNTIME_PROTOCOL_H_
#define MM_BACKENDS_CMD_RUNTIME_PROTOCOL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/arithmetic.h"
#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/family/op.h"

namespace mm::runtime {

// The protocol version this mm speaks (its hello's "protocol"): 2 carries the operators of
// MatMul's family (family_protocol.h). A driver answers with the version it speaks, at most mm's:
// 2, or 1 (MatMul only; everything else of version 2 is the same).
inline constexpr int kProtocolVersion = 2;
// The oldest driver's version mm still serves.
inline constexpr int kOldestProtocolVersion = 1;
// Bytes of a frame's prefix.
inline constexpr std::size_t kPrefixBytes = 8;
// The largest header mm accepts from a driver.
inline constexpr std::uint32_t kMaxHeaderBytes = 64 * 1024;
// Text fields of a driver (names, reasons, messages) are cut to this many bytes.
inline constexpr std::size_t kMaxTextBytes = 2000;

// A frame's prefix.
struct FramePrefix {
  std::uint32_t header_bytes = 0;
  std::uint32_t data_bytes = 0;
};

// Reads a prefix; INVALID_ARGUMENT ("malformed frame: ...") when the header length is 0 or over
// kMaxHeaderBytes, or the data length over `max_data_bytes` (the most the awaited message may
// carry). The message quotes the bytes, so text a driver printed to stdout shows as such.
StatusOr<FramePrefix> ParsePrefix(std::span<const std::byte, kPrefixBytes> bytes,
                                  std::uint64_t max_data_bytes);

// What a driver declares about one dtype in its hello.
struct DTypeDeclaration {
  bool supported = false;
  Arithmetic arithmetic;   // When supported: what products and sums are formed in.
  std::string conversion;  // When supported by conversion: how ("float16 via float32").
  std::string refused;     // When not supported: why, in the runtime's own words.
};

// What a driver's hello declares about one operator of MatMul's family beyond MatMul (protocol 2).
struct OperatorDeclaration {
  // Not computed at all: why (the driver's words; mm's for an operator the hello does not declare).
  std::string refused;
  // The versions it computes, oldest first (the operator's every version when the hello names
  // none).
  std::vector<int> versions;
  // Per element types, by TypesKey (family_protocol.h): the arithmetic, or refused with why. Types
  // not listed are refused ("not declared in the driver's hello").
  std::map<std::string, DTypeDeclaration, std::less<>> types;
};

// A driver's hello: who it is and what it computes.
struct Hello {
  int protocol = kProtocolVersion;  // The version the driver speaks (1 or 2).
  std::string runtime;              // "numpy"
  std::string version;              // "1.24.2"
  std::string runs_on;              // "numpy 1.24.2 with OpenBLAS 0.3.21, 1 thread"
  std::array<DTypeDeclaration, kAllDTypes.size()> dtypes;
  // Gemm, MatMulInteger, QLinearMatMul (indexed by family::Op; MatMul's entry is unused).
  std::array<OperatorDeclaration, family::kAllOps.size()> operators;

  const DTypeDeclaration& Of(DType dtype) const { return dtypes[static_cast<std::size_t>(dtype)]; }
  const OperatorDeclaration& Of(family::Op op) const {
    return operators[static_cast<std::size_t>(op)];
  }
};

// Checks a hello's header (and that it carries no data). INVALID_ARGUMENT naming the field for
// anything outside docs/runtime-protocol.md: a protocol version other than 1 or 2, an unknown
// dtype, an arithmetic that plugin ABI v2 would refuse (a float accumulated in an integer, an
// integer in anything but itself, an integer that flushes); in version 2, an unknown operator,
// version or element types (family_protocol.h). A dtype or operator it does not mention is
// refused ("not declared in the driver's hello"); every operator of a version 1 hello is refused
// ("speaks runtime protocol 1, which carries MatMul only"), whatever it holds.
StatusOr<Hello> ParseHello(std::string_view header, std::uint32_t data_bytes);

// What mm awaits in answer to one request.
struct Expected {
  std::uint64_t id = 0;
  DType dtype = DType::kFloat;
  Dims y_dims;
};

// A driver's answer to a request, its data (Y) aside.
struct Reply {
  enum class Kind { kY, kRefused, kError };
  Kind kind = Kind::kError;
  std::string what;               // kRefused: "dtype" or "shape".
  std::string text;               // kRefused: why; kError: the message.
  std::optional<double> seconds;  // kY: the runtime's own time for the call, when it says.
};

// Checks a reply's header against `expected`: its id, for "y" the dtype, the shape (exactly the
// plan's Y dims) and the data length (exactly Y's bytes); "refused" and "error" carry no data.
// INVALID_ARGUMENT naming what is wrong otherwise.
StatusOr<Reply> ParseReply(std::string_view header, std::uint32_t data_bytes,
                           const Expected& expected);

// The hello request, a whole frame: mm's protocol version (the newest it speaks) and the thread
// count the driver's runtime is to use.
std::string HelloRequest(int threads);

// The prefix and header of a matmul request for `plan`; the data follows: A's bytes, B's, then the
// Y buffer mm offers (poisoned by the harness; the driver may compute into it). OUT_OF_RANGE when
// the data does not fit the u32 length.
StatusOr<std::string> MatMulRequestStart(std::uint64_t id, const MatMulPlan& plan);

// Where frames come from: the driver's stdout, or bytes in memory (the parser's fuzz target).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills all of `into`, or returns why it cannot (the end, a timeout, a crash).
  virtual Status Read(std::span<std::byte> into) = 0;
};

// A driver's stdin and stdout: frames go both ways.
class ByteChannel : public ByteSource {
 public:
  // Writes all of `bytes`, or returns why it cannot (the end, a timeout, a crash).
  virtual Status Write(std::span<const std::byte> bytes) = 0;
};

// Reads one frame from `source` and checks it as a hello.
StatusOr<Hello> ReadHello(ByteSource& source);

// Reads one frame from `source` and checks it as the reply to `expected`; a "y" reply's data is
// read straight into `y` (which has exactly Y's bytes), nothing is allocated for it.
StatusOr<Reply> ReadReply(ByteSource& source, const Expected& expected, std::span<std::byte> y);

// The start of a session: the hello request (HelloRequest) to `driver`, and its hello (ReadHello).
StatusOr<Hello> ExchangeHellos(ByteChannel& driver, int threads);

// A matmul request ready to be sent: its prefix and header, and what its reply must be.
struct MatMulRequest {
  std::string start;  // MatMulRequestStart's.
  Expected expected;
};

// The request `id` for `plan`; OUT_OF_RANGE when its data does not fit a frame.
StatusOr<MatMulRequest> MakeMatMulRequest(std::uint64_t id, const MatMulPlan& plan);

// One request: `request` with A's, B's and the Y buffer's bytes (the spans have exactly the
// plan's sizes), then its reply (ReadReply) with Y read into `y`. What each message holds is this
// file's alone: a new protocol version changes it here.
StatusOr<Reply> ExchangeMatMul(ByteChannel& driver, const MatMulRequest& request,
                               std::span<const std::byte> a, std::span<const std::byte> b,
                               std::span<std::byte> y);

// Text from a driver as mm stores and prints it: ANSI escape sequences (a logger's colours)
// removed, other control characters (C0, DEL and C1: io::IsControl) and bytes of invalid UTF-8
// replaced by '?', cut to `max_bytes` (on a UTF-8 boundary) with "..." appended.
std::string DriverText(std::string_view text, std::size_t max_bytes = kMaxTextBytes);

}  // namespace mm::runtime

#endif  // MM_BACKENDS_CMD_RUNTIME_PROTOCOL_H_
