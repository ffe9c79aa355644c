// The family's node tests as the one node-test writer writes them: every built-in family case
// passes ONNX's checker (and, where libonnx knows the operator's version, its strict type and
// shape inference), and reading it back with the conformance loader gives the same problem and
// the exact oracle's Y.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "family_node_test_reader.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/engine/testing/temp_dir.h"
#include "mm/family/plan.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::conformance {
namespace {

using family::Op;
using mm::testing::TempDir;
using ::testing::HasSubstr;

// The newest default-domain opset Debian's libonnx (1.12) knows the schemas of.
constexpr int kLibonnxOpset = 17;

bool SameBytes(TensorView a, TensorView b) {
  if (a.dtype != b.dtype ||
      !std::equal(a.dims.begin(), a.dims.end(), b.dims.begin(), b.dims.end())) {
    return false;
  }
  const std::size_t bytes = static_cast<std::size_t>(a.NumElements()) * DTypeSize(a.dtype);
  return bytes == 0 || std::memcmp(a.data, b.data, bytes) == 0;
}

// ONNX's checker on `model`. libonnx 1.12 refuses an IR version above its own (8) outright; a
// model of IR version 10 (opset 21, QLinearMatMul-21) is checked as IR 8, where the checker
// checks the node against the newest schema it has (QLinearMatMul-10: the same inputs, no
// attributes). Where it knows the opset, strict shape inference checks every type against the
// schema's constraints and Y's declared shape against the inferred one.
void Check(const onnx::ModelProto& written, const std::string& name) {
  onnx::ModelProto model = written;
  if (model.ir_version() > onnx::IR_VERSION) model.set_ir_version(onnx::IR_VERSION);
  EXPECT_NO_THROW(onnx::checker::check_model(model)) << name;
  if (model.opset_import(0).version() > kLibonnxOpset) return;
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1)))
      << name;
}

TEST(FamilyNodeTestTest, EveryBuiltinCaseIsAModelOnnxsCheckerAccepts) {
  int strict = 0;
  for (const FamilyCase& c : BuiltinFamilyCases()) {
    const Tensor y = FamilyCaseExpectedY(c).value();
    const StatusOr<NodeTest> test = FamilyNodeTest(c.problem, y);
    ASSERT_TRUE(test.ok()) << c.name << ": " << test.status();
    Check(test->model, c.name);
    strict += c.problem.version <= kLibonnxOpset;
  }
  EXPECT_GT(strict, 500);
}

// Written, then read back by the loader (LoadModelFile, LoadTensorFile): the same operator,
// version, inputs (names, types, shapes, bytes), attributes (names, ONNX types, values), and the
// exact oracle's Y. Every fourth case (files are slow to write here; export-builtin's test
// writes them all), and every version's first.
TEST(FamilyNodeTestTest, ReadBackItIsTheSameProblemAndTheOraclesY) {
  TempDir dir;
  std::set<std::pair<Op, int>> versions;
  std::size_t index = 0;
  for (const FamilyCase& c : BuiltinFamilyCases()) {
    const bool first = versions.insert({c.problem.op, c.problem.version}).second;
    if (index++ % 4 != 0 && !first) continue;
    const Tensor y = FamilyCaseExpectedY(c).value();
    ASSERT_TRUE(WriteFamilyNodeTest(dir.path() / c.name, c.problem, y, "test").ok()) << c.name;
    const auto read = family::testing::ReadFamilyNodeTest(dir.path() / c.name);
    ASSERT_TRUE(read.ok()) << c.name << ": " << read.status();
    EXPECT_EQ(read->problem.ToString(), c.problem.ToString()) << c.name;
    ASSERT_EQ(read->problem.inputs.size(), c.problem.inputs.size()) << c.name;
    for (std::size_t i = 0; i < c.problem.inputs.size(); ++i) {
      EXPECT_EQ(read->problem.inputs[i].name, c.problem.inputs[i].name) << c.name;
      EXPECT_TRUE(SameBytes(read->problem.inputs[i].tensor, c.problem.inputs[i].tensor))
          << c.name << " " << c.problem.inputs[i].name;
    }
    ASSERT_EQ(read->problem.attributes.size(), c.problem.attributes.size()) << c.name;
    for (std::size_t i = 0; i < c.problem.attributes.size(); ++i) {
      const family::Attribute& got = read->problem.attributes[i];
      const family::Attribute& want = c.problem.attributes[i];
      EXPECT_EQ(got.TypeName(), want.TypeName()) << c.name << " " << want.name;
      EXPECT_EQ(got.name, want.name) << c.name;
      EXPECT_EQ(got.f, want.f) << c.name << " " << want.name;
      EXPECT_EQ(got.i, want.i) << c.name << " " << want.name;
    }
    EXPECT_TRUE(SameBytes(read->expected.view(), y.view())) << c.name;
    EXPECT_TRUE(family::PlanProblem(read->problem).ok()) << c.name;
  }
}

// The model as ONNX states the node: the opset of the version, the node's inputs by the schema's
// names with an absent optional input in the middle written "", 8-bit tensors in raw_data.
TEST(FamilyNodeTestTest, TheModelStatesTheNodeAsOnnxDoes) {
  family::testing::ProblemBuilder b(Op::kMatMulInteger, 10);
  b.Input("A", DType::kUInt8, {2, 3}, {255, 0, 128, 1, 2, 3})
      .Input("B", DType::kInt8, {3, 1}, {-128, 127, 5})
      .Input("b_zero_point", DType::kInt8, {}, {-1});
  const Tensor y = Tensor::Create(DType::kInt32, {2, 1}).value();
  const NodeTest test = FamilyNodeTest(b.problem(), y).value();
  const onnx::NodeProto& node = test.model.graph().node(0);
  EXPECT_EQ(node.op_type(), "MatMulInteger");
  EXPECT_THAT(node.input(), ::testing::ElementsAre("A", "B", "", "b_zero_point"));
  EXPECT_EQ(test.model.opset_import(0).version(), 10);
  EXPECT_EQ(test.model.graph().input_size(), 3);
  EXPECT_EQ(node.output(0), "Y");
  const onnx::TensorProto& a = test.data_sets[0].inputs[0];
  EXPECT_EQ(a.data_type(), onnx::TensorProto::UINT8);
  EXPECT_EQ(a.raw_data(), std::string("\xff\x00\x80\x01\x02\x03", 6));
  EXPECT_EQ(test.data_sets[0].inputs[2].data_type(), onnx::TensorProto::INT8);
  Check(test.model, "hand-made MatMulInteger");

  family::testing::ProblemBuilder g(Op::kGemm, 13);
  g.Input("A", DType::kFloat, {2, 2}).Input("B", DType::kFloat, {2, 2}).Float("alpha", 0.5f);
  g.Int("transB", 1);
  const NodeTest gemm =
      FamilyNodeTest(g.problem(), Tensor::Create(DType::kFloat, {2, 2}).value()).value();
  const auto& attributes = gemm.model.graph().node(0).attribute();
  ASSERT_EQ(attributes.size(), 2);
  EXPECT_EQ(attributes[0].type(), onnx::AttributeProto::FLOAT);
  EXPECT_EQ(attributes[0].f(), 0.5f);
  EXPECT_EQ(attributes[1].type(), onnx::AttributeProto::INT);
  EXPECT_EQ(gemm.model.graph().node(0).input_size(), 2);  // No C: nothing after B.
  EXPECT_EQ(gemm.model.ir_version(), 7);
}

TEST(FamilyNodeTestTest, QLinearMatMul21IsWrittenAtIrVersion10) {
  EXPECT_EQ(IrVersionForOpset(13), 7);
  EXPECT_EQ(IrVersionForOpset(21), 10);
  for (const FamilyCase& c : BuiltinFamilyCases()) {
    if (c.problem.op != Op::kQLinearMatMul || c.problem.version != 21) continue;
    const NodeTest test = FamilyNodeTest(c.problem, FamilyCaseExpectedY(c).value()).value();
    EXPECT_EQ(test.model.ir_version(), 10);
    EXPECT_EQ(test.model.graph().output(0).name(), "y");
    return;
  }
  FAIL() << "no QLinearMatMul-21 case";
}

// An attribute whose value a problem does not hold cannot be written: an error, not a node
// without it.
TEST(FamilyNodeTestTest, AnAttributeOfAnotherTypeIsAnError) {
  family::testing::ProblemBuilder g(Op::kGemm, 13);
  g.Input("A", DType::kFloat, {1, 1}).Input("B", DType::kFloat, {1, 1});
  family::Attribute floats;
  floats.name = "alpha";
  floats.type = family::AttributeType::kOther;
  floats.other_type = "FLOATS";
  g.Attr(floats);
  const auto test = FamilyNodeTest(g.problem(), Tensor::Create(DType::kFloat, {1, 1}).value());
  ASSERT_FALSE(test.ok());
  EXPECT_EQ(test.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(test.status().message(), HasSubstr("alpha is of type FLOATS"));
}

}  // namespace
}  // namespace mm::conformance
