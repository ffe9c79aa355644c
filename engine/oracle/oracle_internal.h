// The pieces of the exact oracle (mm/oracle/exact_matmul.h) that its fast path is built from,
// exposed for its tests and benchmark. Private to engine/oracle/ (its sources, tests and benchmark
// reach it through a private include directory). Not an API: callers use ExactMatMul.
#ifndef MM_ORACLE_ORACLE_INTERNAL_H_
#define MM_ORACLE_ORACLE_INTERNAL_H_

#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/oracle/exact_accumulator.h"
#include "mm/oracle/exact_matmul.h"

namespace mm::oracle_internal {

// The next double above / below x (x itself when +inf / -inf or NaN): std::nextafter towards
// +/-inf, inline (the judge calls it for every element).
inline double NextUp(double x) {
  if (!(x < std::numeric_limits<double>::infinity())) return x;
  if (x == 0) return std::numeric_limits<double>::denorm_min();
  const auto bits = std::bit_cast<std::uint64_t>(x);
  return std::bit_cast<double>(x > 0 ? bits + 1 : bits - 1);
}
inline double NextDown(double x) { return -NextUp(-x); }

// The smallest normal value of a float dtype (of float for the integer ones).
double MinNormal(DType dtype);

// One element of the exact path: Dot2 of a[0], a[1], ..., a[k-1] and b[0], b[stride], ...,
// b[(k-1) * stride] (WideDot's exact sum where a double product or sum overflows); where a NaN or
// infinite input reaches it, the sum of the terms with such an input alone (NaN, or the one
// infinity they share: mm/oracle/exact_matmul.h). abs_sum and subnormal_abs_sum are already rounded
// up.
struct ExactElement {
  double exact = 0;
  double abs_sum = 0;
  double subnormal_abs_sum = 0;
  bool special = false;
};
// V is T, or double holding T's values (the same result: the conversion is exact).
template <class T, class V = T>
ExactElement ExactDot(const V* a, const V* b, std::int64_t k, std::int64_t stride);

// The exact sum of a[p * a_stride] * b[p * b_stride] over p < k, every input finite, rounded once
// to double (an exact 0 is +0): for the elements whose double products or partial sums overflow.
template <class VA, class VB>
double WideDot(const VA* a, const VB* b, std::int64_t k, std::int64_t a_stride,
               std::int64_t b_stride) {
  ExactAccumulator sum;
  for (std::int64_t p = 0; p < k; ++p) {
    sum.AddProduct(ToDouble(a[p * a_stride]), ToDouble(b[p * b_stride]));
  }
  return sum.RoundToDouble();
}

// A rigorous bound on |v - x| for x = sum_k a_k b_k with every product exact in double, v that sum
// computed in double in any order with or without fma, and s the sum of |a_k| |b_k| computed the
// same way: gamma_K s / (1 - gamma_K) = K u s / (1 - 2 K u), u = 2^-53, computed as
// RU(RadiusFactor(K) * s) with RU the upward rounding (an fma residual decides it). +inf when
// 2 K u >= 1 or s is not finite.
double FastRadius(std::int64_t k, double s);
// RU(K u / (1 - 2 K u)), +inf when 2 K u >= 1: FastRadius's factor, one per problem.
double RadiusFactor(std::int64_t k);
// RU(factor * s), +inf when either is not finite: FastRadius with its factor computed once. The
// float path's tiles take their radii from it, so FastRadius's tests hold for them.
double RadiusFrom(double factor, double s);
// RadiusFrom inline, without branches, so that a row of them vectorises (for factor >= 0 and
// s >= 0, NaN or infinite): RU(p) as one step up from p where fma's residual is positive or p may
// have underflowed.
inline double RadiusFromRow(double factor, double s) {
  const double p = factor * s;
  const bool up = (std::fma(factor, s, -p) > 0) | (p < 0x1p-960);
  const double r = std::bit_cast<double>(std::bit_cast<std::uint64_t>(p) + (up ? 1 : 0));
  const bool finite = std::isfinite(s) & (factor < std::numeric_limits<double>::infinity());
  const bool zero = (s == 0) | (factor == 0);
  return finite ? (zero ? 0.0 : r) : std::numeric_limits<double>::infinity();
}

// The decision for double inputs: x lies within r of p11 + pc + rr (three doubles). True when every
// real in that interval lies strictly between the two midpoints around one double, which is *y;
// false too when |y| is outside [2^-1000, 2^1000] or r is not finite.
bool DecideDouble(double p11, double pc, double rr, double r, double* y);

// True when every real number in [v - r, v + r] rounds (nearest even) to the same value of the
// float type T, and that value's sign is decided (the interval does not reach zero); then *y is
// that value. The ends are rounded outward (v - r downward, v + r upward), so the interval holds
// every real within r of v. r must be >= 0.
template <class T>
bool DecideRounding(double v, double r, T* y);

// The functions below run the copy of the oracle's kernels compiled for the level ChosenCpuIsa()
// names (machine.h; an unknown MM_MAX_CPU_ISA is their error). Each stops at its next tile, row or
// batch entry once `cancel` (when given) is true, returning kCancelled: the result is then
// incomplete.

// Asks the kernel to back the 2 MiB-aligned part of [data, data + bytes) with huge pages, for a
// buffer not yet written (Linux's transparent huge pages in "madvise" mode; elsewhere, or when the
// kernel refuses, nothing changes). For the oracle's per-thread tiles and panels, kept from call to
// call and read many times by the GEMMs: 512 times fewer faults and TLB entries. Not for its
// result arrays (error_bound.cc), written once.
void AdviseHugePages(void* data, std::size_t bytes);
// The whole oracle for float, float16 and bfloat16 inputs through a double GEMM of A and B and of
// |A| and |B| (shared panels of B and tiles of A converted to double; Eigen's GEMM, one tile per
// OpenMP task), exact summation only for the elements it does not decide. Fills `out` (sized by the
// caller); returns the number of elements computed by exact summation.
template <class T>
StatusOr<std::int64_t> FastFloatMatMul(const MatMulPlan& plan, const T* a, const T* b,
                                       OracleResult& out,
                                       const std::atomic<bool>* cancel = nullptr);

// The oracle for double inputs: each row of A and column of B split into three slices (two on
// grids coarse enough for their double GEMMs to be exact, and the rest), four double GEMMs (the
// exact A1 B1 and A1 B2 + A2 B1, the remainder's, and |A| |B|), exact summation only for the
// elements they do not decide (mm/oracle/exact_matmul.h). Fills `out`; returns the number of
// elements computed by exact summation.
StatusOr<std::int64_t> FastDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                                        OracleResult& out,
                                        const std::atomic<bool>* cancel = nullptr);

// Y = A x B modulo 2^bits through Eigen's uint64 GEMM (32-bit types widened to uint64 first: their
// low 32 bits are exact). Uses the OpenMP threads.
template <class T>
Status FastIntegerMatMul(const MatMulPlan& plan, const T* a, const T* b, T* y,
                         const std::atomic<bool>* cancel = nullptr);

// The exact path for every element, spread over the OpenMP threads by rows. Fills `out`.
template <class T>
Status ExactFloatMatMul(const MatMulPlan& plan, const T* a, const T* b, OracleResult& out,
                        const std::atomic<bool>* cancel = nullptr);

// The exact path for double inputs, bit for bit ExactFloatMatMul's: a row at a time with the
// columns in the inner loop (vectorised), spread over the OpenMP threads; problems with a NaN,
// infinite or subnormal input take ExactFloatMatMul itself. Fills `out`.
Status ExactDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                         OracleResult& out, const std::atomic<bool>* cancel = nullptr);

}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_ORACLE_INTERNAL_H_
