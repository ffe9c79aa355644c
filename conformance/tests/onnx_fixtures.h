// Test fixtures built in C++ with the same protobuf classes the loader uses: MatMul models,
// tensors, whole case directories in a temporary folder. No committed binary fixtures.
#ifndef MM_CONFORMANCE_TESTS_ONNX_FIXTURES_H_
#define MM_CONFORMANCE_TESTS_ONNX_FIXTURES_H_

#include <filesystem>
#include <string>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/engine/tensor.h"
#include "mm/engine/testing/temp_dir.h"
#include "onnx/onnx_pb.h"

namespace mm::conformance::testing {

// The one TempDir of the tests (engine/testing/temp_dir.h), under the name these tests use.
using ::mm::testing::TempDir;

// The tests' node tests come from the one writer (conformance/loader/node_test_writer.h); these
// are its calls with the tests' defaults and errors as exceptions (a fixture that cannot be written
// fails the test).

// A one-node MatMul model (MatMulModelProto of the writer): inputs "a", "b", output "y", all
// `onnx_type` (TensorProto enum), with the given declared shapes, importing `opset` of the default
// domain.
onnx::ModelProto MatMulModel(int onnx_type, const Dims& a, const Dims& b, const Dims& y,
                             int opset = 13);

// A TensorProto holding `tensor` in raw_data (little-endian), named `name`.
onnx::TensorProto RawTensorProto(const Tensor& tensor, const std::string& name = "");

// A float tensor of `dims` with values start, start + step, ... (exact in float).
Tensor FloatTensor(const Dims& dims, float start = 1.0f, float step = 0.5f);

// Writes a serialized message to `path`, creating parent directories (the writer's WriteProtoFile).
void WriteMessage(const std::filesystem::path& path, const google::protobuf::MessageLite& message);
// Writes raw bytes to `path`, creating parent directories (the writer's WriteFileBytes).
void WriteBytes(const std::filesystem::path& path, const std::string& bytes);

// The valid float node test WriteFloatCase writes (opset 13, A = FloatTensor(a, 1, 0.5),
// B = FloatTensor(b, -2, 0.25), the exact Y), in memory so a malformed fixture can break one part
// of it before WriteTest writes it.
NodeTest FloatMatMulTest(const Dims& a, const Dims& b);
// Writes `test` as the case directory `dir`.
void WriteTest(const std::filesystem::path& dir, const NodeTest& test);

// Writes a valid float MatMul case `name` under `root`: model.onnx and test_data_set_0 with
// A = FloatTensor(a), B = FloatTensor(b) and the exact Y. Returns the case directory.
std::filesystem::path WriteFloatCase(const std::filesystem::path& root, const std::string& name,
                                     const Dims& a, const Dims& b);

// Writes a valid MatMul case `name` of a's dtype under `root`: model.onnx (opset `opset`) and
// test_data_set_0 with `a`, `b` and the reference backend's Y. Returns the case directory.
std::filesystem::path WriteCase(const std::filesystem::path& root, const std::string& name,
                                const Tensor& a, const Tensor& b, int opset = 13);

// The exact float MatMul of a and b (double accumulation, one rounding), for small fixtures.
Tensor ExactFloatMatMul(const Tensor& a, const Tensor& b);

// Where this machine may hold official ONNX data, for tests that use it when present:
// MM_ONNX_DATA's directories (CI points it at the 7 official cases), then Debian's
// libonnx-testdata (2d, 3d, 4d).
std::vector<DataRoot> OfficialDataRootsForTests();

}  // namespace mm::conformance::testing

#endif  // MM_CONFORMANCE_TESTS_ONNX_FIXTURES_H_
