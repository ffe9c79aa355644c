#include "family_values.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace mm::fuzz {
namespace {

bool Signed(DType dtype) { return dtype == DType::kInt8; }

// The type's ends and their neighbours, and 0.
double Extreme(Rng& rng, DType dtype) {
  static constexpr double kSigned[] = {-128, -127, 126, 127, 0};
  static constexpr double kUnsigned[] = {0, 1, 254, 255, 128};
  return Signed(dtype) ? kSigned[rng.Below(5)] : kUnsigned[rng.Below(5)];
}

double Uniform(Rng& rng, DType dtype) {
  return Signed(dtype) ? static_cast<double>(rng.Between(-128, 127))
                       : static_cast<double>(rng.Between(0, 255));
}

double SmallInt(Rng& rng, DType dtype) {
  return Signed(dtype) ? static_cast<double>(rng.Between(-8, 8))
                       : static_cast<double>(rng.Between(0, 8));
}

// A large value of the type, of the sign asked where the type has it.
double Large(Rng& rng, DType dtype, bool negative) {
  if (!Signed(dtype)) return static_cast<double>(rng.Between(192, 255));
  return negative ? static_cast<double>(rng.Between(-128, -127))
                  : static_cast<double>(rng.Between(126, 127));
}

// B's pairs (2j, 2j + 1) along K share a sign: their products with a large A add up past int16.
void FillSaturatingB(Rng& rng, std::int64_t k, std::int64_t n, Tensor& b) {
  const std::int64_t matrices = k * n == 0 ? 0 : b.NumElements() / (k * n);
  std::vector<double> values(static_cast<std::size_t>(b.NumElements()));
  for (std::int64_t mat = 0; mat < matrices; ++mat) {
    for (std::int64_t col = 0; col < n; ++col) {
      bool negative = false;
      for (std::int64_t p = 0; p < k; ++p) {
        if (p % 2 == 0) negative = rng.Chance(0.5);
        values[static_cast<std::size_t>((mat * k + p) * n + col)] = Large(rng, b.dtype(), negative);
      }
    }
  }
  FillEach(b, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; });
}

// A random float32 value in [2^lo, 2^hi): a power of two times 1 + a fraction of 2^-8 steps.
double PowerTimesFraction(Rng& rng, int lo, int hi) {
  const double fraction = 1 + static_cast<double>(rng.Below(256)) / 256;
  return std::ldexp(fraction, static_cast<int>(rng.Between(lo, hi - 1)));
}

// The exponent of the smallest normal value and of the largest power of two of a scale type.
std::pair<int, int> ExponentRange(DType dtype) {
  if (dtype == DType::kFloat16) return {-14, 15};
  return {-126, 127};  // float and bfloat16.
}

}  // namespace

void FillIntegerOperands(Rng& rng, const std::string& family, std::int64_t k, std::int64_t n,
                         Tensor& a, Tensor& b) {
  const DType at = a.dtype(), bt = b.dtype();
  if (family == "saturating pairs") {
    FillEach(a, [&](std::int64_t) { return Large(rng, at, false); });
    FillSaturatingB(rng, k, n, b);
  } else if (family == "outside int32") {
    FillEach(a, [&](std::int64_t) { return Signed(at) ? -128.0 : 255.0; });
    FillEach(b, [&](std::int64_t) { return Signed(bt) ? -128.0 : 255.0; });
  } else if (family == "extremes") {
    FillEach(a, [&](std::int64_t) { return Extreme(rng, at); });
    FillEach(b, [&](std::int64_t) { return Extreme(rng, bt); });
  } else if (family == "small-int") {
    FillEach(a, [&](std::int64_t) { return SmallInt(rng, at); });
    FillEach(b, [&](std::int64_t) { return SmallInt(rng, bt); });
  } else {
    FillEach(a, [&](std::int64_t) { return Uniform(rng, at); });
    FillEach(b, [&](std::int64_t) { return Uniform(rng, bt); });
  }
}

void FillZeroPoint(Rng& rng, const std::string& family, Tensor& zero_point) {
  const DType dtype = zero_point.dtype();
  FillEach(zero_point, [&](std::int64_t) {
    if (family == "0") return 0.0;
    if (family == "mid") return Signed(dtype) ? 0.0 : 128.0;
    if (family == "ends") {
      return Signed(dtype) ? (rng.Chance(0.5) ? -128.0 : 127.0) : (rng.Chance(0.5) ? 0.0 : 255.0);
    }
    if (family == "outside int32") return Signed(dtype) ? 127.0 : 0.0;
    return Uniform(rng, dtype);
  });
}

void FillScales(Rng& rng, const std::string& family, Tensor& a_scale, Tensor& b_scale,
                Tensor& y_scale) {
  const auto [min_exp, max_exp] = ExponentRange(a_scale.dtype());
  if (family == "ties") {
    const double a = std::ldexp(1.0, -static_cast<int>(rng.Between(1, 3)));
    FillEach(a_scale, [&](std::int64_t) { return a; });
    FillEach(b_scale, [](std::int64_t) { return 1.0; });
    FillEach(y_scale, [](std::int64_t) { return 1.0; });
  } else if (family == "saturation") {
    FillEach(a_scale, [](std::int64_t) { return 1.0; });
    FillEach(b_scale, [](std::int64_t) { return 1.0; });
    FillEach(y_scale, [](std::int64_t) { return 0.0625; });
  } else if (family == "extreme") {
    // a at one end of the exponent range, y near it: the multiplier a * b / y stays moderate.
    const bool tiny = rng.Chance(0.5);
    const int a_exp = tiny ? min_exp : max_exp - 1;
    FillEach(a_scale, [&](std::int64_t) { return std::ldexp(1.0, a_exp); });
    FillEach(b_scale, [&](std::int64_t) { return PowerTimesFraction(rng, -8, 0); });
    const int y_exp = tiny ? min_exp + static_cast<int>(rng.Between(0, 4)) : max_exp - 1;
    FillEach(y_scale, [&](std::int64_t) { return std::ldexp(1.0, y_exp); });
  } else {
    FillEach(a_scale, [&](std::int64_t) { return PowerTimesFraction(rng, -8, -2); });
    FillEach(b_scale, [&](std::int64_t) { return PowerTimesFraction(rng, -8, -2); });
    // About a * b times 2^4 .. 2^12 (the scales' typical sizes above): y spreads over the type.
    FillEach(y_scale, [&](std::int64_t) { return PowerTimesFraction(rng, -12, -2); });
  }
}

std::string FillGemmC(Rng& rng, bool specials, Tensor& c) {
  const bool is_float = IsFloat(c.dtype());
  const bool small = rng.Chance(0.5);
  if (small) {
    FillEach(c, [&](std::int64_t) { return static_cast<double>(rng.Between(-4, 4)); });
  } else if (is_float) {
    FillEach(c, [&](std::int64_t) { return 2 * rng.Unit() - 1; });
  } else {
    VisitElementType(c.dtype(), [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      T* data = c.Data<T>();
      if constexpr (std::is_integral_v<T>) {
        for (std::int64_t i = 0; i < c.NumElements(); ++i) data[i] = static_cast<T>(rng.Next());
      }
    });
  }
  std::string name = small ? "small-int" : is_float ? "uniform" : "uniform-bits";
  if (specials && is_float && c.NumElements() > 0 && rng.Chance(0.1)) {
    const double special[] = {std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity()};
    const double value = special[rng.Below(3)];
    const auto at =
        static_cast<std::int64_t>(rng.Below(static_cast<std::uint64_t>(c.NumElements())));
    VisitElementType(c.dtype(), [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      c.Data<T>()[at] = RoundFromDouble<T>(value);
    });
    name += "+specials";
  }
  return name;
}

}  // namespace mm::fuzz
