#include "mm/family/backend.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace mm::family {

std::string OpDesc::ToString() const {
  std::string out = std::string(OpName(op)) + "-" + std::to_string(version) + " ";
  if (op == Op::kMatMul || op == Op::kGemm) return out + std::string(DTypeName(y_dtype));
  out += std::string(DTypeName(a_dtype)) + " x " + std::string(DTypeName(b_dtype)) + " -> " +
         std::string(DTypeName(y_dtype));
  if (op == Op::kQLinearMatMul) out += ", " + std::string(DTypeName(scale_dtype)) + " scales";
  return out;
}

std::string_view IntegerAccumulationName(IntegerAccumulation accumulation) {
  switch (accumulation) {
    case IntegerAccumulation::kExact:
      return "exact int32 accumulation";
    case IntegerAccumulation::kPairSums16:
      return "16-bit pair sums (saturating)";
  }
  return "unknown accumulation";
}

OpDesc DescOf(const Plan& plan) {
  return {plan.op, plan.version, plan.a_dtype, plan.b_dtype, plan.y_dtype, plan.scale_dtype};
}

Support SupportOf(Backend& backend, const OpDesc& desc) {
  if (desc.op == Op::kMatMul) {
    return Support::No("MatMul is asked through Backend::Supports with its shapes");
  }
  FamilyBackend* family = backend.family();
  if (family == nullptr) {
    return Support::No(std::string(backend.name()) + " computes MatMul only, not " +
                       std::string(OpName(desc.op)));
  }
  return family->SupportsOp(desc);
}

StatusOr<Tensor> ComputeOp(Backend& backend, const Plan& plan, unsigned char poison) {
  MM_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(plan.y_dtype, plan.y_dims()));
  if (y.NumBytes() > 0) std::memset(y.raw_data(), poison, y.NumBytes());
  MM_RETURN_IF_ERROR(ComputeOpInto(backend, plan, y.mutable_view()));
  return y;
}

Status ComputeOpInto(Backend& backend, const Plan& plan, MutableTensorView y) {
  const OpDesc desc = DescOf(plan);
  const Support support = SupportOf(backend, desc);
  if (!support.supported()) {
    return UnimplementedError(std::string(backend.name()) + " does not compute " + desc.ToString() +
                              ": " + support.note);
  }
  if (y.dtype != plan.y_dtype || !std::ranges::equal(y.dims, plan.y_dims())) {
    return InvalidArgumentError("Y of " + desc.ToString() + " must be " +
                                std::string(DTypeName(plan.y_dtype)) + " " +
                                DimsToString(plan.y_dims()) + ", not " +
                                std::string(DTypeName(y.dtype)) + " " + DimsToString(y.dims));
  }
  const Status status = backend.family()->Compute(plan, y);
  if (!status.ok()) {
    return Status(status.code(), std::string(backend.name()) + ": " + status.message());
  }
  return OkStatus();
}

}  // namespace mm::family
