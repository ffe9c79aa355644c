#include "mm/family/judge.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace mm::family {
namespace {

// ONNX's rule for one float element (conformance/judging/compare.h's FloatElementMatches, which the
// engine cannot reach): NaN matches NaN, an infinity only the same infinity.
bool WithinTolerance(double actual, double expected, const OnnxTolerance& tolerance) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= tolerance.Allowed(expected);
}

std::string Text(double v) {
  if (std::isnan(v)) return "nan";
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  return buffer;
}

void Record(FamilyJudgement& out, std::size_t index, ElementVerdict verdict) {
  out.verdicts[index] = verdict;
  switch (verdict) {
    case ElementVerdict::kPass:
      ++out.pass;
      break;
    case ElementVerdict::kBound:
      ++out.bound;
      break;
    case ElementVerdict::kImprecise:
      ++out.imprecise;
      break;
    case ElementVerdict::kFail:
      ++out.fail;
      break;
  }
}

// Counts one ambiguous element by the readings whose answer it is within: the formula's first.
void CountReading(AmbiguityOutcome& o, bool in_formula, bool in_other) {
  ++o.elements;
  if (in_formula) {
    ++o.formula;
  } else if (in_other) {
    ++o.skipped;
  } else {
    ++o.neither;
  }
}

// QLinearMatMul's rule for one integer: equal to the exact y (PASS), one unit off inside the
// range [low, high] of the float32 evaluations (BOUND), or FAIL.
ElementVerdict IntegerVerdict(std::int64_t got, std::int64_t exact, bool ranged, std::int64_t low,
                              std::int64_t high) {
  if (got == exact) return ElementVerdict::kPass;
  const bool one_unit_inside = ranged && std::llabs(got - exact) == 1 && low <= got && got <= high;
  return one_unit_inside ? ElementVerdict::kBound : ElementVerdict::kFail;
}

// Integer outputs: equal to the exact answer, or (QLinearMatMul) one unit off inside its range;
// where the standard is ambiguous, either reading's.
template <class T>
void JudgeIntegers(const FamilyOracle& oracle, TensorView actual, FamilyJudgement& out) {
  const T* got = actual.Data<T>();
  const T* exact = oracle.y.Data<T>();
  const bool ranged = !oracle.y_low.empty();
  std::map<std::int64_t, const FamilyOracle::AmbiguousElement*> ambiguous;
  for (const auto& a : oracle.ambiguous) ambiguous[a.index] = &a;
  std::map<Ambiguity, AmbiguityOutcome> outcomes;
  for (std::size_t i = 0; i < out.verdicts.size(); ++i) {
    const auto g = static_cast<std::int64_t>(got[i]);
    ElementVerdict v = IntegerVerdict(g, static_cast<std::int64_t>(exact[i]), ranged,
                                      ranged ? oracle.y_low[i] : 0, ranged ? oracle.y_high[i] : 0);
    if (auto it = ambiguous.find(static_cast<std::int64_t>(i)); it != ambiguous.end()) {
      const auto& a = *it->second;
      const ElementVerdict other = IntegerVerdict(g, a.other_y, true, a.other_low, a.other_high);
      AmbiguityOutcome& o = outcomes[a.ambiguity];
      o.ambiguity = a.ambiguity;
      // Both may accept (one BOUND, one PASS): the element followed the one it equals.
      CountReading(o, v != ElementVerdict::kFail && v <= other, other != ElementVerdict::kFail);
      // PASS before BOUND before FAIL: the better of the two readings' verdicts.
      v = std::min(v, other);
    }
    Record(out, i, v);
  }
  for (auto& [ambiguity, outcome] : outcomes) out.ambiguities.push_back(outcome);
}

// Float Gemm: the tolerance against the exact Y, the bound of the formula or, where the standard
// is ambiguous, of either reading.
template <class T>
void JudgeFloats(const FamilyOracle& oracle, TensorView actual, const OnnxTolerance& tolerance,
                 FamilyJudgement& out) {
  const T* got = actual.Data<T>();
  const T* exact = oracle.y.Data<T>();
  const DType dtype = DTypeOf<T>();
  std::map<std::int64_t, const FamilyOracle::AmbiguousElement*> ambiguous;
  for (const auto& a : oracle.ambiguous) ambiguous[a.index] = &a;
  std::map<Ambiguity, AmbiguityOutcome> outcomes;
  for (std::size_t i = 0; i < out.verdicts.size(); ++i) {
    const double g = ToDouble(got[i]);
    bool in_bound = WithinBound(dtype, oracle.bounds[i], g);
    // The formula's own bound took it (an ambiguity's other reading may be NaN for its reason).
    if (in_bound && std::isnan(g) && std::isinf(oracle.bounds[i].center)) {
      ++out.nan_beside_infinity;
    }
    bool in_tolerance = WithinTolerance(g, ToDouble(exact[i]), tolerance);
    if (auto it = ambiguous.find(static_cast<std::int64_t>(i)); it != ambiguous.end()) {
      const auto& a = *it->second;
      const bool in_skipped = WithinBound(dtype, a.skipped, g);
      AmbiguityOutcome& o = outcomes[a.ambiguity];
      o.ambiguity = a.ambiguity;
      CountReading(o, in_bound, in_skipped);
      const double skipped_y = ToDouble(RoundFromDouble<T>(a.skipped.center));
      in_tolerance = in_tolerance || WithinTolerance(g, skipped_y, tolerance);
      in_bound = in_bound || in_skipped;
    }
    Record(out, i, VerdictOf(in_tolerance, in_bound));
  }
  for (auto& [ambiguity, outcome] : outcomes) out.ambiguities.push_back(outcome);
}

int Severity(ElementVerdict v) {
  switch (v) {
    case ElementVerdict::kPass:
      return 0;
    case ElementVerdict::kBound:
      return 1;
    case ElementVerdict::kImprecise:
      return 2;
    case ElementVerdict::kFail:
      return 3;
  }
  return 3;
}

}  // namespace

std::string_view ElementVerdictName(ElementVerdict verdict) {
  switch (verdict) {
    case ElementVerdict::kPass:
      return "PASS";
    case ElementVerdict::kBound:
      return "BOUND";
    case ElementVerdict::kImprecise:
      return "IMPRECISE";
    case ElementVerdict::kFail:
      return "FAIL";
  }
  return "?";
}

ElementVerdict VerdictOf(bool within_tolerance, bool within_bound) {
  if (within_tolerance) return within_bound ? ElementVerdict::kPass : ElementVerdict::kImprecise;
  return within_bound ? ElementVerdict::kBound : ElementVerdict::kFail;
}

ElementVerdict FamilyJudgement::verdict() const {
  if (!mismatch.empty()) return ElementVerdict::kFail;
  return VerdictOf(bound == 0 && fail == 0, imprecise == 0 && fail == 0);
}

std::string FamilyJudgement::Describe() const {
  if (!mismatch.empty()) return mismatch;
  std::string out =
      std::to_string(verdicts.size()) + " elements: " + std::to_string(pass) + " PASS";
  if (bound) out += ", " + std::to_string(bound) + " BOUND";
  if (imprecise) out += ", " + std::to_string(imprecise) + " IMPRECISE";
  if (fail) out += ", " + std::to_string(fail) + " FAIL";
  if (worst_index >= 0 && verdicts[worst_index] != ElementVerdict::kPass) {
    out += "; worst at " + std::to_string(worst_index) + ": exact " + worst_expected + ", got " +
           worst_actual;
  }
  if (nan_beside_infinity > 0) {
    out += "; " + std::to_string(nan_beside_infinity) +
           " NaN where the exact value is an infinity: finite terms that overflow to the opposite "
           "infinity (or a flushed subnormal times it) give that NaN in the declared arithmetic";
  }
  if (outside_int32 > 0) {
    out += "; outside the standard's range: " + std::to_string(outside_int32) +
           " elements' exact sums leave int32 (judged against the wrapped value)";
  }
  for (const AmbiguityOutcome& a : ambiguities) out += "; " + a.Describe();
  return out;
}

FamilyJudgement JudgeFamily(const Plan& plan, const FamilyOracle& oracle, TensorView actual,
                            const OnnxTolerance& tolerance) {
  FamilyJudgement out;
  const Dims& dims = plan.y_dims();
  if (actual.dtype != plan.y_dtype ||
      !std::equal(actual.dims.begin(), actual.dims.end(), dims.begin(), dims.end())) {
    out.mismatch = "Y is " + std::string(DTypeName(actual.dtype)) + DimsToString(actual.dims) +
                   " but " + std::string(OpName(plan.op)) + " gives " +
                   std::string(DTypeName(plan.y_dtype)) + DimsToString(dims);
    return out;
  }
  out.verdicts.resize(static_cast<std::size_t>(oracle.y.NumElements()));
  out.outside_int32 = oracle.outside_int32_count;
  VisitElementType(plan.y_dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (std::is_integral_v<T>) {
      JudgeIntegers<T>(oracle, actual, out);
    } else {
      JudgeFloats<T>(oracle, actual, tolerance, out);
    }
    for (std::size_t i = 0; i < out.verdicts.size(); ++i) {
      if (out.worst_index < 0 ||
          Severity(out.verdicts[i]) > Severity(out.verdicts[out.worst_index])) {
        out.worst_index = static_cast<std::int64_t>(i);
      }
    }
    if (out.worst_index >= 0) {
      const auto w = static_cast<std::size_t>(out.worst_index);
      if constexpr (std::is_integral_v<T>) {
        out.worst_expected = std::to_string(oracle.y.Data<T>()[w]);
        out.worst_actual = std::to_string(actual.Data<T>()[w]);
      } else {
        out.worst_expected = Text(oracle.bounds[w].center);
        out.worst_actual = Text(ToDouble(actual.Data<T>()[w]));
      }
    }
  });
  return out;
}

}  // namespace mm::family
