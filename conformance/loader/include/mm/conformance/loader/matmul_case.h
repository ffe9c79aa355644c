// ONNX node-test cases for MatMul: recognising a MatMul model, checking it against ONNX's schema
// for its opset, and loading every test_data_set_N with its tensors checked against the model.
#ifndef MM_CONFORMANCE_LOADER_MATMUL_CASE_H_
#define MM_CONFORMANCE_LOADER_MATMUL_CASE_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace onnx {
class ModelProto;
class ValueInfoProto;
}  // namespace onnx

namespace mm::conformance {

// One declared graph input or output: its name, dtype and shape, where a dim is nullopt when it is
// symbolic (dim_param) or unknown. `has_shape` is false when the model gives no shape at all.
struct DeclaredTensor {
  std::string name;
  DType dtype = DType::kFloat;
  bool has_shape = false;
  std::vector<std::optional<std::int64_t>> dims;
  friend bool operator==(const DeclaredTensor&, const DeclaredTensor&) = default;
};

// What a MatMul model promises: its opset, the MatMul version that opset selects (1, 9 or 13), the
// dtypes that version allows, and the declared A, B and Y.
struct MatMulModel {
  int opset = 0;
  int matmul_version = 0;
  std::vector<DType> allowed_dtypes;
  DeclaredTensor a;
  DeclaredTensor b;
  DeclaredTensor y;
  int a_input_index = 0;  // Which input_K.pb feeds A (its position among the graph inputs).
  int b_input_index = 1;
};

// The outcome of looking at a model: either a MatMul model, or a model that is not a MatMul case
// at all (another operator, several nodes) with the reason it is skipped.
struct ModelKind {
  std::optional<MatMulModel> matmul;
  std::string skip_reason;  // Set when `matmul` is empty.
};

// Classifies `model`. A MatMul case has a graph of exactly one node whose op_type is "MatMul";
// such a model must then be valid: default domain, two inputs and one output that are the graph's
// inputs and output, an opset import for the default domain, declared dtypes allowed by the
// MatMul version of that opset (ONNX's OpSchemaRegistry decides). Invalid MatMul models give an
// error; other models give a skip reason.
StatusOr<ModelKind> ClassifyModel(const onnx::ModelProto& model);

// One data set: inputs A and B and the expected output Y.
struct DataSet {
  std::string name;  // "test_data_set_0", or "example" for built-in cases.
  Tensor a;
  Tensor b;
  Tensor y;
};

// A loaded MatMul case, ready to run.
struct MatMulCase {
  std::string name;
  int opset = 0;
  int matmul_version = 0;
  DType dtype = DType::kFloat;
  std::vector<DataSet> data_sets;
};

// The files of one test_data_set_N folder, found by listing (nothing read yet).
struct DataSetFiles {
  std::string name;  // "test_data_set_0".
  // The files' paths, as text: a catalog holds one of these per data set of every case, and a
  // std::filesystem::path costs several allocations (one per component) where a string costs one.
  std::string a, b, y;
};

// Lists every test_data_set_N folder of `case_dir` (numeric order) for `model` without reading any
// tensor: each must hold exactly input_0.pb .. input_{n-1}.pb for the model's n inputs and
// output_0.pb for its one output, and there must be at least one. Errors name the folder or file.
// A data set folder or tensor file that is a symbolic link must lead inside `data_root` (the tree
// the case was found in; the case folder when empty), else INVALID_ARGUMENT naming the link.
StatusOr<std::vector<DataSetFiles>> ListDataSets(const std::filesystem::path& case_dir,
                                                 const MatMulModel& model,
                                                 const std::filesystem::path& data_root = {});

// One listed test_data_set_N folder: its name, its input_0.pb .. input_{n-1}.pb and output_0.pb.
struct ListedDataSet {
  std::string name;
  std::vector<std::string> inputs;
  std::string output;
};

// ListDataSets for a model of `num_inputs` inputs, whatever they feed (MatMul's family too).
StatusOr<std::vector<ListedDataSet>> ListDataSetFolders(const std::filesystem::path& case_dir,
                                                        int num_inputs,
                                                        const std::filesystem::path& data_root);

// The declaration of a graph input or output (`role`: "input" or "output", for errors): its
// element type (MatMul's dtypes, or with `family_types` int8 and uint8 too) and its shape.
StatusOr<DeclaredTensor> DeclareTensor(const onnx::ValueInfoProto& info, std::string_view role,
                                       bool family_types);

// True for ONNX's default operator domain: "" or "ai.onnx".
bool IsDefaultDomain(const std::string& domain);

// OK when `tensor` has the declared dtype and shape (symbolic dims match anything); else an error
// saying what disagrees (without the file: callers add it).
Status CheckAgainstDeclared(const Tensor& tensor, const DeclaredTensor& declared);

// Reads the tensors of one data set, each matching its declared dtype and shape (symbolic dims
// match anything). Errors name the file.
StatusOr<DataSet> LoadDataSet(const DataSetFiles& files, const MatMulModel& model);

// ListDataSets, then LoadDataSet of each: the whole case in memory (tests and small tools; the
// runner streams one data set at a time instead).
StatusOr<MatMulCase> LoadMatMulCase(const std::filesystem::path& case_dir, std::string name,
                                    const MatMulModel& model);

// Reads model.onnx of `case_dir` and classifies it.
StatusOr<ModelKind> ClassifyCaseDir(const std::filesystem::path& case_dir);

// The libraries that read cases, for reports: "protobuf 3.21.12, ONNX schemas up to opset 17".
std::string LoaderVersions();

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_MATMUL_CASE_H_
