#include "problem_values.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mm::fuzz {
namespace {

// Exponent range and smallest values of each float dtype.
struct FloatFacts {
  int max_exp, min_exp;  // Of normal numbers: max finite ~ 2^(max_exp+1), min normal 2^min_exp.
  double max_finite, min_normal, min_subnormal;
};

FloatFacts Facts(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return {15, -14, 65504.0, std::ldexp(1.0, -14), std::ldexp(1.0, -24)};
    case DType::kBFloat16:
      return {127, -126, static_cast<double>(std::numeric_limits<bfloat16>::max()),
              std::ldexp(1.0, -126), std::ldexp(1.0, -133)};
    case DType::kFloat:
      return {127, -126, std::numeric_limits<float>::max(), std::ldexp(1.0, -126),
              std::ldexp(1.0, -149)};
    default:
      return {1023, -1022, std::numeric_limits<double>::max(), std::ldexp(1.0, -1022),
              std::ldexp(1.0, -1074)};
  }
}

double Normal(Rng& rng) {
  // Irwin-Hall: 12 uniforms minus 6, mean 0, variance 1, no libm (bit-reproducible everywhere).
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += rng.Unit();
  return sum - 6;
}

// The value families, resolved from their names once per tensor rather than compared per element.
enum class Family {
  kSmallInt,
  kUniform,
  kNormal,
  kWideExponent,
  kExtremes,
  kUniformBits,
  kNearLimits
};

Family ParseFamily(const std::string& name) {
  if (name == "small-int") return Family::kSmallInt;
  if (name == "uniform") return Family::kUniform;
  if (name == "normal") return Family::kNormal;
  if (name == "wide-exponent") return Family::kWideExponent;
  if (name == "uniform-bits") return Family::kUniformBits;
  if (name == "near-limits") return Family::kNearLimits;
  return Family::kExtremes;
}

double FloatValue(Rng& rng, Family family, const FloatFacts& f) {
  switch (family) {
    case Family::kSmallInt:
      return static_cast<double>(rng.Between(-3, 3));
    case Family::kUniform:
      return 2 * rng.Unit() - 1;
    case Family::kNormal:
      return Normal(rng);
    case Family::kWideExponent: {
      const int e = static_cast<int>(rng.Between(f.min_exp / 2, f.max_exp / 2));
      return (rng.Chance(0.5) ? -1 : 1) * std::ldexp(1 + rng.Unit(), e);
    }
    default:
      break;
  }
  // extremes: the edges of the type, mixed with ordinary values.
  const double sign = rng.Chance(0.5) ? -1 : 1;
  switch (rng.Below(10)) {
    case 0:
      return sign * f.max_finite;
    case 1:
      return sign * f.min_normal;
    case 2:
      return sign * f.min_subnormal;
    case 3:
      return sign * (f.min_normal - f.min_subnormal);  // Largest subnormal.
    case 4:
      return sign * 0.0;
    case 5:
      return sign * std::ldexp(1 + rng.Unit(), f.max_exp / 2);
    default:
      return 2 * rng.Unit() - 1;
  }
}

template <class T>
void FillFloats(Rng& rng, const std::string& family_name, DType dtype, Tensor& t) {
  const FloatFacts f = Facts(dtype);
  const Family family = ParseFamily(family_name);
  T* data = t.Data<T>();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    data[i] = RoundFromDouble<T>(FloatValue(rng, family, f));
  }
}

template <class T>
void FillInts(Rng& rng, const std::string& family_name, Tensor& t) {
  using L = std::numeric_limits<T>;
  const Family family = ParseFamily(family_name);
  T* data = t.Data<T>();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    if (family == Family::kSmallInt) {
      data[i] = static_cast<T>(L::is_signed ? rng.Between(-3, 3) : rng.Between(0, 6));
    } else if (family == Family::kUniformBits) {
      data[i] = static_cast<T>(rng.Next());
    } else {  // near-limits
      static constexpr T kSmall[] = {0, 1, 2, 3};
      switch (rng.Below(6)) {
        case 0:
          data[i] = L::max();
          break;
        case 1:
          data[i] = static_cast<T>(L::max() - 1);
          break;
        case 2:
          data[i] = L::min();
          break;
        case 3:
          data[i] = static_cast<T>(L::min() + 1);
          break;
        default:
          data[i] =
              static_cast<T>(kSmall[rng.Below(4)] * (L::is_signed && rng.Chance(0.5) ? -1 : 1));
      }
    }
  }
}

// Mirrors the first half of every A row into the second half, negated, and repeats the first half
// of B's rows in the second: every pair a*b + (-a)*b cancels exactly, so the exact result is tiny
// (0, or the odd K's last term) while sum |a||b| is large.
template <class T>
void Cancel(Tensor& a, Tensor& b, std::int64_t k, std::int64_t n) {
  if (k < 2 || n == 0) return;  // Nothing to cancel in an empty B.
  const std::int64_t h = k / 2;
  T* ad = a.Data<T>();
  for (std::int64_t row = 0; row < a.NumElements() / k; ++row) {
    for (std::int64_t p = 0; p < h; ++p) ad[row * k + h + p] = -ad[row * k + p];
  }
  T* bd = b.Data<T>();
  for (std::int64_t mat = 0; mat < b.NumElements() / (k * n); ++mat) {
    for (std::int64_t p = 0; p < h; ++p) {
      std::copy_n(bd + (mat * k + p) * n, n, bd + (mat * k + h + p) * n);
    }
  }
}

template <class T>
void Sprinkle(Rng& rng, Tensor& t) {
  if (t.NumElements() == 0) return;
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  const std::int64_t count = rng.Between(1, 3);
  for (std::int64_t i = 0; i < count; ++i) {
    t.Data<T>()[rng.Below(static_cast<std::uint64_t>(t.NumElements()))] =
        RoundFromDouble<T>(specials[rng.Below(3)]);
  }
}

}  // namespace

void FillValues(Rng& rng, const GeneratorOptions& options, std::int64_t k, std::int64_t cancel_n,
                Problem& p) {
  const DType dtype = p.a.dtype();
  if (IsFloat(dtype)) {
    static const std::vector<std::string> kFamilies = {"small-int",     "uniform",      "normal",
                                                       "wide-exponent", "cancellation", "extremes"};
    std::string family = rng.Pick(kFamilies);
    if (!options.specials && family == "extremes") family = "wide-exponent";
    const std::string fill =
        family == "cancellation" ? (rng.Chance(0.5) ? "uniform" : "normal") : family;
    const bool sprinkle = options.specials && rng.Chance(0.08);
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if constexpr (!std::is_integral_v<T>) {
        FillFloats<T>(rng, fill, dtype, p.a);
        FillFloats<T>(rng, fill, dtype, p.b);
        if (family == "cancellation") Cancel<T>(p.a, p.b, k, cancel_n);
        if (sprinkle) Sprinkle<T>(rng, rng.Chance(0.5) ? p.a : p.b);
      }
    });
    p.values = family + (sprinkle ? "+specials" : "");
  } else {
    static const std::vector<std::string> kFamilies = {"small-int", "uniform-bits", "near-limits"};
    p.values = rng.Pick(kFamilies);
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if constexpr (std::is_integral_v<T>) {
        FillInts<T>(rng, p.values, p.a);
        FillInts<T>(rng, p.values, p.b);
      }
    });
  }
}

std::int64_t Product(const Dims& dims) {
  std::int64_t p = 1;
  for (std::int64_t d : dims) p *= d;
  return p;
}

}  // namespace mm::fuzz
