#include "mm/conformance/loader/node_test_writer.h"

#include "mm/engine/io/output_file.h"

namespace mm::conformance {

namespace fs = std::filesystem;

int OpsetFor(DType dtype) {
  if (dtype == DType::kBFloat16) return 13;
  return IsFloat(dtype) ? 7 : 9;
}

onnx::ModelProto MatMulModelProto(int onnx_type, const Dims& a, const Dims& b, const Dims& y,
                                  const ModelProtoOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name(options.producer_name);
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(options.opset);
  auto* graph = model.mutable_graph();
  graph->set_name(options.graph_name);
  auto* node = graph->add_node();
  node->set_op_type("MatMul");
  node->add_input("a");
  node->add_input("b");
  node->add_output("y");
  auto declare = [&](onnx::ValueInfoProto* info, const char* name, const Dims& dims) {
    info->set_name(name);
    auto* tensor_type = info->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(onnx_type);
    auto* shape = tensor_type->mutable_shape();
    for (std::int64_t d : dims) shape->add_dim()->set_dim_value(d);
  };
  declare(graph->add_input(), "a", a);
  declare(graph->add_input(), "b", b);
  declare(graph->add_output(), "y", y);
  return model;
}

onnx::TensorProto TensorToProto(const Tensor& tensor, std::string_view name) {
  onnx::TensorProto proto;
  proto.set_name(std::string(name));
  proto.set_data_type(GetDTypeInfo(tensor.dtype()).onnx_enum);
  for (std::int64_t d : tensor.dims()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.NumBytes()));
  return proto;
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

Status WriteMatMulNodeTest(const fs::path& case_dir, const Tensor& a, const Tensor& b,
                           const Tensor& y, std::string_view producer_name) {
  ModelProtoOptions options;
  options.opset = OpsetFor(a.dtype());
  options.graph_name = case_dir.filename().string();
  options.producer_name = std::string(producer_name);
  return WriteNodeTest(case_dir, MatMulNodeTest(a, b, y, options));
}

}  // namespace mm::conformance
