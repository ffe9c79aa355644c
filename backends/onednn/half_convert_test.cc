// The via-f32 path's conversions (half_convert.h): every kernel the running CPU executes gives the
// bits of Eigen's scalar conversions (exact widening, one rounding to nearest even), on every
// float16 and bfloat16 value, on the float32 values around every rounding boundary, at every tail
// length and across the chunks that OpenMP threads share.
#include "mm/backends/onednn/half_convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mm::onednn_internal {
namespace {

constexpr ConvertKernel kKernels[] = {ConvertKernel::kScalar, ConvertKernel::kAvx2F16c,
                                      ConvertKernel::kAvx512};

std::vector<ConvertKernel> RunnableKernels() {
  std::vector<ConvertKernel> kernels;
  for (ConvertKernel kernel : kKernels) {
    if (CpuRuns(kernel)) kernels.push_back(kernel);
  }
  return kernels;
}

// Eigen's scalar conversion of one float32 to `narrow`'s bits: the definition we hold kernels to.
std::uint16_t ExpectedNarrow(DType narrow, float value) {
  if (narrow == DType::kFloat16) return std::bit_cast<std::uint16_t>(float16(value));
  return std::bit_cast<std::uint16_t>(bfloat16(value));
}

float ExpectedWiden(DType narrow, std::uint16_t bits) {
  if (narrow == DType::kFloat16) return static_cast<float>(std::bit_cast<float16>(bits));
  return static_cast<float>(std::bit_cast<bfloat16>(bits));
}

bool IsNan16(DType narrow, std::uint16_t bits) { return std::isnan(ExpectedWiden(narrow, bits)); }

// Float32 values where rounding to `narrow` can go wrong: every narrow value, the ties halfway to
// its neighbour, one float32 ulp either side of each tie, float32 subnormals, the overflow
// boundary, signed zeros, infinities and NaNs (quiet and signalling, with payloads only in the
// bits that rounding drops), then random bit patterns.
std::vector<float> RoundingCases(DType narrow) {
  const int shift = narrow == DType::kFloat16 ? 13 : 16;  // Dropped mantissa bits (bf16: 16).
  std::vector<float> cases;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float value = ExpectedWiden(narrow, static_cast<std::uint16_t>(h));
    if (std::isnan(value)) continue;
    cases.push_back(value);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if (narrow == DType::kBFloat16) {
      const std::uint32_t tie = bits + (1u << (shift - 1));
      for (std::uint32_t b : {tie - 1, tie, tie + 1}) cases.push_back(std::bit_cast<float>(b));
    } else {
      const float next = ExpectedWiden(narrow, static_cast<std::uint16_t>(h + 1));
      if (std::isfinite(next) && (h & 0x7fff) != 0x7bff) {
        const float tie = value + (next - value) / 2;  // Exact in float32.
        cases.push_back(tie);
        cases.push_back(std::nextafter(tie, 0.0f));
        cases.push_back(std::nextafter(tie, 2 * tie));
      }
    }
  }
  for (std::uint32_t bits :
       {0x00000001u, 0x007fffffu, 0x80000001u, 0x7f7fffffu, 0xff7fffffu, 0x477ff000u, 0x477fefffu,
        0x477fe000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f8000ffu,
        0xff801234u, 0x7fbfffffu, 0x00000000u, 0x80000000u, 0x33000000u, 0x33000001u}) {
    cases.push_back(std::bit_cast<float>(bits));
  }
  std::mt19937 rng(18);
  for (int i = 0; i < 200000; ++i)
    cases.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  return cases;
}

TEST(HalfConvertTest, ThePickedKernelRunsHereAndOnlyTheIsaAllowsIt) {
  EXPECT_TRUE(CpuRuns(ConvertKernel::kScalar));
  EXPECT_TRUE(CpuRuns(PickConvertKernel(true, true)));
  EXPECT_EQ(PickConvertKernel(false, false), ConvertKernel::kScalar);
  EXPECT_NE(PickConvertKernel(false, true), ConvertKernel::kAvx512);
  if (CpuRuns(ConvertKernel::kAvx512)) {
    EXPECT_EQ(PickConvertKernel(true, true), ConvertKernel::kAvx512);
  }
}

TEST(HalfConvertTest, WideningIsExactForEverySixteenBitValue) {
  for (DType narrow : {DType::kFloat16, DType::kBFloat16}) {
    std::vector<std::uint16_t> all(0x10000);
    for (std::uint32_t h = 0; h < 0x10000; ++h) all[h] = static_cast<std::uint16_t>(h);
    for (ConvertKernel kernel : RunnableKernels()) {
      SCOPED_TRACE(std::string(DTypeName(narrow)) + " " + std::string(ConvertKernelName(kernel)));
      std::vector<float> out(all.size());
      WidenToFloat(kernel, narrow, all.data(), out.data(), all.size());
      int wrong = 0;
      for (std::uint32_t h = 0; h < 0x10000 && wrong < 10; ++h) {
        const float expected = ExpectedWiden(narrow, all[h]);
        const bool same = std::isnan(expected) ? std::isnan(out[h])
                                               : std::bit_cast<std::uint32_t>(out[h]) ==
                                                     std::bit_cast<std::uint32_t>(expected);
        if (!same) {
          ++wrong;
          ADD_FAILURE() << "bits 0x" << std::hex << h << ": got " << out[h] << ", want "
                        << expected;
        }
      }
    }
  }
}

TEST(HalfConvertTest, NarrowingRoundsOnceToNearestEvenAroundEveryBoundary) {
  for (DType narrow : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<float> cases = RoundingCases(narrow);
    for (ConvertKernel kernel : RunnableKernels()) {
      SCOPED_TRACE(std::string(DTypeName(narrow)) + " " + std::string(ConvertKernelName(kernel)));
      std::vector<std::uint16_t> out(cases.size());
      NarrowFromFloat(kernel, narrow, cases.data(), out.data(), cases.size());
      int wrong = 0;
      for (std::size_t i = 0; i < cases.size() && wrong < 10; ++i) {
        const std::uint16_t expected = ExpectedNarrow(narrow, cases[i]);
        // NaN stays NaN (its payload is the kernel's); everything else is bit-exact.
        const bool same = std::isnan(cases[i]) ? IsNan16(narrow, out[i]) : out[i] == expected;
        if (!same) {
          ++wrong;
          ADD_FAILURE() << "float bits 0x" << std::hex << std::bit_cast<std::uint32_t>(cases[i])
                        << ": got 0x" << out[i] << ", want 0x" << expected;
        }
      }
    }
  }
}

// Lengths 0..40 cover every tail of the 8- and 16-lane kernels; 3 * 16384 + 5 spans the chunks
// that OpenMP threads share, with a tail in the last one. Elements outside [0, n) stay untouched.
TEST(HalfConvertTest, EveryLengthConvertsExactlyItsElements) {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(3 * 16384 + 5);
  for (DType narrow : {DType::kFloat16, DType::kBFloat16}) {
    for (ConvertKernel kernel : RunnableKernels()) {
      for (std::size_t n : lengths) {
        SCOPED_TRACE(std::string(DTypeName(narrow)) + " " + std::string(ConvertKernelName(kernel)) +
                     " n=" + std::to_string(n));
        std::vector<float> values(n + 1, -7.0f);
        for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 2000) * 0.37f - 3.0f;
        std::vector<std::uint16_t> narrowed(n + 1, 0xabcd);
        NarrowFromFloat(kernel, narrow, values.data(), narrowed.data(), n);
        std::vector<float> widened(n + 1, 42.0f);
        WidenToFloat(kernel, narrow, narrowed.data(), widened.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(narrowed[i], ExpectedNarrow(narrow, values[i])) << "element " << i;
          ASSERT_EQ(widened[i], ExpectedWiden(narrow, narrowed[i])) << "element " << i;
        }
        EXPECT_EQ(narrowed[n], 0xabcd);
        EXPECT_EQ(widened[n], 42.0f);
      }
    }
  }
}

}  // namespace
}  // namespace mm::onednn_internal
