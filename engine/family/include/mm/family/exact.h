// The exact answer of a planned family problem, and the values a correct backend may return beside
// it (docs/family.md proves each rule):
//  - MatMulInteger: the int32 value of sum (a - a_zp)(b - b_zp), computed exactly in int64. Where
//    the exact sum leaves int32 the standard's "the accumulation may overflow if and only if in 32
//    bits" makes the wrapped value the answer: it is, and the element is marked.
//  - QLinearMatMul: the same exact accumulation (wrapped to int32 where it leaves it, marked), then
//    y = saturate(round_half_even(acc a_scale b_scale / y_scale) + y_zero_point) as an exact
//    rational (requantize.h), and the range a float32 evaluation of the multiplier can give: one
//    unit away from y is accepted (BOUND) only inside it. With an odd y_zero_point, the reading
//    of ONNX's reference evaluator too (zero point added before rounding: ambiguity.h).
//  - Gemm: alpha sum a b + beta c from ExactMatMul's exact sum and error-free products and sums,
//    its error bounded upward, and the bound of the backend's declared arithmetic extended to the
//    K + 1 terms and the two scalings. Integer Gemm: exact modulo 2^bits. Where the standard is
//    ambiguous (ambiguity.h) the other reading's bound too.
#ifndef MM_FAMILY_EXACT_H_
#define MM_FAMILY_EXACT_H_

#include <cstdint>
#include <vector>

#include "mm/engine/arithmetic.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/ambiguity.h"
#include "mm/family/plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::family {

// The exact answer of one family problem.
struct FamilyOracle {
  // Y in Y's type and shape: the exact answer as defined above (float Gemm: rounded to nearest
  // even; every element special or not).
  Tensor y;

  // MatMulInteger and QLinearMatMul: 1 where the exact accumulation leaves int32 and the wrapped
  // value was used (empty when no element does); their count. A problem with any is "outside the
  // standard's range": its answer is the one the standard allows, not the mathematical one.
  std::vector<std::uint8_t> outside_int32;
  std::int64_t outside_int32_count = 0;

  // QLinearMatMul: per element, the lowest and highest y a float32 evaluation of the multiplier
  // gives (y_low <= y <= y_high).
  std::vector<std::int16_t> y_low, y_high;

  // Float Gemm: per element, the bound of the formula's value for the arithmetic the oracle was
  // asked for (center: the exact value; special: IEEE's NaN or infinity).
  std::vector<ElementBound> bounds;
  // The ambiguities the problem reaches: for each element index in `ambiguous` where the two
  // readings' accepted answers differ, the ambiguity and the other reading's answer.
  struct AmbiguousElement {
    std::int64_t index = 0;
    Ambiguity ambiguity = Ambiguity::kGemmBetaZeroNonFiniteC;
    // Float Gemm: the bound of the zero-scaled term left out.
    ElementBound skipped;
    // QLinearMatMul: y with the zero point added before rounding, and the lowest and highest y a
    // float32 evaluation of the multiplier gives that way.
    std::int64_t other_y = 0, other_low = 0, other_high = 0;
  };
  std::vector<AmbiguousElement> ambiguous;

  bool outside_standard_range() const { return outside_int32_count > 0; }
};

// Computes the exact answer of `plan` (MatMulInteger, QLinearMatMul or Gemm; MatMul is judged by
// the conformance harness's own path: INVALID_ARGUMENT) with bounds for a backend of `arithmetic`
// for Gemm's T (Arithmetic::OwnType(T) when it declares nothing). `options` go to ExactMatMul
// (cancellation, fast path).
StatusOr<FamilyOracle> ExactFamily(const Plan& plan, const Arithmetic& arithmetic,
                                   const OracleOptions& options = {});

}  // namespace mm::family

#endif  // MM_FAMILY_EXACT_H_
