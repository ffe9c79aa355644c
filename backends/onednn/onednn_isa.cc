#include "onednn_isa.h"

#include <cpuid.h>

#include <cstdlib>
#include <string_view>

#include "onednn_primitive.h"

namespace mm {
namespace onednn_internal {

std::string IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all:
      return "all";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
  }
  return "isa 0x" + std::to_string(static_cast<int>(isa));
}

ConvertKernel ConvertKernelForEffectiveIsa() {
  const dnnl::cpu_isa effective = dnnl::get_effective_cpu_isa();
  const bool avx512 =
      effective == dnnl::cpu_isa::avx512_core || effective == dnnl::cpu_isa::avx512_core_vnni ||
      effective == dnnl::cpu_isa::avx512_core_bf16 || effective == dnnl::cpu_isa::avx512_core_amx;
  const bool avx2 =
      avx512 || effective == dnnl::cpu_isa::avx2 || effective == dnnl::cpu_isa::avx2_vnni;
  return PickConvertKernel(avx512, avx2);
}

OneDnnBackend::Probe ProbeMatmul(const dnnl::engine& engine, DnnlType type) {
  try {
    const dnnl::memory::desc md = DenseDesc({2, 2}, type);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine,
                                          /*allow_empty=*/true);
    if (!pd) return {};
    return {true, pd.impl_info_str()};
  } catch (const dnnl::error&) {
    return {};
  }
}

}  // namespace onednn_internal

std::string OneDnnBackend::EffectiveIsa() {
  ApplyIsaPolicy();
  return onednn_internal::IsaName(dnnl::get_effective_cpu_isa());
}

namespace {

// CPUID leaf 7: AMX-TILE (EDX bit 24) and AMX-BF16 (EDX bit 22).
bool CpuHasAmx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1u << 24)) != 0 && (edx & (1u << 22)) != 0;
}

}  // namespace

const std::string& OneDnnBackend::ApplyIsaPolicy() {
  static const std::string* const note = [] {
    auto* text = new std::string;
    const char* user_cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    const char* allow = std::getenv("MM_ONEDNN_AMX");
    if (!CpuHasAmx() || (user_cap != nullptr && *user_cap != '\0') ||
        (allow != nullptr && std::string_view(allow) == "1")) {
      return text;
    }
    try {
      dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16);
      *text =
          "AMX not used: oneDNN 2.6's AMX matmul kernels fault (SIGILL) here, so mm caps it at "
          "avx512_core_bf16 (MM_ONEDNN_AMX=1 allows AMX)";
    } catch (const dnnl::error& e) {
      // oneDNN had already dispatched (someone used it before mm): say so rather than pretend.
      *text = std::string("AMX may be used: capping oneDNN failed: ") + e.what();
    }
    return text;
  }();
  return *note;
}

Arithmetic OneDnnBackend::DeclaredArithmetic(DType dtype) const {
  if (!IsFloat(dtype) || dtype == DType::kDouble) return Arithmetic::OwnType(dtype);
  // f32 accumulation for f32, bf16 and f16 sources (oneDNN 2.6 dev guide, "Matrix
  // Multiplication": the accumulation data type is f32 for floating-point inputs). Only the
  // native bf16 kernels flush: on AVX512_BF16 they use VDPBF16PS, which reads subnormal inputs
  // as zero and flushes subnormal results (Intel SDM); the via-f32 path converts exactly.
  return {DType::kFloat, dtype == DType::kBFloat16 && native(DType::kBFloat16)};
}

}  // namespace mm
