#include "mm/family/op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "mm/family/problem.h"

namespace mm::family {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FamilyOpTest, NamesAreOnnxOpTypesAndReadBack) {
  EXPECT_EQ(OpName(Op::kMatMul), "MatMul");
  EXPECT_EQ(OpName(Op::kGemm), "Gemm");
  EXPECT_EQ(OpName(Op::kMatMulInteger), "MatMulInteger");
  EXPECT_EQ(OpName(Op::kQLinearMatMul), "QLinearMatMul");
  for (Op op : kAllOps) EXPECT_EQ(*OpFromName(OpName(op)), op);
  EXPECT_THAT(OpFromName("gemm").status().message(), HasSubstr("'gemm' is not an operator"));
}

TEST(FamilyOpTest, VersionsAreTheStandardsSinceVersions) {
  auto list = [](Op op) {
    std::span<const int> v = OpVersions(op);
    return std::vector<int>(v.begin(), v.end());
  };
  EXPECT_THAT(list(Op::kMatMul), ElementsAre(1, 9, 13));
  EXPECT_THAT(list(Op::kGemm), ElementsAre(1, 6, 7, 9, 11, 13));
  EXPECT_THAT(list(Op::kMatMulInteger), ElementsAre(10));
  EXPECT_THAT(list(Op::kQLinearMatMul), ElementsAre(10, 21));
  EXPECT_TRUE(CheckOpVersion(Op::kGemm, 11).ok());
  EXPECT_THAT(CheckOpVersion(Op::kGemm, 8).message(),
              HasSubstr("Gemm has no version 8 (versions: 1, 6, 7, 9, 11, 13)"));
}

TEST(FamilyOpTest, AnOpsetSelectsTheNewestVersionNotAfterIt) {
  EXPECT_EQ(*OpVersionAtOpset(Op::kGemm, 8), 7);
  EXPECT_EQ(*OpVersionAtOpset(Op::kGemm, 13), 13);
  EXPECT_EQ(*OpVersionAtOpset(Op::kGemm, 22), 13);
  EXPECT_EQ(*OpVersionAtOpset(Op::kQLinearMatMul, 20), 10);
  EXPECT_EQ(*OpVersionAtOpset(Op::kQLinearMatMul, 21), 21);
  EXPECT_THAT(OpVersionAtOpset(Op::kMatMulInteger, 9).status().message(),
              HasSubstr("MatMulInteger does not exist in opset 9; it appeared in opset 10"));
}

TEST(FamilyOpTest, InputNamesAreOnnxsInOrder) {
  auto list = [](Op op) {
    std::span<const std::string_view> v = InputNames(op);
    return std::vector<std::string_view>(v.begin(), v.end());
  };
  EXPECT_THAT(list(Op::kGemm), ElementsAre("A", "B", "C"));
  EXPECT_THAT(list(Op::kMatMulInteger), ElementsAre("A", "B", "a_zero_point", "b_zero_point"));
  EXPECT_THAT(list(Op::kQLinearMatMul), ElementsAre("a", "a_scale", "a_zero_point", "b", "b_scale",
                                                    "b_zero_point", "y_scale", "y_zero_point"));
}

}  // namespace
}  // namespace mm::family
