// The reference backend's loops for MatMul's family (Gemm, MatMulInteger, QLinearMatMul): plain
// loops over the plan, written apart from the oracle (engine/family/exact*.cc) so that each checks
// the other.
#ifndef MM_BACKENDS_REFERENCE_FAMILY_KERNELS_H_
#define MM_BACKENDS_REFERENCE_FAMILY_KERNELS_H_

#include <string>

#include "mm/family/backend.h"

namespace mm::reference {

// The reference's FamilyBackend:
//  - MatMulInteger: (a - a_zp)(b - b_zp) in int32 (exact: below 2^16 in magnitude), summed in
//    int32 with wrap-around (the standard's "may overflow only in 32 bits"), as uint32.
//  - QLinearMatMul: the same accumulation, then acc * a_scale * b_scale / y_scale exactly (an
//    integer quotient of the scales' mantissas, no float rounding), rounded half to even, plus
//    y_zero_point, saturated.
//  - Gemm: float types accumulate alpha * sum a b + beta * c in double and round once to Y's type;
//    integer types wrap modulo 2^bits (alpha and beta are integers there: PlanProblem refuses
//    others). C is added whatever beta is (the formula of the standard's text).
// Every version of the three operators, every element type the plan accepts.
class FamilyKernels final : public family::FamilyBackend {
 public:
  Support SupportsOp(const family::OpDesc& desc) const override;
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override;
  Status Compute(const family::Plan& plan, MutableTensorView y) override;
  std::string Implementation(const family::OpDesc& desc) const override;
};

}  // namespace mm::reference

#endif  // MM_BACKENDS_REFERENCE_FAMILY_KERNELS_H_
