// peak/<dtype>: this machine's measured peak, the yardstick for "percent of peak" in the comparison
// report. Each is a loop of independent multiply-add chains (enough of them to hide the
// instruction's latency on every core we know) in the widest instructions the CPU has for that
// dtype, chosen at run time, at 1 thread and at every logical CPU:
//   float, float16  FMA on float32 lanes (AVX-512, else AVX2+FMA, else SSE2 multiply and add);
//                   float16 has no arithmetic of its own here: every backend computes it in
//                   float32, so float32's peak is its peak.
//   double          FMA on float64 lanes, likewise.
//   bfloat16        AVX512_BF16's dot product (vdpbf16ps: two multiply-adds into each float32
//                   lane); without it, the float32 FMA peak (bfloat16 work is done in float32).
//   int32, int64    multiply low + add (there is no integer FMA): AVX-512 (int64: AVX512DQ),
//                   else AVX2 (int32), else scalar.
// Timed in CPU time, unlike the matmul benchmarks (real time): the peak is what the cores can do,
// whatever else runs. The label names the instructions used. A flop here is one multiply or one
// add, as in GFLOPS of matmul/ (2 per multiply-add).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <string>
#include <thread>

#include "mm/bench/bench_shapes.h"

namespace mm::bench {
namespace {

constexpr int kChains = 12;  // Independent accumulators: latency 4-5 x 2 ports, and some.
constexpr std::int64_t kRounds = 4096;  // Rounds of kChains instructions per benchmark iteration.

// One kernel: does kRounds rounds and returns something derived from every accumulator, so the
// compiler cannot drop any chain.
struct Kernel {
  const char* label;
  double flops_per_call;
  double (*run)();
};

#define MM_PEAK_LOOP(VEC, INIT, STEP, REDUCE)                                 \
  VEC acc[kChains];                                                           \
  _Pragma("GCC unroll 12") for (int c = 0; c < kChains; ++c) acc[c] = INIT;   \
  for (std::int64_t r = 0; r < kRounds; ++r) {                                \
    _Pragma("GCC unroll 12") for (int c = 0; c < kChains; ++c) acc[c] = STEP; \
  }                                                                           \
  double sum = 0;                                                             \
  for (int c = 0; c < kChains; ++c) sum += REDUCE;                            \
  return sum;

// Sums of every lane, so that no lane's work can be dropped as unused.
__attribute__((target("avx2"))) double Sum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}
__attribute__((target("avx2"))) double Sum(__m256d v) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, v);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
__attribute__((target("avx2"))) double Sum(__m256i v) {
  alignas(32) std::int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  double sum = 0;
  for (std::int32_t lane : lanes) sum += lane;
  return sum;
}
__attribute__((target("avx512f"))) double Sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  double sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}
__attribute__((target("avx512f"))) double Sum(__m512d v) {
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, v);
  double sum = 0;
  for (double lane : lanes) sum += lane;
  return sum;
}
// Integer lanes as 64-bit words: every bit of every lane reaches the sum.
__attribute__((target("avx512f"))) double Sum(__m512i v) {
  alignas(64) std::int64_t lanes[8];
  _mm512_store_si512(lanes, v);
  double sum = 0;
  for (std::int64_t lane : lanes) sum += static_cast<double>(lane);
  return sum;
}
double Sum(__m128 v) {
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, v);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
double Sum(__m128d v) {
  alignas(16) double lanes[2];
  _mm_store_pd(lanes, v);
  return lanes[0] + lanes[1];
}

__attribute__((target("avx512f"))) double F32Avx512() {
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-6f);
  MM_PEAK_LOOP(__m512, _mm512_set1_ps(0.5f + c), _mm512_fmadd_ps(acc[c], mul, add), Sum(acc[c]))
}
__attribute__((target("avx2,fma"))) double F32Avx2() {
  const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-6f);
  MM_PEAK_LOOP(__m256, _mm256_set1_ps(0.5f + c), _mm256_fmadd_ps(acc[c], mul, add), Sum(acc[c]))
}
double F32Sse2() {
  const __m128 mul = _mm_set1_ps(0.999999f), add = _mm_set1_ps(1e-6f);
  MM_PEAK_LOOP(__m128, _mm_set1_ps(0.5f + c), _mm_add_ps(_mm_mul_ps(acc[c], mul), add), Sum(acc[c]))
}
__attribute__((target("avx512f"))) double F64Avx512() {
  const __m512d mul = _mm512_set1_pd(0.999999), add = _mm512_set1_pd(1e-6);
  MM_PEAK_LOOP(__m512d, _mm512_set1_pd(0.5 + c), _mm512_fmadd_pd(acc[c], mul, add), Sum(acc[c]))
}
__attribute__((target("avx2,fma"))) double F64Avx2() {
  const __m256d mul = _mm256_set1_pd(0.999999), add = _mm256_set1_pd(1e-6);
  MM_PEAK_LOOP(__m256d, _mm256_set1_pd(0.5 + c), _mm256_fmadd_pd(acc[c], mul, add), Sum(acc[c]))
}
double F64Sse2() {
  const __m128d mul = _mm_set1_pd(0.999999), add = _mm_set1_pd(1e-6);
  MM_PEAK_LOOP(__m128d, _mm_set1_pd(0.5 + c), _mm_add_pd(_mm_mul_pd(acc[c], mul), add), Sum(acc[c]))
}
__attribute__((target("avx512f,avx512bf16"))) double Bf16Avx512() {
  // Pairs of bfloat16 near 1 and 1e-6: the float32 accumulators grow slowly, never overflow.
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  MM_PEAK_LOOP(__m512, _mm512_set1_ps(0.5f + c), _mm512_dpbf16_ps(acc[c], x, y), Sum(acc[c]))
}
__attribute__((target("avx512f"))) double I32Avx512() {
  const __m512i mul = _mm512_set1_epi32(3), add = _mm512_set1_epi32(1);
  MM_PEAK_LOOP(__m512i, _mm512_set1_epi32(c),
               _mm512_add_epi32(_mm512_mullo_epi32(acc[c], mul), add), Sum(acc[c]))
}
__attribute__((target("avx2"))) double I32Avx2() {
  const __m256i mul = _mm256_set1_epi32(3), add = _mm256_set1_epi32(1);
  MM_PEAK_LOOP(__m256i, _mm256_set1_epi32(c),
               _mm256_add_epi32(_mm256_mullo_epi32(acc[c], mul), add), Sum(acc[c]))
}
double I32Scalar() {
  // Unsigned: wrapping is defined; the same instructions as int32.
  MM_PEAK_LOOP(std::uint32_t, static_cast<std::uint32_t>(c), acc[c] * 3u + 1u,
               static_cast<double>(acc[c]))
}
__attribute__((target("avx512f,avx512dq"))) double I64Avx512() {
  const __m512i mul = _mm512_set1_epi64(3), add = _mm512_set1_epi64(1);
  MM_PEAK_LOOP(__m512i, _mm512_set1_epi64(c),
               _mm512_add_epi64(_mm512_mullo_epi64(acc[c], mul), add), Sum(acc[c]))
}
double I64Scalar() {
  MM_PEAK_LOOP(std::uint64_t, static_cast<std::uint64_t>(c), acc[c] * 3u + 1u,
               static_cast<double>(acc[c]))
}
#undef MM_PEAK_LOOP

// Flops of one call: rounds x chains x lanes x (2 per multiply-add, 4 per bf16 pair dot).
constexpr double Flops(int lanes, int flops_per_lane) {
  return static_cast<double>(kRounds) * kChains * lanes * flops_per_lane;
}

Kernel FloatKernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return {"avx512f vfmadd zmm (f32)", Flops(16, 2), F32Avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2 vfmadd ymm (f32)", Flops(8, 2), F32Avx2};
  }
  return {"sse2 mulps+addps (f32)", Flops(4, 2), F32Sse2};
}

Kernel PeakKernel(DType dtype) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2");
  switch (dtype) {
    case DType::kDouble:
      if (avx512) return {"avx512f vfmadd zmm (f64)", Flops(8, 2), F64Avx512};
      if (avx2 && __builtin_cpu_supports("fma"))
        return {"avx2 vfmadd ymm (f64)", Flops(4, 2), F64Avx2};
      return {"sse2 mulpd+addpd (f64)", Flops(2, 2), F64Sse2};
    case DType::kBFloat16:
      if (avx512 && __builtin_cpu_supports("avx512bf16")) {
        return {"avx512_bf16 vdpbf16ps zmm", Flops(16, 4), Bf16Avx512};
      }
      return FloatKernel();
    case DType::kInt32:
    case DType::kUInt32:
      if (avx512) return {"avx512f vpmulld+vpaddd zmm", Flops(16, 2), I32Avx512};
      if (avx2) return {"avx2 vpmulld+vpaddd ymm", Flops(8, 2), I32Avx2};
      return {"scalar imul+add (32-bit)", Flops(1, 2), I32Scalar};
    case DType::kInt64:
    case DType::kUInt64:
      if (avx512 && __builtin_cpu_supports("avx512dq")) {
        return {"avx512dq vpmullq+vpaddq zmm", Flops(8, 2), I64Avx512};
      }
      return {"scalar imul+add (64-bit)", Flops(1, 2), I64Scalar};
    default:
      return FloatKernel();
  }
}

void RunPeak(benchmark::State& state, DType dtype) {
  const Kernel kernel = PeakKernel(dtype);
  for (auto _ : state) benchmark::DoNotOptimize(kernel.run());
  // Timed in CPU time (each thread's own), so that what other processes take from this shared
  // machine does not lower the peak. The counter is summed over the threads (and the CPU time
  // averaged), so at N threads it is the rate of all N together.
  state.counters["GFLOPS"] = benchmark::Counter(kernel.flops_per_call * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(kernel.label);
}

void RegisterPeaks(ShapeSet set) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  for (DType dtype : BenchDTypes(set)) {
    auto* bench =
        benchmark::RegisterBenchmark(("peak/" + std::string(DTypeName(dtype))).c_str(),
                                     [dtype](benchmark::State& state) { RunPeak(state, dtype); });
    bench->Threads(1);
    if (cpus > 1) bench->Threads(cpus);
  }
}

[[maybe_unused]] const bool kPeaksRegistered = AddRegistrar(&RegisterPeaks);

}  // namespace
}  // namespace mm::bench
