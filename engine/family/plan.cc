#include "mm/family/plan.h"

#include <algorithm>
#include <string>

#include "plan_internal.h"

namespace mm::family {
namespace internal {

std::string OpVersion(const Problem& problem) {
  return std::string(OpName(problem.op)) + "-" + std::to_string(problem.version);
}

Status InputError(const Problem& problem, std::string_view name, const std::string& message) {
  return InvalidArgumentError(OpVersion(problem) + " " + std::string(name) + ": " + message);
}

}  // namespace internal

namespace {

using internal::InputError;
using internal::OpVersion;

bool IsRequired(const Problem& problem, std::string_view name) {
  switch (problem.op) {
    case Op::kMatMul:
      return true;
    case Op::kGemm:
      return name != "C" || problem.version < 11;
    case Op::kMatMulInteger:
      return name == "A" || name == "B";
    case Op::kQLinearMatMul:
      return true;
  }
  return true;
}

// Every input is one of the operator's, given once, with valid dims and data; the required ones
// are there.
Status CheckInputs(const Problem& problem) {
  const std::span<const std::string_view> names = InputNames(problem.op);
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  for (std::size_t i = 0; i < problem.inputs.size(); ++i) {
    const NamedInput& input = problem.inputs[i];
    if (std::find(names.begin(), names.end(), input.name) == names.end()) {
      return InputError(problem, input.name,
                        "not an input of " + OpVersion(problem) + " (its inputs: " + list + ")");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (problem.inputs[j].name == input.name)
        return InputError(problem, input.name, "given twice");
    }
    auto count = CheckedElementCount(input.tensor.dims, DTypeSize(input.tensor.dtype));
    if (!count.ok()) return InputError(problem, input.name, count.status().message());
    if (*count > 0 && input.tensor.data == nullptr) {
      return InputError(problem, input.name, "has no data");
    }
  }
  for (std::string_view name : names) {
    if (IsRequired(problem, name) && problem.FindInput(name) == nullptr) {
      return InputError(problem, name,
                        problem.op == Op::kGemm && name == "C"
                            ? "missing; C is optional from Gemm-11 only"
                            : "missing; " + OpVersion(problem) + " requires it");
    }
  }
  return OkStatus();
}

// Only Gemm has attributes; each must be one its version has, of the right ONNX type.
Status CheckAttributes(const Problem& problem) {
  for (const Attribute& attribute : problem.attributes) {
    for (const Attribute& other : problem.attributes) {
      if (&other == &attribute) break;
      if (other.name == attribute.name) {
        return InputError(problem, attribute.name, "attribute given twice");
      }
    }
    AttributeType expected = AttributeType::kInt;
    bool known = false;
    if (problem.op == Op::kGemm) {
      if (attribute.name == "alpha" || attribute.name == "beta") {
        known = true;
        expected = AttributeType::kFloat;
      } else if (attribute.name == "transA" || attribute.name == "transB") {
        known = true;
      } else if (attribute.name == "broadcast") {
        if (problem.version >= 7) {
          return InputError(problem, attribute.name,
                            "not an attribute of " + OpVersion(problem) +
                                " (Gemm-7 replaced it with unidirectional broadcasting of C)");
        }
        known = true;
      }
    }
    if (!known) {
      return InputError(problem, attribute.name,
                        "not an attribute of " + OpVersion(problem) +
                            (problem.op == Op::kGemm
                                 ? std::string(" (its attributes: alpha, beta, transA, transB") +
                                       (problem.version < 7 ? ", broadcast)" : ")")
                                 : std::string(" (it has none)")));
    }
    if (attribute.type != expected) {
      return InputError(problem, attribute.name,
                        "attribute of type " + attribute.TypeName() + "; " + OpVersion(problem) +
                            " defines it as " +
                            (expected == AttributeType::kFloat ? "FLOAT" : "INT"));
    }
  }
  return OkStatus();
}

// A and B (a and b) of types the version takes; for MatMul and Gemm one type.
Status CheckOperandTypes(const Problem& problem, Plan& plan) {
  const bool quantized = problem.op == Op::kQLinearMatMul;
  const NamedInput& a = *problem.FindInput(quantized ? "a" : "A");
  const NamedInput& b = *problem.FindInput(quantized ? "b" : "B");
  const std::span<const DType> allowed = internal::DataTypes(problem.op, problem.version);
  for (const NamedInput* input : {&a, &b}) {
    if (!internal::Contains(allowed, input->tensor.dtype)) {
      return InputError(problem, input->name,
                        std::string(DTypeName(input->tensor.dtype)) + " is not a type of " +
                            OpVersion(problem) + " (" + internal::TypeList(allowed) + ")");
    }
  }
  const bool one_type = problem.op == Op::kMatMul || problem.op == Op::kGemm;
  if (one_type && a.tensor.dtype != b.tensor.dtype) {
    return InputError(problem, "B",
                      std::string(DTypeName(b.tensor.dtype)) + " but A is " +
                          std::string(DTypeName(a.tensor.dtype)) + "; " + OpVersion(problem) +
                          " takes one type T for A, B, C and Y");
  }
  plan.a = a.tensor;
  plan.b = b.tensor;
  plan.a_dtype = a.tensor.dtype;
  plan.b_dtype = b.tensor.dtype;
  plan.y_dtype = problem.op == Op::kMatMulInteger ? DType::kInt32 : a.tensor.dtype;
  return OkStatus();
}

}  // namespace

std::string_view QuantFormName(QuantForm form) {
  switch (form) {
    case QuantForm::kAbsent:
      return "absent";
    case QuantForm::kPerTensor:
      return "per tensor";
    case QuantForm::kPerRow:
      return "per row";
    case QuantForm::kPerColumn:
      return "per column";
  }
  return "?";
}

std::pair<std::int64_t, std::int64_t> Plan::OperandMatrices(std::int64_t index) const {
  const auto [a_offset, b_offset] = product.BatchOffsets(index);
  const std::int64_t a_size = product.m * product.k, b_size = product.k * product.n;
  return {a_size == 0 ? 0 : a_offset / a_size, b_size == 0 ? 0 : b_offset / b_size};
}

std::string Plan::ToString() const {
  std::string out = std::string(OpName(op)) + "-" + std::to_string(version) + " " +
                    std::string(DTypeName(a_dtype)) + DimsToString(a.dims) + " x " +
                    std::string(DTypeName(b_dtype)) + DimsToString(b.dims) + " -> " +
                    std::string(DTypeName(y_dtype)) + DimsToString(y_dims());
  if (op == Op::kGemm) {
    out += std::string(" C ") + std::string(CFormName(gemm.c_form));
    if (gemm.trans_a) out += " transA";
    if (gemm.trans_b) out += " transB";
  }
  if (op == Op::kMatMulInteger || op == Op::kQLinearMatMul) {
    out += ", a_zero_point " + std::string(QuantFormName(a_zero_point.form)) + ", b_zero_point " +
           std::string(QuantFormName(b_zero_point.form));
  }
  if (op == Op::kQLinearMatMul) {
    out += ", a_scale " + std::string(QuantFormName(a_scale.form)) + ", b_scale " +
           std::string(QuantFormName(b_scale.form)) + ", scales " +
           std::string(DTypeName(scale_dtype));
  }
  return out;
}

StatusOr<Plan> PlanProblem(const Problem& problem) {
  MM_RETURN_IF_ERROR(CheckOpVersion(problem.op, problem.version));
  MM_RETURN_IF_ERROR(CheckInputs(problem));
  MM_RETURN_IF_ERROR(CheckAttributes(problem));
  Plan plan;
  plan.op = problem.op;
  plan.version = problem.version;
  MM_RETURN_IF_ERROR(CheckOperandTypes(problem, plan));
  if (problem.op == Op::kGemm) {
    MM_RETURN_IF_ERROR(internal::PlanGemm(problem, plan));
    return plan;
  }
  MatMulDesc desc{plan.a_dtype, Dims(plan.a.dims.begin(), plan.a.dims.end()),
                  Dims(plan.b.dims.begin(), plan.b.dims.end())};
  auto product = PlanMatMul(desc);
  if (!product.ok()) return product.status().WithContext(OpVersion(problem));
  plan.product = *std::move(product);
  if (problem.op != Op::kMatMul) MM_RETURN_IF_ERROR(internal::PlanQuantization(problem, plan));
  return plan;
}

}  // namespace mm::family
