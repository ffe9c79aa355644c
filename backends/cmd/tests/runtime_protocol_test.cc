// The runtime protocol's frames: what mm sends, byte for byte, and every check of what a driver
// sends (docs/runtime-protocol.md).
#include "mm/backends/cmd/runtime_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace mm::runtime {
namespace {

using ::testing::HasSubstr;

std::string U32(std::uint32_t value) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

std::string Frame(const std::string& header, const std::string& data = "") {
  return U32(static_cast<std::uint32_t>(header.size())) +
         U32(static_cast<std::uint32_t>(data.size())) + header + data;
}

// Bytes in memory as a driver's stdout.
class Bytes final : public ByteSource {
 public:
  explicit Bytes(std::string bytes) : bytes_(std::move(bytes)) {}
  Status Read(std::span<std::byte> into) override {
    if (into.size() > bytes_.size() - at_) return InternalError("the driver ended");
    std::memcpy(into.data(), bytes_.data() + at_, into.size());
    at_ += into.size();
    return OkStatus();
  }

 private:
  std::string bytes_;
  std::size_t at_ = 0;
};

StatusOr<FramePrefix> Prefix(const std::string& bytes, std::uint64_t max_data) {
  return ParsePrefix(std::span<const std::byte, kPrefixBytes>(
                         reinterpret_cast<const std::byte*>(bytes.data()), kPrefixBytes),
                     max_data);
}

TEST(RuntimeProtocolTest, APrefixIsTwoLittleEndianLengths) {
  auto prefix = Prefix(U32(17) + U32(24), 24);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_EQ(prefix->header_bytes, 17u);
  EXPECT_EQ(prefix->data_bytes, 24u);
}

TEST(RuntimeProtocolTest, AClaimedLengthBeyondTheCapsIsRefusedBeforeAnyAllocation) {
  EXPECT_THAT(Prefix(U32(0) + U32(0), 0).status().message(), HasSubstr("header length 0"));
  EXPECT_THAT(Prefix(U32(kMaxHeaderBytes + 1) + U32(0), 0).status().message(),
              HasSubstr("header length 65537"));
  EXPECT_THAT(Prefix(U32(10) + U32(33), 32).status().message(),
              HasSubstr("data length 33 where at most 32 is awaited"));
  // Text printed to stdout is quoted, so the user sees what it was.
  EXPECT_THAT(Prefix("hello wo", 0).status().message(), HasSubstr("'hello wo'"));
}

TEST(RuntimeProtocolTest, TheHelloRequestSaysTheProtocolAndTheThreads) {
  const std::string header = R"({"protocol":2,"threads":3,"type":"hello"})";
  EXPECT_EQ(HelloRequest(3), Frame(header));
}

TEST(RuntimeProtocolTest, AMatMulRequestNamesDTypeShapesAndTheDataThatFollows) {
  MatMulPlan plan = PlanMatMul({DType::kFloat16, {2, 3}, {3}}).value();
  const std::string header =
      R"({"a":[2,3],"b":[3],"dtype":"float16","id":7,"type":"matmul","y":[2]})";
  // A (6) + B (3) + Y (2) float16 elements.
  EXPECT_EQ(MatMulRequestStart(7, plan).value(), U32(header.size()) + U32(22) + header);
  plan = PlanMatMul({DType::kDouble, {3}, {3}}).value();
  EXPECT_THAT(MatMulRequestStart(1, plan).value(), HasSubstr(R"("y":[])"));
}

constexpr char kHello[] =
    R"({"type":"hello","protocol":1,"runtime":"numpy","version":"1.24.2","runs_on":"here",)"
    R"("dtypes":{"float":{"accumulation":"float"},)"
    R"("float16":{"accumulation":"float","conversion":"via float32"},)"
    R"("bfloat16":{"accumulation":"float","flushes_subnormals":true},)"
    R"("int32":{"accumulation":"int32"},"uint64":{"refused":"no uint64"}}})";

TEST(RuntimeProtocolTest, AHelloDeclaresEveryDTypeAsPluginAbiV2Does) {
  auto hello = ParseHello(kHello, 0);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->runtime, "numpy");
  EXPECT_EQ(hello->version, "1.24.2");
  EXPECT_EQ(hello->runs_on, "here");
  EXPECT_TRUE(hello->Of(DType::kFloat).supported);
  EXPECT_EQ(hello->Of(DType::kFloat16).arithmetic, (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(hello->Of(DType::kFloat16).conversion, "via float32");
  EXPECT_EQ(hello->Of(DType::kBFloat16).arithmetic, (Arithmetic{DType::kFloat, true}));
  EXPECT_EQ(hello->Of(DType::kInt32).arithmetic, Arithmetic::OwnType(DType::kInt32));
  EXPECT_FALSE(hello->Of(DType::kUInt64).supported);
  EXPECT_EQ(hello->Of(DType::kUInt64).refused, "no uint64");
  EXPECT_FALSE(hello->Of(DType::kDouble).supported);
  EXPECT_EQ(hello->Of(DType::kDouble).refused, "not declared in the driver's hello");
}

TEST(RuntimeProtocolTest, AHelloOutsideTheProtocolIsRefusedNamingWhy) {
  const auto error = [](const std::string& hello, std::uint32_t data = 0) {
    return ParseHello(hello, data).status().message();
  };
  const std::string ok_start = R"({"type":"hello","protocol":1,"runtime":"r","version":"1",)";
  EXPECT_THAT(error(R"({"type":"hello","protocol":3,"runtime":"r","version":"1","dtypes":{}})"),
              HasSubstr("protocol version 3, but this mm speaks 1 to 2"));
  EXPECT_THAT(error(ok_start + R"("dtypes":{"complex":{"refused":"x"}}})"),
              HasSubstr("unknown dtype 'complex'"));
  EXPECT_THAT(error(ok_start + R"("dtypes":{"float":{"accumulation":"int32"}}})"),
              HasSubstr("a float dtype accumulates in float"));
  EXPECT_THAT(error(ok_start + R"("dtypes":{"int64":{"accumulation":"double"}}})"),
              HasSubstr("declare the dtype itself"));
  EXPECT_THAT(
      error(ok_start + R"("dtypes":{"int64":{"accumulation":"int64","flushes_subnormals":true}}})"),
      HasSubstr("integers have no subnormals"));
  EXPECT_THAT(error(ok_start + R"("dtypes":{"float":{"refused":""}}})"),
              HasSubstr("a refusal needs a reason"));
  EXPECT_THAT(error(ok_start + R"("dtypes":{}})", 4), HasSubstr("carries 4 data bytes"));
  EXPECT_THAT(error(R"({"type":"y","id":1})"), HasSubstr("where the hello is awaited"));
  EXPECT_THAT(error("[1,2]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(error("{\"type\":"), HasSubstr("the driver's hello"));
}

TEST(RuntimeProtocolTest, ARepliesYIsCheckedAgainstTheRequest) {
  const Expected expected{5, DType::kFloat, {2, 3}};
  auto y = ParseReply(R"({"type":"y","id":5,"dtype":"float","shape":[2,3],"seconds":0.5})", 24,
                      expected);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->kind, Reply::Kind::kY);
  EXPECT_EQ(y->seconds, 0.5);
  const auto error = [&](const std::string& header, std::uint32_t data = 24) {
    return ParseReply(header, data, expected).status().message();
  };
  EXPECT_THAT(error(R"({"type":"y","id":4,"dtype":"float","shape":[2,3]})"),
              HasSubstr("id 4 answers no request (awaited: 5)"));
  EXPECT_THAT(error(R"({"type":"y","id":5,"dtype":"double","shape":[2,3]})"),
              HasSubstr("Y of dtype 'double' where float is awaited"));
  EXPECT_THAT(error(R"({"type":"y","id":5,"dtype":"float","shape":[3,2]})"),
              HasSubstr("Y of shape [3,2] where [2,3] is awaited"));
  EXPECT_THAT(error(R"({"type":"y","id":5,"dtype":"float","shape":[2,3]})", 20),
              HasSubstr("Y of 20 data bytes where its shape has 24"));
  EXPECT_THAT(error(R"({"type":"y","id":5,"dtype":"float","shape":[2,-3]})"),
              HasSubstr("shape[1]"));
  EXPECT_THAT(error(R"({"type":"maybe","id":5})"), HasSubstr("type 'maybe'"));
}

TEST(RuntimeProtocolTest, RefusalsAndErrorsSayWhatAndWhy) {
  const Expected expected{1, DType::kInt64, {}};
  auto refused =
      ParseReply(R"({"type":"refused","id":1,"what":"shape","why":"rank < 2"})", 0, expected);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->kind, Reply::Kind::kRefused);
  EXPECT_EQ(refused->what, "shape");
  EXPECT_EQ(refused->text, "rank < 2");
  auto error = ParseReply(R"({"type":"error","id":1,"message":"boom\nbang"})", 0, expected);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(error->kind, Reply::Kind::kError);
  EXPECT_EQ(error->text, "boom?bang");  // Control characters never reach a report.
  EXPECT_THAT(ParseReply(R"({"type":"refused","id":1,"what":"mood","why":"x"})", 0, expected)
                  .status()
                  .message(),
              HasSubstr("a 'dtype' or a 'shape'"));
  EXPECT_THAT(
      ParseReply(R"({"type":"error","id":1,"message":"x"})", 8, expected).status().message(),
      HasSubstr("carries 8 data bytes"));
}

TEST(RuntimeProtocolTest, ReadingAReplyFillsYAndATruncatedOneIsAnError) {
  const Expected expected{2, DType::kInt32, {2}};
  const std::string header = R"({"type":"y","id":2,"dtype":"int32","shape":[2]})";
  std::string data = U32(7) + U32(0xFFFFFFFF);
  std::vector<std::byte> y(8);
  Bytes whole(Frame(header, data));
  ASSERT_TRUE(ReadReply(whole, expected, y).ok());
  EXPECT_EQ(std::memcmp(y.data(), data.data(), 8), 0);
  Bytes truncated(Frame(header, data).substr(0, 30));
  EXPECT_THAT(ReadReply(truncated, expected, y).status().message(), HasSubstr("ended"));
  Bytes hello(Frame(kHello));
  EXPECT_TRUE(ReadHello(hello).ok());
}

TEST(RuntimeProtocolTest, DriverTextIsPrintableAndBounded) {
  EXPECT_EQ(DriverText("a\tb\x7f"), "a?b?");
  EXPECT_EQ(DriverText("abcdef", 3), "abc...");
  EXPECT_EQ(DriverText("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9...");  // Never half a character.
  // C1 controls, in UTF-8 (CSI is U+009B) or as a byte alone, which a terminal may obey too.
  EXPECT_EQ(DriverText("a\xc2\x9b"
                       "2Jb\x9b"
                       "2Jc\xc2\xa0"),
            "a?2Jb?2Jc\xc2\xa0");
}

TEST(RuntimeProtocolTest, DriverTextDropsALoggersColoursAndKeepsTheRest) {
  // ONNX Runtime's logger, as a driver's stderr carries it.
  EXPECT_EQ(DriverText("\x1b[1;31m2026 [E:onnxruntime:] failed\x1b[m|next"),
            "2026 [E:onnxruntime:] failed|next");
  EXPECT_EQ(DriverText("a\x1bMb"), "ab");  // ESC M: a two-byte sequence.
  // No sequence: an ESC alone, or a '[' sequence without its final byte, is a control character.
  EXPECT_EQ(DriverText("a\x1b"), "a?");
  EXPECT_EQ(DriverText("\x1b[12"), "?[12");
  EXPECT_EQ(DriverText("\x1b[1;\n"), "?[1;?");
}

}  // namespace
}  // namespace mm::runtime
