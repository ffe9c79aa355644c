// Reading an ONNX node test of MatMul's family back into a problem, for the tests: the official
// cases (official_cases_test.cc) and the node tests mm writes of its own catalogue
// (family_node_test_test.cc). The operator and its version from the model's node and opset, the
// inputs by the operator's ONNX names from test_data_set_0 (input_N.pb is the graph's N-th input),
// the attributes with their ONNX types, the expected output.
#ifndef MM_CONFORMANCE_TESTS_FAMILY_FAMILY_NODE_TEST_READER_H_
#define MM_CONFORMANCE_TESTS_FAMILY_FAMILY_NODE_TEST_READER_H_

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/loader/tensor_proto.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/op.h"
#include "mm/family/problem.h"
#include "onnx/onnx_pb.h"

namespace mm::family::testing {

// The default-domain opset a model imports.
inline int DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      return static_cast<int>(opset.version());
    }
  }
  return 0;
}

inline family::Attribute FromProto(const onnx::AttributeProto& proto) {
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT:
      return family::Attribute::Float(proto.name(), proto.f());
    case onnx::AttributeProto::INT:
      return family::Attribute::Int(proto.name(), proto.i());
    default: {
      family::Attribute other;
      other.name = proto.name();
      other.type = family::AttributeType::kOther;
      other.other_type = onnx::AttributeProto::AttributeType_Name(proto.type());
      return other;
    }
  }
}

// One family node test read: its problem (views into `tensors`) and expected output.
struct FamilyNodeTestRead {
  std::string name;
  family::Problem problem;
  std::vector<Tensor> tensors;
  Tensor expected;
};

inline StatusOr<FamilyNodeTestRead> ReadFamilyNodeTest(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  using conformance::TensorTypes;
  FamilyNodeTestRead out;
  out.name = dir.filename().string();
  MM_ASSIGN_OR_RETURN(const onnx::ModelProto model, conformance::LoadModelFile(dir / "model.onnx"));
  if (model.graph().node_size() != 1) return InvalidArgumentError(out.name + ": not one node");
  const onnx::NodeProto& node = model.graph().node(0);
  MM_ASSIGN_OR_RETURN(out.problem.op, family::OpFromName(node.op_type()));
  MM_ASSIGN_OR_RETURN(out.problem.version,
                      family::OpVersionAtOpset(out.problem.op, DefaultOpset(model)));
  // input_N.pb is the graph's N-th input; the node names which input each is.
  const fs::path data = dir / "test_data_set_0";
  out.tensors.reserve(static_cast<std::size_t>(model.graph().input_size()));
  for (int i = 0; i < model.graph().input_size(); ++i) {
    const fs::path file = data / ("input_" + std::to_string(i) + ".pb");
    MM_ASSIGN_OR_RETURN(conformance::NamedTensor t,
                        conformance::LoadTensorFile(file, {}, TensorTypes::kAll));
    out.tensors.push_back(std::move(t.tensor));
  }
  const std::span<const std::string_view> names = family::InputNames(out.problem.op);
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

}  // namespace mm::family::testing

#endif  // MM_CONFORMANCE_TESTS_FAMILY_FAMILY_NODE_TEST_READER_H_
