// The runtime protocol's operators of MatMul's family (version 2): what a hello declares per
// operator and every check of it, how a version 1 hello is served, and the operator request byte
// for byte (docs/runtime-protocol.md).
#include "mm/backends/cmd/family_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mm/family/testing/problem_builder.h"

namespace mm::runtime {
namespace {

using family::Op;
using family::OpDesc;
using family::testing::ProblemBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kStart = R"({"type":"hello","protocol":2,"runtime":"r","version":"1",)"
                           R"("dtypes":{"float":{"accumulation":"float"}})";

Hello Parsed(const std::string& operators) {
  StatusOr<Hello> hello = ParseHello(kStart + R"(,"operators":)" + operators + "}", 0);
  EXPECT_TRUE(hello.ok()) << hello.status();
  return hello.ok() ? *std::move(hello) : Hello{};
}

std::string Error(const std::string& operators) {
  return ParseHello(kStart + R"(,"operators":)" + operators + "}", 0).status().message();
}

constexpr OpDesc kGemmFloat{Op::kGemm, 13, DType::kFloat, DType::kFloat, DType::kFloat};
constexpr OpDesc kMatMulIntegerU8I8{Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8,
                                    DType::kInt32};

TEST(FamilyProtocolTest, TypesAreKeyedAsMmDescribesThem) {
  EXPECT_EQ(TypesKey(kGemmFloat), "float");
  EXPECT_EQ(TypesKey(kMatMulIntegerU8I8), "uint8 x int8 -> int32");
  EXPECT_EQ(TypesKey({Op::kQLinearMatMul, 21, DType::kUInt8, DType::kInt8, DType::kUInt8,
                      DType::kFloat16}),
            "uint8 x int8 -> uint8, float16 scales");
  EXPECT_EQ(AllTypes(Op::kGemm).size(), kAllDTypes.size());
  EXPECT_EQ(AllTypes(Op::kMatMulInteger).size(), 4u);
  EXPECT_EQ(AllTypes(Op::kQLinearMatMul).size(), 24u);  // a, b, y: 2 each; 3 scale types.
}

TEST(FamilyProtocolTest, AHelloDeclaresPerOperatorVersionsTypesAndArithmetic) {
  const Hello hello =
      Parsed(R"({"Gemm":{"versions":[13,11],"types":{"float":{"accumulation":"double"},)"
             R"("float16":{"accumulation":"float","conversion":"via float32"},)"
             R"("bfloat16":{"refused":"no bfloat16 Gemm"}}},)"
             R"("MatMulInteger":{"types":{"uint8 x int8 -> int32":{"accumulation":"int32"}}},)"
             R"("QLinearMatMul":{"refused":"no quantized kernels"}})");
  EXPECT_THAT(hello.Of(Op::kGemm).versions, ElementsAre(11, 13));
  EXPECT_TRUE(OperatorSupport(hello, kGemmFloat).supported());
  EXPECT_EQ(OperatorArithmetic(hello, kGemmFloat), (Arithmetic{DType::kDouble, false}));
  OpDesc half = kGemmFloat;
  half.a_dtype = half.b_dtype = half.y_dtype = DType::kFloat16;
  EXPECT_EQ(OperatorSupport(hello, half).note, "via float32");
  OpDesc gemm7 = kGemmFloat;
  gemm7.version = 7;
  EXPECT_EQ(OperatorSupport(hello, gemm7).note, "Gemm-7: the driver computes versions 11, 13");
  OpDesc bf16 = kGemmFloat;
  bf16.a_dtype = bf16.b_dtype = bf16.y_dtype = DType::kBFloat16;
  EXPECT_EQ(OperatorSupport(hello, bf16).note, "Gemm-13 bfloat16: no bfloat16 Gemm");
  OpDesc doubles = kGemmFloat;
  doubles.a_dtype = doubles.b_dtype = doubles.y_dtype = DType::kDouble;
  EXPECT_EQ(OperatorSupport(hello, doubles).note,
            "Gemm-13 double: not declared in the driver's hello");
  // Versions not named: every version of the operator.
  EXPECT_THAT(hello.Of(Op::kMatMulInteger).versions, ElementsAre(10));
  EXPECT_TRUE(OperatorSupport(hello, kMatMulIntegerU8I8).supported());
  EXPECT_EQ(OperatorArithmetic(hello, kMatMulIntegerU8I8), Arithmetic::OwnType(DType::kInt32));
  OpDesc signed_pair = kMatMulIntegerU8I8;
  signed_pair.a_dtype = DType::kInt8;
  EXPECT_EQ(OperatorSupport(hello, signed_pair).note,
            "MatMulInteger-10 int8 x int8 -> int32: not declared in the driver's hello");
  EXPECT_EQ(
      OperatorSupport(hello, {Op::kQLinearMatMul, 21, DType::kInt8, DType::kInt8, DType::kInt8})
          .note,
      "QLinearMatMul: no quantized kernels");
}

TEST(FamilyProtocolTest, WhatAHelloDoesNotDeclareIsRefusedSayingSo) {
  const StatusOr<Hello> matmul_only = ParseHello(kStart + "}", 0);
  ASSERT_TRUE(matmul_only.ok()) << matmul_only.status();
  EXPECT_EQ(OperatorSupport(*matmul_only, kGemmFloat).note,
            "Gemm: not declared in the driver's hello (it declares MatMul only)");
  const Hello some = Parsed(R"({"Gemm":{"refused":"later"}})");
  EXPECT_EQ(OperatorSupport(some, kMatMulIntegerU8I8).note,
            "MatMulInteger: not declared in the driver's hello (it declares MatMul only)");
}

TEST(FamilyProtocolTest, AVersionOneHelloIsServedMatMulOnlyWhateverItHolds) {
  std::string v1 =
      kStart + R"(,"operators":{"Gemm":{"types":{"float":{"accumulation":"float"}}}}})";
  v1.replace(v1.find(R"("protocol":2)"), 12, R"("protocol":1)");
  const StatusOr<Hello> hello = ParseHello(v1, 0);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->protocol, 1);
  EXPECT_TRUE(hello->Of(DType::kFloat).supported);
  EXPECT_EQ(OperatorSupport(*hello, kGemmFloat).note,
            "Gemm: the driver speaks runtime protocol 1, which carries MatMul only");
  for (const char* version : {R"("protocol":0)", R"("protocol":3)"}) {
    std::string other = kStart + "}";
    other.replace(other.find(R"("protocol":2)"), 12, version);
    EXPECT_THAT(ParseHello(other, 0).status().message(), HasSubstr("but this mm speaks 1 to 2"));
  }
}

TEST(FamilyProtocolTest, AHelloOutsideTheProtocolIsRefusedNamingWhy) {
  EXPECT_THAT(Error(R"({"Conv":{"refused":"x"}})"), HasSubstr("operators.Conv: not an operator"));
  EXPECT_THAT(Error(R"({"MatMul":{"refused":"x"}})"), HasSubstr("MatMul is declared by"));
  EXPECT_THAT(Error(R"({"Gemm":{"refused":""}})"), HasSubstr("a refusal needs a reason"));
  EXPECT_THAT(Error(R"({"Gemm":{"versions":[8],"types":{}}})"), HasSubstr("Gemm has no version 8"));
  EXPECT_THAT(Error(R"({"Gemm":{"versions":[],"types":{}}})"), HasSubstr("no version"));
  EXPECT_THAT(Error(R"({"Gemm":{"versions":[13]}})"), HasSubstr("types"));
  EXPECT_THAT(Error(R"({"Gemm":{"types":{"int8":{"accumulation":"int8"}}}})"),
              HasSubstr("no element types of Gemm are written so"));
  EXPECT_THAT(Error(R"({"MatMulInteger":{"types":{"uint8 x int8":{"accumulation":"int32"}}}})"),
              HasSubstr("written as: 'uint8 x uint8 -> int32'"));
  EXPECT_THAT(Error(R"({"Gemm":{"types":{"float":{"accumulation":"int32"}}}})"),
              HasSubstr("a float dtype accumulates in float"));
  EXPECT_THAT(
      Error(R"({"MatMulInteger":{"types":{"int8 x int8 -> int32":{"accumulation":"float"}}}})"),
      HasSubstr("declare the dtype itself"));
}

std::string LittleEndian32(std::uint32_t value) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

TEST(FamilyProtocolTest, AGemmRequestNamesTheInputsAttributesAndY) {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  p.Input("B", DType::kFloat, {4, 3});
  p.Input("C", DType::kFloat, {4}, {1, 2, 3, 4});
  p.Int("transB", 1).Float("alpha", 0.1f);
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  const OperatorRequest request = MakeOperatorRequest(9, plan).value();
  // alpha is the float32 nearest 0.1, sent exactly.
  const std::string header =
      R"({"attributes":{"alpha":0.10000000149011612,"beta":1.0,"transA":0,"transB":1},)"
      R"("id":9,"inputs":[{"dtype":"float","name":"A","shape":[2,3]},)"
      R"({"dtype":"float","name":"B","shape":[4,3]},{"dtype":"float","name":"C","shape":[4]}],)"
      R"("op":"Gemm","type":"operator","version":13,"y":{"dtype":"float","shape":[2,4]}})";
  // A (6), B (12), C (4), then Y (8) float elements.
  EXPECT_EQ(request.start, LittleEndian32(header.size()) + LittleEndian32(4 * 30) + header);
  EXPECT_EQ(request.expected.id, 9u);
  EXPECT_EQ(request.expected.dtype, DType::kFloat);
  EXPECT_EQ(request.expected.y_dims, (Dims{2, 4}));
}

TEST(FamilyProtocolTest, GemmsFirstVersionsSayWhetherCBroadcasts) {
  ProblemBuilder p(Op::kGemm, 6);
  p.Input("A", DType::kFloat, {2, 3});
  p.Input("B", DType::kFloat, {3, 4});
  p.Input("C", DType::kFloat, {2, 4});
  EXPECT_THAT(MakeOperatorRequest(1, family::PlanProblem(p.problem()).value())->start,
              HasSubstr(R"("broadcast":0)"));
  p.Input("C", DType::kFloat, {4}).Int("broadcast", 1);
  EXPECT_THAT(MakeOperatorRequest(1, family::PlanProblem(p.problem()).value())->start,
              HasSubstr(R"("broadcast":1)"));
}

TEST(FamilyProtocolTest, AQLinearMatMulRequestCarriesItsEightInputsWithTheirScaleTypes) {
  ProblemBuilder p(Op::kQLinearMatMul, 21);
  p.Input("a", DType::kUInt8, {2, 3});
  p.Input("a_scale", DType::kFloat16, {2}, {0.5, 0.25});  // Per row.
  p.Input("a_zero_point", DType::kUInt8, {2}, {128, 0});
  p.Input("b", DType::kInt8, {3, 1});
  p.Input("b_scale", DType::kFloat16, {}, {1});
  p.Input("b_zero_point", DType::kInt8, {}, {0});
  p.Input("y_scale", DType::kFloat16, {}, {2});
  p.Input("y_zero_point", DType::kInt8, {}, {0});
  const StatusOr<family::Plan> plan = family::PlanProblem(p.problem());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const OperatorRequest request = MakeOperatorRequest(2, *plan).value();
  EXPECT_THAT(request.start, HasSubstr(R"("inputs":[{"dtype":"uint8","name":"a","shape":[2,3]},)"
                                       R"({"dtype":"float16","name":"a_scale","shape":[2]},)"
                                       R"({"dtype":"uint8","name":"a_zero_point","shape":[2]},)"
                                       R"({"dtype":"int8","name":"b","shape":[3,1]},)"
                                       R"({"dtype":"float16","name":"b_scale","shape":[]},)"
                                       R"({"dtype":"int8","name":"b_zero_point","shape":[]},)"
                                       R"({"dtype":"float16","name":"y_scale","shape":[]},)"
                                       R"({"dtype":"int8","name":"y_zero_point","shape":[]}],)"
                                       R"("op":"QLinearMatMul","type":"operator","version":21,)"
                                       R"("y":{"dtype":"int8","shape":[2,1]}})"));
  // 6 + 4 + 2 + 3 + 2 + 1 + 2 + 1 input bytes and 2 of Y.
  EXPECT_EQ(request.start.substr(4, 4), LittleEndian32(23));
}

// A driver's stdin and stdout in memory: what mm writes, and a reply to read.
class Recorder final : public ByteChannel {
 public:
  explicit Recorder(std::string reply) : reply_(std::move(reply)) {}
  Status Write(std::span<const std::byte> bytes) override {
    written.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return OkStatus();
  }
  Status Read(std::span<std::byte> into) override {
    if (into.size() > reply_.size() - at_) return InternalError("the driver ended");
    std::memcpy(into.data(), reply_.data() + at_, into.size());
    at_ += into.size();
    return OkStatus();
  }
  std::string written;

 private:
  std::string reply_;
  std::size_t at_ = 0;
};

TEST(FamilyProtocolTest, AMatMulIntegerRequestCarriesThePresentInputsInTheNodesOrder) {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {2, 2}, {255, 1, 2, 3});
  p.Input("B", DType::kInt8, {2}, {-128, 127});
  p.Input("b_zero_point", DType::kInt8, {}, {-1});  // a_zero_point absent: not sent.
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  const OperatorRequest request = MakeOperatorRequest(3, plan).value();
  EXPECT_THAT(request.start,
              HasSubstr(R"("attributes":{},"id":3,"inputs":[{"dtype":"uint8","name":"A",)"
                        R"("shape":[2,2]},{"dtype":"int8","name":"B","shape":[2]},)"
                        R"({"dtype":"int8","name":"b_zero_point","shape":[]}],)"
                        R"("op":"MatMulInteger","type":"operator","version":10,)"
                        R"("y":{"dtype":"int32","shape":[2]}})"));
  const std::string header = R"({"type":"y","id":3,"dtype":"int32","shape":[2]})";
  const std::string y_bytes = LittleEndian32(7) + LittleEndian32(0xFFFFFFFE);
  Recorder driver(LittleEndian32(header.size()) + LittleEndian32(8) + header + y_bytes);
  std::vector<std::byte> y(8, std::byte{0x5A});
  ASSERT_TRUE(ExchangeOperator(driver, request, plan, y).ok());
  EXPECT_EQ(std::memcmp(y.data(), y_bytes.data(), 8), 0);
  // After the header: A's 4 bytes, B's 2, b_zero_point's 1, then the Y buffer offered.
  EXPECT_EQ(driver.written.substr(request.start.size()),
            std::string("\xFF\x01\x02\x03\x80\x7F\xFF") + std::string(8, '\x5A'));
}

}  // namespace
}  // namespace mm::runtime
