// ONNX tensors of int8 and uint8 read for MatMul's family (TensorTypes::kAll): values from raw_data
// or int32_data, each in its type's range; MatMul's loader (the default) still refuses them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "mm/conformance/loader/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace mm::family {
namespace {

using conformance::TensorFromProto;
using conformance::TensorTypes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

onnx::TensorProto Int32Data(int data_type, std::initializer_list<std::int32_t> values) {
  onnx::TensorProto proto;
  proto.set_data_type(data_type);
  proto.add_dims(static_cast<std::int64_t>(values.size()));
  for (const std::int32_t v : values) proto.add_int32_data(v);
  return proto;
}

TEST(FamilyTensorIoTest, Int8AndUInt8FromInt32DataAndRawData) {
  const auto i8 = TensorFromProto(Int32Data(3, {-128, 0, 127}), "a", TensorTypes::kAll);
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_EQ(i8->dtype(), DType::kInt8);
  EXPECT_THAT(i8->Values<std::int8_t>(), ElementsAre(-128, 0, 127));
  onnx::TensorProto raw;
  raw.set_data_type(2);
  raw.add_dims(2);
  raw.set_raw_data(std::string("\xff\x01", 2));
  const auto u8 = TensorFromProto(raw, "b", TensorTypes::kAll);
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_THAT(u8->Values<std::uint8_t>(), ElementsAre(255, 1));
}

TEST(FamilyTensorIoTest, AValueOutsideTheTypeIsAnError) {
  EXPECT_THAT(TensorFromProto(Int32Data(3, {0, 128}), "a", TensorTypes::kAll).status().message(),
              HasSubstr("int32_data[1] = 128 does not fit in int8"));
  EXPECT_THAT(TensorFromProto(Int32Data(2, {-1}), "b", TensorTypes::kAll).status().message(),
              HasSubstr("int32_data[0] = -1 does not fit in uint8"));
}

TEST(FamilyTensorIoTest, MatMulsLoaderStillRefusesThem) {
  EXPECT_THAT(TensorFromProto(Int32Data(3, {1})).status().message(),
              HasSubstr("INT8 (3) is not a MatMul dtype"));
}

}  // namespace
}  // namespace mm::family
