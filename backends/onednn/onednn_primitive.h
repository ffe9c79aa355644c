// The oneDNN backend's products, private to backends/onednn: a problem compiled into a oneDNN
// matmul, the backend's cache of compiled problems (least recently used evicted first), and the
// MatMulPrimitive that runs one on the caller's buffers.
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_PRIMITIVE_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_PRIMITIVE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>

#include "mm/backends/onednn/half_convert.h"
#include "mm/backends/onednn/onednn_backend.h"
#include "mm/backends/onednn/onednn_internal.h"
#include "mm/engine/backend.h"
#include "mm/engine/matmul_plan.h"

namespace mm::onednn_internal {

using DnnlType = dnnl::memory::data_type;

// oneDNN's type of a native matmul of `dtype`: bf16, f16, else f32.
DnnlType ToDnnl(DType dtype);

// A dense row-major memory descriptor of `dims` (DenseStrides).
dnnl::memory::desc DenseDesc(const Dims& dims, DnnlType type);

// oneDNN's short name of a matmul type ("f32", "bf16", "f16").
const char* ShortName(DType dtype);

// What the cache holds for one problem: immutable once built, shared by every MatMulPrimitive of
// that problem (oneDNN primitives are stateless between executions).
struct Compiled {
  dnnl::matmul matmul;
  std::string implementation;  // The matmul's impl_info_str ("brg:avx512_core", "gemm:jit").
  dnnl::memory::desc src_md, weights_md, dst_md;  // The matmul's (f32 on the via-f32 path).
  // Via f32 only: A, B and Y are converted by mm's vectorised conversions (half_convert.h), not by
  // oneDNN's reorders (oneDNN 2.6 reorders f16 one element at a time, far slower than the f32
  // matmul they feed).
  bool via_f32 = false;
};

// oneDNN fixes a primitive's thread count when it creates it (OpenMP's omp_get_max_threads() then)
// and runs it on that many threads whatever the caller's count later: a product prepared on fewer
// threads (auto's "1 of 2 threads", its calibration, mm-fuzz's 1-thread reruns) is its own entry.
struct CacheKey {
  DType dtype;  // kUInt8: MatMul's family's int8 product, u8 x s8 -> s32.
  bool via_f32;
  Dims src;
  Dims weights;
  int threads;
  // Gemm (MatMul's family) only, 2-D: A or B read transposed (strides), alpha as oneDNN's output
  // scale and beta as a sum post-op's scale (has_sum), each by its float32 bits.
  bool gemm = false;
  bool trans_a = false, trans_b = false, has_sum = false;
  std::uint32_t alpha_bits = 0, beta_bits = 0;
  friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& key) const;
};

// The compiled problems of one backend, at most `capacity` (0: none kept), the least recently used
// evicted first. Not thread-safe, as the backend.
class CompiledCache {
 public:
  explicit CompiledCache(std::size_t capacity) : capacity_(capacity) {}

  // The cached compiled problem for `key` (of `shapes`), compiling it on `engine` (and caching it)
  // on a miss. Throws dnnl::error.
  std::shared_ptr<const Compiled> GetOrCompile(const CacheKey& key, const ProblemShapes& shapes,
                                               const dnnl::engine& engine);

  // Hits and misses since creation, and the entries held now.
  OneDnnBackend::CacheStats stats() const;

 private:
  using Entry = std::pair<CacheKey, std::shared_ptr<const Compiled>>;
  std::size_t capacity_;
  // Most recently used at the front; index_ points into the list.
  std::list<Entry> lru_;
  std::unordered_map<CacheKey, std::list<Entry>::iterator, CacheKeyHash> index_;
  OneDnnBackend::CacheStats stats_;
};

// A primitive of `plan` running `compiled` on `engine` and `stream`; `isa` and `convert` (the
// via-f32 path's conversions) are said in its implementation(). Nothing is allocated or copied in
// its Run on the native paths; the via-f32 path converts A and B into f32 buffers allocated here,
// and Y back. Throws dnnl::error when oneDNN cannot create the memory objects.
std::unique_ptr<MatMulPrimitive> MakeOneDnnPrimitive(const MatMulPlan& plan,
                                                     std::shared_ptr<const Compiled> compiled,
                                                     const dnnl::engine& engine,
                                                     const dnnl::stream& stream, std::string isa,
                                                     ConvertKernel convert);

}  // namespace mm::onednn_internal

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_PRIMITIVE_H_
