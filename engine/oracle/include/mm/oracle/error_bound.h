// The two rules a result is judged by: ONNX's fixed tolerance and the error bound a correct backend
// stays within, around the exact oracle's answer (mm/oracle/exact_matmul.h). The harness
// (mm-conformance), the differential fuzzer (mm-fuzz) and the backends' tests (MatMulTester) all
// judge by these.
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
#ifndef MM_ORACLE_ERROR_BOUND_H_
#define MM_ORACLE_ERROR_BOUND_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "mm/engine/arithmetic.h"
#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/oracle/exact_matmul.h"

namespace mm {

// ONNX's node-test tolerance (onnx/backend/test/runner: numpy.testing.assert_allclose with
// rtol=1e-3, atol=1e-7): an element passes iff |actual - expected| <= atol + rtol * |expected|.
// The fixed rule beside the K-aware bound below; conformance/judging/compare.h applies it to
// tensors.
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
// special element, the same NaN/infinity, or NaN where nan_allowed or the radius is infinite
// (finite terms may overflow to the opposite infinity and meet it: docs/conformance.md, "Overflow
// beside an infinite input"), never the other infinity.
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

// The ElementBound of every element of a product, read one element at a time: those of the
// oracle's Y for a backend with `arithmetic` over `k` terms, each computed when read (a stored
// table would take 24 bytes per element), or bounds listed one by one. A view: the oracle result or
// the list must outlive it. Copying it is cheap.
class OracleBounds {
 public:
  // No elements: what an integer dtype is judged with (exactly, against the exact product).
  OracleBounds() = default;
  // The oracle's bounds; none for an integer dtype (oracle.exact is empty).
  OracleBounds(const OracleResult& oracle, const Arithmetic& arithmetic, std::int64_t k);
  // Bounds given element by element (tests, hand-made judgements).
  OracleBounds(std::span<const ElementBound> listed) : listed_(listed), size_(listed.size()) {}
  OracleBounds(const std::vector<ElementBound>& listed)
      : OracleBounds(std::span<const ElementBound>(listed)) {}

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Element i's bound (i < size()): centre oracle.exact[i], radius
  // AccumulationError(arithmetic, k, abs_sum[i], subnormal_abs_sum[i]) + exact_error[i] (the
  // oracle's own error: every value within e of the exact one is within e + exact_error of the
  // oracle's), special and nan_allowed from oracle.special[i] and the flushing.
  ElementBound operator[](std::size_t i) const {
    if (exact_ == nullptr) return listed_[i];
    const bool special = special_[i] != 0;
    return {exact_[i], Radius(i), special, special && nan_allowed_};
  }

 private:
  // AccumulationError's steps in its order, with the per-problem factors computed once.
  double Radius(std::size_t i) const {
    double e = 0;
    if (float_accumulation_) {
      const double s = abs_sum_[i];
      e = !(s < max_finite_) ? std::numeric_limits<double>::infinity()
                             : (s == 0 ? 0 : gamma_ * s) + k_eta_;
      if (flushes_)
        e += (subnormal_abs_sum_ == nullptr ? 0 : subnormal_abs_sum_[i]) + k_min_normal_;
    }
    return exact_error_ == nullptr ? e : e + exact_error_[i];
  }

  std::span<const ElementBound> listed_;
  std::size_t size_ = 0;
  const double* exact_ = nullptr;
  const double* exact_error_ = nullptr;  // Null when the oracle states no error of its own.
  const double* abs_sum_ = nullptr;
  const double* subnormal_abs_sum_ = nullptr;  // Null when no input is subnormal.
  const std::uint8_t* special_ = nullptr;
  bool float_accumulation_ = false;
  double gamma_ = 0, k_eta_ = 0, max_finite_ = 0, k_min_normal_ = 0;
  bool flushes_ = false;      // Subnormals flushed in a float accumulation: the radius grows.
  bool nan_allowed_ = false;  // Subnormals flushed: a special element may also be NaN.
};

}  // namespace mm

#endif  // MM_ORACLE_ERROR_BOUND_H_
