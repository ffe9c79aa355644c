#include "mm/engine/dtype.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mm {
namespace {

using ::testing::HasSubstr;

TEST(DTypeTest, OnnxNamesEnumsAndSizesMatchTheSchema) {
  struct Row {
    DType dtype;
    const char* onnx_name;
    int onnx_enum;
    std::size_t size;
  };
  // onnx.TensorProto.DataType values from onnx.proto.
  const Row rows[] = {
      {DType::kFloat, "tensor(float)", 1, 4},      {DType::kDouble, "tensor(double)", 11, 8},
      {DType::kFloat16, "tensor(float16)", 10, 2}, {DType::kBFloat16, "tensor(bfloat16)", 16, 2},
      {DType::kInt32, "tensor(int32)", 6, 4},      {DType::kInt64, "tensor(int64)", 7, 8},
      {DType::kUInt32, "tensor(uint32)", 12, 4},   {DType::kUInt64, "tensor(uint64)", 13, 8}};
  for (const Row& row : rows) {
    const DTypeInfo& info = GetDTypeInfo(row.dtype);
    EXPECT_EQ(info.onnx_name, row.onnx_name);
    EXPECT_EQ(info.onnx_enum, row.onnx_enum);
    EXPECT_EQ(info.size, row.size);
    EXPECT_EQ(*DTypeFromOnnxEnum(row.onnx_enum), row.dtype);
    EXPECT_EQ(*DTypeFromName(row.onnx_name), row.dtype);
    EXPECT_EQ(*DTypeFromName(info.name), row.dtype);
  }
}

TEST(DTypeTest, StorageTypesHaveTheDTypeSize) {
  for (DType dtype : kAllDTypes) {
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      EXPECT_EQ(sizeof(T), DTypeSize(dtype));
      EXPECT_EQ(DTypeOf<T>(), dtype);
    });
  }
}

TEST(DTypeTest, NonMatMulOnnxTypesAreRefusedByName) {
  auto int8 = DTypeFromOnnxEnum(3);
  ASSERT_FALSE(int8.ok());
  EXPECT_THAT(int8.status().message(), HasSubstr("INT8 (3) is not a MatMul dtype"));
  EXPECT_THAT(DTypeFromOnnxEnum(0).status().message(), HasSubstr("UNDEFINED"));
  EXPECT_THAT(DTypeFromOnnxEnum(99).status().message(), HasSubstr("UNKNOWN(99)"));
  EXPECT_FALSE(DTypeFromName("complex64").ok());
}

TEST(DTypeTest, ShortNamesAreAccepted) {
  EXPECT_EQ(*DTypeFromName("fp16"), DType::kFloat16);
  EXPECT_EQ(*DTypeFromName("bf16"), DType::kBFloat16);
  EXPECT_EQ(*DTypeFromName("float32"), DType::kFloat);
  EXPECT_EQ(*DTypeFromName("FLOAT64"), DType::kDouble);
}

double F16(double x) { return static_cast<float>(RoundToFloat16(x)); }
double BF16(double x) { return static_cast<float>(RoundToBFloat16(x)); }

TEST(RoundingTest, Float16TiesGoToEven) {
  // Between 1 and 1 + 2^-10 the tie 1 + 2^-11 goes to 1 (even mantissa); between 1 + 2^-10 and
  // 1 + 2^-9 the tie goes up to 1 + 2^-9.
  EXPECT_EQ(F16(1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(F16(1.0 + 3 * std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(F16(-(1.0 + std::ldexp(1.0, -11))), -1.0);
}

TEST(RoundingTest, Float16FromDoubleRoundsOnce) {
  // Just above the tie: the nearest float16 is 1 + 2^-10. Rounding through float first would land
  // exactly on the tie (the 2^-40 is lost) and then go to 1.
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(F16(above_tie), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(F16(-above_tie), -(1.0 + std::ldexp(1.0, -10)));
  const double below_tie = 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
  EXPECT_EQ(F16(below_tie), 1.0);
}

TEST(RoundingTest, BFloat16TiesGoToEvenAndRoundOnce) {
  EXPECT_EQ(BF16(1.0 + std::ldexp(1.0, -8)), 1.0);
  EXPECT_EQ(BF16(1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(BF16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 1.0 + std::ldexp(1.0, -7));
}

TEST(RoundingTest, OverflowNaNAndInfinity) {
  EXPECT_EQ(F16(65504.0), 65504.0);   // float16 max.
  EXPECT_EQ(F16(65519.0), 65504.0);   // Below the half-way point to 65536 stays finite.
  EXPECT_EQ(F16(65520.0), INFINITY);  // The tie rounds to even, which is infinity.
  EXPECT_EQ(F16(1e300), INFINITY);    // Far beyond float's range too.
  EXPECT_EQ(F16(-1e300), -INFINITY);
  EXPECT_EQ(BF16(1e300), INFINITY);
  EXPECT_EQ(F16(INFINITY), INFINITY);
  EXPECT_EQ(BF16(-INFINITY), -INFINITY);
  EXPECT_TRUE(std::isnan(F16(NAN)));
  EXPECT_TRUE(std::isnan(BF16(NAN)));
}

TEST(RoundingTest, SubnormalsAndSignedZero) {
  const double smallest_f16 = std::ldexp(1.0, -24);
  EXPECT_EQ(F16(smallest_f16), smallest_f16);
  EXPECT_EQ(F16(smallest_f16 / 2), 0.0);                                  // Tie to even (zero).
  EXPECT_EQ(F16(smallest_f16 / 2 + std::ldexp(1.0, -60)), smallest_f16);  // Just above the tie.
  EXPECT_TRUE(std::signbit(F16(-0.0)));
}

TEST(RoundingTest, RoundToOddKeepsExactValuesAndMarksInexactOnes) {
  EXPECT_EQ(RoundToOddFloat(0.5), 0.5f);
  const float r = RoundToOddFloat(1.0 + std::ldexp(1.0, -40));
  EXPECT_EQ(r, std::nextafter(1.0f, 2.0f));  // Odd neighbour above 1.
}

}  // namespace
}  // namespace mm
