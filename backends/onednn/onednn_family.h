// The oneDNN backend's part of MatMul's family (mm/family/backend.h), private to backends/onednn:
// MatMulInteger and QLinearMatMul through oneDNN 2.6's int8 matmul with mm's exact corrections
// (onednn_int8.cc), and the refusals, each naming oneDNN's own limitation.
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_FAMILY_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_FAMILY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mm/family/backend.h"
#include "onednn_primitive.h"

namespace mm::onednn_internal {

// Whether oneDNN (after ONEDNN_MAX_CPU_ISA) runs its u8 x s8 -> s32 matmul with VNNI here, found by
// probing: the implementation it picks for a small problem ("brg:avx512_core_vnni"), or empty when
// it has none.
struct Int8Probe {
  std::string implementation;
  bool vnni = false;  // A VNNI or AMX kernel: VPDPBUSD sums four products into int32, exactly.
};
Int8Probe ProbeInt8Matmul(const dnnl::engine& engine);

// MatMulInteger's int32 Y (or QLinearMatMul's accumulation) through oneDNN's u8 x s8 -> s32
// matmul without zero points, on A and B shifted to those types where needed (int8 A + 128, uint8
// B - 128), every zero point's term then subtracted in mm, modulo 2^32 (onednn_int8.cc). Keeps the
// memory objects of the last signature it ran, so that repeated calls bind buffers only.
class Int8Runner {
 public:
  Int8Runner(const dnnl::engine& engine, const dnnl::stream& stream, CompiledCache& cache)
      : engine_(engine), stream_(stream), cache_(&cache) {}

  // Y's elements of `plan` into `acc` (row-major). A conformance gap when the problem is beyond
  // oneDNN's limits; oneDNN's errors as a Status.
  Status Accumulate(const family::Plan& plan, std::int32_t* acc);
  // The last run's oneDNN implementation ("brg:avx512_core_vnni"); empty before any.
  std::string implementation() const;

 private:
  Status Run(std::shared_ptr<const Compiled> compiled, const void* a, const void* b, void* y,
             const family::Plan& plan);

  dnnl::engine engine_;
  dnnl::stream stream_;
  CompiledCache* cache_;
  std::shared_ptr<const Compiled> compiled_;  // The last signature run, and its memory objects.
  dnnl::memory src_, weights_, dst_;
  std::array<const void*, 3> bound_{};  // The buffers they point at (null: unknown).
  Dims a_dims_, b_dims_;  // The last signature run (A's and B's dims, the threads it was made for).
  int threads_ = 0;
  std::vector<std::uint8_t> a_shifted_;  // int8 A + 128.
  std::vector<std::int8_t> b_shifted_;   // uint8 B - 128.
};

// Gemm's Y through oneDNN's matmul (onednn_gemm.cc): alpha as the output scale, beta as a sum
// post-op over C broadcast into Y (beta = 0 or no C: none, C unread), transA/transB as strides;
// `via_f32` converts A, B and C to f32 exactly and rounds Y once. K = 0 and an empty Y are mm's
// (beta C in double, one rounding); never oneDNN's, which crashes on zero extents.
class GemmRunner {
 public:
  GemmRunner(const dnnl::engine& engine, const dnnl::stream& stream, CompiledCache& cache,
             ConvertKernel convert)
      : engine_(engine), stream_(stream), cache_(&cache), convert_(convert) {}

  Status Compute(const family::Plan& plan, bool via_f32, MutableTensorView y);
  // The last run's oneDNN implementation; empty before any.
  const std::string& implementation() const { return implementation_; }

 private:
  // The primitive for `plan` (its scale and sum post-op; `plain`: neither). Throws dnnl::error.
  std::shared_ptr<const Compiled> CompiledFor(const family::Plan& plan, bool via_f32, bool plain);
  // Runs `compiled` into Y (through f32 buffers when `via_f32`); `epilogue` applies alpha and
  // beta C to the plain sums in f32 afterwards. Throws dnnl::error.
  void Run(const family::Plan& plan, const Compiled& compiled, bool via_f32, bool epilogue,
           MutableTensorView y);

  dnnl::engine engine_;
  dnnl::stream stream_;
  CompiledCache* cache_;
  ConvertKernel convert_;
  std::string implementation_;
  std::vector<float> a_f32_, b_f32_, y_f32_;  // The via-f32 path's operands and Y.
};

// QLinearMatMul's y from the accumulations `acc` of `plan` (RequantizeExact per element).
void RequantizeInto(const family::Plan& plan, const std::int32_t* acc, MutableTensorView y);

// The backend's FamilyBackend. Not thread-safe, as the backend.
class OneDnnFamily final : public family::FamilyBackend {
 public:
  // `backend` (which owns this family and outlives it) answers for Gemm's element types as for
  // MatMul's; `engine`, `stream` and `cache` are its own.
  OneDnnFamily(const OneDnnBackend& backend, const dnnl::engine& engine, const dnnl::stream& stream,
               CompiledCache& cache, ConvertKernel convert, std::string isa, Int8Probe int8)
      : backend_(backend),
        int8_runner_(engine, stream, cache),
        gemm_runner_(engine, stream, cache, convert),
        isa_(std::move(isa)),
        int8_(std::move(int8)) {}

  // MatMulInteger and QLinearMatMul in every pairing of int8 and uint8 where oneDNN runs its int8
  // matmul with VNNI (or AMX); refused, with oneDNN's documented saturation, where it does not.
  // Gemm in float, bfloat16 and float16 as MatMul's Supports answers for the type (native, or via
  // f32 with the reason); double and the integer types refused (oneDNN has no such matmul).
  Support SupportsOp(const family::OpDesc& desc) const override;
  // Gemm: the MatMul path's declaration for Y's type (f32 accumulation; native bfloat16 flushes).
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override;
  family::IntegerAccumulation DeclaredIntegerAccumulation(
      const family::OpDesc& desc) const override;
  Status Compute(const family::Plan& plan, MutableTensorView y) override;
  std::string Implementation(const family::OpDesc& desc) const override;

 private:
  Support GemmSupport(const family::OpDesc& desc) const;
  Support Int8Support(const family::OpDesc& desc) const;

  const OneDnnBackend& backend_;
  Int8Runner int8_runner_;
  GemmRunner gemm_runner_;
  std::vector<std::int32_t> acc_;  // QLinearMatMul's accumulations.
  std::string isa_;
  Int8Probe int8_;
};

}  // namespace mm::onednn_internal

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_FAMILY_H_
