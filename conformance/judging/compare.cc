#include "mm/conformance/judging/compare.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "mm/oracle/parallel.h"

namespace mm::conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

JudgementFault g_fault = JudgementFault::kNone;

// The elements a comparison examines: all of them, unless a test broke the judgement on purpose.
std::int64_t Examined(std::int64_t elements) {
  return g_fault == JudgementFault::kFirstElementOnly ? std::min<std::int64_t>(elements, 1)
                                                      : elements;
}

template <class T>
std::string ElementText(T value) {
  if constexpr (std::is_integral_v<T>) {
    return std::to_string(value);
  } else {
    return FormatDouble(ToDouble(value));
  }
}

template <class T>
bool SameBits(T a, T b) {
  if constexpr (!std::is_integral_v<T>) {
    if (std::isnan(ToDouble(a)) && std::isnan(ToDouble(b))) return true;
  }
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

Dims Unflatten(std::int64_t flat, std::span<const std::int64_t> dims) {
  Dims index(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    index[i] = dims[i] == 0 ? 0 : flat % dims[i];
    flat = dims[i] == 0 ? 0 : flat / dims[i];
  }
  return index;
}

// One element's standing under ONNX's rule.
struct ElementError {
  bool ok = true;
  double abs_error = 0, rel_error = 0, allowed = 0;
};

template <class T>
ElementError CompareElement(T a, T e, const Tolerance& tol) {
  ElementError out;
  if constexpr (std::is_integral_v<T>) {
    out.ok = a == e;
    if (out.ok) return out;
    // Exact for the decision; the doubles only describe the size of the miss.
    const double ad = static_cast<double>(a), ed = static_cast<double>(e);
    if constexpr (std::is_unsigned_v<T>) {
      out.abs_error = static_cast<double>(a > e ? a - e : e - a);
    } else {
      // a - e can overflow in a signed type; the double difference is close enough to report.
      out.abs_error = std::fabs(ad - ed);
    }
    out.rel_error = ed == 0 ? kInf : out.abs_error / std::fabs(ed);
  } else {
    const double ad = ToDouble(a), ed = ToDouble(e);
    out.ok = FloatElementMatches(ad, ed, tol);
    if (std::isnan(ad) || std::isnan(ed)) {
      out.ok = out.ok || g_fault == JudgementFault::kNanMatchesAnything;
      out.abs_error = out.ok ? 0 : kInf;  // A NaN on one side is an unbounded miss.
    } else if (std::isinf(ad) || std::isinf(ed)) {
      out.abs_error = out.ok ? 0 : kInf;
    } else {
      out.abs_error = std::fabs(ad - ed);
    }
    out.allowed = std::isfinite(ed) ? tol.Allowed(ed) : 0;
    out.rel_error = out.abs_error == 0          ? 0
                    : ed == 0 || std::isinf(ed) ? kInf
                                                : out.abs_error / std::fabs(ed);
  }
  return out;
}

// What a pass over a range of elements found: counts, maxima and its worst element.
struct ComparePartial {
  std::int64_t differing = 0;
  bool bitwise_equal = true;
  double max_abs_error = 0, max_rel_error = 0;
  std::int64_t worst_index = -1;
  bool worst_is_match = true;
  double worst_key = 0;
  ElementError worst;

  // A mismatch outranks any match; among mismatches the largest excess over the allowance wins,
  // among matches the largest error; ties keep the first index (`index` comes after the others).
  void Offer(std::int64_t index, const ElementError& e) {
    const double key = e.ok ? e.abs_error : e.abs_error - e.allowed;
    if (worst_index < 0 || (!e.ok && worst_is_match) ||
        (e.ok == worst_is_match && key > worst_key)) {
      worst_index = index;
      worst_is_match = e.ok;
      worst_key = key;
      worst = e;
    }
  }
  void Merge(ComparePartial&& later) {
    differing += later.differing;
    bitwise_equal = bitwise_equal && later.bitwise_equal;
    max_abs_error = std::max(max_abs_error, later.max_abs_error);
    max_rel_error = std::max(max_rel_error, later.max_rel_error);
    if (later.worst_index >= 0) Offer(later.worst_index, later.worst);
  }
};

template <class T>
Comparison CompareTyped(TensorView actual, TensorView expected, const Tolerance& tol) {
  Comparison out;
  out.elements = expected.NumElements();
  const T* a = actual.Data<T>();
  const T* e = expected.Data<T>();
  const ComparePartial found = ReduceInOrder<ComparePartial>(
      Examined(out.elements),
      [&](std::int64_t begin, std::int64_t end) {
        ComparePartial part;
        for (std::int64_t i = begin; i < end; ++i) {
          const ElementError error = CompareElement(a[i], e[i], tol);
          if (!SameBits(a[i], e[i])) part.bitwise_equal = false;
          if (!error.ok) ++part.differing;
          part.max_abs_error = std::max(part.max_abs_error, error.abs_error);
          part.max_rel_error = std::max(part.max_rel_error, error.rel_error);
          part.Offer(i, error);
        }
        return part;
      },
      [](ComparePartial& left, ComparePartial&& right) { left.Merge(std::move(right)); });
  out.differing = found.differing;
  out.bitwise_equal = found.bitwise_equal;
  out.max_abs_error = found.max_abs_error;
  out.max_rel_error = found.max_rel_error;
  out.match = out.differing == 0;
  if (const std::int64_t w = found.worst_index; w >= 0) {
    WorstElement worst;
    worst.flat_index = w;
    worst.index = Unflatten(w, expected.dims);
    worst.expected = ElementText(e[w]);
    worst.actual = ElementText(a[w]);
    if constexpr (std::is_integral_v<T>) {
      worst.expected_value = static_cast<double>(e[w]);
      worst.actual_value = static_cast<double>(a[w]);
    } else {
      worst.expected_value = ToDouble(e[w]);
      worst.actual_value = ToDouble(a[w]);
    }
    worst.abs_error = found.worst.abs_error;
    worst.rel_error = found.worst.rel_error;
    worst.allowed = found.worst.allowed;
    out.worst = std::move(worst);
  }
  return out;
}

}  // namespace

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return "?";
  return std::string(buffer, end);
}

std::string FormatShort(double value) {
  if (!std::isfinite(value)) return FormatDouble(value);
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  return buffer;
}

std::string Comparison::Describe() const {
  if (!mismatch.empty()) return mismatch;
  std::string out;
  if (differing == 0) {
    out = bitwise_equal ? "all " + std::to_string(elements) + " elements bit-identical"
                        : "all " + std::to_string(elements) + " elements within tolerance";
  } else {
    out = std::to_string(differing) + " of " + std::to_string(elements) + " elements differ";
  }
  if (worst && !(differing == 0 && bitwise_equal)) {
    out += "; worst at " + DimsToString(worst->index) + ": expected " + worst->expected + ", got " +
           worst->actual + " (abs " + FormatShort(worst->abs_error) + ", rel " +
           FormatShort(worst->rel_error) + (differing ? ", abs > " : ", abs <= ") + "allowed " +
           FormatShort(worst->allowed) + ")";
  }
  return out;
}

JudgementFault SetJudgementFaultForTesting(JudgementFault fault) {
  return std::exchange(g_fault, fault);
}

bool SameShape(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  if (g_fault == JudgementFault::kShapeByElementCount) {
    auto count = [](std::span<const std::int64_t> dims) {
      return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
    };
    return count(a) == count(b);
  }
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

Comparison Compare(TensorView actual, TensorView expected, const Tolerance& tolerance) {
  Comparison out;
  if (actual.dtype != expected.dtype) {
    out.mismatch = "dtype " + std::string(DTypeName(actual.dtype)) + " != expected " +
                   std::string(DTypeName(expected.dtype));
    return out;
  }
  if (!SameShape(actual.dims, expected.dims)) {
    out.mismatch =
        "shape " + DimsToString(actual.dims) + " != expected " + DimsToString(expected.dims);
    return out;
  }
  return VisitDType(expected.dtype, [&](auto tag) {
    return CompareTyped<CppType<decltype(tag)::value>>(actual, expected, tolerance);
  });
}

std::string BoundCheck::Describe() const {
  std::string out = outside == 0 ? "all " + std::to_string(elements) + " elements within the bound"
                                 : std::to_string(outside) + " of " + std::to_string(elements) +
                                       " elements outside the bound";
  if (unbounded > 0) out += " (" + std::to_string(unbounded) + " unbounded: overflow possible)";
  if (nan_beside_infinity > 0) {
    out += "; " + std::to_string(nan_beside_infinity) +
           " NaN where the exact value is an infinity: finite terms that overflow to the opposite "
           "infinity (or a flushed subnormal times it) give that NaN in the declared arithmetic";
  }
  if (worst && outside > 0) {
    out += "; worst at " + DimsToString(worst->index) + ": exact " + worst->expected + ", got " +
           worst->actual + " (abs " + FormatShort(worst->abs_error) + " > bound " +
           FormatShort(worst->allowed) + ")";
  }
  return out;
}

namespace {

// What a pass of the bound rule over a range of elements found.
struct BoundPartial {
  std::int64_t outside = 0, unbounded = 0, nan_beside_infinity = 0;
  std::int64_t worst_index = -1;
  bool worst_outside = false;
  double worst_key = -kInf;

  // An element outside outranks any inside; then the larger key; ties keep the first index.
  void Offer(std::int64_t index, bool outside_bound, double key) {
    if (worst_index < 0 || (outside_bound && !worst_outside) ||
        (outside_bound == worst_outside && key > worst_key)) {
      worst_index = index;
      worst_outside = outside_bound;
      worst_key = key;
    }
  }
  void Merge(BoundPartial&& later) {
    outside += later.outside;
    unbounded += later.unbounded;
    nan_beside_infinity += later.nan_beside_infinity;
    if (later.worst_index >= 0) Offer(later.worst_index, later.worst_outside, later.worst_key);
  }
};

// Whether a float element is within its bound, and how far outside (> 0) or inside (<= 0) it
// is, in units of the radius.
std::pair<bool, double> StandingInBound(DType dtype, const ElementBound& bound, double got) {
  const bool ok =
      WithinBound(dtype, bound, got) || (g_fault == JudgementFault::kNanMatchesAnything &&
                                         (std::isnan(got) || std::isnan(bound.center)));
  const double miss = std::fabs(got - bound.center);
  double key = std::isnan(miss)   ? kInf
               : bound.radius > 0 ? miss / bound.radius - 1
                                  : (miss > 0 ? kInf : -1);
  if (ok) key = std::min(key, 0.0);
  // An infinity within an infinite radius: no distance to speak of (and a NaN key would make the
  // worst element depend on how the pass was split).
  if (std::isnan(key)) key = ok ? 0 : kInf;
  return {ok, key};
}

template <class T>
BoundCheck CheckBoundTyped(TensorView actual, TensorView expected, const OracleBounds& bounds) {
  BoundCheck out;
  out.elements = expected.NumElements();
  const T* a = actual.Data<T>();
  const BoundPartial found = ReduceInOrder<BoundPartial>(
      Examined(out.elements),
      [&](std::int64_t begin, std::int64_t end) {
        BoundPartial part;
        for (std::int64_t i = begin; i < end; ++i) {
          bool ok;
          double key;
          if constexpr (std::is_integral_v<T>) {
            ok = a[i] == expected.Data<T>()[i];
            key = ok ? 0 : 1;
          } else {
            const ElementBound bound = bounds[static_cast<std::size_t>(i)];
            std::tie(ok, key) = StandingInBound(DTypeOf<T>(), bound, ToDouble(a[i]));
            if (std::isinf(bound.radius)) ++part.unbounded;
            if (ok && std::isnan(ToDouble(a[i])) && std::isinf(bound.center)) {
              ++part.nan_beside_infinity;
            }
          }
          if (!ok) ++part.outside;
          part.Offer(i, !ok, key);
        }
        return part;
      },
      [](BoundPartial& left, BoundPartial&& right) { left.Merge(std::move(right)); });
  out.outside = found.outside;
  out.unbounded = found.unbounded;
  out.nan_beside_infinity = found.nan_beside_infinity;
  const std::int64_t worst_index = found.worst_index;
  if (worst_index >= 0) {
    WorstElement w;
    w.flat_index = worst_index;
    w.index = Unflatten(worst_index, expected.dims);
    w.actual = ElementText(a[worst_index]);
    if constexpr (std::is_integral_v<T>) {
      const T e = expected.Data<T>()[worst_index];
      w.expected = ElementText(e);
      w.expected_value = static_cast<double>(e);
      w.actual_value = static_cast<double>(a[worst_index]);
      w.abs_error = std::fabs(w.actual_value - w.expected_value);
    } else {
      const ElementBound bound = bounds[static_cast<std::size_t>(worst_index)];
      w.expected = FormatDouble(bound.center);
      w.expected_value = bound.center;
      w.actual_value = ToDouble(a[worst_index]);
      w.abs_error = std::fabs(w.actual_value - bound.center);
      if (std::isnan(w.abs_error))
        w.abs_error = std::isnan(w.actual_value) && std::isnan(bound.center) ? 0 : kInf;
      w.allowed = bound.radius;
    }
    w.rel_error = w.abs_error == 0 ? 0
                  : w.expected_value == 0 || !std::isfinite(w.expected_value)
                      ? kInf
                      : w.abs_error / std::fabs(w.expected_value);
    out.worst = std::move(w);
  }
  return out;
}

}  // namespace

BoundCheck CheckBound(TensorView actual, TensorView exact, const OracleBounds& bounds) {
  if (IsFloat(exact.dtype) && bounds.size() != static_cast<std::size_t>(exact.NumElements())) {
    BoundCheck out;
    out.elements = exact.NumElements();
    out.outside = out.elements;
    return out;
  }
  return VisitDType(exact.dtype, [&](auto tag) {
    return CheckBoundTyped<CppType<decltype(tag)::value>>(actual, exact, bounds);
  });
}

Judgement Judge(TensorView actual, TensorView expected, TensorView exact,
                const OracleBounds& bounds, const Tolerance& tolerance) {
  Judgement out;
  out.tolerance = Compare(actual, expected, tolerance);
  if (!out.tolerance.mismatch.empty()) {
    out.verdict = Verdict::kFail;
    return out;
  }
  if (exact.dtype != expected.dtype || !SameShape(exact.dims, expected.dims) ||
      (IsFloat(expected.dtype) &&
       bounds.size() != static_cast<std::size_t>(expected.NumElements()))) {
    out.tolerance.match = false;
    out.tolerance.mismatch = "internal: " + std::to_string(bounds.size()) + " bounds and an " +
                             DimsToString(exact.dims) + " exact product for " +
                             std::to_string(expected.NumElements()) + " elements";
    out.verdict = Verdict::kFail;
    return out;
  }
  out.bound = CheckBound(actual, exact, bounds);
  out.verdict = JudgedVerdictOf(out.tolerance, out.bound);
  return out;
}

Judgement Judge(TensorView actual, TensorView expected, const OracleBounds& bounds,
                const Tolerance& tolerance) {
  return Judge(actual, expected, expected, bounds, tolerance);
}

Verdict JudgedVerdictOf(const Comparison& tolerance, const BoundCheck& bound) {
  if (!tolerance.mismatch.empty()) return Verdict::kFail;
  return JudgedVerdict(tolerance.match, bound.outside == 0);
}

bool FloatElementMatches(double actual, double expected, const Tolerance& tolerance) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= tolerance.Allowed(expected);
}

}  // namespace mm::conformance
