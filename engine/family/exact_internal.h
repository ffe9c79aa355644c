// The exact oracle's pieces, one per operator kind (exact_integer.cc, exact_gemm.cc).
#ifndef MM_FAMILY_EXACT_INTERNAL_H_
#define MM_FAMILY_EXACT_INTERNAL_H_

#include "mm/family/exact.h"

namespace mm::family::internal {

// MatMulInteger and QLinearMatMul.
StatusOr<FamilyOracle> ExactInteger(const Plan& plan);
// Gemm.
StatusOr<FamilyOracle> ExactGemm(const Plan& plan, const Arithmetic& arithmetic,
                                 const OracleOptions& options);

}  // namespace mm::family::internal

#endif  // MM_FAMILY_EXACT_INTERNAL_H_
