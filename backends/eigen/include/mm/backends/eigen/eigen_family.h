// The eigen backend's MatMul family (Gemm, MatMulInteger, QLinearMatMul): Eigen products, as its
// MatMul is. Internal to the backend: reached through EigenBackend::family().
#ifndef MM_BACKENDS_EIGEN_EIGEN_FAMILY_H_
#define MM_BACKENDS_EIGEN_EIGEN_FAMILY_H_

#include <string>

#include "mm/engine/backend.h"
#include "mm/family/backend.h"

namespace mm::eigen_internal {

// Every version and element type of the three operators that PlanProblem accepts:
//  - Gemm: Y = alpha op(A) op(B) + beta C in one Eigen GEMM per block of rows (Y first holds
//    beta C broadcast to [M, N], then Eigen adds alpha op(A) op(B) to it; transposes are read in
//    place as column-major operands). float in float32, double in float64, float16 and bfloat16
//    widened to float32 and Y rounded once, the integer types in uint64 (wrapping modulo 2^64,
//    then truncated: exact modulo 2^bits).
//  - MatMulInteger: a - a_zero_point and b - b_zero_point widened to int32 (each zero point of
//    its operand's own row or column), then the eigen backend's own int32 MatMul (wrapping modulo
//    2^32, as the standard allows), over the same numpy.matmul plan.
//  - QLinearMatMul: the same accumulation, then each element requantized exactly
//    (family::RequantizeExact: round half to even of the exact rational, no float rounding).
// Not thread-safe (the backend's own int32 primitives are not).
class EigenFamily final : public family::FamilyBackend {
 public:
  // `matmul`: the eigen backend computing the integer operators' int32 products. It must
  // outlive this object.
  explicit EigenFamily(Backend& matmul) : matmul_(matmul) {}

  Support SupportsOp(const family::OpDesc& desc) const override;
  // Gemm: float, float16, bfloat16 in float32; double in float64; integers exact modulo 2^bits.
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override;
  Status Compute(const family::Plan& plan, MutableTensorView y) override;
  std::string Implementation(const family::OpDesc& desc) const override;

 private:
  Backend& matmul_;
};

// Y of a planned Gemm (any of its element types), as EigenFamily computes it (eigen_gemm.cc).
Status EigenGemm(const family::Plan& plan, MutableTensorView y);

}  // namespace mm::eigen_internal

#endif  // MM_BACKENDS_EIGEN_EIGEN_FAMILY_H_
