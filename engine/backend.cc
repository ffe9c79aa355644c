#include "mm/engine/backend.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace mm {

std::string Support::ToString() const {
  switch (level) {
    case Level::kNative:
      return "native";
    case Level::kByConversion:
      return "by conversion: " + note;
    case Level::kNo:
      return "no: " + note;
  }
  return "no";
}

std::string Arithmetic::ToString() const {
  if (!IsFloat(accumulation)) {
    return "exact modulo 2^" + std::to_string(8 * GetDTypeInfo(accumulation).size);
  }
  std::string text = "accumulates in " + std::string(DTypeName(accumulation));
  if (flushes_subnormals) text += ", flushes subnormals";
  return text;
}

namespace {

Status CheckOperand(std::string_view role, DType dtype, std::span<const std::int64_t> dims,
                    const void* data, const MatMulPlan& plan, const Dims& expected_dims,
                    std::int64_t expected_elements) {
  if (dtype != plan.desc.dtype) {
    return InvalidArgumentError(std::string(role) + " has dtype " + std::string(DTypeName(dtype)) +
                                " but the plan is for " + std::string(DTypeName(plan.desc.dtype)));
  }
  if (!std::equal(dims.begin(), dims.end(), expected_dims.begin(), expected_dims.end())) {
    return InvalidArgumentError(std::string(role) + " has shape " + DimsToString(dims) +
                                " but the plan expects " + DimsToString(expected_dims));
  }
  if (data == nullptr && expected_elements != 0) {
    return InvalidArgumentError(std::string(role) + " has no data");
  }
  return OkStatus();
}

bool Overlaps(const void* p, std::size_t p_bytes, const void* q, std::size_t q_bytes) {
  if (p_bytes == 0 || q_bytes == 0) return false;
  auto a = reinterpret_cast<std::uintptr_t>(p);
  auto b = reinterpret_cast<std::uintptr_t>(q);
  return a < b + q_bytes && b < a + p_bytes;
}

// Whether a view has the plan's dtype, dims and (unless empty) data: the check of every call, kept
// inline and branch-light so that tiny products do not pay for building an error they never need.
inline bool Fits(DType dtype, std::span<const std::int64_t> dims, const void* data,
                 const MatMulPlan& plan, const Dims& expected_dims,
                 std::int64_t expected_elements) {
  if (dtype != plan.desc.dtype || dims.size() != expected_dims.size()) return false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != expected_dims[i]) return false;
  }
  return data != nullptr || expected_elements == 0;
}

}  // namespace

Status MatMulPrimitive::Execute(TensorView a, TensorView b, MutableTensorView y) {
  const std::size_t elem = DTypeSize(plan_.desc.dtype);
  const std::size_t y_bytes = static_cast<std::size_t>(plan_.y_elements) * elem;
  if (Fits(a.dtype, a.dims, a.data, plan_, plan_.desc.a_dims, plan_.a_elements) &&
      Fits(b.dtype, b.dims, b.data, plan_, plan_.desc.b_dims, plan_.b_elements) &&
      Fits(y.dtype, y.dims, y.data, plan_, plan_.y_dims, plan_.y_elements) &&
      !Overlaps(y.data, y_bytes, a.data, static_cast<std::size_t>(plan_.a_elements) * elem) &&
      !Overlaps(y.data, y_bytes, b.data, static_cast<std::size_t>(plan_.b_elements) * elem)) {
    return runner_->Run(a, b, y);
  }
  // Something does not fit: the same checks again, now building the error that names it.
  MM_RETURN_IF_ERROR(
      CheckOperand("A", a.dtype, a.dims, a.data, plan_, plan_.desc.a_dims, plan_.a_elements));
  MM_RETURN_IF_ERROR(
      CheckOperand("B", b.dtype, b.dims, b.data, plan_, plan_.desc.b_dims, plan_.b_elements));
  MM_RETURN_IF_ERROR(
      CheckOperand("Y", y.dtype, y.dims, y.data, plan_, plan_.y_dims, plan_.y_elements));
  if (Overlaps(y.data, y_bytes, a.data, static_cast<std::size_t>(plan_.a_elements) * elem) ||
      Overlaps(y.data, y_bytes, b.data, static_cast<std::size_t>(plan_.b_elements) * elem)) {
    return InvalidArgumentError("Y overlaps A or B; MatMul does not compute in place");
  }
  return runner_->Run(a, b, y);
}

namespace {

// K = 0: every element is an empty sum, exactly +0; an empty Y: nothing to write. Only Y's own
// (non-empty) bytes are touched, so neither memory nor time grows with A's or B's dims.
class DegeneratePrimitive final : public MatMulPrimitive {
 public:
  using MatMulPrimitive::MatMulPrimitive;

  std::string implementation() const override {
    return std::string(kEngineAnswer) +
           (plan().y_elements == 0 ? "empty Y, nothing to compute" : "K = 0, Y is exact zeros");
  }

 protected:
  Status Run(TensorView, TensorView, MutableTensorView y) override {
    if (plan().y_elements > 0) {
      // All-zero bytes are +0 in every MatMul dtype (IEEE floats and two's complement integers).
      std::memset(y.data, 0,
                  static_cast<std::size_t>(plan().y_elements) * DTypeSize(plan().desc.dtype));
    }
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<MatMulPrimitive>> Backend::Prepare(const MatMulPlan& plan) {
  // PlanMatMul plans shapes of any element type (MatMul's family reuses it); the backends' MatMul
  // kernels take MatMul's dtypes only.
  MM_RETURN_IF_ERROR(CheckMatMulDType(plan.desc.dtype));
  const Support support = Supports(plan.desc);
  if (!support.supported()) {
    return UnimplementedError(std::string(name()) + " cannot compute " + plan.desc.ToString() +
                              ": " + support.note);
  }
  if ((plan.y_elements == 0 || plan.k == 0) && !JudgesDegenerateProducts()) {
    return std::unique_ptr<MatMulPrimitive>(std::make_unique<DegeneratePrimitive>(plan));
  }
  return PrepareProduct(plan);
}

StatusOr<Tensor> MatMul(Backend& backend, TensorView a, TensorView b) {
  if (a.dtype != b.dtype) {
    return InvalidArgumentError("A is " + std::string(DTypeName(a.dtype)) + " but B is " +
                                std::string(DTypeName(b.dtype)) + "; MatMul needs one dtype");
  }
  MatMulDesc desc{a.dtype, Dims(a.dims.begin(), a.dims.end()), Dims(b.dims.begin(), b.dims.end())};
  MM_ASSIGN_OR_RETURN(MatMulPlan plan, PlanMatMul(desc));
  MM_ASSIGN_OR_RETURN(std::unique_ptr<MatMulPrimitive> primitive, backend.Prepare(plan));
  MM_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(desc.dtype, plan.y_dims));
  MM_RETURN_IF_ERROR(primitive->Execute(a, b, y.mutable_view()));
  return y;
}

Status ConformanceGapError(std::string_view message) {
  return UnimplementedError("conformance gap: " + std::string(message));
}

bool IsConformanceGap(const Status& status) {
  return status.code() == StatusCode::kUnimplemented &&
         status.message().find("conformance gap: ") != std::string::npos;
}

}  // namespace mm
