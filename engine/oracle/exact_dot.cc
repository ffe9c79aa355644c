// The exact path's one element (oracle_internal.h: ExactDot): Ogita, Rump and Oishi's Dot2 over
// the exact products, the exact accumulator where double's range is too narrow for it, and the
// answer of the infinities where a NaN or infinite input reaches the element.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mm/engine/dtype.h"
#include "mm/oracle/error_bound.h"
#include "mm/oracle/error_free.h"
#include "oracle_internal.h"

namespace mm::oracle_internal {
namespace {

// True when `x` (a value of T widened to double) is subnormal in T.
template <class T>
bool IsSubnormalIn(double x) {
  if constexpr (std::is_same_v<T, float16>) {
    return x != 0 && std::fabs(x) < std::ldexp(1.0, -14);
  } else if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float>) {
    return x != 0 && std::fabs(x) < std::ldexp(1.0, -126);
  } else {
    return false;
  }
}

}  // namespace

template <class T, class V>
ExactElement ExactDot(const V* a, const V* b, std::int64_t k, std::int64_t stride) {
  double hi = 0, lo = 0, infinite = 0, abs_sum = 0, subnormal_sum = 0;
  bool special = false;
  for (std::int64_t p = 0; p < k; ++p) {
    const double x = ToDouble(a[p]);
    const double w = ToDouble(b[p * stride]);
    if (!std::isfinite(x) || !std::isfinite(w)) {
      // An infinity or NaN as IEEE's product gives it (0 * inf: NaN), never overflowed.
      special = true;
      infinite += x * w;
      continue;
    }
    abs_sum += std::fabs(x) * std::fabs(w);
    if (std::fpclassify(x) == FP_SUBNORMAL || std::fpclassify(w) == FP_SUBNORMAL ||
        IsSubnormalIn<T>(x) || IsSubnormalIn<T>(w)) {
      subnormal_sum += std::fabs(x) * std::fabs(w);
    }
    double prod, prod_err, sum_err;
    TwoProduct(x, w, prod, prod_err);
    TwoSum(hi, prod, hi, sum_err);
    lo += sum_err + prod_err;
  }
  double exact = hi + lo;
  if (special) {
    // The infinite terms decide (NaN where one is NaN or both signs meet): a finite term, however
    // large, is no infinity, even where its double overflows.
    exact = infinite;
  } else if (!std::isfinite(abs_sum) || !std::isfinite(exact)) {
    // A double product or partial sum overflowed (double inputs only): the exact sum, rounded.
    exact = WideDot(a, b, k, 1, stride);
  }
  // S as computed in double may be low by up to gamma_K(2^-53) relative: round it up.
  const double up = 1 + Gamma(k + 1, std::ldexp(1.0, -53));
  return {exact, abs_sum * up, subnormal_sum * up, special};
}

#define MM_EXACT_DOT(T, V) \
  template ExactElement ExactDot<T, V>(const V*, const V*, std::int64_t, std::int64_t);
MM_EXACT_DOT(float, float)
MM_EXACT_DOT(double, double)
MM_EXACT_DOT(float16, float16)
MM_EXACT_DOT(bfloat16, bfloat16)
MM_EXACT_DOT(float, double)
MM_EXACT_DOT(float16, double)
MM_EXACT_DOT(bfloat16, double)
#undef MM_EXACT_DOT

}  // namespace mm::oracle_internal
