// ONNX node-test cases of MatMul's family (Gemm, MatMulInteger, QLinearMatMul): recognising such a
// model (one node of one of the three operators), reading its operator, version, attributes and
// which graph input feeds which of the operator's inputs, and loading a data set as a
// family::Problem with its expected output. Errors name the file. The judgement is mm::family's
// (docs/family.md); running is conformance/running's.
#ifndef MM_CONFORMANCE_LOADER_FAMILY_CASE_H_
#define MM_CONFORMANCE_LOADER_FAMILY_CASE_H_

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/loader/matmul_case.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/op.h"
#include "mm/family/problem.h"

namespace onnx {
class ModelProto;
}

namespace mm::conformance {

// What a family model promises: its opset, the operator and the version that opset selects, the
// node's attributes, and the graph's inputs in their order (input_K.pb feeds inputs[K]), each with
// the operator's input it feeds ("A", "a_scale", ...) and its declaration, and the declared Y.
struct FamilyModel {
  struct Input {
    std::string role;  // The operator's input name (family::InputNames).
    DeclaredTensor declared;
    friend bool operator==(const Input&, const Input&) = default;
  };
  int opset = 0;
  family::Op op = family::Op::kGemm;
  int version = 0;
  std::vector<family::Attribute> attributes;
  std::vector<Input> inputs;
  DeclaredTensor y;
};

// Whether `op_type` (in the default domain) names one of the family's three operators beyond
// MatMul: "Gemm", "MatMulInteger", "QLinearMatMul".
bool IsFamilyOpType(const std::string& op_type);

// Reads the family model of `model`, a graph of one node whose op_type IsFamilyOpType. Errors (a
// clear reason, for an ERROR of the case): another domain, no opset import, an operator the opset
// does not have, more inputs than the operator takes or more than one output, an input that is not
// a graph input or comes from an initializer, a graph input the node does not use, a graph output
// that is not the node's, an element type mm does not know. What the version allows (types,
// shapes, attributes) is checked per data set by family::PlanProblem, naming the input.
StatusOr<FamilyModel> ReadFamilyModel(const onnx::ModelProto& model);

// What a case directory holds: a MatMul model, a family node (valid or not), or neither (a model
// to skip, with the reason).
struct CaseDirKind {
  std::optional<MatMulModel> matmul;
  std::optional<family::Op> family_op;  // Set for a graph of one family node.
  std::optional<FamilyModel> family;    // Set when that node's model is valid.
  Status family_error;                  // Why it is not, naming model.onnx.
  std::string skip_reason;              // Set when it is neither.
};

// Reads model.onnx of `case_dir` and classifies it: a family node by ReadFamilyModel, anything
// else by ClassifyModel. Errors (an unreadable model, an invalid MatMul model) name the file.
StatusOr<CaseDirKind> ClassifyCaseDirWithFamily(const std::filesystem::path& case_dir);

// One data set of a family case: the operator at its version, its attributes, its inputs by their
// operator's names (owned), and the expected Y. `problem()` views the inputs: valid while this
// data set lives and is not moved from.
struct FamilyDataSet {
  std::string name;  // "test_data_set_0", or the name an in-memory case gives it.
  family::Op op = family::Op::kGemm;
  int version = 0;
  std::vector<family::Attribute> attributes;
  std::vector<std::pair<std::string, Tensor>> inputs;  // (role, tensor), in the node's order.
  Tensor y;                                            // The expected output.

  family::Problem problem() const;
  // The tensor of input `role`, or null when absent.
  const Tensor* input(std::string_view role) const;
};

// Reads data set `set_name` of the family case in `case_dir`: every input_K.pb (int8 and uint8
// included) checked against its declaration, and output_0.pb. Errors name the file.
StatusOr<FamilyDataSet> LoadFamilyDataSet(const std::filesystem::path& case_dir,
                                          const std::string& set_name, const FamilyModel& model);

// The model of a family case built in memory: `problem`'s operator, version and attributes, its
// inputs declared with their element types and exact shapes (in the problem's order), and Y of
// `y_dtype` and `y_dims`; the opset is the operator's version.
FamilyModel FamilyModelOf(const family::Problem& problem, DType y_dtype, const Dims& y_dims);

// The dtype and shapes a result of `set` shows: A's element type, A's and B's shapes (the
// operator's first and second data operands: A and B, or a and b).
DType FamilyResultDType(const FamilyDataSet& set);
std::pair<Dims, Dims> FamilyResultDims(const FamilyDataSet& set);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_FAMILY_CASE_H_
