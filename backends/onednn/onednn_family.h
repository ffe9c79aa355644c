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

// QLinearMatMul's y from the accumulations `acc` of `plan` (RequantizeExact per element).
void RequantizeInto(const family::Plan& plan, const std::int32_t* acc, MutableTensorView y);

// The backend's FamilyBackend. Not thread-safe, as the backend.
class OneDnnFamily final : public family::FamilyBackend {
 public:
  OneDnnFamily(const dnnl::engine& engine, const dnnl::stream& stream, CompiledCache& cache,
               std::string isa, Int8Probe int8)
      : int8_runner_(engine, stream, cache), isa_(std::move(isa)), int8_(std::move(int8)) {}

  // MatMulInteger and QLinearMatMul in every pairing of int8 and uint8 where oneDNN runs its int8
  // matmul with VNNI (or AMX); refused, with oneDNN's documented saturation, where it does not.
  // Gemm refused.
  Support SupportsOp(const family::OpDesc& desc) const override;
  family::IntegerAccumulation DeclaredIntegerAccumulation(
      const family::OpDesc& desc) const override;
  Status Compute(const family::Plan& plan, MutableTensorView y) override;
  std::string Implementation(const family::OpDesc& desc) const override;

 private:
  Int8Runner int8_runner_;
  std::vector<std::int32_t> acc_;  // QLinearMatMul's accumulations.
  std::string isa_;
  Int8Probe int8_;
};

}  // namespace mm::onednn_internal

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_FAMILY_H_
