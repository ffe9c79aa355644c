#include "fuzz_accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mm/oracle/parallel.h"

namespace mm::fuzz {
namespace {

// The significand bits and the normal exponent range of a float dtype.
struct FloatFormat {
  int digits, min_exponent, max_exponent;
  double Ulp(double x) const {  // The spacing at |x| (the subnormal spacing near 0).
    const int exponent = x == 0 ? min_exponent : std::max(std::ilogb(x), min_exponent);
    return std::ldexp(1.0, exponent - digits + 1);
  }
  double MaxFinite() const { return std::ldexp(2.0 - std::ldexp(1.0, 1 - digits), max_exponent); }
};

template <DType D>
constexpr FloatFormat FormatOf() {
  if constexpr (D == DType::kFloat16) {
    return {11, -14, 15};
  } else if constexpr (D == DType::kBFloat16) {
    return {8, -126, 127};
  } else {
    using T = CppType<D>;
    return {std::numeric_limits<T>::digits, std::numeric_limits<T>::min_exponent - 1,
            std::numeric_limits<T>::max_exponent - 1};
  }
}

template <DType D>
ResultError MeasureErrorTyped(TensorView y, const OracleResult& oracle,
                              const OracleBounds& bounds) {
  using T = CppType<D>;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const T* got = y.Data<T>();
  const T* rounded = oracle.y.view().Data<T>();
  constexpr FloatFormat kFormat = FormatOf<D>();
  const double max_finite = kFormat.MaxFinite();
  auto examine = [&](std::int64_t begin, std::int64_t end) {
    ResultError out;
    for (std::int64_t i = begin; i < end; ++i) {
      const double exact = oracle.exact[static_cast<std::size_t>(i)];
      const ElementBound bound = bounds[static_cast<std::size_t>(i)];
      if (!std::isfinite(exact) || bound.special) continue;
      const double radius = bound.radius;
      // Overflow possible: the bound reaches an infinity, and no error size means anything.
      if (std::isinf(radius) || std::fabs(exact) + radius > max_finite) continue;
      const double g = ToDouble(got[i]);
      out.bound_fraction = std::max(out.bound_fraction.value_or(0), 0.0);
      // The correctly rounded value is the best a result can be: no error to report.
      if (g == ToDouble(rounded[i])) continue;
      const double miss = std::isfinite(g) ? std::fabs(g - exact) : kInf;
      out.max_ulp = std::max(out.max_ulp, miss / kFormat.Ulp(exact));
      // The judgement's own interval (WithinBound): the fraction is > 1 exactly where it failed.
      out.bound_fraction = std::max(*out.bound_fraction, BoundFraction(D, bound, g));
    }
    return out;
  };
  // Maxima: the order of the ranges does not matter.
  return ReduceInOrder<ResultError>(
      y.NumElements(), examine, [](ResultError& left, ResultError&& right) {
        left.max_ulp = std::max(left.max_ulp, right.max_ulp);
        if (right.bound_fraction) {
          left.bound_fraction = std::max(left.bound_fraction.value_or(0), *right.bound_fraction);
        }
      });
}

}  // namespace

bool SpecialsCorrect(TensorView y, const OracleBounds& bounds, std::int64_t& elements) {
  if (bounds.size() != static_cast<std::size_t>(y.NumElements())) return true;
  return VisitDType(y.dtype, [&](auto tag) -> bool {
    constexpr DType kD = decltype(tag)::value;
    if constexpr (kD == DType::kFloat || kD == DType::kDouble || kD == DType::kFloat16 ||
                  kD == DType::kBFloat16) {
      const CppType<kD>* got = y.Data<CppType<kD>>();
      struct Specials {
        std::int64_t elements = 0;
        bool correct = true;
      };
      const Specials found = ReduceInOrder<Specials>(
          y.NumElements(),
          [&](std::int64_t begin, std::int64_t end) {
            Specials part;
            for (std::int64_t i = begin; i < end; ++i) {
              const ElementBound bound = bounds[static_cast<std::size_t>(i)];
              if (!bound.special) continue;
              ++part.elements;
              if (!WithinBound(kD, bound, ToDouble(got[i]))) part.correct = false;
            }
            return part;
          },
          [](Specials& left, Specials&& right) {
            left.elements += right.elements;
            left.correct = left.correct && right.correct;
          });
      elements += found.elements;
      return found.correct;
    } else {
      return true;
    }
  });
}

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank > 0 ? rank - 1 : 0)];
}

ResultError MeasureError(TensorView y, const OracleResult& oracle, const OracleBounds& bounds) {
  if (!IsFloat(y.dtype) || oracle.exact.size() != static_cast<std::size_t>(y.NumElements()) ||
      bounds.size() != oracle.exact.size()) {
    return {};
  }
  return VisitDType(y.dtype, [&](auto tag) -> ResultError {
    constexpr DType kD = decltype(tag)::value;
    if constexpr (kD == DType::kFloat || kD == DType::kDouble || kD == DType::kFloat16 ||
                  kD == DType::kBFloat16) {
      return MeasureErrorTyped<kD>(y, oracle, bounds);
    } else {
      return {};
    }
  });
}

void AccuracyData::Record(std::size_t backend, DType dtype, const ResultError& error, bool special,
                          bool specials_correct) {
  auto& [ulps, fractions] = errors_[{backend, dtype}];
  ulps.push_back(error.max_ulp);
  if (error.bound_fraction) fractions.push_back(*error.bound_fraction);
  auto& [special_results, special_wrong] = specials_[{backend, dtype}];
  if (special) {
    ++special_results;
    if (!specials_correct) ++special_wrong;
  }
}

std::vector<ErrorStats> AccuracyData::Statistics(const std::vector<std::string>& names) {
  std::vector<ErrorStats> out;
  for (auto& [key, values] : errors_) {
    auto& [ulps, fractions] = values;
    ErrorStats e;
    e.backend = names[key.first];
    e.dtype = key.second;
    e.problems = static_cast<std::int64_t>(ulps.size());
    e.p99_ulp = Percentile(ulps, 0.99);
    e.worst_ulp = ulps.empty() ? 0 : ulps.back();
    if (!fractions.empty()) {
      e.p99_bound_fraction = Percentile(fractions, 0.99);
      e.worst_bound_fraction = fractions.back();
    }
    if (auto it = specials_.find(key); it != specials_.end()) {
      e.special_problems = it->second.first;
      e.special_wrong = it->second.second;
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace mm::fuzz
