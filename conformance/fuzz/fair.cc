#include "mm/conformance/fuzz/fair.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "mm/conformance/fuzz/shrink.h"
#include "mm/oracle/exact_accumulator.h"

namespace mm::fuzz {
namespace {

// Partial sums may exceed S by their own rounding (gamma_K S): S must stay this far below the
// largest finite value of the accumulation type for no order to overflow.
constexpr double kOverflowMargin = 1.01;

// The binary format of a float dtype, as the exact sum is rounded to it.
RoundingFormat FormatOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return {24, -149, std::numeric_limits<float>::max()};
    case DType::kFloat16:
      return {11, -24, 65504.0};
    case DType::kBFloat16:
      return {8, -133, static_cast<double>(std::numeric_limits<bfloat16>::max())};
    default:
      return kDoubleFormat;
  }
}

bool IsSubnormal(double x, double min_normal) { return x != 0 && std::fabs(x) < min_normal; }

// True when `got` passes ONNX's rule against `expected` (with the margin).
bool Close(double got, double expected, const conformance::Tolerance& tolerance) {
  if (got == expected || (std::isnan(got) && std::isnan(expected))) return true;
  if (!std::isfinite(got) || !std::isfinite(expected)) return false;
  return std::fabs(got - expected) <= kFairMargin * tolerance.Allowed(expected);
}

std::string Num(double v) { return conformance::FormatShort(v); }

// Element `i` of a float tensor, widened to double.
double ElementAt(TensorView t, std::size_t i) {
  double v = 0;
  VisitDType(t.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) v = ToDouble(t.Data<T>()[i]);
  });
  return v;
}

// What the terms of one element with a NaN or infinite input say about its order dependence.
struct SpecialTerms {
  bool nan = false;  // A NaN term, 0 x inf, or +inf and -inf: NaN in every order.
  bool pos_inf = false, neg_inf = false;
  bool flushed_times_inf = false;  // A subnormal times an infinity: NaN when flushed to zero.
};

}  // namespace

Arithmetic FairArithmetic(DType dtype) {
  if (!IsFloat(dtype)) return {dtype, false};
  return {dtype == DType::kDouble ? DType::kDouble : DType::kFloat, true};
}

StatusOr<Tensor> CorrectlyRounded(const MatMulPlan& plan, TensorView a, TensorView b,
                                  const OracleResult& oracle) {
  Tensor y = Clone(oracle.y);
  const DType dtype = plan.desc.dtype;
  if (!IsFloat(dtype) || plan.y_elements == 0) return y;
  const RoundingFormat format = FormatOf(dtype);
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
      const T* ad = a.Data<T>();
      const T* bd = b.Data<T>();
      T* yd = y.Data<T>();
      ExactAccumulator sum;
      for (std::int64_t batch = 0; batch < plan.batch; ++batch) {
        const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
        for (std::int64_t i = 0; i < plan.m; ++i) {
          for (std::int64_t j = 0; j < plan.n; ++j) {
            const std::int64_t index = (batch * plan.m + i) * plan.n + j;
            if (oracle.special[static_cast<std::size_t>(index)]) continue;
            sum.Clear();
            for (std::int64_t p = 0; p < plan.k; ++p) {
              sum.AddProduct(ToDouble(ad[a_offset + i * plan.k + p]),
                             ToDouble(bd[b_offset + p * plan.n + j]));
            }
            bool zero = false;
            const double rounded = sum.Round(format, zero);
            // An exact zero keeps the oracle's sign of zero.
            if (!zero) yd[index] = RoundFromDouble<T>(rounded);
          }
        }
      }
    }
  });
  return y;
}

namespace {

// The accumulation type's largest and smallest normal values, and the smallest normal of the
// dtype itself as a kernel may flush it (float16's own; the accumulation's otherwise).
struct Limits {
  double acc_max, acc_min_normal, own_min_normal;
};

Limits LimitsOf(DType dtype, DType accumulation) {
  const bool is_double = accumulation == DType::kDouble;
  const double acc_min_normal =
      is_double ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  return {is_double ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max(),
          acc_min_normal, dtype == DType::kFloat16 ? std::ldexp(1.0, -14) : acc_min_normal};
}

}  // namespace

std::string UnfairReason(const MatMulPlan& plan, TensorView a, TensorView b,
                         const OracleResult& oracle, TensorView expected,
                         const conformance::Tolerance& tolerance) {
  const DType dtype = plan.desc.dtype;
  if (!IsFloat(dtype) || plan.y_elements == 0) return "";
  const Arithmetic arithmetic = FairArithmetic(dtype);
  const OracleBounds bounds(oracle, arithmetic, plan.k);
  const Limits limits = LimitsOf(dtype, arithmetic.accumulation);
  std::string reason;
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
      const T* ad = a.Data<T>();
      const T* bd = b.Data<T>();
      const T* yd = expected.Data<T>();
      for (std::int64_t batch = 0; batch < plan.batch && reason.empty(); ++batch) {
        const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
        for (std::int64_t i = 0; i < plan.m && reason.empty(); ++i) {
          for (std::int64_t j = 0; j < plan.n && reason.empty(); ++j) {
            const std::int64_t index = (batch * plan.m + i) * plan.n + j;
            const auto u = static_cast<std::size_t>(index);
            const double y = ToDouble(yd[index]);
            const std::string where = "element " + std::to_string(index) + ": ";
            if (oracle.special[u]) {
              SpecialTerms t;
              for (std::int64_t p = 0; p < plan.k; ++p) {
                const double x = ToDouble(ad[a_offset + i * plan.k + p]);
                const double w = ToDouble(bd[b_offset + p * plan.n + j]);
                if (std::isnan(x) || std::isnan(w) || (std::isinf(x) && w == 0) ||
                    (std::isinf(w) && x == 0)) {
                  t.nan = true;
                } else if (std::isinf(x) || std::isinf(w)) {
                  (std::signbit(x) != std::signbit(w) ? t.neg_inf : t.pos_inf) = true;
                  const double other = std::isinf(x) ? w : x;
                  if (IsSubnormal(other, std::max(limits.own_min_normal, limits.acc_min_normal))) {
                    t.flushed_times_inf = true;
                  }
                }
              }
              if (t.nan || (t.pos_inf && t.neg_inf)) continue;  // NaN in every order.
              if (t.flushed_times_inf) {
                reason = where +
                         "a subnormal times an infinity gives NaN where subnormals are "
                         "flushed, the infinity where not";
              } else if (!(oracle.abs_sum[u] * kOverflowMargin < limits.acc_max)) {
                reason = where + "the finite terms may overflow to the opposite infinity in " +
                         std::string(DTypeName(arithmetic.accumulation)) +
                         " (NaN or infinity by the order of summation)";
              }
              continue;
            }
            const double radius = bounds[u].radius;
            if (std::isinf(radius) || !(oracle.abs_sum[u] * kOverflowMargin < limits.acc_max)) {
              reason = where + "sum |a||b| reaches the largest " +
                       std::string(DTypeName(arithmetic.accumulation)) +
                       ": a partial sum may overflow in some order";
              continue;
            }
            // The ends of the interval the judgement accepts (mm/oracle/error_bound.h).
            const AcceptedValues range = AcceptedRange(dtype, bounds[u]);
            for (double got : {range.lo, range.hi}) {
              if (Close(got, y, tolerance)) continue;
              reason = where + "a " + std::string(DTypeName(arithmetic.accumulation)) +
                       " sum in another order may give " + Num(got) + " where " + Num(y) +
                       " is expected (bound " + Num(radius) + ", tolerance " +
                       Num(tolerance.Allowed(y)) + ")";
              break;
            }
          }
        }
      }
    }
  });
  return reason;
}

std::string UnfairFamilyReason(const family::Plan& plan, const family::FamilyOracle& oracle,
                               const conformance::Tolerance& tolerance) {
  if (oracle.outside_standard_range()) {
    return std::to_string(oracle.outside_int32_count) +
           " elements' exact accumulation leaves int32: outside the standard's range (the wrapped "
           "value is allowed, not required)";
  }
  for (std::size_t i = 0; i < oracle.y_low.size(); ++i) {
    if (oracle.y_low[i] != oracle.y_high[i]) {
      return "element " + std::to_string(i) + ": a float32 evaluation of the multiplier may give " +
             std::to_string(oracle.y_low[i]) + " or " + std::to_string(oracle.y_high[i]) +
             " (the one-unit rule)";
    }
  }
  if (!oracle.ambiguous.empty()) {
    return "element " + std::to_string(oracle.ambiguous[0].index) +
           ": the standard is ambiguous (" +
           std::string(family::GetAmbiguityInfo(oracle.ambiguous[0].ambiguity).id) + ")";
  }
  const DType dtype = plan.y_dtype;
  if (!IsFloat(dtype)) return "";
  const Arithmetic arithmetic = FairArithmetic(dtype);
  const std::string sum = std::string(DTypeName(arithmetic.accumulation));
  for (std::size_t i = 0; i < oracle.bounds.size(); ++i) {
    const ElementBound& bound = oracle.bounds[i];
    const std::string where = "element " + std::to_string(i) + ": ";
    if (bound.special) return where + "a NaN or infinite input reaches it";
    if (std::isinf(bound.radius)) {
      return where + "|alpha| sum |a||b| + |beta c| reaches the largest " + sum +
             ": an intermediate may overflow";
    }
    const double y = ElementAt(oracle.y.view(), i);
    const AcceptedValues range = AcceptedRange(dtype, bound);
    for (double got : {range.lo, range.hi}) {
      if (!Close(got, y, tolerance)) {
        return where + "a " + sum + " evaluation in another order may give " + Num(got) +
               " where " + Num(y) + " is expected (bound " + Num(bound.radius) + ", tolerance " +
               Num(tolerance.Allowed(y)) + ")";
      }
    }
  }
  return "";
}

}  // namespace mm::fuzz
