// The exact oracle of MatMul and the two rules a result is judged by: ONNX's fixed tolerance and
// the error bound a correct backend stays within. The harness (mm-conformance), the differential
// fuzzer (mm-fuzz) and the backends' tests (MatMulTester) all judge by these.
//
// Oracle. Integers: exact modulo 2^bits (the same wraparound numpy has), through a uint64 GEMM
// (Eigen's; 32-bit inputs widened to uint64, whose products and sums modulo 2^64 keep the low 32
// bits exact). Elements with NaN or infinite inputs get IEEE's answer (a NaN term, 0 * inf, or
// +inf with -inf give NaN; else the infinity).
//
// The exact path, per element: the products (exact in double for float16, bfloat16 and float
// inputs; TwoProduct's error-free split for double) summed with Ogita, Rump and Oishi's Dot2
// (TwoSum with fma), as accurate as if summed in twice double's precision and rounded once:
// |oracle - exact| <= 2^-53 |exact| + gamma_K(2^-53)^2 * S. Y is that value rounded (nearest even)
// to the output type.
//
// The fast path (float16, bfloat16 and float inputs): a certified filter in front of the exact
// path.
//  - Two double GEMMs (Eigen's: panels of B's columns converted to double once and shared, tiles
//    of A's rows converted per thread, one tile per OpenMP task; the values of A and B are exact
//    in double) give per element
//    v = sum a_k b_k and s = sum |a_k| |b_k| as computed in double. Every product of two such
//    inputs is exact in double and normal (the smallest, 2^-149 squared, is 2^-298), and a double
//    sum whose result is subnormal is exact, so whatever the order, blocking or fma the GEMM uses
//    (K - 1 roundings on any path), Higham's 3.1 gives |v - x| <= gamma_K * S and
//    |s - S| <= gamma_K * S for the exact x and S, u = 2^-53. Hence S <= s / (1 - gamma_K) and
//    |v - x| <= R(K, s) = gamma_K s / (1 - gamma_K) = K u s / (1 - 2 K u), computed with every
//    step rounded upward (oracle_internal.h: FastRadius). Flush-to-zero and denormals-are-zero are
//    switched off on the threads for the duration (another library may have set them).
//  - The element is decided when every real in [v - R(K + 1, s), v + R(K + 1, s)] (ends rounded
//    outward) rounds to the same output value, of a decided sign: the real x, and also the exact
//    path's double (off x by at most u S + gamma_K u^2 S <= R(K + 1, s) - R(K, s)), round to it, so
//    Y is correctly rounded and equal bit for bit to the exact path's. A midpoint inside the
//    interval leaves the element undecided (rounding is monotone: equal rounded ends mean no
//    midpoint strictly inside; one at an end rounds to the same value as that end). Most elements
//    are decided without the outward sums: with q the output's spacing at v and n = v / q rounded
//    to an integer (v / q exact: q is a power of two), every real within r of v rounds to n q
//    when (1/2 - |v / q - n|) q > r, each step exact (Sterbenz: |v / q - n| <= 1/2, n != 0),
//    unless n q is zero, beyond the largest value, or a binade's first value (the spacing below it
//    is half), which take the test above.
//  - Every other element takes the exact path: undecided ones, those a NaN or infinite input
//    reaches (special), and those whose interval reaches zero (the sign of a zero is the exact
//    path's). Elements with s = 0 are +0 exactly. There is no overflow: |v| and s stay below
//    2^128 * 2^128 * K in double. The count is OracleResult::exact_fallbacks. Those without a
//    special or subnormal input are computed several at a time (eight interleaved, or a whole
//    chunk of a row's columns where they are dense), each with the exact path's operations in its
//    order: the same bits as one at a time. The fast path for double inputs does the same.
//  - For a decided element, exact is v, off x by at most exact_error = R(K, s) (0 on the exact
//    path), and abs_sum is s rounded up like the exact path's S; OracleBounds adds exact_error to
//    the radius, so the bound still holds every value a correct backend may return.
//
// The fast path for double inputs: the same filter one level up (Ozaki's splitting).
//  - Each row i of A (column j of B) has an exponent e_i (f_j) with every |x| < 2^e_i, and is split
//    exactly into x = h1 + h2 + r3: h1 the nearest multiple of 2^(e_i - tau), h2 that of the rest
//    on 2^(e_i - 2 tau), r3 what is left, |h1| <= 2^e_i, |h2| <= 2^(e_i - tau - 1),
//    |r3| <= 2^(e_i - 2 tau - 1), with tau = floor((53 - ceil(log2 K)) / 2). Every term of
//    A1 B1 is an integer multiple of 2^(E - 2 tau) (E = e_i + f_j) of at most 2^(2 tau) of them,
//    and every term of [A1 A2] [B2; B1] one of 2^(E - 3 tau) of at most 2^(2 tau - 1): K or 2K such
//    terms, and every partial sum in any order, blocking or with fma, are integers below 2^53 of
//    that unit, so both double GEMMs are exact. The remainder x - those two is the GEMM
//    [A1 + A2, A2, A3] [B3; B2; B] over 3K terms of magnitude at most 1.25 * 2^(E - 2 tau) in all:
//    Higham's 3.1 bounds its error by gamma_3K * 1.25 K 2^(E - 2 tau), plus 2^-1075 per product
//    that underflows (sums of subnormals are exact).
//  - With x = P11 + Pc + R (three TwoSums give it as s2 + t + te exactly), the element is decided
//    when every real within r of it lies strictly between the two midpoints around one double y:
//    r = the remainder's bound + 2 gamma_(2K+2)^2 s (Dot2's sum before its last rounding is within
//    gamma_2K^2 S of x, Ogita, Rump and Oishi; S <= s / (1 - gamma_K) from the GEMM of |A| |B|)
//    + 8 K 2^-1074 (TwoProduct's errors that underflow), every step rounded upward and the
//    comparisons rounded towards failing (the candidate y is s2 + t, or its neighbour when that
//    rounded on a tie). Then the exact path's double rounds to y too: Y, and its
//    exact value, are the exact path's bit for bit (exact_error 0, as there); abs_sum is s rounded
//    up as above.
//  - The splitting needs its powers of two normal and its grids above 2^-1074: a row or column with
//    a NaN, infinity or double subnormal, or |e| > 960, and elements with E outside [-900, 960],
//    s >= 2^1000 (no overflow anywhere), |y| outside [2^-1000, 2^1000] or undecided take the exact
//    path; so does the whole problem when tau < 8 (K beyond 2^37). s = 0 gives +0 exactly.
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
  std::vector<double> exact;  // The dot product (within exact_error of it) or IEEE's NaN/inf.
  // A bound on |exact - the dot product| (0: negligible, above); empty, every entry being 0, for
  // double inputs and wherever the exact path computes every element.
  std::vector<double> exact_error;
  std::vector<double> abs_sum;  // S = sum |a_k| |b_k| over the finite terms; inf if it overflows.
  // The part of S from terms with a subnormal input (subnormal in the dtype or in double); empty,
  // every entry being 0, when no input of A or B is subnormal (8 bytes an element saved).
  std::vector<double> subnormal_abs_sum;
  std::vector<std::uint8_t> special;  // 1 where a NaN or infinite input reaches the element.
  std::int64_t exact_fallbacks = 0;   // Float elements computed by the exact path.
};

// How the oracle computes (the answer is the same either way).
struct OracleOptions {
  // The fast paths above; false: the exact path for every element (and the integer loop), for
  // tests that compare the two.
  bool fast = true;
  // When set and true, ExactMatMul stops at its next tile and returns a kCancelled-like status (see
  // status.h).
  const std::atomic<bool>* cancel = nullptr;
};

// Computes MatMul(a, b) for `plan` (a and b must match plan.desc) with the oracle above, on the
// OpenMP threads (omp_get_max_threads; one inside a parallel region). Memory: the result, a
// double copy of a panel of B's columns and, per thread, a tile of A's rows and its products;
// the per-thread buffers (tens of MB at most, bounded by the tile sizes) and Eigen's packing
// buffers for up to four product shapes are kept for the next call, not freed.
StatusOr<OracleResult> ExactMatMul(const MatMulPlan& plan, TensorView a, TensorView b,
                                   const OracleOptions& options = {});

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

#endif  // MM_ENGINE_ERROR_BOUND_H_
