#include "mm/family/requantize.h"

#include <algorithm>
#include <cmath>

namespace mm::family {
namespace {

using Int128 = __int128;

// Any |rounded| above this saturates every 8-bit output whatever the zero point (|zp| <= 255).
constexpr std::int64_t kSaturated = std::int64_t{1} << 20;

// round_half_even(n * 2^e / d), clamped to +-kSaturated, for 0 < d < 2^25 and |n| < 2^80: every
// shift below stays under 2^127.
std::int64_t RoundHalfEvenDyadic(Int128 n, int e, Int128 d) {
  if (n == 0) return 0;
  const bool negative = n < 0;
  Int128 magnitude = negative ? -n : n;
  if (e > 0) {
    // |n| 2^e / d >= 2^e / 2^25 > kSaturated once e > 45.
    if (e > 45) return negative ? -kSaturated : kSaturated;
    magnitude <<= e;
  } else if (e < 0) {
    // |n| 2^e / d < 2^80 2^e <= 2^-2 once e <= -82: rounds to 0, never a tie.
    if (e <= -82) return 0;
    d <<= -e;
  }
  Int128 q = magnitude / d;
  const Int128 r = magnitude - q * d;
  if (2 * r > d || (2 * r == d && (q & 1) != 0)) ++q;
  const std::int64_t clamped = q > kSaturated ? kSaturated : static_cast<std::int64_t>(q);
  return negative ? -clamped : clamped;
}

// A finite non-zero double as m * 2^e with m an odd integer (|m| < 2^53).
struct Dyadic {
  std::int64_t m = 0;
  int e = 0;
};
Dyadic Split(double x) {
  int e = 0;
  const double f = std::frexp(x, &e);  // x = f 2^e exactly, 0.5 <= |f| < 1.
  Dyadic d{static_cast<std::int64_t>(std::ldexp(f, 53)), e - 53};
  while ((d.m & 1) == 0) {
    d.m /= 2;
    ++d.e;
  }
  return d;
}

std::int64_t Saturate(std::int64_t rounded, std::int64_t zero_point, OutputRange range) {
  return std::clamp(rounded + zero_point, range.lo, range.hi);
}

// round_half_even(x) for a double x (an infinity saturates).
std::int64_t RoundValue(double x) {
  if (std::isinf(x)) return x > 0 ? kSaturated : -kSaturated;
  if (x == 0) return 0;
  const Dyadic d = Split(x);
  return RoundHalfEvenDyadic(d.m, d.e, 1);
}

// round_half_even(acc * x) exactly, for |acc| < 2^32 and a float value x (|m| < 2^24).
std::int64_t RoundProduct(std::int64_t acc, float x) {
  if (std::isinf(x)) return acc == 0 ? 0 : (acc > 0) == (x > 0) ? kSaturated : -kSaturated;
  if (x == 0 || acc == 0) return 0;
  const Dyadic d = Split(x);
  return RoundHalfEvenDyadic(static_cast<Int128>(acc) * d.m, d.e, 1);
}

}  // namespace

std::int64_t RequantizeExact(std::int64_t acc, float a_scale, float b_scale, float y_scale,
                             std::int64_t zero_point, OutputRange range) {
  if (acc == 0) return Saturate(0, zero_point, range);
  // Float significands have at most 24 bits: |acc m_a m_b| < 2^32 2^48 = 2^80, m_y < 2^24.
  const Dyadic a = Split(a_scale), b = Split(b_scale), y = Split(y_scale);
  const Int128 n = static_cast<Int128>(acc) * a.m * b.m;
  return Saturate(RoundHalfEvenDyadic(n, a.e + b.e - y.e, y.m), zero_point, range);
}

RequantizedRange RequantizeFloat32Range(std::int64_t acc, float a_scale, float b_scale,
                                        float y_scale, std::int64_t zero_point, OutputRange range) {
  const std::int64_t exact = RequantizeExact(acc, a_scale, b_scale, y_scale, zero_point, range);
  RequantizedRange out{exact, exact};
  auto offer = [&](std::int64_t rounded) {
    const std::int64_t y = Saturate(rounded, zero_point, range);
    out.lo = std::min(out.lo, y);
    out.hi = std::max(out.hi, y);
  };
  // Each operation a float32 one (this file is compiled without contraction: no fma).
  const float fa = static_cast<float>(acc);
  // The three orders, and the real multiplier computed in double and stored as a float.
  const float multipliers[] = {
      a_scale * b_scale / y_scale, a_scale * (b_scale / y_scale), a_scale / y_scale * b_scale,
      static_cast<float>(static_cast<double>(a_scale) * b_scale / y_scale)};
  for (const float m : multipliers) {
    const float rounded_product = fa * m;
    const double exact_product = static_cast<double>(fa) * static_cast<double>(m);  // 48 bits.
    if (!std::isnan(rounded_product)) offer(RoundValue(rounded_product));
    if (!std::isnan(exact_product)) offer(RoundValue(exact_product));
    offer(RoundProduct(acc, m));
  }
  return out;
}

}  // namespace mm::family
