// Gemm through a BLAS library's sgemm_/dgemm_: the family (mm/family/backend.h) of the BLAS
// backends. Internal to them: reached through BlasBackend::family().
#ifndef MM_BACKENDS_BLAS_BLAS_FAMILY_H_
#define MM_BACKENDS_BLAS_BLAS_FAMILY_H_

#include <string>

#include "mm/family/backend.h"

namespace mm::blas {

class BlasBackend;

// Gemm (every version) in float and double, natively: C broadcast-copied into Y (row-major
// [M, N]), then one sgemm_/dgemm_ of the column-major interface, Y^T = alpha op(B)^T op(A)^T +
// beta Y^T, with alpha, beta and the transposes passed through (no operand copied or transposed
// by mm); without C, beta 0, so Y is not read. Every other type (the BLAS interface has no
// integer, float16 or bfloat16 GEMM mm uses for Gemm) and MatMulInteger and QLinearMatMul (no
// 8-bit integer GEMM in the interface) are refused with the reason. A dimension above 2^31 - 1
// (the libraries' 32-bit Fortran integer) is a conformance gap, never truncated.
class BlasFamily final : public family::FamilyBackend {
 public:
  // `backend` must outlive this object.
  explicit BlasFamily(const BlasBackend& backend) : backend_(backend) {}

  Support SupportsOp(const family::OpDesc& desc) const override;
  // float in float32, double in float64 (the BLAS interface: reference BLAS 3.11's SGEMM/DGEMM).
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override;
  Status Compute(const family::Plan& plan, MutableTensorView y) override;
  // "OpenBLAS sgemm_ (SkylakeX kernel), transA 'T', transB 'N', beta with C copied into Y".
  std::string Implementation(const family::OpDesc& desc) const override;

 private:
  const BlasBackend& backend_;
};

}  // namespace mm::blas

#endif  // MM_BACKENDS_BLAS_BLAS_FAMILY_H_
