// The oneDNN backend: MatMul through oneDNN 2.6 matmul primitives (Debian's libdnnl), created once
// per (dtype, shapes) and cached, executed by binding the caller's buffers.
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_BACKEND_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend.h"

namespace mm {

// Computes MatMul with oneDNN's CPU engine.
//  - float and bfloat16: native oneDNN matmul (f32 accumulation; bfloat16 rounds once from f32).
//  - float16: native where this CPU's oneDNN implements an f16 matmul (probed once when the backend
//    is created); otherwise "f16 via f32": oneDNN reorders A and B to f32 (exact), runs an f32
//    matmul and reorders Y back to f16 with one rounding to nearest even. Supports() says which.
//  - double and the integer types: Supports() says no (oneDNN has no such matmul) and Prepare
//    returns UNIMPLEMENTED.
// Every numpy.matmul form PlanMatMul accepts is handled: 1-D operands are the plan's promoted
// [1, K] / [K, 1] matrices (same bytes), batch dims broadcast natively in oneDNN; batch axes are
// collapsed where that is exact (axes of extent 1 dropped, neighbours that broadcast alike merged,
// a batch that shares one B folded into M) so ranks beyond oneDNN's 12 dims work when they
// collapse to 12 (UNSUPPORTED with the reason when they do not). Zero-size problems never reach
// oneDNN (it crashes on them): K = 0 gives zeros, an empty Y is left empty.
// One dnnl::engine and dnnl::stream per instance; oneDNN's threads follow OMP_NUM_THREADS. Not
// thread-safe: use one backend (and its primitives) per thread.
class OneDnnBackend final : public Backend {
 public:
  // How float16 is computed.
  enum class Float16Path {
    kAuto,        // Native if oneDNN has an f16 matmul here, else via f32.
    kViaFloat32,  // Always via f32 (reorders + f32 matmul + one rounding).
    kNative,  // Always oneDNN's f16 matmul; Prepare fails with oneDNN's status where it has none.
  };
  struct Options {
    Float16Path float16_path = Float16Path::kAuto;
    // Compiled primitives kept for reuse, least recently used evicted first; 0 disables the cache.
    std::size_t cache_capacity = 64;
  };
  // Primitive-cache counters since creation.
  struct CacheStats {
    std::int64_t hits = 0;
    std::int64_t misses = 0;  // oneDNN primitive creations.
    std::size_t size = 0;     // Entries held now (<= cache_capacity).
  };

  // Creates the oneDNN CPU engine and stream and probes f16 support; INTERNAL naming oneDNN's
  // status when the engine cannot be created.
  static StatusOr<std::unique_ptr<OneDnnBackend>> Create(Options options);
  static StatusOr<std::unique_ptr<OneDnnBackend>> Create() { return Create(Options{}); }
  ~OneDnnBackend() override;

  std::string_view name() const override { return "onednn"; }
  Support Supports(const MatMulDesc& desc) const override;
  // Creates (or takes from the cache) the oneDNN primitive for plan's problem. The returned
  // primitive shares the compiled oneDNN objects and this backend's stream; it stays valid after
  // the backend is destroyed.
  StatusOr<std::unique_ptr<MatMulPrimitive>> Prepare(const MatMulPlan& plan) override;

  // True when float16 runs on oneDNN's own f16 matmul (per Options and the probe).
  bool float16_native() const;
  CacheStats cache_stats() const;

  struct State;  // oneDNN objects; defined in the .cc so dnnl.hpp stays out of this header.

 private:
  explicit OneDnnBackend(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The registry's factory for "onednn" (default options).
StatusOr<std::unique_ptr<Backend>> CreateOneDnnBackend();

}  // namespace mm

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_BACKEND_H_
