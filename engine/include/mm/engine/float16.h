// mm's 16-bit float storage types: float16 (IEEE 754 binary16: 5 exponent bits, 10 fraction bits)
// and bfloat16 (8 exponent bits, 7 fraction bits: float32's top half). Storage only: two bytes, the
// bits of the format, no arithmetic of their own. From float or double they round once to nearest
// even (ties to even, subnormals, overflow to infinity; NaN stays NaN, quieted, its sign and the
// top of its payload kept); to float and double they widen exactly (a float16 or bfloat16 value
// converts to float implicitly, as it does in Eigen, so arithmetic on one happens in float). A
// library that has types of its own (Eigen::half, Eigen::bfloat16) takes them at its boundary by
// std::bit_cast of the bits.
#ifndef MM_ENGINE_FLOAT16_H_
#define MM_ENGINE_FLOAT16_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

namespace mm {

namespace float16_internal {

// A binary format of 16 bits with kExponentBits exponent bits and kFractionBits fraction bits.
template <int kExponentBits, int kFractionBits>
struct Format {
  static_assert(1 + kExponentBits + kFractionBits == 16, "16-bit formats only");
  static constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  static constexpr std::uint16_t kSign = 0x8000;
  static constexpr std::uint16_t kInfinity = ((1u << kExponentBits) - 1) << kFractionBits;
  static constexpr std::uint16_t kQuiet = 1u << (kFractionBits - 1);

  // `value` rounded once to the nearest value of the format, ties to even, on the bits alone (the
  // floating-point environment's rounding mode and flush-to-zero play no part).
  static constexpr std::uint16_t FromDouble(double value) {
    const auto bits = std::bit_cast<std::uint64_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 63) << 15);
    const int exponent = static_cast<int>((bits >> 52) & 0x7ff);
    const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
    if (exponent == 0x7ff) {
      if (fraction == 0) return sign | kInfinity;
      return sign | kInfinity | kQuiet |
             static_cast<std::uint16_t>(fraction >> (52 - kFractionBits));
    }
    // |value| = significand * 2^(exponent - 1075); double subnormals end below the format's range.
    const std::uint64_t significand = exponent == 0 ? fraction : fraction | std::uint64_t{1} << 52;
    const int target = exponent - 1023 + kBias;  // The format's biased exponent, if normal there.
    const int drop = (52 - kFractionBits) + (target >= 1 ? 0 : 1 - target);
    if (exponent == 0 || drop > 53) return sign;  // Below half the smallest subnormal: zero.
    const std::uint64_t kept = significand >> drop;
    const std::uint64_t rest = significand & ((std::uint64_t{1} << drop) - 1);
    const std::uint64_t half = std::uint64_t{1} << (drop - 1);
    const std::uint64_t rounded = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
    // A normal result's implicit bit lands on the exponent field: a carry out of the fraction moves
    // to the next binade, from the largest value to infinity, from a subnormal to the smallest
    // normal.
    const std::uint64_t magnitude =
        target >= 1 ? (static_cast<std::uint64_t>(target - 1) << kFractionBits) + rounded : rounded;
    return sign | static_cast<std::uint16_t>(std::min<std::uint64_t>(magnitude, kInfinity));
  }
};

using Binary16 = Format<5, 10>;
using BFloat16 = Format<8, 7>;

// float16's bits widened to float exactly, without branches (the exponent rebiased; subnormals by
// one exact float subtraction of normal values, so flush-to-zero modes do not touch it).
constexpr float Binary16ToFloat(std::uint16_t h) {
  constexpr std::uint32_t kShiftedExponent = 0x7c00u << 13;
  constexpr float kMagic = std::bit_cast<float>(std::uint32_t{113} << 23);  // 2^-14.
  std::uint32_t o = (static_cast<std::uint32_t>(h) & 0x7fffu) << 13;
  const std::uint32_t exponent = o & kShiftedExponent;
  o += (127 - 15) << 23;
  if (exponent == kShiftedExponent) {
    o += (128 - 16) << 23;  // Infinity or NaN: the exponent field all ones.
  } else if (exponent == 0) {
    o += 1 << 23;  // Zero or subnormal: 2^-14 * (1 + f / 2^10) - 2^-14 = f * 2^-24, exactly.
    o = std::bit_cast<std::uint32_t>(std::bit_cast<float>(o) - kMagic);
  }
  return std::bit_cast<float>(o | (static_cast<std::uint32_t>(h) & 0x8000u) << 16);
}

}  // namespace float16_internal

// IEEE 754 binary16.
class float16 {
 public:
  // +0.
  constexpr float16() = default;
  // The nearest float16, ties to even (one rounding from either type).
  constexpr explicit float16(float value) : float16(static_cast<double>(value)) {}
  constexpr explicit float16(double value) : bits_(float16_internal::Binary16::FromDouble(value)) {}
  // Exact.
  constexpr operator float() const { return float16_internal::Binary16ToFloat(bits_); }

  // The value with these bits, and the bits of this value.
  static constexpr float16 FromBits(std::uint16_t bits) {
    float16 h;
    h.bits_ = bits;
    return h;
  }
  constexpr std::uint16_t bits() const { return bits_; }

  // The sign flipped: exact, NaN included.
  constexpr float16 operator-() const { return FromBits(bits_ ^ 0x8000); }

 private:
  std::uint16_t bits_ = 0;
};

// bfloat16: float32's sign, exponent and top 7 fraction bits.
class bfloat16 {
 public:
  // +0.
  constexpr bfloat16() = default;
  // The nearest bfloat16, ties to even (one rounding from either type).
  constexpr explicit bfloat16(float value) : bfloat16(static_cast<double>(value)) {}
  constexpr explicit bfloat16(double value)
      : bits_(float16_internal::BFloat16::FromDouble(value)) {}
  // Exact.
  constexpr operator float() const {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits_) << 16);
  }

  // The value with these bits, and the bits of this value.
  static constexpr bfloat16 FromBits(std::uint16_t bits) {
    bfloat16 b;
    b.bits_ = bits;
    return b;
  }
  constexpr std::uint16_t bits() const { return bits_; }

  // The sign flipped: exact, NaN included.
  constexpr bfloat16 operator-() const { return FromBits(bits_ ^ 0x8000); }

 private:
  std::uint16_t bits_ = 0;
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "two bytes, the format's bits");

}  // namespace mm

// The formats' limits, as std::numeric_limits<float> gives float's.
template <>
class std::numeric_limits<mm::float16> {
 public:
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false;
  static constexpr bool is_exact = false, has_infinity = true, has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true, is_iec559 = true, is_bounded = true;
  static constexpr int radix = 2, digits = 11, digits10 = 3, max_digits10 = 5;
  static constexpr int min_exponent = -13, max_exponent = 16;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr mm::float16 min() { return mm::float16::FromBits(0x0400); }
  static constexpr mm::float16 max() { return mm::float16::FromBits(0x7bff); }
  static constexpr mm::float16 lowest() { return mm::float16::FromBits(0xfbff); }
  static constexpr mm::float16 epsilon() { return mm::float16::FromBits(0x1400); }
  static constexpr mm::float16 denorm_min() { return mm::float16::FromBits(0x0001); }
  static constexpr mm::float16 infinity() { return mm::float16::FromBits(0x7c00); }
  static constexpr mm::float16 quiet_NaN() { return mm::float16::FromBits(0x7e00); }
  static constexpr mm::float16 signaling_NaN() { return mm::float16::FromBits(0x7d00); }
};

template <>
class std::numeric_limits<mm::bfloat16> {
 public:
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false;
  static constexpr bool is_exact = false, has_infinity = true, has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true, is_iec559 = false, is_bounded = true;
  static constexpr int radix = 2, digits = 8, digits10 = 2, max_digits10 = 4;
  static constexpr int min_exponent = -125, max_exponent = 128;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr mm::bfloat16 min() { return mm::bfloat16::FromBits(0x0080); }
  static constexpr mm::bfloat16 max() { return mm::bfloat16::FromBits(0x7f7f); }
  static constexpr mm::bfloat16 lowest() { return mm::bfloat16::FromBits(0xff7f); }
  static constexpr mm::bfloat16 epsilon() { return mm::bfloat16::FromBits(0x3c00); }
  static constexpr mm::bfloat16 denorm_min() { return mm::bfloat16::FromBits(0x0001); }
  static constexpr mm::bfloat16 infinity() { return mm::bfloat16::FromBits(0x7f80); }
  static constexpr mm::bfloat16 quiet_NaN() { return mm::bfloat16::FromBits(0x7fc0); }
  static constexpr mm::bfloat16 signaling_NaN() { return mm::bfloat16::FromBits(0x7fa0); }
};

#endif  // MM_ENGINE_FLOAT16_H_
