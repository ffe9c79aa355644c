#include "mm/family/requantize.h"

#include <algorithm>
#include <cmath>

namespace mm::family {
namespace {

using Int128 = __int128;

// Any |rounded| above this saturates every 8-bit output whatever the zero point (|zp| <= 255).
constexpr std::int64_t kSaturated = std::int64_t{1} << 20;

// How an exact half is rounded: to the even neighbour, or to the odd one (round_half_even(x + z) is
// round_half_odd(x) + z for an odd integer z: docs/family.md).
enum class Ties : bool { kEven, kOdd };

// The zero point's order as the tie rule of the value before the zero point is added.
Ties TiesOf(ZeroPointOrder order, std::int64_t zero_point) {
  const bool odd = (zero_point & 1) != 0;
  return order == ZeroPointOrder::kBeforeRounding && odd ? Ties::kOdd : Ties::kEven;
}

// round(n * 2^e / d) to nearest, `ties` deciding exact halves, clamped to +-kSaturated, for
// 0 < d < 2^25 and |n| < 2^80: every shift below stays under 2^127.
std::int64_t RoundDyadic(Int128 n, int e, Int128 d, Ties ties) {
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
  if (2 * r > d || (2 * r == d && ((q & 1) != 0) == (ties == Ties::kEven))) ++q;
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

// round(x) to nearest for a double x, `ties` deciding halves (an infinity saturates).
std::int64_t RoundValue(double x, Ties ties) {
  if (std::isinf(x)) return x > 0 ? kSaturated : -kSaturated;
  if (x == 0) return 0;
  const Dyadic d = Split(x);
  return RoundDyadic(d.m, d.e, 1, ties);
}

// round(acc * x) to nearest exactly, for |acc| < 2^32 and a float value x (|m| < 2^24).
std::int64_t RoundProduct(std::int64_t acc, float x, Ties ties) {
  if (std::isinf(x)) return acc == 0 ? 0 : (acc > 0) == (x > 0) ? kSaturated : -kSaturated;
  if (x == 0 || acc == 0) return 0;
  const Dyadic d = Split(x);
  return RoundDyadic(static_cast<Int128>(acc) * d.m, d.e, 1, ties);
}

}  // namespace

std::int64_t RequantizeExact(std::int64_t acc, float a_scale, float b_scale, float y_scale,
                             std::int64_t zero_point, OutputRange range, ZeroPointOrder order) {
  if (acc == 0) return Saturate(0, zero_point, range);
  // Float significands have at most 24 bits: |acc m_a m_b| < 2^32 2^48 = 2^80, m_y < 2^24.
  const Dyadic a = Split(a_scale), b = Split(b_scale), y = Split(y_scale);
  const Int128 n = static_cast<Int128>(acc) * a.m * b.m;
  const Ties ties = TiesOf(order, zero_point);
  return Saturate(RoundDyadic(n, a.e + b.e - y.e, y.m, ties), zero_point, range);
}

RequantizedRange RequantizeFloat32Range(std::int64_t acc, float a_scale, float b_scale,
                                        float y_scale, std::int64_t zero_point, OutputRange range,
                                        ZeroPointOrder order) {
  const std::int64_t exact =
      RequantizeExact(acc, a_scale, b_scale, y_scale, zero_point, range, order);
  const Ties ties = TiesOf(order, zero_point);
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
    // The int32 acc times m in double, as numpy's int32 * float32 does: up to 56 bits, rounded.
    const double double_product = static_cast<double>(acc) * static_cast<double>(m);
    for (const double v : {static_cast<double>(rounded_product), exact_product, double_product}) {
      if (std::isnan(v)) continue;
      offer(RoundValue(v, ties));
      // The zero point added in double before rounding (op_qlinear_matmul.py's D += y_zero_point)
      // may itself round v + zero_point onto a half.
      if (order == ZeroPointOrder::kBeforeRounding) {
        offer(RoundValue(v + static_cast<double>(zero_point), Ties::kEven) - zero_point);
      }
    }
    offer(RoundProduct(acc, m, ties));
  }
  return out;
}

}  // namespace mm::family
