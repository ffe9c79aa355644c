// The exact sum of products of finite doubles, rounded once: what the oracle falls back on where
// double's range is too narrow for its error-free transformations (a product or a partial sum
// beyond 2^1024 that a later term brings back, or that an infinity must not meet), and what
// mm-fuzz's corpora are rounded from (conformance/fuzz/fair.h: CorrectlyRounded).
#ifndef MM_ORACLE_EXACT_ACCUMULATOR_H_
#define MM_ORACLE_EXACT_ACCUMULATOR_H_

#include <array>
#include <cstdint>

namespace mm {

// A binary float format as the rounding needs it: significand bits (with the implicit one), the
// exponent of the smallest subnormal's quantum, and the largest finite value.
struct RoundingFormat {
  int precision;
  int min_quantum_exponent;
  double max_finite;
};
// IEEE double's.
inline constexpr RoundingFormat kDoubleFormat{53, -1074, 0x1.fffffffffffffp1023};

// A fixed-point number in radix-2^32 digits held in int64 (carries are settled every 2^30
// additions), digit 0 worth 2^-3232: every product of two or three finite doubles (from 2^-3222 to
// below 2^3072), and any count of them, is added exactly. About 1.6 KB; Clear and Round walk all of
// it, so it is for the few elements the fast paths cannot take.
class ExactAccumulator {
 public:
  // Back to 0.
  void Clear();
  // Adds x * w, or x * w * z, exactly; every factor finite.
  void AddProduct(double x, double w);
  void AddProduct(double x, double w, double z);

  // The sum rounded to `format` (nearest, ties to even; beyond its largest finite value +-inf).
  // `zero` when the sum is exactly 0 (then +0).
  double Round(const RoundingFormat& format, bool& zero);
  // The sum rounded to double; an exact 0 is +0 (IEEE's sum of nonzero terms that cancel).
  double RoundToDouble();

 private:
  static constexpr int kBase = -3232;
  static constexpr int kDigits = 202;

  // Adds (or subtracts) the 192-bit magnitude `words` times 2^exponent.
  void AddMagnitude(const std::uint64_t (&words)[3], int exponent, bool negative);
  // Every digit in [0, 2^32) but the last, which keeps the sign.
  void Normalize();
  std::uint64_t Bit(int bit) const;

  std::array<std::int64_t, kDigits> digits_{};
  std::int64_t additions_ = 0;  // Since the last Normalize.
};

}  // namespace mm

#endif  // MM_ORACLE_EXACT_ACCUMULATOR_H_
