// Internal to mm_fuzz (not published): the values of a generated family problem
// (family_problem.h), after its shapes: each filler writes its tensors in place and draws from
// `rng` only, so that a problem depends on (seed, index, operator) alone.
#ifndef MM_CONFORMANCE_FUZZ_FAMILY_VALUES_H_
#define MM_CONFORMANCE_FUZZ_FAMILY_VALUES_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "mm/conformance/fuzz/family_problem.h"
#include "mm/conformance/fuzz/problem.h"
#include "mm/engine/tensor.h"

namespace mm::fuzz {

// m, n and k halved (the largest first) until A, B and Y of `batch` matrices fit
// options.max_elements and the products options.max_products.
void FitSizes(std::int64_t batch, const GeneratorOptions& options, std::int64_t& m, std::int64_t& n,
              std::int64_t& k);

// Every element of `t` (any element type) set to `value(i)` rounded to the type; a negative value
// for an unsigned type wraps modulo 2^bits (converting it directly would be undefined).
template <class F>
void FillEach(Tensor& t, F value) {
  VisitElementType(t.dtype(), [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    T* data = t.Data<T>();
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      const double v = value(i);
      if constexpr (std::is_unsigned_v<T>) {
        data[i] = v < 0 ? static_cast<T>(static_cast<std::int64_t>(v)) : RoundFromDouble<T>(v);
      } else {
        data[i] = RoundFromDouble<T>(v);
      }
    }
  });
}

// The value families of the integer operators' int8/uint8 operands.
//   "uniform"           every value of the type;
//   "small-int"         values within 8 of 0;
//   "extremes"          the type's ends and their neighbours;
//   "saturating pairs"  the vpmaddubsw pair: A (uint8) in [192, 255], B (int8) in adjacent
//                       positions along K both +126/+127 or both -127/-128 (each pair's exact sum
//                       leaves int16: 192 * 126 * 2 > 32767);
//   "outside int32"     A at its largest magnitude, B at -128 (the form large K): the exact sum
//                       leaves int32 at K >= 65,794 (33,026 with b's zero point 127).
// `k` and `n` are B's K and N (B is [..., K, N], or [K] with n = 1).
void FillIntegerOperands(Rng& rng, const std::string& family, std::int64_t k, std::int64_t n,
                         Tensor& a, Tensor& b);

// A zero point of family "0", "mid" (128 for uint8, 0 for int8), "ends" (the type's ends) or
// "random"; "outside int32" gives b's zero point 127 (int8) where the family wants it.
void FillZeroPoint(Rng& rng, const std::string& family, Tensor& zero_point);

// QLinearMatMul's three scales (element type TS, each of its own form) of family
//   "typical"     a and b in [2^-8, 2^-2), y near a * b * 2^4..2^12: outputs spread over the type;
//   "ties"        a = 2^-p (p in 1..3), b = y = 1: acc * 2^-p, exact halves in both directions;
//   "saturation"  a = b = 1, y = 2^-4: outputs saturate at both ends;
//   "extreme"     powers of two at TS's smallest normal or largest exponents, the multiplier still
//                 moderate.
void FillScales(Rng& rng, const std::string& family, Tensor& a_scale, Tensor& b_scale,
                Tensor& y_scale);

// Gemm's C (float or integer T): small integers, uniform in [-1, 1] (floats) or uniform bits
// (integers); with `specials`, NaN or an infinity sometimes (the beta = 0 ambiguity). Returns the
// family's name.
std::string FillGemmC(Rng& rng, bool specials, Tensor& c);

// The versions of Gemm that take `dtype` (DrawGemm picks one of them, each alike): float16, float
// and double from version 1, the integer types from 9, bfloat16 from 13.
std::vector<int> GemmVersionsFor(DType dtype);

// Draws a Gemm problem of element type `dtype` into `p` (family_gemm.cc): a version that takes the
// type, transposes, alpha and beta (absent, 1, 0, negative, not representable in the type; integers
// for an integer type), C in each form the version allows, A' and B' of MatMul's value families.
void DrawGemm(Rng& rng, DType dtype, const GeneratorOptions& options, FamilyProblem& p);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FAMILY_VALUES_H_
