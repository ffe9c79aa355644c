#include "conformance/tests/onnx_fixtures.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "backends/reference/reference_backend.h"

namespace mm::conformance::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = fs::temp_directory_path() /
          ("mm_conformance_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  // Copies of read-only official data must be made writable before they can be removed.
  for (auto it = fs::recursive_directory_iterator(path_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

onnx::ModelProto MatMulModel(int onnx_type, const Dims& a, const Dims& b, const Dims& y,
                             int opset) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("mm-conformance-test");
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name("test_matmul");
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

onnx::TensorProto RawTensorProto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(GetDTypeInfo(tensor.dtype()).onnx_enum);
  for (std::int64_t d : tensor.dims()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.NumBytes()));
  return proto;
}

Tensor FloatTensor(const Dims& dims, float start, float step) {
  Tensor t = Tensor::Create(DType::kFloat, dims).value();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    t.Data<float>()[i] = start + step * static_cast<float>(i % 16);
  }
  return t;
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void WriteMessage(const fs::path& path, const google::protobuf::MessageLite& message) {
  WriteBytes(path, message.SerializeAsString());
}

Tensor ExactFloatMatMul(const Tensor& a, const Tensor& b) {
  ReferenceBackend reference;
  return MatMul(reference, a.view(), b.view()).value();
}

fs::path WriteFloatCase(const fs::path& root, const std::string& name, const Dims& a_dims,
                        const Dims& b_dims) {
  const fs::path dir = root / name;
  Tensor a = FloatTensor(a_dims, 1.0f, 0.5f);
  Tensor b = FloatTensor(b_dims, -2.0f, 0.25f);
  Tensor y = ExactFloatMatMul(a, b);
  WriteMessage(dir / "model.onnx", MatMulModel(onnx::TensorProto::FLOAT, a_dims, b_dims, y.dims()));
  WriteMessage(dir / "test_data_set_0" / "input_0.pb", RawTensorProto(a, "a"));
  WriteMessage(dir / "test_data_set_0" / "input_1.pb", RawTensorProto(b, "b"));
  WriteMessage(dir / "test_data_set_0" / "output_0.pb", RawTensorProto(y, "y"));
  return dir;
}

fs::path WriteCase(const fs::path& root, const std::string& name, const Tensor& a,
                   const Tensor& b, int opset) {
  const fs::path dir = root / name;
  ReferenceBackend reference;
  const Tensor y = MatMul(reference, a.view(), b.view()).value();
  WriteMessage(dir / "model.onnx",
               MatMulModel(GetDTypeInfo(a.dtype()).onnx_enum, a.dims(), b.dims(), y.dims(), opset));
  WriteMessage(dir / "test_data_set_0" / "input_0.pb", RawTensorProto(a, "a"));
  WriteMessage(dir / "test_data_set_0" / "input_1.pb", RawTensorProto(b, "b"));
  WriteMessage(dir / "test_data_set_0" / "output_0.pb", RawTensorProto(y, "y"));
  return dir;
}

std::vector<DataRoot> OfficialDataRootsForTests() {
  std::vector<DataRoot> roots;
  if (const char* env = std::getenv("MM_ONNX_DATA"); env && *env) {
    if (auto resolved = ResolveDataRoots({}, env, {}); resolved.ok()) roots = *resolved;
  }
  roots.push_back({fs::path(kDebianDataRoot), "default"});
  return roots;
}

}  // namespace mm::conformance::testing
