// The one node-test writer, read back by the loader it shares its protobuf classes with.
#include "mm/conformance/loader/node_test_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "mm/conformance/loader/matmul_case.h"
#include "mm/conformance/loader/tensor_proto.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

bool SameBytes(const Tensor& x, const Tensor& y) {
  return x.dtype() == y.dtype() && x.dims() == y.dims() && x.NumBytes() == y.NumBytes() &&
         std::memcmp(x.raw_data(), y.raw_data(), x.NumBytes()) == 0;
}

// A case written as mm-fuzz exports it loads as the same MatMul, with the opset its dtype needs.
TEST(NodeTestWriterTest, AMatMulNodeTestLoadsBackAsTheSameCase) {
  struct Row {
    DType dtype;
    int opset;  // What OpsetFor must give: the first opset whose MatMul allows the dtype.
  };
  for (const Row& row :
       {Row{DType::kFloat, 7}, Row{DType::kFloat16, 7}, Row{DType::kDouble, 7},
        Row{DType::kInt32, 9}, Row{DType::kUInt64, 9}, Row{DType::kBFloat16, 13}}) {
    SCOPED_TRACE(GetDTypeInfo(row.dtype).name);
    EXPECT_EQ(OpsetFor(row.dtype), row.opset);
    TempDir dir;
    const fs::path case_dir = dir.path() / "test_written";
    // [2,3] x [3] broadcasts B as a vector: Y has B's dim dropped, [2].
    const Tensor a = Tensor::Create(row.dtype, {2, 3}).value();
    const Tensor b = Tensor::Create(row.dtype, {3}).value();
    const Tensor y = Tensor::Create(row.dtype, {2}).value();
    ASSERT_TRUE(WriteMatMulNodeTest(case_dir, a, b, y, "mm-fuzz").ok());

    auto model = LoadModelFile(case_dir / "model.onnx");
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->producer_name(), "mm-fuzz");
    EXPECT_EQ(model->graph().name(), "test_written");
    auto kind = ClassifyModel(*model);
    ASSERT_TRUE(kind.ok()) << kind.status();
    ASSERT_TRUE(kind->matmul.has_value()) << kind->skip_reason;
    EXPECT_EQ(kind->matmul->opset, row.opset);
    auto loaded = LoadMatMulCase(case_dir, "test_written", *kind->matmul);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->dtype, row.dtype);
    ASSERT_EQ(loaded->data_sets.size(), 1u);
    EXPECT_TRUE(SameBytes(loaded->data_sets[0].a, a));
    EXPECT_TRUE(SameBytes(loaded->data_sets[0].b, b));
    EXPECT_TRUE(SameBytes(loaded->data_sets[0].y, y));
  }
}

// Every data set of a NodeTest is written as test_data_set_N, in order, and the loader finds them
// all: how a producer writes a case with several data sets.
TEST(NodeTestWriterTest, EveryDataSetIsWrittenInOrder) {
  const Tensor a = Tensor::FromValues<float>({2, 2}, std::vector<float>{1, 2, 3, 4}).value();
  const Tensor b = Tensor::FromValues<float>({2, 2}, std::vector<float>{5, 6, 7, 8}).value();
  const Tensor y = Tensor::FromValues<float>({2, 2}, std::vector<float>{19, 22, 43, 50}).value();
  const Tensor b2 = Tensor::FromValues<float>({2, 2}, std::vector<float>{1, 0, 0, 1}).value();
  NodeTest test = MatMulNodeTest(a, b, y);
  test.data_sets.push_back(
      {{TensorToProto(a, "a"), TensorToProto(b2, "b")}, {TensorToProto(a, "y")}});
  TempDir dir;
  ASSERT_TRUE(WriteNodeTest(dir.path() / "c", test).ok());
  auto kind = ClassifyCaseDir(dir.path() / "c");
  ASSERT_TRUE(kind.ok() && kind->matmul) << kind.status();
  auto loaded = LoadMatMulCase(dir.path() / "c", "c", *kind->matmul);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->data_sets.size(), 2u);
  EXPECT_EQ(loaded->data_sets[0].name, "test_data_set_0");
  EXPECT_TRUE(SameBytes(loaded->data_sets[0].y, y));
  EXPECT_EQ(loaded->data_sets[1].name, "test_data_set_1");
  EXPECT_TRUE(SameBytes(loaded->data_sets[1].b, b2));
  EXPECT_TRUE(SameBytes(loaded->data_sets[1].y, a));
}

// A case directory that cannot be created is an error naming it, not a crash or a silent success.
TEST(NodeTestWriterTest, AnUnwritablePlaceIsAnErrorNamingIt) {
  TempDir dir;
  const fs::path file = dir.path() / "a_file";
  std::ofstream(file) << "not a directory";
  const Tensor a = Tensor::Create(DType::kFloat, {1, 1}).value();
  const Status st = WriteMatMulNodeTest(file / "case", a, a, a);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr((file / "case").string()));
}

}  // namespace
}  // namespace mm::conformance
