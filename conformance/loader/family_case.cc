#include "mm/conformance/loader/family_case.h"

#include <algorithm>
#include <map>
#include <span>

#include "mm/conformance/loader/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;

// An attribute as family::Problem states it: FLOAT, INT and STRING with their values, any other
// type by its name (PlanProblem refuses it, naming the attribute and the type).
family::Attribute FromProto(const onnx::AttributeProto& proto) {
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT:
      return family::Attribute::Float(proto.name(), proto.f());
    case onnx::AttributeProto::INT:
      return family::Attribute::Int(proto.name(), proto.i());
    case onnx::AttributeProto::STRING: {
      family::Attribute a;
      a.name = proto.name();
      a.type = family::AttributeType::kString;
      a.s = proto.s();
      return a;
    }
    default: {
      family::Attribute a;
      a.name = proto.name();
      a.type = family::AttributeType::kOther;
      a.other_type = onnx::AttributeProto::AttributeType_Name(proto.type());
      return a;
    }
  }
}

// The operator and its version from the node and the model's default-domain opset, into `out`.
Status ReadOperator(const onnx::ModelProto& model, FamilyModel& out) {
  const onnx::NodeProto& node = model.graph().node(0);
  if (!IsDefaultDomain(node.domain())) {
    return InvalidArgumentError(node.op_type() + " node is in domain '" + node.domain() +
                                "', not the default ONNX domain; its semantics are not ONNX's");
  }
  MM_ASSIGN_OR_RETURN(out.op, family::OpFromName(node.op_type()));
  bool found = false;
  for (const auto& import : model.opset_import()) {
    if (IsDefaultDomain(import.domain())) {
      out.opset = static_cast<int>(import.version());
      found = true;
    }
  }
  if (!found) {
    return InvalidArgumentError(
        "model has no opset import for the default ONNX domain; the opset "
        "decides the " +
        node.op_type() + " version");
  }
  MM_ASSIGN_OR_RETURN(out.version, family::OpVersionAtOpset(out.op, out.opset));
  for (const auto& attribute : node.attribute()) out.attributes.push_back(FromProto(attribute));
  return OkStatus();
}

// The graph's inputs, each the node input it feeds, and the declared output, into `out`.
Status ReadFamilyInputs(const onnx::GraphProto& graph, FamilyModel& out) {
  const onnx::NodeProto& node = graph.node(0);
  const std::string op(family::OpName(out.op));
  const auto roles = family::InputNames(out.op);
  if (static_cast<std::size_t>(node.input_size()) > roles.size()) {
    return InvalidArgumentError(op + " node has " + std::to_string(node.input_size()) +
                                " inputs; " + op + " takes at most " +
                                std::to_string(roles.size()));
  }
  if (node.output_size() != 1 || graph.output_size() != 1 ||
      graph.output(0).name() != node.output(0)) {
    return InvalidArgumentError(op + " node's one output must be the graph's one output (the " +
                                "node has " + std::to_string(node.output_size()) + ", the graph " +
                                std::to_string(graph.output_size()) + ")");
  }
  for (const auto& init : graph.initializer()) {
    return InvalidArgumentError("input '" + init.name() +
                                "' comes from an initializer; a node test feeds every input "
                                "from input_K.pb");
  }
  std::map<std::string, std::string> role_of;  // Graph input name -> the operator's input name.
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) continue;  // A skipped optional input.
    if (!role_of.emplace(node.input(i), std::string(roles[static_cast<std::size_t>(i)])).second) {
      return InvalidArgumentError(op + " node takes '" + node.input(i) + "' twice");
    }
  }
  for (int g = 0; g < graph.input_size(); ++g) {
    const auto it = role_of.find(graph.input(g).name());
    if (it == role_of.end()) {
      return InvalidArgumentError("graph input '" + graph.input(g).name() +
                                  "' is not used by the " + op + " node (extra input)");
    }
    MM_ASSIGN_OR_RETURN(DeclaredTensor declared, DeclareTensor(graph.input(g), "input", true));
    out.inputs.push_back({it->second, std::move(declared)});
    role_of.erase(it);
  }
  if (!role_of.empty()) {
    return InvalidArgumentError(op + " input " + role_of.begin()->second + " '" +
                                role_of.begin()->first +
                                "' is not a graph input (undefined input reference)");
  }
  MM_ASSIGN_OR_RETURN(out.y, DeclareTensor(graph.output(0), "output", true));
  return OkStatus();
}

}  // namespace

bool IsFamilyOpType(const std::string& op_type) {
  return op_type == "Gemm" || op_type == "MatMulInteger" || op_type == "QLinearMatMul";
}

StatusOr<FamilyModel> ReadFamilyModel(const onnx::ModelProto& model) {
  FamilyModel out;
  MM_RETURN_IF_ERROR(ReadOperator(model, out));
  MM_RETURN_IF_ERROR(ReadFamilyInputs(model.graph(), out));
  return out;
}

StatusOr<CaseDirKind> ClassifyCaseDirWithFamily(const fs::path& case_dir) {
  const fs::path model_path = case_dir / "model.onnx";
  MM_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModelFile(model_path));
  CaseDirKind out;
  if (model.has_graph() && model.graph().node_size() == 1 &&
      IsFamilyOpType(model.graph().node(0).op_type())) {
    out.family_op = family::OpFromName(model.graph().node(0).op_type()).value();
    auto family = ReadFamilyModel(model);
    if (family.ok()) {
      out.family = std::move(family).value();
    } else {
      out.family_error = family.status().WithContext(model_path.string());
    }
    return out;
  }
  auto kind = ClassifyModel(model);
  if (!kind.ok()) return kind.status().WithContext(model_path.string());
  out.matmul = std::move(kind->matmul);
  out.skip_reason = std::move(kind->skip_reason);
  return out;
}

family::Problem FamilyDataSet::problem() const {
  family::Problem p;
  p.op = op;
  p.version = version;
  p.attributes = attributes;
  for (const auto& [role, tensor] : inputs) p.inputs.push_back({role, tensor.view()});
  return p;
}

const Tensor* FamilyDataSet::input(std::string_view role) const {
  for (const auto& [name, tensor] : inputs) {
    if (name == role) return &tensor;
  }
  return nullptr;
}

StatusOr<FamilyDataSet> LoadFamilyDataSet(const fs::path& case_dir, const std::string& set_name,
                                          const FamilyModel& model) {
  FamilyDataSet set;
  set.name = set_name;
  set.op = model.op;
  set.version = model.version;
  set.attributes = model.attributes;
  const fs::path dir = case_dir / set_name;
  auto load = [](const fs::path& file, const DeclaredTensor& declared) -> StatusOr<Tensor> {
    MM_ASSIGN_OR_RETURN(NamedTensor loaded, LoadTensorFile(file, {}, TensorTypes::kAll));
    const Status status = CheckAgainstDeclared(loaded.tensor, declared);
    if (!status.ok()) return status.WithContext(file.string());
    return std::move(loaded.tensor);
  };
  for (std::size_t k = 0; k < model.inputs.size(); ++k) {
    MM_ASSIGN_OR_RETURN(
        Tensor t, load(dir / ("input_" + std::to_string(k) + ".pb"), model.inputs[k].declared));
    set.inputs.emplace_back(model.inputs[k].role, std::move(t));
  }
  // The node's order, so that a problem reads as its node does.
  const auto roles = family::InputNames(model.op);
  std::stable_sort(set.inputs.begin(), set.inputs.end(), [&](const auto& x, const auto& y) {
    auto position = [&](const std::string& role) {
      return std::find(roles.begin(), roles.end(), role) - roles.begin();
    };
    return position(x.first) < position(y.first);
  });
  MM_ASSIGN_OR_RETURN(set.y, load(dir / "output_0.pb", model.y));
  return set;
}

FamilyModel FamilyModelOf(const family::Problem& problem, DType y_dtype, const Dims& y_dims) {
  auto declare = [](const std::string& name, DType dtype, std::span<const std::int64_t> dims) {
    DeclaredTensor d{name, dtype, true, {}};
    for (std::int64_t dim : dims) d.dims.emplace_back(dim);
    return d;
  };
  FamilyModel model;
  model.op = problem.op;
  model.version = problem.version;
  model.opset = problem.version;
  model.attributes = problem.attributes;
  for (const family::NamedInput& input : problem.inputs) {
    model.inputs.push_back(
        {input.name, declare(input.name, input.tensor.dtype, input.tensor.dims)});
  }
  model.y = declare("Y", y_dtype, y_dims);
  return model;
}

DType FamilyResultDType(const FamilyDataSet& set) {
  return set.inputs.empty() ? set.y.dtype() : set.inputs.front().second.dtype();
}

std::pair<Dims, Dims> FamilyResultDims(const FamilyDataSet& set) {
  const auto roles = family::InputNames(set.op);
  // A and B are the first and the second data operands: positions 0 and 1, or a (0) and b (3).
  const std::size_t b_position = set.op == family::Op::kQLinearMatMul ? 3 : 1;
  const Tensor* a = set.input(roles[0]);
  const Tensor* b = set.input(roles[b_position]);
  return {a != nullptr ? a->dims() : Dims{}, b != nullptr ? b->dims() : Dims{}};
}

}  // namespace mm::conformance
