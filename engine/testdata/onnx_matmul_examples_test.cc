#include "mm/engine/testdata/onnx_matmul_examples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mm/engine/testing/test_names.h"

namespace mm {
namespace {

using ::testing::HasSubstr;

TEST(BuiltinExamplesTest, HasTheNineExamplesOfTheOnnxPageWithTheirShapes) {
  auto examples = BuiltinExamples();
  ASSERT_TRUE(examples.ok()) << examples.status();
  struct Expected {
    const char* name;
    Dims a, b, y;
  };
  const Expected expected[] = {
      {"test_cc_matmul_1d_1d", {3}, {3}, {}},
      {"test_cc_matmul_1d_3d", {4}, {2, 4, 3}, {2, 3}},
      {"test_cc_matmul_2d", {2, 3}, {3, 4}, {2, 4}},
      {"test_cc_matmul_3d", {2, 3, 4}, {2, 4, 3}, {2, 3, 3}},
      {"test_cc_matmul_4d", {1, 2, 3, 4}, {1, 2, 4, 3}, {1, 2, 3, 3}},
      {"test_cc_matmul_4d_1d", {2, 3, 4, 5}, {5}, {2, 3, 4}},
      {"test_cc_matmul_batch_broadcast", {2, 2, 3}, {1, 3, 4}, {2, 2, 4}},
      {"test_cc_matmul_bcast", {2, 3, 4}, {4, 5}, {2, 3, 5}},
      {"test_cc_matmul_vector_matrix", {3}, {3, 2}, {2}},
  };
  ASSERT_EQ(examples->size(), std::size(expected));
  for (std::size_t i = 0; i < examples->size(); ++i) {
    const ExampleCase& e = (*examples)[i];
    EXPECT_EQ(e.name, expected[i].name);
    EXPECT_EQ(e.a.dims(), expected[i].a) << e.name;
    EXPECT_EQ(e.b.dims(), expected[i].b) << e.name;
    EXPECT_EQ(e.y.dims(), expected[i].y) << e.name;
    EXPECT_EQ(e.a.dtype(), DType::kFloat);
  }
  // Spot values straight from the page.
  EXPECT_EQ((*examples)[0].y.Data<float>()[0], -0.44422f);
  EXPECT_EQ((*examples)[8].y.Data<float>()[1], 0.34337956f);
}

TEST(ParseExamplesTest, ParsesIntegerAndFloatTensors) {
  auto parsed = ParseExamples(
      "# comment\ncase t\na int64 [2]\n-3 9223372036854775807\nb int64 [2]\n1 0\n"
      "y int64 []\n-3\nend\n",
      "inline");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)[0].a.Data<std::int64_t>()[1], 9223372036854775807);
}

struct BadText {
  const char* why;
  const char* text;
  const char* message;
};

const BadText kBadTexts[] = {
    {"empty input", "", "no cases"},
    {"missing case header", "a float [1]\n1\n", "inline:1: expected 'case NAME'"},
    {"too few values", "case t\na float [2]\n1\nb float [1]\n1\ny float []\n1\nend\n",
     "needs 2 values, found 1"},
    {"too many values", "case t\na float [1]\n1 2\n", "has more than 1 values"},
    {"not a number", "case t\na float [1]\nx\n", "'x' is not a number"},
    {"integer out of range", "case t\na int32 [1]\n3000000000\n", "is not a int32"},
    {"unknown dtype", "case t\na int16 [1]\n1\n", "unknown dtype 'int16'"},
    {"an 8-bit dtype", "case t\na int8 [1]\n1\n", "'int8' is not a MatMul dtype"},
    {"bad dims", "case t\na float [2,x]\n", "bad dimension 'x'"},
    {"missing end", "case t\na float []\n1\nb float []\n1\ny float []\n1\n", "expected 'end'"},
    {"tensors out of order", "case t\nb float []\n1\n", "expected 'a DTYPE [dims]'"},
};

class ParseExamplesErrorTest : public ::testing::TestWithParam<BadText> {};

TEST_P(ParseExamplesErrorTest, NamesTheProblemAndLine) {
  auto parsed = ParseExamples(GetParam().text, "inline");
  ASSERT_FALSE(parsed.ok()) << GetParam().why;
  EXPECT_THAT(parsed.status().message(), HasSubstr(GetParam().message)) << GetParam().why;
}

INSTANTIATE_TEST_SUITE_P(Malformed, ParseExamplesErrorTest, ::testing::ValuesIn(kBadTexts),
                         mm::testing::NameFromWhy());

}  // namespace
}  // namespace mm
