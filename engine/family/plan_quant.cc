// The zero points and scales of MatMulInteger and QLinearMatMul: their types, their forms (per
// tensor, per row of A, per column of B, in every shape the specifications allow for every rank)
// and the values of the scales.
#include <cmath>
#include <string>

#include "plan_internal.h"

namespace mm::family {
namespace {

using internal::InputError;
using internal::OpVersion;

bool PerTensorShape(std::span<const std::int64_t> dims) {
  return dims.empty() || (dims.size() == 1 && dims[0] == 1);
}

// The shapes a per-row (of A) or per-column (of B) parameter may have for `operand`.
std::vector<Dims> PerSliceShapes(std::span<const std::int64_t> operand, bool rows) {
  const std::size_t r = operand.size();
  if (r < 2) return {};
  const std::int64_t extent = rows ? operand[r - 2] : operand[r - 1];
  if (r == 2)
    return rows ? std::vector<Dims>{{extent}, {extent, 1}}
                : std::vector<Dims>{{extent}, {1, extent}};
  Dims nd(operand.begin(), operand.end());
  if (rows) {
    nd[r - 1] = 1;
  } else {
    nd[r - 2] = 1;
  }
  return {nd};
}

// The form of parameter `name` of operand `operand_name` (shape `operand`), per row of it (A) or
// per column (B).
StatusOr<QuantForm> ClassifyParam(const Problem& problem, std::string_view name,
                                  std::string_view operand_name,
                                  std::span<const std::int64_t> operand,
                                  std::span<const std::int64_t> dims, bool rows) {
  if (PerTensorShape(dims)) return QuantForm::kPerTensor;
  const std::vector<Dims> shapes = PerSliceShapes(operand, rows);
  for (const Dims& shape : shapes) {
    if (std::equal(dims.begin(), dims.end(), shape.begin(), shape.end())) {
      return rows ? QuantForm::kPerRow : QuantForm::kPerColumn;
    }
  }
  std::string allowed = "per tensor [] or [1]";
  if (shapes.empty()) {
    allowed += " only: " + std::string(operand_name) + " " + DimsToString(operand) +
               " is 1-D and has no " + (rows ? "rows" : "columns");
  } else {
    allowed += std::string(", per ") + (rows ? "row " : "column ");
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      allowed += (i ? " or " : "") + DimsToString(shapes[i]);
    }
  }
  return InputError(problem, name,
                    DimsToString(dims) + " does not fit " + std::string(operand_name) + " " +
                        DimsToString(operand) + " (" + allowed + ")");
}

// A zero point: of its input's type, in one of its forms.
Status PlanZeroPoint(const Problem& problem, std::string_view name, std::string_view operand_name,
                     const TensorView& operand, bool rows, QuantParam& out) {
  const NamedInput* input = problem.FindInput(name);
  if (input == nullptr) return OkStatus();  // Optional (MatMulInteger); required ones checked.
  if (input->tensor.dtype != operand.dtype) {
    return InputError(
        problem, name,
        std::string(DTypeName(input->tensor.dtype)) + " but " + std::string(operand_name) + " is " +
            std::string(DTypeName(operand.dtype)) + " (a zero point has its input's type)");
  }
  MM_ASSIGN_OR_RETURN(
      out.form, ClassifyParam(problem, name, operand_name, operand.dims, input->tensor.dims, rows));
  out.tensor = input->tensor;
  return OkStatus();
}

// Every value of a scale is a positive finite real: the multiplier a_scale * b_scale / y_scale is
// then a positive real, the only kind whose requantization the standard describes.
Status CheckScaleValues(const Problem& problem, std::string_view name, const QuantParam& scale) {
  const std::int64_t count = scale.tensor.NumElements();
  for (std::int64_t i = 0; i < count; ++i) {
    const double v = scale.Scale(i);
    if (!(v > 0) || std::isinf(v)) {
      const std::string what = std::isnan(v)   ? "NaN"
                               : std::isinf(v) ? "infinite"
                               : v == 0        ? "zero"
                                               : "negative";
      return InputError(problem, name,
                        "element " + std::to_string(i) + " is " + what + " (" + std::to_string(v) +
                            "); a quantization scale must be positive and finite");
    }
  }
  return OkStatus();
}

// A QLinearMatMul scale: of the scale type, the shape of its zero point.
Status PlanScale(const Problem& problem, std::string_view name, const QuantParam& zero_point,
                 QuantParam& out, DType& scale_dtype) {
  const NamedInput& input = *problem.FindInput(name);
  const std::span<const DType> allowed = internal::ScaleTypes(problem.version);
  if (!internal::Contains(allowed, input.tensor.dtype)) {
    return InputError(problem, name,
                      std::string(DTypeName(input.tensor.dtype)) + " is not a scale type of " +
                          OpVersion(problem) + " (" + internal::TypeList(allowed) + ")");
  }
  if (name != "a_scale" && input.tensor.dtype != scale_dtype) {
    return InputError(problem, name,
                      std::string(DTypeName(input.tensor.dtype)) + " but a_scale is " +
                          std::string(DTypeName(scale_dtype)) + " (one type TS for the 3 scales)");
  }
  scale_dtype = input.tensor.dtype;
  const std::span<const std::int64_t> zd = zero_point.tensor.dims, sd = input.tensor.dims;
  if (!std::equal(zd.begin(), zd.end(), sd.begin(), sd.end())) {
    return InputError(problem, name,
                      DimsToString(sd) + " but its zero point is " + DimsToString(zd) +
                          " (a scale and its zero point have the same shape)");
  }
  out.form = zero_point.form;
  out.tensor = input.tensor;
  return CheckScaleValues(problem, name, out);
}

}  // namespace

std::int64_t QuantParam::ZeroPoint(std::int64_t index) const {
  if (form == QuantForm::kAbsent) return 0;
  return tensor.dtype == DType::kInt8 ? tensor.Data<std::int8_t>()[index]
                                      : tensor.Data<std::uint8_t>()[index];
}

double QuantParam::Scale(std::int64_t index) const {
  switch (tensor.dtype) {
    case DType::kFloat16:
      return ToDouble(tensor.Data<float16>()[index]);
    case DType::kBFloat16:
      return ToDouble(tensor.Data<bfloat16>()[index]);
    default:
      return tensor.Data<float>()[index];
  }
}

namespace internal {

Status PlanQuantization(const Problem& problem, Plan& plan) {
  const bool q = problem.op == Op::kQLinearMatMul;
  const std::string_view a_name = q ? "a" : "A", b_name = q ? "b" : "B";
  MM_RETURN_IF_ERROR(
      PlanZeroPoint(problem, "a_zero_point", a_name, plan.a, true, plan.a_zero_point));
  MM_RETURN_IF_ERROR(
      PlanZeroPoint(problem, "b_zero_point", b_name, plan.b, false, plan.b_zero_point));
  if (!q) return OkStatus();
  const TensorView& y_zp = problem.FindInput("y_zero_point")->tensor;
  if (!Contains(DataTypes(problem.op, problem.version), y_zp.dtype)) {
    return InputError(problem, "y_zero_point",
                      std::string(DTypeName(y_zp.dtype)) + " is not a type of " +
                          OpVersion(problem) + " (int8, uint8); it is y's type T3");
  }
  if (!PerTensorShape(y_zp.dims)) {
    return InputError(problem, "y_zero_point",
                      DimsToString(y_zp.dims) +
                          " is not per tensor ([] or [1]); the specification gives per-row and "
                          "per-column forms to a and b only");
  }
  plan.y_dtype = y_zp.dtype;
  plan.y_zero_point = {QuantForm::kPerTensor, y_zp};
  plan.scale_dtype = problem.FindInput("a_scale")->tensor.dtype;
  MM_RETURN_IF_ERROR(
      PlanScale(problem, "a_scale", plan.a_zero_point, plan.a_scale, plan.scale_dtype));
  MM_RETURN_IF_ERROR(
      PlanScale(problem, "b_scale", plan.b_zero_point, plan.b_scale, plan.scale_dtype));
  return PlanScale(problem, "y_scale", plan.y_zero_point, plan.y_scale, plan.scale_dtype);
}

}  // namespace internal
}  // namespace mm::family
