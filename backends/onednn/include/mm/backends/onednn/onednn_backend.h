// The oneDNN backend: MatMul through oneDNN 2.6 matmul primitives (Debian's libdnnl), created once
// per (dtype, shapes) and cached, executed by binding the caller's buffers.
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_BACKEND_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mm/engine/backend.h"

namespace mm {

// Computes MatMul with oneDNN's CPU engine. What it can do is probed on the running CPU, once per
// instance, for each of float, bfloat16 and float16 (a primitive descriptor for a small problem,
// after ONEDNN_MAX_CPU_ISA has capped the ISA), never assumed:
//  - a dtype whose matmul oneDNN implements here: native (f32 accumulation; bf16/f16 Y rounded
//    once from f32). On AVX-512 oneDNN 2.6 has f32 and bf16 (brg:avx512_core[_bf16]) and no f16;
//    on AVX2 or SSE4.1 only f32 (gemm:jit).
//  - bfloat16 or float16 without a native matmul here: "via f32": A and B are converted to f32
//    (exact) into buffers the primitive owns, oneDNN runs its f32 matmul and Y is converted back
//    with one rounding to nearest even (half_convert.h: AVX-512 or F16C kernels, as the CPU and
//    the capped ISA allow).
//    Supports() says so, with the reason ("no bf16 matmul on this CPU (avx2)").
//  - float without an f32 matmul here (not seen on x86-64): Supports() says no, with the reason.
//  - double and the integer types: Supports() says no (oneDNN has no such matmul).
// Every numpy.matmul form PlanMatMul accepts is handled: 1-D operands are the plan's promoted
// [1, K] / [K, 1] matrices (same bytes), batch dims broadcast natively in oneDNN; batch axes are
// collapsed where that is exact (axes of extent 1 dropped, neighbours that broadcast alike merged,
// a batch that shares one B folded into M) so ranks beyond oneDNN's 12 dims work when they
// collapse to 12 (UNSUPPORTED with the reason when they do not). K = 0 and empty outputs are the
// engine's (oneDNN 2.6 crashes on zero extents, and never sees them).
// One dnnl::engine and dnnl::stream per instance; oneDNN's threads follow OMP_NUM_THREADS. Not
// thread-safe: use one backend (and its primitives) per thread.
class OneDnnBackend final : public Backend {
 public:
  // How bfloat16 or float16 is computed.
  enum class Path {
    kAuto,        // Native where the probe found oneDNN's matmul for the type here, else via f32.
    kViaFloat32,  // Always via f32 (conversions + f32 matmul + one rounding).
    kNative,      // Always oneDNN's own matmul for the type; where it has none, Supports() says no.
  };
  struct Options {
    Path float16_path = Path::kAuto;
    Path bfloat16_path = Path::kAuto;
    // Compiled primitives kept for reuse, least recently used evicted first; 0 disables the cache.
    std::size_t cache_capacity = 64;
  };
  // Primitive-cache counters since creation.
  struct CacheStats {
    std::int64_t hits = 0;
    std::int64_t misses = 0;  // oneDNN primitive creations.
    std::size_t size = 0;     // Entries held now (<= cache_capacity).
  };
  // What the probe of one dtype found on this CPU.
  struct Probe {
    bool native = false;         // oneDNN has a matmul for the dtype here.
    std::string implementation;  // Its impl_info_str ("brg:avx512_core_bf16"); empty if none.
  };

  // Creates the oneDNN CPU engine and stream and probes float, bfloat16 and float16; INTERNAL
  // naming oneDNN's status when the engine cannot be created.
  static StatusOr<std::unique_ptr<OneDnnBackend>> Create(Options options);
  static StatusOr<std::unique_ptr<OneDnnBackend>> Create() { return Create(Options{}); }
  ~OneDnnBackend() override;

  std::string_view name() const override { return "onednn"; }
  Support Supports(const MatMulDesc& desc) const override;
  // "oneDNN 2.6.3 (cpu, OpenMP), effective ISA avx2; f32 gemm:jit, bf16 none, f16 none".
  std::string RunsOn() const override;
  // float, float16, bfloat16 accumulate in float32 (oneDNN's f32 accumulator). bfloat16 may
  // flush subnormals on every CPU: oneDNN 2.6's native bf16 kernel (vdpbf16ps, on CPUs with
  // AVX512-BF16) reads bfloat16 subnormal inputs as zero, and the declaration cannot depend on
  // which CPU a run gets.
  Arithmetic DeclaredArithmetic(DType dtype) const override;
  // MatMulInteger and QLinearMatMul through oneDNN's int8 matmul where it runs with VNNI (or AMX),
  // exactly (onednn_family.h); refused with oneDNN's documented saturation elsewhere. Gemm refused.
  family::FamilyBackend* family() override;

  // The probe's finding for float, bfloat16 or float16 (no matmul for any other dtype).
  Probe probe(DType dtype) const;
  // True when `dtype` (bfloat16 or float16) runs on oneDNN's own matmul, per Options and probe.
  bool native(DType dtype) const;
  bool float16_native() const { return native(DType::kFloat16); }
  CacheStats cache_stats() const;
  // dnnl::get_effective_cpu_isa() as oneDNN names it ("avx512_core_bf16", "avx2", "sse41"), after
  // ApplyIsaPolicy().
  static std::string EffectiveIsa();
  // mm's cap on oneDNN's ISA, applied once per process before oneDNN first dispatches (every use of
  // oneDNN in mm calls it first): on a CPU with AMX, oneDNN 2.6's AMX matmul kernels raise SIGILL
  // (a tdpbf16ps in an OpenMP worker thread whose tiles were not configured), so oneDNN is capped
  // at avx512_core_bf16 there, unless the user set ONEDNN_MAX_CPU_ISA (their cap stands) or
  // MM_ONEDNN_AMX=1 (AMX allowed). Returns what was done, for RunsOn(): empty when nothing was
  // capped, else e.g. "AMX not used: ...".
  static const std::string& ApplyIsaPolicy();

  struct State;  // oneDNN objects; defined in the .cc so dnnl.hpp stays out of this header.

 protected:
  // Creates (or takes from the cache) the oneDNN primitive for plan's problem. The returned
  // primitive shares the compiled oneDNN objects and this backend's stream; it stays valid after
  // the backend is destroyed.
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  explicit OneDnnBackend(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The registry's factory for "onednn" (default options).
StatusOr<std::unique_ptr<Backend>> CreateOneDnnBackend();

// The capacity of oneDNN's primitive cache in a worker process, unless
// ONEDNN_PRIMITIVE_CACHE_CAPACITY is set: none. By default oneDNN keeps 1,024 primitives, so that a
// shape seen again skips its JIT; a conformance worker sees each shape once or a few times, and
// that cache was most of its resident memory.
inline constexpr int kWorkerPrimitiveCacheCapacity = 0;

// Sets oneDNN's primitive cache of this process to kWorkerPrimitiveCacheCapacity, unless the user
// set ONEDNN_PRIMITIVE_CACHE_CAPACITY: through the variable (for a oneDNN that starts later in
// this process, and its children) and oneDNN's setter (for one that already started). The
// registry's worker setup for "onednn" (BackendRegistry::AddWorkerSetup).
void LimitOneDnnPrimitiveCacheInWorker();

}  // namespace mm

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_BACKEND_H_
