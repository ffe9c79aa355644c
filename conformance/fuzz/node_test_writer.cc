#include "conformance/fuzz/node_test_writer.h"

#include <onnx/onnx_pb.h>

#include <fstream>

namespace mm::fuzz {

namespace fs = std::filesystem;

int OpsetFor(DType dtype) {
  if (dtype == DType::kBFloat16) return 13;
  return IsFloat(dtype) ? 7 : 9;
}

namespace {

onnx::TensorProto ToProto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(GetDTypeInfo(tensor.dtype()).onnx_enum);
  for (std::int64_t d : tensor.dims()) proto.add_dims(d);
  // Tensors are stored little-endian in memory on every machine mm builds for (x86-64, aarch64),
  // which is raw_data's byte order.
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.NumBytes()));
  return proto;
}

Status Write(const fs::path& path, const google::protobuf::MessageLite& message) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !message.SerializeToOstream(&out)) {
    return DataLossError("cannot write '" + path.string() + "'");
  }
  out.close();
  if (!out) return DataLossError("cannot write '" + path.string() + "'");
  return OkStatus();
}

}  // namespace

Status WriteNodeTest(const fs::path& case_dir, const Tensor& a, const Tensor& b, const Tensor& y) {
  std::error_code ec;
  fs::create_directories(case_dir / "test_data_set_0", ec);
  if (ec) {
    return NotFoundError("cannot create '" + (case_dir / "test_data_set_0").string() +
                         "': " + ec.message());
  }
  const int onnx_type = GetDTypeInfo(a.dtype()).onnx_enum;
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("mm-fuzz");
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(OpsetFor(a.dtype()));
  auto* graph = model.mutable_graph();
  graph->set_name(case_dir.filename().string());
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
  declare(graph->add_input(), "a", a.dims());
  declare(graph->add_input(), "b", b.dims());
  declare(graph->add_output(), "y", y.dims());
  MM_RETURN_IF_ERROR(Write(case_dir / "model.onnx", model));
  MM_RETURN_IF_ERROR(Write(case_dir / "test_data_set_0" / "input_0.pb", ToProto(a, "a")));
  MM_RETURN_IF_ERROR(Write(case_dir / "test_data_set_0" / "input_1.pb", ToProto(b, "b")));
  return Write(case_dir / "test_data_set_0" / "output_0.pb", ToProto(y, "y"));
}

}  // namespace mm::fuzz
