// The exact oracle of MatMul: the exact product, the answer every judgement starts from (the
// harness mm-conformance, the differential fuzzer mm-fuzz and the backends' tests, MatMulTester,
// through the bounds of mm/oracle/error_bound.h).
//
// Oracle. Integers: exact modulo 2^bits (the same wraparound numpy has), through a uint64 GEMM
// (Eigen's; 32-bit inputs widened to uint64, whose products and sums modulo 2^64 keep the low 32
// bits exact). Elements that a NaN or infinite input reaches get the answer of the real numbers
// extended by the inputs' infinities: the terms with such an input decide alone (a NaN input,
// 0 * inf, or +inf with -inf give NaN; else their one infinity), since a finite term, however
// large, is no infinity, even where its double overflows (where IEEE's evaluation in the dtype may
// give NaN: docs/conformance.md, "Overflow beside an infinite input").
//
// The exact path, per element: the products (exact in double for float16, bfloat16 and float
// inputs; TwoProduct's error-free split for double) summed with Ogita, Rump and Oishi's Dot2
// (TwoSum with fma), as accurate as if summed in twice double's precision and rounded once:
// |oracle - exact| <= 2^-53 |exact| + gamma_K(2^-53)^2 * S. Where a double product or partial sum
// (or S) overflows, which only double inputs can make, the exact sum instead
// (mm/oracle/exact_accumulator.h), rounded once to double (+-inf beyond its range). Y is that value
// rounded (nearest even) to the output type.
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
#ifndef MM_ORACLE_EXACT_MATMUL_H_
#define MM_ORACLE_EXACT_MATMUL_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace mm {

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
// buffers for up to four product shapes are kept for the next call, not freed. Runs the kernels
// of the level ChosenCpuIsa() names (machine.h): kInvalidArgument for an unknown MM_MAX_CPU_ISA.
// With options.cancel set, kCancelled once it turns true: checked between tiles and panels of the
// fast path, rows of the exact path (and every few thousand terms inside a long row), and batch
// entries of the integer products.
StatusOr<OracleResult> ExactMatMul(const MatMulPlan& plan, TensorView a, TensorView b,
                                   const OracleOptions& options = {});

}  // namespace mm

#endif  // MM_ORACLE_EXACT_MATMUL_H_
