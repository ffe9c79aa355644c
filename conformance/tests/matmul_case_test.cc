// Recognising and loading MatMul cases: the opset picks the MatMul version, non-MatMul models are
// skipped, and every kind of bad input is refused with a message naming the file.
#include "mm/conformance/loader/matmul_case.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bad_cases.h"
#include "fake_backends.h"
#include "mm/backends/backend_list.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/session/run.h"
#include "mm/engine/testing/test_names.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using testing::BadCase;
using ::testing::HasSubstr;
using testing::TempDir;

struct OpsetRow {
  std::string why;
  int opset;
  int matmul_version;
  DType dtype;
  bool allowed;
};

class OpsetTest : public ::testing::TestWithParam<OpsetRow> {};

TEST_P(OpsetTest, OpsetSelectsMatMulVersionAndDTypes) {
  const OpsetRow& row = GetParam();
  auto model =
      testing::MatMulModel(GetDTypeInfo(row.dtype).onnx_enum, {2, 3}, {3, 4}, {2, 4}, row.opset);
  auto kind = ClassifyModel(model);
  if (!row.allowed) {
    ASSERT_FALSE(kind.ok());
    EXPECT_THAT(kind.status().message(),
                HasSubstr("MatMul-" + std::to_string(row.matmul_version) + " (selected by opset " +
                          std::to_string(row.opset) + ") does not allow"));
    return;
  }
  ASSERT_TRUE(kind.ok()) << kind.status();
  ASSERT_TRUE(kind->matmul.has_value()) << kind->skip_reason;
  EXPECT_EQ(kind->matmul->matmul_version, row.matmul_version);
  EXPECT_EQ(kind->matmul->opset, row.opset);
}

INSTANTIATE_TEST_SUITE_P(
    Versions, OpsetTest,
    ::testing::Values(
        OpsetRow{"opset 1 is MatMul-1: float allowed", 1, 1, DType::kFloat, true},
        OpsetRow{"opset 8 is still MatMul-1: int64 not yet", 8, 1, DType::kInt64, false},
        OpsetRow{"opset 9 is MatMul-9: uint32 allowed", 9, 9, DType::kUInt32, true},
        OpsetRow{"opset 12 is MatMul-9: bfloat16 not yet", 12, 9, DType::kBFloat16, false},
        OpsetRow{"opset 13 is MatMul-13: bfloat16 allowed", 13, 13, DType::kBFloat16, true},
        OpsetRow{"opset 17 is still MatMul-13: uint64 allowed", 17, 13, DType::kUInt64, true},
        OpsetRow{"opset 22, newer than libonnx 1.12, is MatMul-13", 22, 13, DType::kFloat16, true}),
    mm::testing::NameFromWhy());

TEST(ClassifyModelTest, OtherOperatorsAreSkippedNotErrors) {
  auto model = testing::MatMulModel(onnx::TensorProto::FLOAT, {2}, {2}, {2});
  model.mutable_graph()->mutable_node(0)->set_op_type("Add");
  auto kind = ClassifyModel(model);
  ASSERT_TRUE(kind.ok()) << kind.status();
  EXPECT_FALSE(kind->matmul.has_value());
  EXPECT_EQ(kind->skip_reason, "not a MatMul case: op Add");
}

TEST(ClassifyModelTest, MultiNodeGraphsAreSkipped) {
  auto model = testing::MatMulModel(onnx::TensorProto::FLOAT, {2, 3}, {3, 4}, {2, 4});
  *model.mutable_graph()->add_node() = model.graph().node(0);
  auto kind = ClassifyModel(model);
  ASSERT_TRUE(kind.ok()) << kind.status();
  EXPECT_FALSE(kind->matmul.has_value());
  EXPECT_THAT(kind->skip_reason, HasSubstr("graph has 2 nodes"));
}

TEST(ClassifyModelTest, SymbolicDimsMatchAnyExtent) {
  TempDir root;
  const auto dir = testing::WriteFloatCase(root.path(), "case", {2, 3}, {3, 4});
  auto model = testing::MatMulModel(onnx::TensorProto::FLOAT, {2, 3}, {3, 4}, {2, 4});
  model.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("batch");
  testing::WriteMessage(dir / "model.onnx", model);
  auto kind = ClassifyCaseDir(dir);
  ASSERT_TRUE(kind.ok()) << kind.status();
  ASSERT_TRUE(kind->matmul.has_value());
  auto loaded = LoadMatMulCase(dir, "case", *kind->matmul);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
}

TEST(LoadMatMulCaseTest, EveryDataSetInNumericOrder) {
  TempDir root;
  const auto dir = testing::WriteFloatCase(root.path(), "case", {2, 3}, {3, 4});
  // test_data_set_10 must come after test_data_set_2, not between 1 and 2.
  for (const char* name : {"test_data_set_10", "test_data_set_2", "test_data_set_1"}) {
    std::filesystem::copy(dir / "test_data_set_0", dir / name);
  }
  auto kind = ClassifyCaseDir(dir);
  ASSERT_TRUE(kind.ok() && kind->matmul) << kind.status();
  auto loaded = LoadMatMulCase(dir, "case", *kind->matmul);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::vector<std::string> names;
  for (const auto& set : loaded->data_sets) names.push_back(set.name);
  EXPECT_THAT(names, ::testing::ElementsAre("test_data_set_0", "test_data_set_1", "test_data_set_2",
                                            "test_data_set_10"));
}

class BadInputTest : public ::testing::TestWithParam<BadCase> {};

// Each bad input is an invalid case: an ERROR on every backend with a message that names the file,
// never a PASS.
TEST_P(BadInputTest, IsAnErrorNamingTheFile) {
  const BadCase& row = GetParam();
  TempDir root;
  row.write(root.path(), "broken");
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  ASSERT_EQ(catalog.cases.size(), 1u) << "a bad MatMul case must be listed, not skipped";
  const auto results =
      RunConformance(catalog, BuiltinBackends(), testing::OnBackends({"reference"}));
  ASSERT_FALSE(results.empty());
  for (const Result& r : results) {
    EXPECT_EQ(r.verdict, Verdict::kError) << r.message;
    EXPECT_THAT(r.message, HasSubstr(row.expected_message));
    if (!row.bad_file.empty()) {
      EXPECT_THAT(r.message, HasSubstr((root.path() / "broken" / row.bad_file).string()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MalformedCases, BadInputTest, ::testing::ValuesIn(testing::BadCases()),
                         mm::testing::NameFromWhy());

}  // namespace
}  // namespace mm::conformance
