#include "onnx_fixtures.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include "mm/backends/reference/reference_backend.h"

namespace mm::conformance::testing {

namespace fs = std::filesystem;

namespace {

// What the tests' models record (the loader ignores both names).
ModelProtoOptions TestModelOptions(int opset) {
  ModelProtoOptions options;
  options.opset = opset;
  options.graph_name = "test_matmul";
  options.producer_name = "mm-conformance-test";
  return options;
}

void ThrowIfError(const Status& status) {
  if (!status.ok()) throw std::runtime_error(status.ToString());
}

}  // namespace

onnx::ModelProto MatMulModel(int onnx_type, const Dims& a, const Dims& b, const Dims& y,
                             int opset) {
  return conformance::MatMulModelProto(onnx_type, a, b, y, TestModelOptions(opset));
}

onnx::TensorProto RawTensorProto(const Tensor& tensor, const std::string& name) {
  return TensorToProto(tensor, name);
}

Tensor FloatTensor(const Dims& dims, float start, float step) {
  Tensor t = Tensor::Create(DType::kFloat, dims).value();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    t.Data<float>()[i] = start + step * static_cast<float>(i % 16);
  }
  return t;
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  ThrowIfError(WriteFileBytes(path, bytes));
}

void WriteMessage(const fs::path& path, const google::protobuf::MessageLite& message) {
  ThrowIfError(WriteProtoFile(path, message));
}

NodeTest FloatMatMulTest(const Dims& a_dims, const Dims& b_dims) {
  const Tensor a = FloatTensor(a_dims, 1.0f, 0.5f);
  const Tensor b = FloatTensor(b_dims, -2.0f, 0.25f);
  return MatMulNodeTest(a, b, ExactFloatMatMul(a, b), TestModelOptions(13));
}

void WriteTest(const fs::path& dir, const NodeTest& test) {
  ThrowIfError(WriteNodeTest(dir, test));
}

Tensor ExactFloatMatMul(const Tensor& a, const Tensor& b) {
  ReferenceBackend reference;
  return MatMul(reference, a.view(), b.view()).value();
}

fs::path WriteFloatCase(const fs::path& root, const std::string& name, const Dims& a_dims,
                        const Dims& b_dims) {
  const fs::path dir = root / name;
  WriteTest(dir, FloatMatMulTest(a_dims, b_dims));
  return dir;
}

fs::path WriteCase(const fs::path& root, const std::string& name, const Tensor& a, const Tensor& b,
                   int opset) {
  const fs::path dir = root / name;
  ReferenceBackend reference;
  const Tensor y = MatMul(reference, a.view(), b.view()).value();
  WriteTest(dir, MatMulNodeTest(a, b, y, TestModelOptions(opset)));
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
