#include "mm/oracle/error_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle_internal.h"

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

}  // namespace

namespace oracle_internal {

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

}  // namespace oracle_internal

using oracle_internal::MinNormal;

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
    // Every order of an IEEE evaluation gives the inputs' infinity or NaN, never the other
    // infinity: NaN where the center is, where a flushed subnormal meets an infinity, or where
    // finite terms may overflow to the opposite infinity (an infinite radius).
    if (std::isnan(bound.center) || bound.nan_allowed || std::isinf(bound.radius))
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
