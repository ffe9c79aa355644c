#include "mm/engine/error_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mm/engine/oracle_internal.h"
#include "oracle_kernels.h"

namespace mm {

double UnitRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return std::ldexp(1.0, -24);
    case DType::kDouble:
      return std::ldexp(1.0, -53);
    case DType::kFloat16:
      return std::ldexp(1.0, -11);
    case DType::kBFloat16:
      return std::ldexp(1.0, -8);
    default:
      return 0;
  }
}

double Gamma(std::int64_t k, double u) {
  const double ku = static_cast<double>(k) * u;
  if (ku >= 1) return std::numeric_limits<double>::infinity();
  // Rounded up a little: the bound must never be smaller than the true gamma.
  return ku / (1 - ku) * (1 + 4 * std::numeric_limits<double>::epsilon());
}

namespace {

// Largest finite value and half the smallest subnormal of a float dtype.
double MaxFinite(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return std::numeric_limits<float>::max();
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return static_cast<double>(std::numeric_limits<bfloat16>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

double HalfDenormMin(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return std::ldexp(1.0, -150);
    case DType::kFloat16:
      return std::ldexp(1.0, -25);
    case DType::kBFloat16:
      return std::ldexp(1.0, -134);
    default:
      return std::ldexp(1.0, -1075);
  }
}

double MinNormal(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return std::ldexp(1.0, -14);
    case DType::kDouble:
      return std::ldexp(1.0, -1022);
    default:
      return std::ldexp(1.0, -126);
  }
}

// Error-free transformations (Ogita, Rump, Oishi 2005). This file is compiled with
// -ffp-contract=off so that the compiler never fuses or reorders them.
inline void TwoSum(double a, double b, double& s, double& e) {
  s = a + b;
  const double z = s - a;
  e = (a - (s - z)) + (b - z);
}

inline void TwoProduct(double a, double b, double& p, double& e) {
  p = a * b;
  e = std::fma(a, b, -p);
}

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

namespace oracle_internal {

template <class T, class V>
ExactElement ExactDot(const V* a, const V* b, std::int64_t k, std::int64_t stride) {
  double hi = 0, lo = 0, naive = 0, abs_sum = 0, subnormal_sum = 0;
  bool special = false;
  for (std::int64_t p = 0; p < k; ++p) {
    const double x = ToDouble(a[p]);
    const double w = ToDouble(b[p * stride]);
    naive += x * w;
    if (!std::isfinite(x) || !std::isfinite(w)) {
      special = true;
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
  // IEEE's answer where an input is NaN or infinite, or where a double product or sum overflows
  // (the exact value is then beyond double and any bound is infinite anyway).
  if (special || !std::isfinite(abs_sum) || !std::isfinite(exact)) exact = naive;
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

}  // namespace oracle_internal

namespace {

// The integer oracle one element at a time, in the unsigned type of the same width: defined
// wraparound, then reinterpreted. Stops between rows once `cancel` is true (false then).
template <class T>
bool IntegerLoop(const MatMulPlan& plan, const T* a, const T* b, T* y,
                 const std::atomic<bool>* cancel) {
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const std::int64_t m = plan.m, k = plan.k, n = plan.n;
  for (std::int64_t batch = 0; batch < plan.batch; ++batch) {
    const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
    for (std::int64_t i = 0; i < m; ++i) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
      for (std::int64_t j = 0; j < n; ++j) {
        U sum = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          sum += static_cast<U>(a[a_offset + i * k + p]) * static_cast<U>(b[b_offset + p * n + j]);
        }
        y[(batch * m + i) * n + j] = static_cast<T>(sum);
      }
    }
  }
  return true;
}

template <class T>
Status OracleLoop(const MatMulPlan& plan, const T* a, const T* b, const OracleOptions& options,
                  OracleResult& out) {
  using namespace oracle_internal;
  const std::atomic<bool>* cancel = options.cancel;
  if constexpr (std::is_integral_v<T>) {
    if (!options.fast) {
      if (!IntegerLoop(plan, a, b, out.y.Data<T>(), cancel)) {
        return CancelledError("ExactMatMul: cancelled");
      }
      return OkStatus();
    }
    return FastIntegerMatMul(plan, a, b, out.y.Data<T>(), cancel);
  } else {
    if (!options.fast || plan.k == 0) {
      out.exact_fallbacks = plan.y_elements;
      return ExactFloatMatMul(plan, a, b, out, cancel);
    }
    if constexpr (std::is_same_v<T, double>) {
      MM_ASSIGN_OR_RETURN(out.exact_fallbacks, FastDoubleMatMul(plan, a, b, out, cancel));
    } else {
      MM_ASSIGN_OR_RETURN(out.exact_fallbacks, FastFloatMatMul(plan, a, b, out, cancel));
    }
    return OkStatus();
  }
}

// Rounds a double to the float dtype `output`, nearest even, widened back to double.
double RoundTo(DType output, double value) {
  switch (output) {
    case DType::kFloat:
      return static_cast<double>(static_cast<float>(value));
    case DType::kFloat16:
      return ToDouble(RoundToFloat16(value));
    case DType::kBFloat16:
      return ToDouble(RoundToBFloat16(value));
    default:
      return value;
  }
}

// Whether one of the first `count` values of `x` (a float dtype) is subnormal in its dtype or,
// widened, in double (below MinNormal, which is at least double's smallest normal, and not 0):
// what ExactDot counts in a subnormal sum. In blocks without branches, so that they vectorise.
bool AnySubnormalInput(TensorView x, std::int64_t count) {
  const double min_normal = MinNormal(x.dtype);
  bool any = false;
  VisitDType(x.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
      const T* data = x.Data<T>();
      constexpr std::int64_t kBlock = 4096;
      for (std::int64_t start = 0; start < count && !any; start += kBlock) {
        int found = 0;
        for (std::int64_t i = start; i < std::min(count, start + kBlock); ++i) {
          const double magnitude = std::fabs(ToDouble(data[i]));
          found |= static_cast<int>(magnitude < min_normal) & static_cast<int>(magnitude != 0);
        }
        any = found != 0;
      }
    }
  });
  return any;
}

}  // namespace

StatusOr<OracleResult> ExactMatMul(const MatMulPlan& plan, TensorView a, TensorView b,
                                   const OracleOptions& options) {
  if (a.dtype != plan.desc.dtype || b.dtype != plan.desc.dtype) {
    return InvalidArgumentError("ExactMatMul: A and B must be " +
                                std::string(DTypeName(plan.desc.dtype)));
  }
  // An unknown MM_MAX_CPU_ISA is an error here rather than a cap silently ignored.
  MM_RETURN_IF_ERROR(oracle_internal::ChosenOracleKernels().status());
  OracleResult out;
  MM_ASSIGN_OR_RETURN(out.y, Tensor::Create(plan.desc.dtype, plan.y_dims));
  if (IsFloat(plan.desc.dtype)) {
    const auto size = static_cast<std::size_t>(plan.y_elements);
    // Small pages: written once, in order, the arrays gain nothing from huge pages, whose first
    // touch can cost a guest more (docs/notes/2026-12-05-avx2-only-epyc.md).
    out.exact.assign(size, 0.0);
    out.abs_sum.assign(size, 0.0);
    // Only the fast path of the narrower float types leaves an error of its own.
    if (options.fast && plan.k > 0 && plan.desc.dtype != DType::kDouble) {
      out.exact_error.assign(size, 0.0);
    }
    if (AnySubnormalInput(a, plan.a_elements) || AnySubnormalInput(b, plan.b_elements)) {
      out.subnormal_abs_sum.assign(size, 0.0);
    }
    out.special.assign(size, 0);
  }
  // An empty Y has nothing to compute (its batch or M may still be huge: no loop over them).
  if (plan.y_elements == 0) return out;
  Status status;
  VisitDType(plan.desc.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    status = OracleLoop<T>(plan, a.Data<T>(), b.Data<T>(), options, out);
  });
  MM_RETURN_IF_ERROR(status);
  return out;
}

double AccumulationError(DType accumulation, std::int64_t k, double abs_sum) {
  if (!IsFloat(accumulation)) return 0;
  if (!(abs_sum < MaxFinite(accumulation))) return std::numeric_limits<double>::infinity();
  // S = 0: every product is zero and so is every sum, whatever gamma_K is (infinite once K u >= 1,
  // and inf * 0 would make the bound NaN, rejecting every value).
  const double summed = abs_sum == 0 ? 0 : Gamma(k, UnitRoundoff(accumulation)) * abs_sum;
  return summed + static_cast<double>(k) * HalfDenormMin(accumulation);
}

double AccumulationError(const Arithmetic& arithmetic, std::int64_t k, double abs_sum,
                         double subnormal_sum) {
  double e = AccumulationError(arithmetic.accumulation, k, abs_sum);
  if (arithmetic.flushes_subnormals && IsFloat(arithmetic.accumulation)) {
    e += subnormal_sum + static_cast<double>(k) * 2 * MinNormal(arithmetic.accumulation);
  }
  return e;
}

bool WithinBound(DType output, const ElementBound& bound, double got) {
  if (bound.special) {
    if (std::isinf(bound.radius)) return !std::isfinite(got);
    if (std::isnan(bound.center) || bound.nan_allowed)
      return std::isnan(got) || got == bound.center;
    return got == bound.center;
  }
  if (std::isinf(bound.radius)) return true;
  if (std::isnan(got)) return false;
  const AcceptedValues range = AcceptedRange(output, bound);
  return range.lo <= got && got <= range.hi;
}

namespace {

// The ends of a bound before the rounding to the output type: two double ULPs outward cover the
// rounding of center -/+ radius and the oracle's own error.
AcceptedValues UnroundedEnds(const ElementBound& bound) {
  using oracle_internal::NextDown, oracle_internal::NextUp;
  return {NextDown(NextDown(bound.center - bound.radius)),
          NextUp(NextUp(bound.center + bound.radius))};
}

// The distance from `x` (a finite value of the float dtype `output`) to its neighbour in
// `output`, towards zero or away from it.
double Spacing(DType output, double x, bool towards_zero) {
  const double magnitude = std::fabs(x);
  // Normal: 2^e * 2u above |x| = 2^e; the subnormal spacing below the smallest normal.
  const double binade =
      std::max(magnitude == 0 ? 0 : std::ldexp(1.0, std::ilogb(magnitude)), MinNormal(output));
  const double above = binade * 2 * UnitRoundoff(output);
  // Below a power of two (above the smallest normal) the spacing is the lower binade's.
  return towards_zero && magnitude == binade && magnitude > MinNormal(output) ? above / 2 : above;
}

}  // namespace

AcceptedValues AcceptedRange(DType output, const ElementBound& bound) {
  const AcceptedValues ends = UnroundedEnds(bound);
  return {RoundTo(output, ends.lo), RoundTo(output, ends.hi)};
}

double BoundFraction(DType output, const ElementBound& bound, double got) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!std::isfinite(got)) return kInf;
  const double miss = std::fabs(got - bound.center);
  if (miss == 0) return 0;
  // got is accepted when the bound's end rounds to it or beyond: when the end reaches the midpoint
  // between got and its neighbour towards the center. So the room is the end's distance from the
  // center plus half that gap (the gap at got, not at the center: the end may lie in the next
  // binade, where the output's spacing is twice as large).
  const AcceptedValues ends = UnroundedEnds(bound);
  const bool above = got > bound.center;
  const double end = above ? ends.hi - bound.center : bound.center - ends.lo;
  const bool towards_zero = above ? got > 0 : got < 0;
  const double room = end + Spacing(output, got, towards_zero) / 2;
  const double fraction = room > 0 ? miss / room : kInf;
  // Ties and rounded differences: the verdict's own comparison decides which side of 1 it is.
  if (!WithinBound(output, bound, got)) return std::max(fraction, std::nextafter(1.0, kInf));
  return std::min(fraction, 1.0);
}

OracleBounds::OracleBounds(const OracleResult& oracle, const Arithmetic& arithmetic, std::int64_t k)
    : size_(oracle.exact.size()) {
  if (size_ == 0) return;
  exact_ = oracle.exact.data();
  exact_error_ = oracle.exact_error.empty() ? nullptr : oracle.exact_error.data();
  abs_sum_ = oracle.abs_sum.data();
  subnormal_abs_sum_ = oracle.subnormal_abs_sum.empty() ? nullptr : oracle.subnormal_abs_sum.data();
  special_ = oracle.special.data();
  const DType accumulation = arithmetic.accumulation;
  float_accumulation_ = IsFloat(accumulation);
  nan_allowed_ = arithmetic.flushes_subnormals;
  if (!float_accumulation_) return;
  gamma_ = Gamma(k, UnitRoundoff(accumulation));
  k_eta_ = static_cast<double>(k) * HalfDenormMin(accumulation);
  max_finite_ = MaxFinite(accumulation);
  flushes_ = arithmetic.flushes_subnormals;
  k_min_normal_ = static_cast<double>(k) * 2 * MinNormal(accumulation);
}

}  // namespace mm
