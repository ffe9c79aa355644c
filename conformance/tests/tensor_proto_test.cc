// TensorProto -> Tensor: every MatMul dtype from raw_data and from its typed field, rank 0, empty
// tensors. (The refusals are in bad_cases.cc, run through the loader and the CLI.)
#include "mm/conformance/loader/tensor_proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::RawTensorProto;
using testing::TempDir;
using testing::WriteMessage;

StatusOr<Tensor> RoundTrip(const onnx::TensorProto& proto) {
  TempDir dir;
  WriteMessage(dir.path() / "t.pb", proto);
  MM_ASSIGN_OR_RETURN(NamedTensor loaded, LoadTensorFile(dir.path() / "t.pb"));
  return std::move(loaded.tensor);
}

onnx::TensorProto Header(int onnx_type, const Dims& dims) {
  onnx::TensorProto p;
  p.set_data_type(onnx_type);
  for (auto d : dims) p.add_dims(d);
  return p;
}

TEST(TensorProtoTest, RawDataOfEveryDTypeRoundTrips) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    Tensor t = Tensor::Create(dtype, {2, 3}).value();
    auto* bytes = static_cast<unsigned char*>(t.raw_data());
    for (std::size_t i = 0; i < t.NumBytes(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    auto loaded = RoundTrip(RawTensorProto(t));
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->dtype(), dtype);
    EXPECT_EQ(loaded->dims(), (Dims{2, 3}));
    EXPECT_EQ(std::memcmp(loaded->raw_data(), t.raw_data(), t.NumBytes()), 0);
  }
}

TEST(TensorProtoTest, FloatAndDoubleFromTypedFields) {
  auto f = Header(onnx::TensorProto::FLOAT, {3});
  for (float v : {1.5f, -2.0f, 0.25f}) f.add_float_data(v);
  auto loaded = RoundTrip(f);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->Values<float>(), ::testing::ElementsAre(1.5f, -2.0f, 0.25f));

  auto d = Header(onnx::TensorProto::DOUBLE, {2});
  d.add_double_data(1e300);
  d.add_double_data(-0.5);
  auto loaded_d = RoundTrip(d);
  ASSERT_TRUE(loaded_d.ok()) << loaded_d.status();
  EXPECT_THAT(loaded_d->Values<double>(), ::testing::ElementsAre(1e300, -0.5));
}

TEST(TensorProtoTest, HalfTypesFromInt32DataBitPatterns) {
  auto h = Header(onnx::TensorProto::FLOAT16, {2});
  h.add_int32_data(0x3C00);  // 1.0
  h.add_int32_data(0xC000);  // -2.0: the pattern is stored zero-extended, not sign-extended.
  auto loaded = RoundTrip(h);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(static_cast<float>(loaded->Values<float16>()[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(loaded->Values<float16>()[1]), -2.0f);

  auto b = Header(onnx::TensorProto::BFLOAT16, {1});
  b.add_int32_data(0x3FC0);  // 1.5
  auto loaded_b = RoundTrip(b);
  ASSERT_TRUE(loaded_b.ok()) << loaded_b.status();
  EXPECT_EQ(static_cast<float>(loaded_b->Values<bfloat16>()[0]), 1.5f);
}

TEST(TensorProtoTest, IntegersFromTheirTypedFields) {
  auto i32 = Header(onnx::TensorProto::INT32, {2});
  i32.add_int32_data(-7);
  i32.add_int32_data(2147483647);
  auto l32 = RoundTrip(i32);
  ASSERT_TRUE(l32.ok()) << l32.status();
  EXPECT_THAT(l32->Values<std::int32_t>(), ::testing::ElementsAre(-7, 2147483647));

  auto i64 = Header(onnx::TensorProto::INT64, {1});
  i64.add_int64_data(-(std::int64_t{1} << 62));
  auto l64 = RoundTrip(i64);
  ASSERT_TRUE(l64.ok()) << l64.status();
  EXPECT_EQ(l64->Values<std::int64_t>()[0], -(std::int64_t{1} << 62));

  // uint32 lives in uint64_data, and must fit.
  auto u32 = Header(onnx::TensorProto::UINT32, {1});
  u32.add_uint64_data(0xFFFFFFFFu);
  auto lu32 = RoundTrip(u32);
  ASSERT_TRUE(lu32.ok()) << lu32.status();
  EXPECT_EQ(lu32->Values<std::uint32_t>()[0], 0xFFFFFFFFu);
  u32.set_uint64_data(0, std::uint64_t{1} << 32);
  auto too_big = RoundTrip(u32);
  ASSERT_FALSE(too_big.ok());
  EXPECT_THAT(too_big.status().message(), HasSubstr("does not fit in uint32"));

  auto u64 = Header(onnx::TensorProto::UINT64, {1});
  u64.add_uint64_data(~std::uint64_t{0});
  auto lu64 = RoundTrip(u64);
  ASSERT_TRUE(lu64.ok()) << lu64.status();
  EXPECT_EQ(lu64->Values<std::uint64_t>()[0], ~std::uint64_t{0});
}

TEST(TensorProtoTest, RankZeroHoldsOneElement) {
  auto scalar = Header(onnx::TensorProto::FLOAT, {});
  scalar.add_float_data(-0.44422f);
  auto loaded = RoundTrip(scalar);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->dims().empty());
  EXPECT_EQ(loaded->NumElements(), 1);
  EXPECT_EQ(loaded->Values<float>()[0], -0.44422f);
}

TEST(TensorProtoTest, ZeroSizeTensorNeedsNoData) {
  auto empty = Header(onnx::TensorProto::FLOAT, {0, 4});
  auto loaded = RoundTrip(empty);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->NumElements(), 0);
}

TEST(TensorProtoTest, ErrorsNameTheFile) {
  TempDir dir;
  auto missing = LoadTensorFile(dir.path() / "absent.pb");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("absent.pb': no such file"));
}

TEST(TensorProtoTest, ForeignMessageWithUnknownFieldsIsRefused) {
  // A ModelProto parses as a TensorProto only through fields TensorProto does not define.
  TempDir dir;
  WriteMessage(dir.path() / "model_as_tensor.pb",
               testing::MatMulModel(onnx::TensorProto::FLOAT, {2}, {2}, {}));
  auto loaded = LoadTensorFile(dir.path() / "model_as_tensor.pb");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("model_as_tensor.pb"));
}

}  // namespace
}  // namespace mm::conformance
