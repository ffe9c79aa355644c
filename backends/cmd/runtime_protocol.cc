#include "mm/backends/cmd/runtime_protocol.h"

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "mm/engine/io/json.h"
#include "mm/engine/io/text.h"
#include "protocol_internal.h"

namespace mm::runtime {
namespace internal {

std::string Frame(const nlohmann::json& header, std::uint32_t data_bytes) {
  const std::string text = header.dump();
  std::string out;
  out.reserve(kPrefixBytes + text.size());
  for (const std::uint32_t value : {static_cast<std::uint32_t>(text.size()), data_bytes}) {
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((value >> shift) & 0xFF);
  }
  out += text;
  return out;
}

StatusOr<std::string> TextAt(const Field& object, std::string_view key) {
  MM_ASSIGN_OR_RETURN(std::string text, object.StringAt(key));
  return DriverText(text);
}

StatusOr<std::string> OptionalTextAt(const Field& object, std::string_view key) {
  MM_ASSIGN_OR_RETURN(std::optional<Field> member, object.OptionalMember(key));
  if (!member) return std::string();
  MM_ASSIGN_OR_RETURN(std::string text, member->String());
  return DriverText(text);
}

}  // namespace internal

namespace {

using internal::Field;
using internal::Frame;
using internal::OptionalTextAt;
using internal::TextAt;

std::uint32_t LoadU32(const std::byte* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// The printable bytes of a prefix that is not one (a driver's print() to stdout, say).
std::string Quoted(std::span<const std::byte> bytes) {
  std::string text;
  for (std::byte b : bytes) {
    const auto c = static_cast<unsigned char>(b);
    text += c >= 0x20 && c < 0x7F ? static_cast<char>(c) : '.';
  }
  return "'" + text + "'";
}

StatusOr<DType> DTypeNamed(const std::string& name, const Field& where) {
  for (DType dtype : kAllDTypes) {
    if (DTypeName(dtype) == name) return dtype;
  }
  return where.Error("unknown dtype '" + DriverText(name, 64) +
                     "' (mm's names: float, double, float16, bfloat16, int32, int64, uint32, "
                     "uint64)");
}

}  // namespace

StatusOr<std::optional<std::string>> internal::RefusalOf(const Field& entry) {
  MM_ASSIGN_OR_RETURN(std::optional<Field> refused, entry.OptionalMember("refused"));
  if (!refused) return std::optional<std::string>();
  MM_ASSIGN_OR_RETURN(std::string why, refused->String());
  why = DriverText(why);
  if (why.empty()) return refused->Error("a refusal needs a reason");
  return std::optional<std::string>(std::move(why));
}

StatusOr<DTypeDeclaration> internal::ParseDeclaration(DType dtype, const Field& entry) {
  DTypeDeclaration declaration;
  MM_ASSIGN_OR_RETURN(std::optional<std::string> refused, RefusalOf(entry));
  if (refused) {
    declaration.refused = *std::move(refused);
    return declaration;
  }
  declaration.supported = true;
  MM_ASSIGN_OR_RETURN(Field accumulation, entry.Member("accumulation"));
  MM_ASSIGN_OR_RETURN(std::string accumulation_name, accumulation.String());
  MM_ASSIGN_OR_RETURN(DType accumulate_in, DTypeNamed(accumulation_name, accumulation));
  bool flushes = false;
  MM_ASSIGN_OR_RETURN(std::optional<Field> flush_field, entry.OptionalMember("flushes_subnormals"));
  if (flush_field) {
    MM_ASSIGN_OR_RETURN(flushes, flush_field->Bool());
  }
  if (IsFloat(dtype) && !IsFloat(accumulate_in)) {
    return accumulation.Error("a float dtype accumulates in float, double, float16 or bfloat16");
  }
  if (!IsFloat(dtype) && accumulate_in != dtype) {
    return accumulation.Error("an integer dtype is exact modulo 2^bits: declare the dtype itself");
  }
  if (!IsFloat(dtype) && flushes) {
    return flush_field->Error("integers have no subnormals to flush");
  }
  declaration.arithmetic = {accumulate_in, flushes};
  MM_ASSIGN_OR_RETURN(declaration.conversion, OptionalTextAt(entry, "conversion"));
  return declaration;
}

namespace {

StatusOr<Dims> DimsOf(const Field& field) {
  MM_ASSIGN_OR_RETURN(std::vector<Field> elements, field.Elements());
  if (elements.size() > 64) return field.Error("more than 64 dims");
  Dims dims;
  for (const Field& element : elements) {
    MM_ASSIGN_OR_RETURN(std::int64_t extent, element.Int(0));
    dims.push_back(extent);
  }
  return dims;
}

StatusOr<nlohmann::json> ParseHeader(std::string_view header, std::string_view what) {
  MM_ASSIGN_OR_RETURN(nlohmann::json json, io::ParseJson(header, what, /*max_depth=*/8));
  if (!json.is_object()) {
    return InvalidArgumentError(std::string(what) + ": expected a JSON object, found " +
                                std::string(io::JsonTypeName(json)));
  }
  return json;
}

Status NoData(std::uint32_t data_bytes, std::string_view what) {
  if (data_bytes == 0) return OkStatus();
  return InvalidArgumentError(std::string(what) + " carries " + std::to_string(data_bytes) +
                              " data bytes; it carries none");
}

// Reads a frame's prefix and header (at most kMaxHeaderBytes) from `source`.
StatusOr<std::pair<FramePrefix, std::string>> ReadHead(ByteSource& source,
                                                       std::uint64_t max_data_bytes) {
  std::array<std::byte, kPrefixBytes> prefix_bytes;
  MM_RETURN_IF_ERROR(source.Read(prefix_bytes));
  MM_ASSIGN_OR_RETURN(FramePrefix prefix, ParsePrefix(prefix_bytes, max_data_bytes));
  std::string header(prefix.header_bytes, '\0');
  MM_RETURN_IF_ERROR(source.Read(std::as_writable_bytes(std::span(header))));
  return std::pair{prefix, std::move(header)};
}

}  // namespace

namespace {

// The length of the ANSI escape sequence at the start of `text` (ESC '[' parameters, intermediates
// and a final byte; or ESC and one byte of 0x40 to 0x5F), 0 when none starts there.
std::size_t EscapeSequenceLength(std::string_view text) {
  if (text.size() < 2 || text[0] != '\x1b') return 0;
  if (text[1] != '[') return text[1] >= 0x40 && text[1] <= 0x5F ? 2 : 0;
  std::size_t i = 2;
  while (i < text.size() && text[i] >= 0x20 && text[i] <= 0x3F) ++i;
  return i < text.size() && text[i] >= 0x40 && text[i] <= 0x7E ? i + 1 : 0;
}

}  // namespace

std::string DriverText(std::string_view text, std::size_t max_bytes) {
  std::string kept;
  for (std::size_t i = 0; i < text.size(); ++i) {
    // A runtime's logger colours its lines: the colour codes are noise in a message.
    if (const std::size_t escape = EscapeSequenceLength(text.substr(i)); escape > 0) {
      i += escape - 1;
      continue;
    }
    kept += text[i];
  }
  // C1 controls too (U+0080 to U+009F, or such a byte alone): a terminal may take 0x9B as CSI.
  std::string out = io::ReplacingControls(kept, "?");
  if (out.size() <= max_bytes) return out;
  std::size_t cut = max_bytes;
  // Back to the start of a UTF-8 sequence (never inside one).
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  return out + "...";
}

StatusOr<FramePrefix> ParsePrefix(std::span<const std::byte, kPrefixBytes> bytes,
                                  std::uint64_t max_data_bytes) {
  FramePrefix prefix{LoadU32(bytes.data()), LoadU32(bytes.data() + 4)};
  if (prefix.header_bytes == 0 || prefix.header_bytes > kMaxHeaderBytes) {
    return InvalidArgumentError("malformed frame: header length " +
                                std::to_string(prefix.header_bytes) + " (1 to " +
                                std::to_string(kMaxHeaderBytes) + " allowed; the frame starts " +
                                Quoted(bytes) + ": text written to stdout?)");
  }
  if (prefix.data_bytes > max_data_bytes) {
    return InvalidArgumentError("malformed frame: data length " +
                                std::to_string(prefix.data_bytes) + " where at most " +
                                std::to_string(max_data_bytes) + " is awaited");
  }
  return prefix;
}

StatusOr<Hello> ParseHello(std::string_view header, std::uint32_t data_bytes) {
  MM_ASSIGN_OR_RETURN(nlohmann::json json, ParseHeader(header, "the driver's hello"));
  const Field root(json, "the driver's hello");
  MM_RETURN_IF_ERROR(NoData(data_bytes, "the hello"));
  MM_ASSIGN_OR_RETURN(std::string type, root.StringAt("type"));
  if (type != "hello") {
    return root.Error("type '" + DriverText(type, 64) + "' where the hello is awaited");
  }
  MM_ASSIGN_OR_RETURN(std::int64_t protocol, root.IntAt("protocol"));
  if (protocol < kOldestProtocolVersion || protocol > kProtocolVersion) {
    return root.Error("protocol version " + std::to_string(protocol) + ", but this mm speaks " +
                      std::to_string(kOldestProtocolVersion) + " to " +
                      std::to_string(kProtocolVersion));
  }
  Hello hello;
  hello.protocol = static_cast<int>(protocol);
  MM_ASSIGN_OR_RETURN(hello.runtime, TextAt(root, "runtime"));
  MM_ASSIGN_OR_RETURN(hello.version, TextAt(root, "version"));
  MM_ASSIGN_OR_RETURN(hello.runs_on, OptionalTextAt(root, "runs_on"));
  for (DType dtype : kAllDTypes) {
    hello.dtypes[static_cast<std::size_t>(dtype)].refused = "not declared in the driver's hello";
  }
  MM_ASSIGN_OR_RETURN(Field dtypes, root.Member("dtypes"));
  MM_ASSIGN_OR_RETURN(auto members, dtypes.Members());
  for (const auto& [name, entry] : members) {
    MM_ASSIGN_OR_RETURN(DType dtype, DTypeNamed(name, entry));
    MM_ASSIGN_OR_RETURN(hello.dtypes[static_cast<std::size_t>(dtype)],
                        internal::ParseDeclaration(dtype, entry));
  }
  MM_RETURN_IF_ERROR(internal::ParseOperators(root, hello));
  return hello;
}

StatusOr<Reply> ParseReply(std::string_view header, std::uint32_t data_bytes,
                           const Expected& expected) {
  MM_ASSIGN_OR_RETURN(nlohmann::json json, ParseHeader(header, "the driver's reply"));
  const Field root(json, "the driver's reply");
  MM_ASSIGN_OR_RETURN(std::int64_t id, root.IntAt("id", 0));
  if (static_cast<std::uint64_t>(id) != expected.id) {
    return root.Error("id " + std::to_string(id) +
                      " answers no request (awaited: " + std::to_string(expected.id) + ")");
  }
  MM_ASSIGN_OR_RETURN(std::string type, root.StringAt("type"));
  Reply reply;
  if (type == "refused") {
    reply.kind = Reply::Kind::kRefused;
    MM_ASSIGN_OR_RETURN(reply.what, root.StringAt("what"));
    if (reply.what != "dtype" && reply.what != "shape") {
      return root.Error("refused what '" + DriverText(reply.what, 64) +
                        "'; a driver refuses a 'dtype' or a 'shape'");
    }
    MM_ASSIGN_OR_RETURN(reply.text, TextAt(root, "why"));
    MM_RETURN_IF_ERROR(NoData(data_bytes, "a refusal"));
    return reply;
  }
  if (type == "error") {
    reply.kind = Reply::Kind::kError;
    MM_ASSIGN_OR_RETURN(reply.text, TextAt(root, "message"));
    MM_RETURN_IF_ERROR(NoData(data_bytes, "an error"));
    return reply;
  }
  if (type != "y") {
    return root.Error("type '" + DriverText(type, 64) +
                      "'; a reply is of type 'y', 'refused' or 'error'");
  }
  reply.kind = Reply::Kind::kY;
  MM_ASSIGN_OR_RETURN(std::string dtype, root.StringAt("dtype"));
  if (dtype != DTypeName(expected.dtype)) {
    return root.Error("Y of dtype '" + DriverText(dtype, 64) + "' where " +
                      std::string(DTypeName(expected.dtype)) + " is awaited");
  }
  MM_ASSIGN_OR_RETURN(Field shape_field, root.Member("shape"));
  MM_ASSIGN_OR_RETURN(Dims shape, DimsOf(shape_field));
  if (shape != expected.y_dims) {
    return root.Error("Y of shape " + DimsToString(shape) + " where " +
                      DimsToString(expected.y_dims) + " is awaited");
  }
  std::uint64_t bytes = DTypeSize(expected.dtype);
  for (std::int64_t extent : expected.y_dims) bytes *= static_cast<std::uint64_t>(extent);
  if (data_bytes != bytes) {
    return root.Error("Y of " + std::to_string(data_bytes) + " data bytes where its shape has " +
                      std::to_string(bytes));
  }
  MM_ASSIGN_OR_RETURN(std::optional<Field> seconds, root.OptionalMember("seconds"));
  if (seconds) {
    MM_ASSIGN_OR_RETURN(double value, seconds->Number());
    if (!(value >= 0)) return seconds->Error("a time is >= 0");
    reply.seconds = value;
  }
  return reply;
}

std::string HelloRequest(int threads) {
  return Frame({{"type", "hello"}, {"protocol", kProtocolVersion}, {"threads", threads}}, 0);
}

StatusOr<std::string> MatMulRequestStart(std::uint64_t id, const MatMulPlan& plan) {
  const std::uint64_t size = DTypeSize(plan.desc.dtype);
  const std::uint64_t bytes =
      (static_cast<std::uint64_t>(plan.a_elements) + static_cast<std::uint64_t>(plan.b_elements) +
       static_cast<std::uint64_t>(plan.y_elements)) *
      size;
  if (bytes > std::numeric_limits<std::uint32_t>::max()) {
    return OutOfRangeError("A, B and Y of " + plan.desc.ToString() + " are " +
                           std::to_string(bytes) +
                           " bytes; the runtime protocol carries at most 4 GiB per frame");
  }
  const nlohmann::json header = {{"type", "matmul"},
                                 {"id", id},
                                 {"dtype", DTypeName(plan.desc.dtype)},
                                 {"a", plan.desc.a_dims},
                                 {"b", plan.desc.b_dims},
                                 {"y", plan.y_dims}};
  return Frame(header, static_cast<std::uint32_t>(bytes));
}

StatusOr<Hello> ReadHello(ByteSource& source) {
  MM_ASSIGN_OR_RETURN(auto head, ReadHead(source, 0));
  return ParseHello(head.second, head.first.data_bytes);
}

StatusOr<Reply> ReadReply(ByteSource& source, const Expected& expected, std::span<std::byte> y) {
  MM_ASSIGN_OR_RETURN(auto head, ReadHead(source, y.size()));
  MM_ASSIGN_OR_RETURN(Reply reply, ParseReply(head.second, head.first.data_bytes, expected));
  if (reply.kind == Reply::Kind::kY) {
    MM_RETURN_IF_ERROR(source.Read(y));
  }
  return reply;
}

StatusOr<Hello> ExchangeHellos(ByteChannel& driver, int threads) {
  const std::string request = HelloRequest(threads);
  MM_RETURN_IF_ERROR(driver.Write(std::as_bytes(std::span(request))));
  return ReadHello(driver);
}

StatusOr<MatMulRequest> MakeMatMulRequest(std::uint64_t id, const MatMulPlan& plan) {
  MM_ASSIGN_OR_RETURN(std::string start, MatMulRequestStart(id, plan));
  return MatMulRequest{std::move(start), Expected{id, plan.desc.dtype, plan.y_dims}};
}

StatusOr<Reply> ExchangeMatMul(ByteChannel& driver, const MatMulRequest& request,
                               std::span<const std::byte> a, std::span<const std::byte> b,
                               std::span<std::byte> y) {
  MM_RETURN_IF_ERROR(driver.Write(std::as_bytes(std::span(request.start))));
  MM_RETURN_IF_ERROR(driver.Write(a));
  MM_RETURN_IF_ERROR(driver.Write(b));
  MM_RETURN_IF_ERROR(driver.Write(y));
  return ReadReply(driver, request.expected, y);
}

}  // namespace mm::runtime
