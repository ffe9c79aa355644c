// The oneDNN backend's ISA and arithmetic policy, private to backends/onednn: the ISA oneDNN runs
// (capped where its AMX kernels fault), the conversions and the matmuls that ISA allows, found by
// probing, never assumed. OneDnnBackend's EffectiveIsa, ApplyIsaPolicy and DeclaredArithmetic are
// defined beside them (onednn_isa.cc).
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_ISA_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_ISA_H_

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "mm/backends/onednn/half_convert.h"
#include "mm/backends/onednn/onednn_backend.h"

namespace mm::onednn_internal {

// oneDNN's name of an ISA, as dnnl_cpu_isa_t spells it.
std::string IsaName(dnnl::cpu_isa isa);

// The via-f32 path's conversions (PickConvertKernel) for the ISA oneDNN runs now: AVX-512 or AVX2
// kernels only where that ISA, after ApplyIsaPolicy and ONEDNN_MAX_CPU_ISA, allows them.
ConvertKernel ConvertKernelForEffectiveIsa();

// Does this CPU's oneDNN (after ONEDNN_MAX_CPU_ISA) implement a matmul of `type`? A primitive
// descriptor for a small dense problem; allow_empty turns "no" into an empty descriptor.
OneDnnBackend::Probe ProbeMatmul(const dnnl::engine& engine, dnnl::memory::data_type type);

}  // namespace mm::onednn_internal

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_ISA_H_
