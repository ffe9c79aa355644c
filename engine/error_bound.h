// The exact oracle of MatMul and the two rules a result is judged by: ONNX's fixed tolerance and
// the error bound a correct backend stays within. The harness (mm-conformance), the differential
// fuzzer (mm-fuzz) and the backends' tests (MatMulTester) all judge by these.
//
// Oracle. Integers: exact modulo 2^bits (the same wraparound numpy has). float16, bfloat16 and
// float32 inputs: products are exact in double and the K products are summed with Ogita, Rump and
// Oishi's Dot2 (TwoSum / TwoProduct with fma), as accurate as if summed in twice double's precision
// and rounded once: |oracle - exact| <= 2^-53 |exact| + gamma_K(2^-53)^2 * S. double inputs: the
// same Dot2, whose TwoProduct makes every product error-free too. Elements with NaN or infinite
// inputs get IEEE's answer (a NaN term, 0 * inf, or +inf with -inf give NaN; else the infinity).
//
// Bound. A backend that forms the K products and sums them in its declared accumulation type (unit
// roundoff u; any order, blocking, fma or not) and rounds once to the output type gives, for every
// element (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1):
//   |got - exact| <= gamma_K * S + K * eta + half an ULP of the output at the result,
//   gamma_K = K u / (1 - K u),  S = sum_k |a_k| |b_k|,  eta = half the accumulation type's smallest
//   subnormal (underflow of a product).
// Implemented exactly as: got is accepted iff RN(exact - e) <= got <= RN(exact + e) with
// e = gamma_K * S + K * eta and RN the rounding to the output type (so half an ULP of the output,
// overflow to infinity and subnormal outputs come out right). When S reaches the largest finite
// value of the accumulation type an intermediate sum may overflow: the bound is then infinite.
#ifndef MM_ENGINE_ERROR_BOUND_H_
#define MM_ENGINE_ERROR_BOUND_H_

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/arithmetic.h"
#include "engine/dtype.h"
#include "engine/matmul_plan.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace mm {

// ONNX's node-test tolerance (onnx/backend/test/runner: numpy.testing.assert_allclose with
// rtol=1e-3, atol=1e-7): an element passes iff |actual - expected| <= atol + rtol * |expected|.
// The fixed rule beside the K-aware bound below; conformance/compare.h applies it to tensors.
struct OnnxTolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
  // atol + rtol * |expected|: the largest |actual - expected| this rule accepts at `expected`.
  double Allowed(double expected) const { return atol + rtol * std::fabs(expected); }
};

// Unit roundoff 2^-p of a float dtype (p = significand bits): float 2^-24, double 2^-53, float16
// 2^-11, bfloat16 2^-8. 0 for integers (exact).
double UnitRoundoff(DType dtype);

// gamma_K = K u / (1 - K u), +inf when K u >= 1.
double Gamma(std::int64_t k, double u);

// The oracle's answer for one MatMul.
struct OracleResult {
  // Y rounded to the output dtype (nearest even); integers exact modulo 2^bits.
  Tensor y;
  // Float dtypes only (empty for integers), one entry per element of Y:
  std::vector<double> exact;    // The dot product (error negligible, see above) or IEEE's NaN/inf.
  std::vector<double> abs_sum;  // S = sum |a_k| |b_k| over the finite terms; inf if it overflows.
  std::vector<double> subnormal_abs_sum;  // The part of S from terms with a subnormal input.
  std::vector<std::uint8_t> special;      // 1 where a NaN or infinite input reaches the element.
};

// Computes MatMul(a, b) for `plan` (a and b must match plan.desc) with the oracle above.
StatusOr<OracleResult> ExactMatMul(const MatMulPlan& plan, TensorView a, TensorView b);

// e = gamma_K(u_acc) * S + K * eta_acc, the accumulation error a backend summing in `accumulation`
// may make; +inf when S reaches the largest finite `accumulation` value (overflow possible).
double AccumulationError(DType accumulation, std::int64_t k, double abs_sum);
// The same for a declared arithmetic, with the allowance for flushed subnormals (`subnormal_sum`:
// the part of S from terms with a subnormal input).
double AccumulationError(const Arithmetic& arithmetic, std::int64_t k, double abs_sum,
                         double subnormal_sum);

// The values a correct backend may return for one element.
struct ElementBound {
  double center = 0;         // The exact value; NaN or inf if special.
  double radius = 0;         // e before the output rounding; +inf: any value (overflow possible).
  bool special = false;      // center is IEEE's NaN/inf from NaN/inf inputs: got must be the same.
  bool nan_allowed = false;  // Special, and a flushed subnormal times an infinity may give NaN.
};

// True when `got` (already in the output dtype, widened to double) is a value a correct backend may
// return: RN(center - radius) <= got <= RN(center + radius) in the float dtype `output`; for a
// special element, the same NaN/infinity (any NaN or infinity when radius is infinite: an
// overflowing intermediate sum can meet the infinity in any order).
bool WithinBound(DType output, const ElementBound& bound, double got);

// The interval WithinBound accepts for a bound that is neither special nor infinite, in the float
// dtype `output`: [RN(center - radius), RN(center + radius)], each end widened by two double ULPs
// first (the rounding of center -/+ radius and the oracle's own error).
struct AcceptedValues {
  double lo = 0, hi = 0;
};
AcceptedValues AcceptedRange(DType output, const ElementBound& bound);

// Where `got` stands in its bound, for statistics that must agree with the verdict:
// |got - center| / (radius + half the output's spacing at got, towards the center), what
// WithinBound accepts once the bound's end is rounded to the output type. 0 when got is the center;
// <= 1 exactly when WithinBound accepts got; +inf for NaN or an infinity. The bound must be neither
// special nor infinite.
double BoundFraction(DType output, const ElementBound& bound, double got);

// One ElementBound per element of the oracle's Y for a backend accumulating in `accumulation`
// over `k` terms. Empty for integer dtypes (they are judged exactly).
std::vector<ElementBound> OracleBounds(const OracleResult& oracle, const Arithmetic& arithmetic,
                                       std::int64_t k);

}  // namespace mm

#endif  // MM_ENGINE_ERROR_BOUND_H_
