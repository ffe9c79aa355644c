#include "mm/family/exact.h"

#include "exact_internal.h"

namespace mm::family {

StatusOr<FamilyOracle> ExactFamily(const Plan& plan, const Arithmetic& arithmetic,
                                   const OracleOptions& options) {
  switch (plan.op) {
    case Op::kMatMulInteger:
    case Op::kQLinearMatMul:
      return internal::ExactInteger(plan);
    case Op::kGemm:
      return internal::ExactGemm(plan, arithmetic, options);
    case Op::kMatMul:
      break;
  }
  return InvalidArgumentError(
      "ExactFamily judges Gemm, MatMulInteger and QLinearMatMul; MatMul has its own oracle "
      "(ExactMatMul) and judgement");
}

}  // namespace mm::family
