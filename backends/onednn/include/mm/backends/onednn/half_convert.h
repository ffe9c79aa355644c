// Conversions between float16/bfloat16 and float32 for the oneDNN backend's via-f32 path: widening
// is exact, narrowing rounds once to nearest even (NaN stays NaN, quieted; overflow goes to
// infinity; subnormal results are kept). Vectorised kernels (AVX-512, AVX2 with F16C) are chosen at
// run time from what the running CPU has, capped by oneDNN's effective ISA so that
// ONEDNN_MAX_CPU_ISA selects the smaller kernels too; every kernel gives the same bits, NaN
// payloads aside. Not part of the engine API.
#ifndef MM_BACKENDS_ONEDNN_HALF_CONVERT_H_
#define MM_BACKENDS_ONEDNN_HALF_CONVERT_H_

#include <cstddef>
#include <string_view>

#include "mm/engine/dtype.h"

namespace mm::onednn_internal {

enum class ConvertKernel {
  kScalar,    // Eigen's half and bfloat16 conversions, one element at a time.
  kAvx2F16c,  // 8 lanes: F16C vcvtph2ps/vcvtps2ph, AVX2 integer rounding for bfloat16.
  kAvx512,    // 16 lanes: AVX-512F.
};

// "scalar", "avx2+f16c", "avx512".
std::string_view ConvertKernelName(ConvertKernel kernel);

// Whether the running CPU executes `kernel` (CPUID through the compiler's __builtin_cpu_supports).
bool CpuRuns(ConvertKernel kernel);

// The fastest kernel the running CPU executes whose instructions oneDNN's effective ISA allows:
// `isa_allows_avx512` and `isa_allows_avx2` say whether that ISA is at least avx512_core / avx2.
ConvertKernel PickConvertKernel(bool isa_allows_avx512, bool isa_allows_avx2);

// dst[i] = float(src[i]) for n elements of `narrow` (kFloat16 or kBFloat16) at `src`. Exact.
// Uses OpenMP threads (omp_get_max_threads) for large n. `kernel` must satisfy CpuRuns.
void WidenToFloat(ConvertKernel kernel, DType narrow, const void* src, float* dst, std::size_t n);

// dst[i] = src[i] rounded to nearest even in `narrow` (kFloat16 or kBFloat16), n elements.
// Uses OpenMP threads for large n. `kernel` must satisfy CpuRuns.
void NarrowFromFloat(ConvertKernel kernel, DType narrow, const float* src, void* dst,
                     std::size_t n);

}  // namespace mm::onednn_internal

#endif  // MM_BACKENDS_ONEDNN_HALF_CONVERT_H_
