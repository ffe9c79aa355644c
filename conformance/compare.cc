#include "mm/conformance/compare.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

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

template <class T>
Comparison CompareTyped(TensorView actual, TensorView expected, const Tolerance& tol) {
  Comparison out;
  out.elements = expected.NumElements();
  out.bitwise_equal = true;
  const T* a = actual.Data<T>();
  const T* e = expected.Data<T>();
  std::int64_t worst_index = -1;
  bool worst_is_match = true;
  double worst_key = 0;
  double worst_abs = 0, worst_rel = 0, worst_allowed = 0;
  for (std::int64_t i = 0; i < Examined(out.elements); ++i) {
    double abs_error = 0, rel_error = 0, allowed = 0;
    bool ok;
    if constexpr (std::is_integral_v<T>) {
      ok = a[i] == e[i];
      // Exact for the decision; the doubles only describe the size of the miss.
      const double ad = static_cast<double>(a[i]), ed = static_cast<double>(e[i]);
      if (ok) {
        abs_error = 0;
      } else if constexpr (std::is_unsigned_v<T>) {
        abs_error = static_cast<double>(a[i] > e[i] ? a[i] - e[i] : e[i] - a[i]);
      } else {
        // a - e can overflow in a signed type; the double difference is close enough to report.
        abs_error = std::fabs(ad - ed);
      }
      rel_error = ok ? 0 : (ed == 0 ? kInf : abs_error / std::fabs(ed));
    } else {
      const double ad = ToDouble(a[i]), ed = ToDouble(e[i]);
      allowed = tol.Allowed(ed);
      ok = FloatElementMatches(ad, ed, tol);
      if (std::isnan(ad) || std::isnan(ed)) {
        ok = ok || g_fault == JudgementFault::kNanMatchesAnything;
        abs_error = ok ? 0 : std::numeric_limits<double>::quiet_NaN();
      } else if (std::isinf(ad) || std::isinf(ed)) {
        abs_error = ok ? 0 : kInf;
      } else {
        abs_error = std::fabs(ad - ed);
      }
      if (std::isnan(abs_error)) abs_error = kInf;  // A NaN on one side is an unbounded miss.
      allowed = std::isinf(ed) ? 0 : allowed;
      rel_error =
          abs_error == 0 ? 0 : (ed == 0 || std::isinf(ed) ? kInf : abs_error / std::fabs(ed));
    }
    if (!SameBits(a[i], e[i])) out.bitwise_equal = false;
    if (!ok) ++out.differing;
    out.max_abs_error = std::max(out.max_abs_error, abs_error);
    out.max_rel_error = std::max(out.max_rel_error, rel_error);
    // A mismatch outranks any match; among mismatches the largest excess over the allowance wins,
    // among matches the largest error; ties keep the first index.
    const double key = ok ? abs_error : abs_error - allowed;
    if (worst_index < 0 || (!ok && worst_is_match) || (ok == worst_is_match && key > worst_key)) {
      worst_index = i;
      worst_is_match = ok;
      worst_key = key;
      worst_abs = abs_error;
      worst_rel = rel_error;
      worst_allowed = allowed;
    }
  }
  out.match = out.differing == 0;
  if (worst_index >= 0) {
    WorstElement w;
    w.flat_index = worst_index;
    w.index = Unflatten(worst_index, expected.dims);
    w.expected = ElementText(e[worst_index]);
    w.actual = ElementText(a[worst_index]);
    if constexpr (std::is_integral_v<T>) {
      w.expected_value = static_cast<double>(e[worst_index]);
      w.actual_value = static_cast<double>(a[worst_index]);
    } else {
      w.expected_value = ToDouble(e[worst_index]);
      w.actual_value = ToDouble(a[worst_index]);
    }
    w.abs_error = worst_abs;
    w.rel_error = worst_rel;
    w.allowed = worst_allowed;
    out.worst = std::move(w);
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
  if (worst && outside > 0) {
    out += "; worst at " + DimsToString(worst->index) + ": exact " + worst->expected + ", got " +
           worst->actual + " (abs " + FormatShort(worst->abs_error) + " > bound " +
           FormatShort(worst->allowed) + ")";
  }
  return out;
}

namespace {

template <class T>
BoundCheck CheckBoundTyped(TensorView actual, TensorView expected,
                           std::span<const ElementBound> bounds) {
  BoundCheck out;
  out.elements = expected.NumElements();
  const T* a = actual.Data<T>();
  double worst_key = -kInf;
  bool worst_outside = false;
  std::int64_t worst_index = -1;
  for (std::int64_t i = 0; i < Examined(out.elements); ++i) {
    bool ok;
    double key;  // How far outside (> 0) or inside (<= 0) the bound, in units of the radius.
    if constexpr (std::is_integral_v<T>) {
      ok = a[i] == expected.Data<T>()[i];
      key = ok ? 0 : 1;
    } else {
      const ElementBound& bound = bounds[static_cast<std::size_t>(i)];
      const double got = ToDouble(a[i]);
      ok = WithinBound(DTypeOf<T>(), bound, got) ||
           (g_fault == JudgementFault::kNanMatchesAnything &&
            (std::isnan(got) || std::isnan(bound.center)));
      if (std::isinf(bound.radius)) ++out.unbounded;
      const double miss = std::fabs(got - bound.center);
      key = std::isnan(miss)   ? kInf
            : bound.radius > 0 ? miss / bound.radius - 1
                               : (miss > 0 ? kInf : -1);
      if (ok) key = std::min(key, 0.0);
    }
    if (!ok) ++out.outside;
    if (worst_index < 0 || (!ok && !worst_outside) || (!ok == worst_outside && key > worst_key)) {
      worst_index = i;
      worst_outside = !ok;
      worst_key = key;
    }
  }
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
      const ElementBound& bound = bounds[static_cast<std::size_t>(worst_index)];
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

BoundCheck CheckBound(TensorView actual, TensorView exact, std::span<const ElementBound> bounds) {
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
                std::span<const ElementBound> bounds, const Tolerance& tolerance) {
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

Judgement Judge(TensorView actual, TensorView expected, std::span<const ElementBound> bounds,
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
