// ONNX's 20 official node tests of MatMul's family (onnx v1.22.0: 11 Gemm, 1 MatMulInteger,
// 8 QLinearMatMul-21), read from MM_FAMILY_DATA (never copied into the repository), their
// SHA256SUMS checked first: each is planned and its expected output judged PASS by the exact
// judgement.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mm/conformance/loader/tensor_proto.h"
#include "mm/conformance/official/sha256.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"
#include "onnx/onnx_pb.h"

namespace mm::family {
namespace {

namespace fs = std::filesystem;

// The data folder, or empty when MM_FAMILY_DATA is unset.
fs::path DataRoot() {
  const char* root = std::getenv("MM_FAMILY_DATA");
  return root == nullptr ? fs::path() : fs::path(root);
}

// The default-domain opset a model imports.
int DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      return static_cast<int>(opset.version());
    }
  }
  return 0;
}

Attribute FromProto(const onnx::AttributeProto& proto) {
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT:
      return Attribute::Float(proto.name(), proto.f());
    case onnx::AttributeProto::INT:
      return Attribute::Int(proto.name(), proto.i());
    default: {
      Attribute other;
      other.name = proto.name();
      other.type = AttributeType::kOther;
      other.other_type = onnx::AttributeProto::AttributeType_Name(proto.type());
      return other;
    }
  }
}

// One official case loaded: its problem (views into `tensors`) and expected output.
struct OfficialCase {
  std::string name;
  Problem problem;
  std::vector<Tensor> tensors;
  Tensor expected;
};

StatusOr<OfficialCase> LoadCase(const fs::path& dir) {
  using conformance::TensorTypes;
  OfficialCase out;
  out.name = dir.filename().string();
  MM_ASSIGN_OR_RETURN(const onnx::ModelProto model, conformance::LoadModelFile(dir / "model.onnx"));
  if (model.graph().node_size() != 1) return InvalidArgumentError(out.name + ": not one node");
  const onnx::NodeProto& node = model.graph().node(0);
  MM_ASSIGN_OR_RETURN(out.problem.op, OpFromName(node.op_type()));
  MM_ASSIGN_OR_RETURN(out.problem.version, OpVersionAtOpset(out.problem.op, DefaultOpset(model)));
  // input_N.pb is the graph's N-th input; the node names which input each is.
  const fs::path data = dir / "test_data_set_0";
  out.tensors.reserve(static_cast<std::size_t>(model.graph().input_size()));
  for (int i = 0; i < model.graph().input_size(); ++i) {
    const fs::path file = data / ("input_" + std::to_string(i) + ".pb");
    MM_ASSIGN_OR_RETURN(conformance::NamedTensor t,
                        conformance::LoadTensorFile(file, {}, TensorTypes::kAll));
    out.tensors.push_back(std::move(t.tensor));
  }
  const std::span<const std::string_view> names = InputNames(out.problem.op);
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) continue;  // A skipped optional input.
    for (int g = 0; g < model.graph().input_size(); ++g) {
      if (model.graph().input(g).name() != node.input(i)) continue;
      out.problem.inputs.push_back({std::string(names[static_cast<std::size_t>(i)]),
                                    out.tensors[static_cast<std::size_t>(g)].view()});
    }
  }
  for (const auto& attribute : node.attribute()) {
    out.problem.attributes.push_back(FromProto(attribute));
  }
  MM_ASSIGN_OR_RETURN(conformance::NamedTensor y,
                      conformance::LoadTensorFile(data / "output_0.pb", {}, TensorTypes::kAll));
  out.expected = std::move(y.tensor);
  return out;
}

class FamilyOfficialCasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = DataRoot();
    if (root_.empty()) GTEST_SKIP() << "MM_FAMILY_DATA is not set: the official cases are absent";
    if (!fs::is_directory(root_)) {
      GTEST_SKIP() << "MM_FAMILY_DATA " << root_
                   << " is not a folder: the official cases are absent";
    }
  }
  // The case folders, sorted.
  std::vector<fs::path> Cases() const {
    std::vector<fs::path> cases;
    for (const auto& entry : fs::directory_iterator(root_)) {
      if (entry.is_directory()) cases.push_back(entry.path());
    }
    std::sort(cases.begin(), cases.end());
    return cases;
  }
  fs::path root_;
};

TEST_F(FamilyOfficialCasesTest, EveryFileMatchesSha256Sums) {
  std::ifstream sums(root_ / "SHA256SUMS");
  ASSERT_TRUE(sums) << "no SHA256SUMS in " << root_;
  std::string line;
  std::set<std::string> listed;
  while (std::getline(sums, line)) {
    std::istringstream fields(line);
    std::string hash, path;
    fields >> hash >> path;
    if (path == "SHA256SUMS") continue;  // Its own line (summed while it was being written).
    const auto actual = conformance::Sha256HexOfFile(root_ / path);
    ASSERT_TRUE(actual.ok()) << actual.status();
    EXPECT_EQ(*actual, hash) << path;
    listed.insert(path);
  }
  // And nothing unlisted: every file of a case is summed.
  for (const auto& entry : fs::recursive_directory_iterator(root_)) {
    const std::string path = fs::relative(entry.path(), root_).string();
    if (!entry.is_regular_file() || path == "SHA256SUMS" || path == "README.md") continue;
    EXPECT_TRUE(listed.contains(path)) << path << " is not in SHA256SUMS";
  }
  EXPECT_EQ(Cases().size(), 20u);
}

TEST_F(FamilyOfficialCasesTest, EveryCaseIsPlannedAndItsExpectedOutputJudgedPass) {
  std::map<Op, int> per_op;
  for (const fs::path& dir : Cases()) {
    SCOPED_TRACE(dir.filename().string());
    const StatusOr<OfficialCase> loaded = LoadCase(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const StatusOr<Plan> plan = PlanProblem(loaded->problem);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const StatusOr<FamilyOracle> oracle = ExactFamily(*plan, Arithmetic::OwnType(plan->y_dtype));
    ASSERT_TRUE(oracle.ok()) << oracle.status();
    const FamilyJudgement judgement = JudgeFamily(*plan, *oracle, loaded->expected.view());
    EXPECT_EQ(judgement.verdict(), ElementVerdict::kPass) << judgement.Describe();
    ++per_op[plan->op];
  }
  EXPECT_EQ(per_op[Op::kGemm], 11);
  EXPECT_EQ(per_op[Op::kMatMulInteger], 1);
  EXPECT_EQ(per_op[Op::kQLinearMatMul], 8);
}

}  // namespace
}  // namespace mm::family
