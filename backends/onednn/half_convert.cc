#include "mm/backends/onednn/half_convert.h"

#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mm::onednn_internal {
namespace {

// Elements per OpenMP work item: large enough that a thread's start costs little against it,
// small enough that 2-8 threads share a 256x256 operand.
constexpr std::size_t kChunk = 16384;

void WidenScalar(DType narrow, const void* src, float* dst, std::size_t n) {
  if (narrow == DType::kFloat16) {
    const auto* s = static_cast<const float16*>(src);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
  } else {
    const auto* s = static_cast<const bfloat16*>(src);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
  }
}

void NarrowScalar(DType narrow, const float* src, void* dst, std::size_t n) {
  if (narrow == DType::kFloat16) {
    auto* d = static_cast<float16*>(dst);
    for (std::size_t i = 0; i < n; ++i) d[i] = float16(src[i]);
  } else {
    auto* d = static_cast<bfloat16*>(dst);
    for (std::size_t i = 0; i < n; ++i) d[i] = bfloat16(src[i]);
  }
}

// ---- AVX2 + F16C: 8 lanes ----

__attribute__((target("avx2,f16c"))) inline __m256 WidenF16x8(const std::uint16_t* s) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
}
__attribute__((target("avx2,f16c"))) inline __m256 WidenBf16x8(const std::uint16_t* s) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
__attribute__((target("avx2,f16c"))) inline __m128i NarrowF16x8(const float* s) {
  return _mm256_cvtps_ph(_mm256_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// Round to nearest even on the bits: add 0x7fff plus the kept part's lowest bit, keep the top
// half. NaN is exempt (the carry could turn it into infinity) and keeps its top bits, quieted.
__attribute__((target("avx2,f16c"))) inline __m128i NarrowBf16x8(const float* s) {
  const __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(s));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i out = _mm256_blendv_epi8(rounded, quiet, is_nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(out), _mm256_extracti128_si256(out, 1));
}

__attribute__((target("avx2,f16c"))) void WidenAvx2(DType narrow, const void* src, float* dst,
                                                    std::size_t n) {
  const auto* s = static_cast<const std::uint16_t*>(src);
  const bool f16 = narrow == DType::kFloat16;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, f16 ? WidenF16x8(s + i) : WidenBf16x8(s + i));
  if (i < n) {
    // The tail through the same instructions, padded, so that every element gets the same bits.
    std::uint16_t in[8] = {};
    float out[8];
    std::memcpy(in, s + i, (n - i) * sizeof(std::uint16_t));
    _mm256_storeu_ps(out, f16 ? WidenF16x8(in) : WidenBf16x8(in));
    std::memcpy(dst + i, out, (n - i) * sizeof(float));
  }
}

__attribute__((target("avx2,f16c"))) void NarrowAvx2(DType narrow, const float* src, void* dst,
                                                     std::size_t n) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const bool f16 = narrow == DType::kFloat16;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     f16 ? NarrowF16x8(src + i) : NarrowBf16x8(src + i));
  }
  if (i < n) {
    float in[8] = {};
    std::uint16_t out[8];
    std::memcpy(in, src + i, (n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), f16 ? NarrowF16x8(in) : NarrowBf16x8(in));
    std::memcpy(d + i, out, (n - i) * sizeof(std::uint16_t));
  }
}

// ---- AVX-512F: 16 lanes ----

__attribute__((target("avx512f"))) inline __m512 WidenF16x16(const std::uint16_t* s) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
}
__attribute__((target("avx512f"))) inline __m512 WidenBf16x16(const std::uint16_t* s) {
  const __m512i wide =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
__attribute__((target("avx512f"))) inline __m256i NarrowF16x16(const float* s) {
  return _mm512_cvtps_ph(_mm512_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
__attribute__((target("avx512f"))) inline __m256i NarrowBf16x16(const float* s) {
  const __m512i bits = _mm512_castps_si512(_mm512_loadu_ps(s));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet));
}

__attribute__((target("avx512f"))) void WidenAvx512(DType narrow, const void* src, float* dst,
                                                    std::size_t n) {
  const auto* s = static_cast<const std::uint16_t*>(src);
  const bool f16 = narrow == DType::kFloat16;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dst + i, f16 ? WidenF16x16(s + i) : WidenBf16x16(s + i));
  }
  if (i < n) {
    std::uint16_t in[16] = {};
    float out[16];
    std::memcpy(in, s + i, (n - i) * sizeof(std::uint16_t));
    _mm512_storeu_ps(out, f16 ? WidenF16x16(in) : WidenBf16x16(in));
    std::memcpy(dst + i, out, (n - i) * sizeof(float));
  }
}

__attribute__((target("avx512f"))) void NarrowAvx512(DType narrow, const float* src, void* dst,
                                                     std::size_t n) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const bool f16 = narrow == DType::kFloat16;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        f16 ? NarrowF16x16(src + i) : NarrowBf16x16(src + i));
  }
  if (i < n) {
    float in[16] = {};
    std::uint16_t out[16];
    std::memcpy(in, src + i, (n - i) * sizeof(float));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        f16 ? NarrowF16x16(in) : NarrowBf16x16(in));
    std::memcpy(d + i, out, (n - i) * sizeof(std::uint16_t));
  }
}

void WidenRange(ConvertKernel kernel, DType narrow, const void* src, float* dst, std::size_t n) {
  switch (kernel) {
    case ConvertKernel::kAvx512:
      return WidenAvx512(narrow, src, dst, n);
    case ConvertKernel::kAvx2F16c:
      return WidenAvx2(narrow, src, dst, n);
    case ConvertKernel::kScalar:
      return WidenScalar(narrow, src, dst, n);
  }
}

void NarrowRange(ConvertKernel kernel, DType narrow, const float* src, void* dst, std::size_t n) {
  switch (kernel) {
    case ConvertKernel::kAvx512:
      return NarrowAvx512(narrow, src, dst, n);
    case ConvertKernel::kAvx2F16c:
      return NarrowAvx2(narrow, src, dst, n);
    case ConvertKernel::kScalar:
      return NarrowScalar(narrow, src, dst, n);
  }
}

// Runs body(begin, count) over [0, n) in chunks, on OpenMP's threads when there is more than one
// chunk and more than one thread.
template <class Body>
void ForChunks(std::size_t n, Body body) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1 || omp_get_max_threads() <= 1) {
    body(std::size_t{0}, n);
    return;
  }
  const auto count = static_cast<std::int64_t>(chunks);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < count; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
    body(begin, std::min(kChunk, n - begin));
  }
}

// F16C by CPUID leaf 1: clang 14's __builtin_cpu_supports does not know it. (The AVX2 check
// beside it covers the OS's saving of the registers both use.)
bool CpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

}  // namespace

std::string_view ConvertKernelName(ConvertKernel kernel) {
  switch (kernel) {
    case ConvertKernel::kAvx512:
      return "avx512";
    case ConvertKernel::kAvx2F16c:
      return "avx2+f16c";
    case ConvertKernel::kScalar:
      return "scalar";
  }
  return "?";
}

bool CpuRuns(ConvertKernel kernel) {
  switch (kernel) {
    case ConvertKernel::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case ConvertKernel::kAvx2F16c:
      return __builtin_cpu_supports("avx2") && CpuHasF16c();
    case ConvertKernel::kScalar:
      return true;
  }
  return false;
}

ConvertKernel PickConvertKernel(bool isa_allows_avx512, bool isa_allows_avx2) {
  if (isa_allows_avx512 && CpuRuns(ConvertKernel::kAvx512)) return ConvertKernel::kAvx512;
  if (isa_allows_avx2 && CpuRuns(ConvertKernel::kAvx2F16c)) return ConvertKernel::kAvx2F16c;
  return ConvertKernel::kScalar;
}

void WidenToFloat(ConvertKernel kernel, DType narrow, const void* src, float* dst, std::size_t n) {
  const auto* bytes = static_cast<const std::uint16_t*>(src);
  ForChunks(n, [&](std::size_t begin, std::size_t count) {
    WidenRange(kernel, narrow, bytes + begin, dst + begin, count);
  });
}

void NarrowFromFloat(ConvertKernel kernel, DType narrow, const float* src, void* dst,
                     std::size_t n) {
  auto* bytes = static_cast<std::uint16_t*>(dst);
  ForChunks(n, [&](std::size_t begin, std::size_t count) {
    NarrowRange(kernel, narrow, src + begin, bytes + begin, count);
  });
}

}  // namespace mm::onednn_internal
