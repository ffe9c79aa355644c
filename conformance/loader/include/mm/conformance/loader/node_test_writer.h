// The one writer of ONNX node tests: the layout ONNX's own backend test runner, onnxruntime's and
// mm-conformance read, model.onnx and test_data_set_N/{input_K,output_K}.pb, each a serialized
// onnx protobuf message (tensors as onnx.TensorProto with raw_data), built with the same protobuf
// classes the loader reads them with. Every producer of node tests uses it: mm-fuzz (findings,
// generated corpora, the built-in cases), the loader fuzzing's seed maker and the tests' fixtures.
// A node test is built in memory first (NodeTest), so a malformed fixture can break exactly one
// part of a valid one before it is written.
#ifndef MM_CONFORMANCE_LOADER_NODE_TEST_WRITER_H_
#define MM_CONFORMANCE_LOADER_NODE_TEST_WRITER_H_

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/problem.h"

namespace mm::conformance {

// The opset a MatMul of `dtype` needs: 7 for float16/float/double (MatMul-1), 9 for the integers
// (MatMul-9), 13 for bfloat16 (MatMul-13).
int OpsetFor(DType dtype);

// What a MatMul model records besides its element type and shapes.
struct ModelProtoOptions {
  int opset = 13;  // Of the default domain.
  std::string graph_name = "test_matmul";
  std::string producer_name = "mm";
};

// A one-node MatMul model as a protobuf message: inputs "a", "b" and output "y", all of element
// type `onnx_type` (an onnx.TensorProto.DataType value, any int so a fixture can declare a wrong
// one), declared with the given shapes; IR version 7.
onnx::ModelProto MatMulModelProto(int onnx_type, const Dims& a, const Dims& b, const Dims& y,
                                  const ModelProtoOptions& options = {});

// An onnx.TensorProto named `name` holding `tensor` in raw_data. Tensors are stored little-endian
// in memory on every machine mm builds for (x86-64, aarch64), which is raw_data's byte order.
onnx::TensorProto TensorToProto(const Tensor& tensor, std::string_view name);

// The same for a tensor held elsewhere.
onnx::TensorProto TensorViewToProto(TensorView tensor, std::string_view name);

// One data set: inputs[K] becomes input_K.pb, outputs[K] output_K.pb.
struct NodeTestDataSet {
  std::vector<onnx::TensorProto> inputs;
  std::vector<onnx::TensorProto> outputs;
};

// A node test in memory: the model and data sets 0, 1, ... (test_data_set_N).
struct NodeTest {
  onnx::ModelProto model;
  std::vector<NodeTestDataSet> data_sets;
};

// The node test of Y = MatMul(A, B): MatMulModelProto of a's dtype and the three shapes, and data
// set 0 holding a, b and the expected y.
NodeTest MatMulNodeTest(const Tensor& a, const Tensor& b, const Tensor& y,
                        const ModelProtoOptions& options = {});

// The IR version ONNX's release that introduced default-domain opset `opset` writes (7 up to
// opset 14, as MatMul's node tests have it; 8 to 18, 9 to 20, 10 from 21: docs/Versioning.md of
// onnx/onnx).
int IrVersionForOpset(int opset);

// The node test of a family problem (Gemm, MatMulInteger, QLinearMatMul; MatMul too): a one-node
// model of problem.op at default-domain opset problem.version (the opset in which that version
// appeared), IR version IrVersionForOpset; the node's inputs named as the operator's schema names
// them (family::InputNames: "A", "B", "C"; "a", "a_scale", ...), an absent optional input left
// out ("" where a later one is given), each a graph input of its type and shape; the attributes
// with their ONNX types (FLOAT, INT, STRING); the output "Y" ("y" for QLinearMatMul) of `y`'s
// type and shape. Data set 0 holds the inputs in that order and `y`. options.opset is ignored
// (the version decides it). INVALID_ARGUMENT for an attribute of another type (kOther), which
// the problem does not hold a value of.
StatusOr<NodeTest> FamilyNodeTest(const family::Problem& problem, const Tensor& y,
                                  const ModelProtoOptions& options = {});

// Writes FamilyNodeTest into `case_dir`, as mm-fuzz exports the built-in family cases: the graph
// named after `case_dir`, producer `producer_name`.
Status WriteFamilyNodeTest(const std::filesystem::path& case_dir, const family::Problem& problem,
                           const Tensor& y, std::string_view producer_name = "mm");

// Writes `bytes` to `path` (replaced if it exists), creating its parent directories. Errors name
// the file or directory that could not be written.
Status WriteFileBytes(const std::filesystem::path& path, std::string_view bytes);

// Writes `message` serialized to `path`, as WriteFileBytes.
Status WriteProtoFile(const std::filesystem::path& path,
                      const google::protobuf::MessageLite& message);

// Writes `test` into `case_dir` (created; existing files of the same names replaced): model.onnx
// and test_data_set_N/ for each data set. Errors name what could not be created or written.
Status WriteNodeTest(const std::filesystem::path& case_dir, const NodeTest& test);

// Writes the node test of Y = MatMul(A, B) into `case_dir`, as mm-fuzz exports its problems: opset
// OpsetFor(a's dtype), the graph named after `case_dir`, producer `producer_name`.
Status WriteMatMulNodeTest(const std::filesystem::path& case_dir, const Tensor& a, const Tensor& b,
                           const Tensor& y, std::string_view producer_name = "mm");

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_NODE_TEST_WRITER_H_
