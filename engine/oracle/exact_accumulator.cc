#include "mm/oracle/exact_accumulator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace mm {
namespace {

// The integer significand and exponent of a finite nonzero double: |x| = m 2^e, m < 2^53,
// -1074 <= e <= 971.
std::uint64_t Significand(double x, int& e) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  e = (biased == 0 ? 1 : biased) - 1075;
  return biased == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
}

// Each digit takes at most two parts below 2^32 per addition: 2^29 additions stay far inside int64.
constexpr std::int64_t kAdditionsBetweenCarries = std::int64_t{1} << 29;

}  // namespace

void ExactAccumulator::Clear() {
  digits_.fill(0);
  additions_ = 0;
}

void ExactAccumulator::AddProduct(double x, double w) {
  if (x == 0 || w == 0) return;
  int ex = 0, ew = 0;
  const unsigned __int128 product =
      static_cast<unsigned __int128>(Significand(x, ex)) * Significand(w, ew);
  const std::uint64_t words[3] = {static_cast<std::uint64_t>(product),
                                  static_cast<std::uint64_t>(product >> 64), 0};
  AddMagnitude(words, ex + ew, std::signbit(x) != std::signbit(w));
}

void ExactAccumulator::AddProduct(double x, double w, double z) {
  if (x == 0 || w == 0 || z == 0) return;
  int ex = 0, ew = 0, ez = 0;
  const unsigned __int128 xw =
      static_cast<unsigned __int128>(Significand(x, ex)) * Significand(w, ew);
  const std::uint64_t mz = Significand(z, ez);
  // (high 2^64 + low) mz, high below 2^42: two partial products of at most 117 and 106 bits.
  const unsigned __int128 low = static_cast<unsigned __int128>(static_cast<std::uint64_t>(xw)) * mz;
  const unsigned __int128 high =
      static_cast<unsigned __int128>(static_cast<std::uint64_t>(xw >> 64)) * mz + (low >> 64);
  const std::uint64_t words[3] = {static_cast<std::uint64_t>(low), static_cast<std::uint64_t>(high),
                                  static_cast<std::uint64_t>(high >> 64)};
  const bool negative = (std::signbit(x) != std::signbit(w)) != std::signbit(z);
  AddMagnitude(words, ex + ew + ez, negative);
}

void ExactAccumulator::AddMagnitude(const std::uint64_t (&words)[3], int exponent, bool negative) {
  if (++additions_ >= kAdditionsBetweenCarries) {
    Normalize();
    additions_ = 0;
  }
  const int position = exponent - kBase;
  const int digit = position / 32, shift = position % 32;
  for (int c = 0; c < 6; ++c) {
    const std::uint64_t chunk = (words[c / 2] >> (32 * (c % 2))) & 0xFFFFFFFFu;
    if (chunk == 0) continue;
    const std::uint64_t v = chunk << shift;  // < 2^63.
    const auto low = static_cast<std::int64_t>(v & 0xFFFFFFFFu);
    const auto high = static_cast<std::int64_t>(v >> 32);
    digits_[digit + c] += negative ? -low : low;
    digits_[digit + c + 1] += negative ? -high : high;
  }
}

double ExactAccumulator::Round(const RoundingFormat& format, bool& zero) {
  Normalize();
  additions_ = 0;
  bool negative = false;
  if (digits_.back() < 0) {
    for (auto& d : digits_) d = -d;
    Normalize();
    negative = true;
  }
  int top = kDigits - 1;
  while (top >= 0 && digits_[top] == 0) --top;
  zero = top < 0;
  if (zero) return 0;
  const int top_bit = 32 * top + 63 - std::countl_zero(static_cast<std::uint64_t>(digits_[top]));
  const int exponent = top_bit + kBase;
  const int quantum = std::max(exponent - format.precision + 1, format.min_quantum_exponent);
  const int q = quantum - kBase;  // Bit index of the quantum (> 0: kBase is far below).
  std::uint64_t m = 0;
  for (int bit = top_bit; bit >= q; --bit) m = (m << 1) | Bit(bit);
  const bool round = q >= 1 && Bit(q - 1);
  bool sticky = false;
  for (int bit = q - 2; bit >= 0 && !sticky; --bit) {
    if (bit % 32 == 31 && digits_[bit / 32] == 0) {
      bit -= 31;  // A whole zero digit.
      continue;
    }
    sticky = Bit(bit);
  }
  if (round && (sticky || (m & 1))) ++m;
  double value = std::ldexp(static_cast<double>(m), quantum);
  if (value > format.max_finite) value = std::numeric_limits<double>::infinity();
  return negative ? -value : value;
}

double ExactAccumulator::RoundToDouble() {
  bool zero = false;
  const double value = Round(kDoubleFormat, zero);
  return zero ? 0.0 : value;
}

void ExactAccumulator::Normalize() {
  for (int i = 0; i + 1 < kDigits; ++i) {
    const std::int64_t carry = digits_[i] >> 32;  // Floor division (arithmetic shift).
    digits_[i] -= carry * (std::int64_t{1} << 32);
    digits_[i + 1] += carry;
  }
}

std::uint64_t ExactAccumulator::Bit(int bit) const {
  return (static_cast<std::uint64_t>(digits_[bit / 32]) >> (bit % 32)) & 1;
}

}  // namespace mm
