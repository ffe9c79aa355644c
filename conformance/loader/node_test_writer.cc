#include "mm/conformance/loader/node_test_writer.h"

#include <span>

#include "mm/engine/io/output_file.h"
#include "mm/family/op.h"

namespace mm::conformance {

namespace fs = std::filesystem;

int OpsetFor(DType dtype) {
  if (dtype == DType::kBFloat16) return 13;
  return IsFloat(dtype) ? 7 : 9;
}

namespace {

// A model of one node of `op_type`, its graph still without inputs and outputs.
onnx::ModelProto OneNodeModel(std::string_view op_type, int ir_version,
                              const ModelProtoOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(ir_version);
  model.set_producer_name(options.producer_name);
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(options.opset);
  auto* graph = model.mutable_graph();
  graph->set_name(options.graph_name);
  graph->add_node()->set_op_type(std::string(op_type));
  return model;
}

void Declare(onnx::ValueInfoProto* info, std::string_view name, int onnx_type,
             std::span<const std::int64_t> dims) {
  info->set_name(std::string(name));
  auto* tensor_type = info->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(onnx_type);
  auto* shape = tensor_type->mutable_shape();
  for (std::int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

}  // namespace

onnx::ModelProto MatMulModelProto(int onnx_type, const Dims& a, const Dims& b, const Dims& y,
                                  const ModelProtoOptions& options) {
  onnx::ModelProto model = OneNodeModel("MatMul", 7, options);
  auto* graph = model.mutable_graph();
  auto* node = graph->mutable_node(0);
  node->add_input("a");
  node->add_input("b");
  node->add_output("y");
  Declare(graph->add_input(), "a", onnx_type, a);
  Declare(graph->add_input(), "b", onnx_type, b);
  Declare(graph->add_output(), "y", onnx_type, y);
  return model;
}

int IrVersionForOpset(int opset) {
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  return opset <= 20 ? 9 : 10;
}

StatusOr<NodeTest> FamilyNodeTest(const family::Problem& problem, const Tensor& y,
                                  const ModelProtoOptions& options) {
  ModelProtoOptions at_version = options;
  at_version.opset = problem.version;
  NodeTest test;
  test.model =
      OneNodeModel(family::OpName(problem.op), IrVersionForOpset(problem.version), at_version);
  auto* graph = test.model.mutable_graph();
  auto* node = graph->mutable_node(0);
  NodeTestDataSet& set = test.data_sets.emplace_back();
  int skipped = 0;  // Absent optional inputs not yet written as "".
  for (std::string_view name : family::InputNames(problem.op)) {
    const family::NamedInput* input = problem.FindInput(name);
    if (input == nullptr) {
      ++skipped;
      continue;
    }
    for (; skipped > 0; --skipped) node->add_input("");
    node->add_input(std::string(name));
    Declare(graph->add_input(), name, GetDTypeInfo(input->tensor.dtype).onnx_enum,
            input->tensor.dims);
    set.inputs.push_back(TensorViewToProto(input->tensor, name));
  }
  for (const family::Attribute& attribute : problem.attributes) {
    auto* proto = node->add_attribute();
    proto->set_name(attribute.name);
    switch (attribute.type) {
      case family::AttributeType::kFloat:
        proto->set_type(onnx::AttributeProto::FLOAT);
        proto->set_f(attribute.f);
        break;
      case family::AttributeType::kInt:
        proto->set_type(onnx::AttributeProto::INT);
        proto->set_i(attribute.i);
        break;
      case family::AttributeType::kString:
        proto->set_type(onnx::AttributeProto::STRING);
        proto->set_s(attribute.s);
        break;
      case family::AttributeType::kOther:
        return InvalidArgumentError(problem.ToString() + ": attribute " + attribute.name +
                                    " is of type " + attribute.TypeName() +
                                    ", whose value a problem does not hold; it cannot be written");
    }
  }
  const std::string output = problem.op == family::Op::kQLinearMatMul ? "y" : "Y";
  node->add_output(output);
  Declare(graph->add_output(), output, GetDTypeInfo(y.dtype()).onnx_enum, y.dims());
  set.outputs.push_back(TensorToProto(y, output));
  return test;
}

onnx::TensorProto TensorViewToProto(TensorView tensor, std::string_view name) {
  onnx::TensorProto proto;
  proto.set_name(std::string(name));
  proto.set_data_type(GetDTypeInfo(tensor.dtype).onnx_enum);
  for (std::int64_t d : tensor.dims) proto.add_dims(d);
  const std::size_t bytes =
      static_cast<std::size_t>(tensor.NumElements()) * DTypeSize(tensor.dtype);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.data), bytes));
  return proto;
}

onnx::TensorProto TensorToProto(const Tensor& tensor, std::string_view name) {
  return TensorViewToProto(tensor.view(), name);
}

NodeTest MatMulNodeTest(const Tensor& a, const Tensor& b, const Tensor& y,
                        const ModelProtoOptions& options) {
  NodeTest test;
  test.model =
      MatMulModelProto(GetDTypeInfo(a.dtype()).onnx_enum, a.dims(), b.dims(), y.dims(), options);
  test.data_sets.push_back(
      {{TensorToProto(a, "a"), TensorToProto(b, "b")}, {TensorToProto(y, "y")}});
  return test;
}

Status WriteFileBytes(const fs::path& path, std::string_view bytes) {
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) {
      return NotFoundError("cannot create '" + path.parent_path().string() + "': " + ec.message());
    }
  }
  // Whole or not at all, and never through a link planted in a directory written into again.
  return io::WriteFileAtomically(path, bytes);
}

Status WriteProtoFile(const fs::path& path, const google::protobuf::MessageLite& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) {
    return DataLossError("cannot write '" + path.string() + "': the message does not serialize");
  }
  return WriteFileBytes(path, bytes);
}

Status WriteNodeTest(const fs::path& case_dir, const NodeTest& test) {
  MM_RETURN_IF_ERROR(WriteProtoFile(case_dir / "model.onnx", test.model));
  for (std::size_t n = 0; n < test.data_sets.size(); ++n) {
    const fs::path data_set = case_dir / ("test_data_set_" + std::to_string(n));
    const NodeTestDataSet& set = test.data_sets[n];
    for (std::size_t k = 0; k < set.inputs.size(); ++k) {
      MM_RETURN_IF_ERROR(
          WriteProtoFile(data_set / ("input_" + std::to_string(k) + ".pb"), set.inputs[k]));
    }
    for (std::size_t k = 0; k < set.outputs.size(); ++k) {
      MM_RETURN_IF_ERROR(
          WriteProtoFile(data_set / ("output_" + std::to_string(k) + ".pb"), set.outputs[k]));
    }
  }
  return OkStatus();
}

Status WriteFamilyNodeTest(const fs::path& case_dir, const family::Problem& problem,
                           const Tensor& y, std::string_view producer_name) {
  ModelProtoOptions options;
  options.graph_name = case_dir.filename().string();
  options.producer_name = std::string(producer_name);
  MM_ASSIGN_OR_RETURN(const NodeTest test, FamilyNodeTest(problem, y, options));
  return WriteNodeTest(case_dir, test);
}

Status WriteMatMulNodeTest(const fs::path& case_dir, const Tensor& a, const Tensor& b,
                           const Tensor& y, std::string_view producer_name) {
  ModelProtoOptions options;
  options.opset = OpsetFor(a.dtype());
  options.graph_name = case_dir.filename().string();
  options.producer_name = std::string(producer_name);
  return WriteNodeTest(case_dir, MatMulNodeTest(a, b, y, options));
}

}  // namespace mm::conformance
