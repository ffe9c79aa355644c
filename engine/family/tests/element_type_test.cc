// int8 and uint8, the element types MatMul's family adds: their names, sizes and ONNX enums, read
// back by the family's entries, and refused by every MatMul entry (MatMul-13 has no 8-bit type).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "mm/engine/backend.h"
#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/testing/fake_backend.h"

namespace mm {
namespace {

using ::testing::HasSubstr;

TEST(FamilyElementTypeTest, NamesSizesAndOnnxEnums) {
  EXPECT_EQ(DTypeName(DType::kInt8), "int8");
  EXPECT_EQ(DTypeName(DType::kUInt8), "uint8");
  EXPECT_EQ(DTypeSize(DType::kInt8), 1u);
  EXPECT_EQ(DTypeSize(DType::kUInt8), 1u);
  EXPECT_FALSE(IsFloat(DType::kInt8));
  EXPECT_EQ(GetDTypeInfo(DType::kInt8).onnx_enum, 3);
  EXPECT_EQ(GetDTypeInfo(DType::kUInt8).onnx_enum, 2);
  EXPECT_EQ(GetDTypeInfo(DType::kUInt8).onnx_name, "tensor(uint8)");
  EXPECT_EQ(DTypeOf<std::int8_t>(), DType::kInt8);
  EXPECT_EQ(DTypeOf<std::uint8_t>(), DType::kUInt8);
}

TEST(FamilyElementTypeTest, TheFamilysEntriesReadThemBack) {
  EXPECT_EQ(*ElementTypeFromOnnxEnum(3), DType::kInt8);
  EXPECT_EQ(*ElementTypeFromOnnxEnum(2), DType::kUInt8);
  EXPECT_EQ(*ElementTypeFromName("tensor(uint8)"), DType::kUInt8);
  EXPECT_EQ(*ElementTypeFromName("INT8"), DType::kInt8);
  EXPECT_EQ(*ElementTypeFromOnnxEnum(1), DType::kFloat);
  EXPECT_THAT(ElementTypeFromOnnxEnum(4).status().message(),
              HasSubstr("UINT16 (4) is not an element type mm knows"));
  for (const DType dtype : kAllElementTypes) {
    EXPECT_EQ(*ElementTypeFromName(DTypeName(dtype)), dtype);
    EXPECT_EQ(*ElementTypeFromOnnxEnum(GetDTypeInfo(dtype).onnx_enum), dtype);
  }
}

TEST(FamilyElementTypeTest, EveryMatMulEntryRefusesThem) {
  EXPECT_EQ(std::count(kAllDTypes.begin(), kAllDTypes.end(), DType::kInt8), 0);
  EXPECT_EQ(std::count(kAllDTypes.begin(), kAllDTypes.end(), DType::kUInt8), 0);
  EXPECT_FALSE(IsMatMulDType(DType::kUInt8));
  for (const DType dtype : kAllDTypes) EXPECT_TRUE(IsMatMulDType(dtype));
  EXPECT_THAT(DTypeFromOnnxEnum(3).status().message(), HasSubstr("INT8 (3) is not a MatMul dtype"));
  EXPECT_THAT(DTypeFromName("uint8").status().message(),
              HasSubstr("'uint8' is not a MatMul dtype (MatMul-13 takes float"));
  EXPECT_THAT(CheckMatMulDType(DType::kInt8).message(), HasSubstr("int8 is not a MatMul dtype"));
  // A backend that would take any dtype is still never asked to compute an 8-bit MatMul.
  testing::FakeBackend backend;
  const MatMulPlan plan = PlanMatMul({DType::kInt8, {2, 3}, {3, 2}}).value();
  const auto primitive = backend.Prepare(plan);
  ASSERT_FALSE(primitive.ok());
  EXPECT_THAT(primitive.status().message(), HasSubstr("int8 is not a MatMul dtype"));
  EXPECT_EQ(backend.calls().supports, 0);
}

}  // namespace
}  // namespace mm
