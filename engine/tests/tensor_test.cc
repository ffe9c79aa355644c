#include "mm/engine/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace mm {
namespace {

using ::testing::HasSubstr;

TEST(TensorTest, CreateIsZeroFilledAndAligned) {
  auto t = Tensor::Create(DType::kInt32, {3, 5});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->NumElements(), 15);
  EXPECT_EQ(t->NumBytes(), 60u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->raw_data()) % 64, 0u);
  for (std::int32_t v : t->Values<std::int32_t>()) EXPECT_EQ(v, 0);
}

TEST(TensorTest, ScalarHasOneElementAndEmptyHasNone) {
  auto scalar = Tensor::Create(DType::kDouble, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->NumElements(), 1);
  auto empty = Tensor::Create(DType::kDouble, {4, 0, 2});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->NumElements(), 0);
  EXPECT_NE(empty->raw_data(), nullptr);
}

TEST(TensorTest, RefusesNegativeAndOverflowingShapesBeforeAllocating) {
  auto negative = Tensor::Create(DType::kFloat, {2, -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("negative dimension -1 at axis 1"));
  auto huge = Tensor::Create(DType::kFloat, {std::int64_t{1} << 40, std::int64_t{1} << 40});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kOutOfRange);
}

TEST(TensorTest, FromValuesChecksTheCount) {
  const float values[] = {1, 2, 3, 4, 5, 6};
  auto t = Tensor::FromValues<float>({2, 3}, values);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Data<float>()[5], 6.0f);
  auto wrong = Tensor::FromValues<float>({2, 2}, values);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("holds 4 elements but 6 values"));
}

TEST(TensorTest, ViewsShareStorageAndShape) {
  auto t = Tensor::Create(DType::kFloat, {2, 2}).value();
  MutableTensorView view = t.mutable_view();
  view.Data<float>()[3] = 9.0f;
  EXPECT_EQ(t.Data<float>()[3], 9.0f);
  EXPECT_EQ(view.NumElements(), 4);
  TensorView read = view;
  EXPECT_EQ(read.data, t.raw_data());
  EXPECT_EQ(DimsToString(read.dims), "[2,2]");
}

TEST(CheckedElementCountTest, FollowsNumpyRules) {
  EXPECT_EQ(*CheckedElementCount(Dims{}), 1);
  EXPECT_EQ(*CheckedElementCount(Dims{0, 5}), 0);
  // The non-zero dims must fit even when a zero makes the tensor empty, as in numpy.
  EXPECT_FALSE(CheckedElementCount(Dims{0, std::int64_t{1} << 62, 4}).ok());
  EXPECT_TRUE(CheckedElementCount(Dims{std::int64_t{1} << 60}, 4).ok());
  EXPECT_FALSE(CheckedElementCount(Dims{std::int64_t{1} << 60}, 8).ok());
}

}  // namespace
}  // namespace mm
