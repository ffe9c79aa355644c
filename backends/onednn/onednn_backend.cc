#include "mm/backends/onednn/onednn_backend.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <cstdlib>
#include <exception>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>

#include "mm/backends/onednn/half_convert.h"
#include "mm/backends/onednn/onednn_internal.h"
#include "onednn_family.h"
#include "onednn_isa.h"
#include "onednn_primitive.h"

namespace mm {
namespace {

using onednn_internal::CacheKey;
using onednn_internal::CollapseShapes;
using onednn_internal::Compiled;
using onednn_internal::CompiledCache;
using onednn_internal::ConvertKernel;
using onednn_internal::ProblemShapes;
using onednn_internal::ShortName;
using onednn_internal::StatusFromDnnlError;
using onednn_internal::WithinOneDnnLimits;
using DnnlType = dnnl::memory::data_type;

}  // namespace

struct OneDnnBackend::State {
  explicit State(const Options& given) : options(given), cache(given.cache_capacity) {}

  Options options;
  dnnl::engine engine;
  dnnl::stream stream;
  std::string isa;  // The effective ISA, read once (oneDNN fixes it at its first use).
  ConvertKernel convert = ConvertKernel::kScalar;  // The via-f32 path's conversions.
  Probe f32, bf16, f16;
  CompiledCache cache;
  std::unique_ptr<onednn_internal::OneDnnFamily> family;

  const Probe& ProbeOf(DType dtype) const {
    return dtype == DType::kBFloat16 ? bf16 : dtype == DType::kFloat16 ? f16 : f32;
  }
  Path PathOf(DType dtype) const {
    return dtype == DType::kBFloat16 ? options.bfloat16_path : options.float16_path;
  }

  // Whether bfloat16 or float16 runs on oneDNN's own matmul (else via f32).
  bool Native(DType dtype) const {
    switch (PathOf(dtype)) {
      case Path::kAuto:
        return ProbeOf(dtype).native;
      case Path::kViaFloat32:
        return false;
      case Path::kNative:
        return true;
    }
    return false;
  }

  // Supports() for a valid plan.
  Support SupportsPlan(const MatMulPlan& plan) const {
    const DType dtype = plan.desc.dtype;
    Support yes = Support::Native();
    switch (dtype) {
      case DType::kFloat:
        if (!f32.native) return Support::No("no f32 matmul in oneDNN on this CPU (" + isa + ")");
        break;
      case DType::kBFloat16:
      case DType::kFloat16: {
        const std::string type = ShortName(dtype);
        const bool probed = ProbeOf(dtype).native;
        if (Native(dtype)) {
          if (!probed) {
            return Support::No("native " + type + " was required, but oneDNN has no " + type +
                               " matmul on this CPU (" + isa + ")");
          }
          break;
        }
        if (!f32.native) {
          return Support::No("no " + type + " and no f32 matmul in oneDNN on this CPU (" + isa +
                             ")");
        }
        yes = Support::ByConversion(type + " via f32: " +
                                    (probed ? std::string("as configured")
                                            : "no " + type + " matmul on this CPU (" + isa + ")") +
                                    "; A and B converted to f32 (exact; " +
                                    std::string(onednn_internal::ConvertKernelName(convert)) +
                                    " conversions), oneDNN's f32 matmul, Y converted to " + type +
                                    " with one rounding to nearest even");
        break;
      }
      case DType::kDouble:
        return Support::No(
            "oneDNN has no f64 matmul (its CPU matmul computes f32, bf16, f16 and "
            "int8 only)");
      default:
        return Support::No("oneDNN has no " + std::string(DTypeName(dtype)) +
                           " matmul (its integer matmul takes int8/uint8 inputs only)");
    }
    return WithinOneDnnLimits(plan, std::move(yes));
  }
};

StatusOr<std::unique_ptr<OneDnnBackend>> OneDnnBackend::Create(Options options) {
  ApplyIsaPolicy();
  auto state = std::make_unique<State>(options);
  try {
    state->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    state->stream = dnnl::stream(state->engine);
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN status " + std::string(dnnl_status2str(e.status)) +
                         " while creating its CPU engine and stream: " + e.what());
  }
  state->isa = EffectiveIsa();
  state->convert = onednn_internal::ConvertKernelForEffectiveIsa();
  state->f32 = onednn_internal::ProbeMatmul(state->engine, DnnlType::f32);
  state->bf16 = onednn_internal::ProbeMatmul(state->engine, DnnlType::bf16);
  state->f16 = onednn_internal::ProbeMatmul(state->engine, DnnlType::f16);
  const onednn_internal::Int8Probe int8 = onednn_internal::ProbeInt8Matmul(state->engine);
  State& s = *state;
  std::unique_ptr<OneDnnBackend> backend(new OneDnnBackend(std::move(state)));
  s.family = std::make_unique<onednn_internal::OneDnnFamily>(*backend, s.engine, s.stream, s.cache,
                                                             s.convert, s.isa, int8);
  return backend;
}

OneDnnBackend::OneDnnBackend(std::unique_ptr<State> state) : state_(std::move(state)) {}
OneDnnBackend::~OneDnnBackend() = default;

OneDnnBackend::Probe OneDnnBackend::probe(DType dtype) const {
  if (dtype != DType::kFloat && dtype != DType::kBFloat16 && dtype != DType::kFloat16) return {};
  return state_->ProbeOf(dtype);
}

bool OneDnnBackend::native(DType dtype) const {
  if (dtype == DType::kFloat) return state_->f32.native;
  if (dtype != DType::kBFloat16 && dtype != DType::kFloat16) return false;
  return state_->Native(dtype) && state_->ProbeOf(dtype).native;
}

std::string OneDnnBackend::RunsOn() const {
  const dnnl::version_t* v = dnnl::version();
  std::string text = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                     std::to_string(v->patch) +
                     (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : "") + ", effective ISA " +
                     state_->isa + (ApplyIsaPolicy().empty() ? "" : " (" + ApplyIsaPolicy() + ")") +
                     ";";
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kFloat16}) {
    const Probe& p = state_->ProbeOf(dtype);
    text += std::string(" ") + ShortName(dtype) + " " + (p.native ? p.implementation : "none");
    if (dtype != DType::kFloat16) text += ",";
  }
  return text;
}

family::FamilyBackend* OneDnnBackend::family() { return state_->family.get(); }

OneDnnBackend::CacheStats OneDnnBackend::cache_stats() const { return state_->cache.stats(); }

Support OneDnnBackend::Supports(const MatMulDesc& desc) const {
  auto plan = PlanMatMul(desc);
  if (!plan.ok()) return Support::No("not a valid MatMul: " + plan.status().message());
  return state_->SupportsPlan(*plan);
}

StatusOr<std::unique_ptr<MatMulPrimitive>> OneDnnBackend::PrepareProduct(const MatMulPlan& plan) {
  const Support support = state_->SupportsPlan(plan);
  if (!support.supported()) {
    return UnimplementedError("onednn cannot compute " + plan.desc.ToString() + ": " +
                              support.note);
  }
  try {
    const ProblemShapes shapes = CollapseShapes(plan);
    const DType dtype = plan.desc.dtype;
    const bool via_f32 = dtype != DType::kFloat && !state_->Native(dtype);
    const CacheKey key{dtype, via_f32, shapes.src, shapes.weights, omp_get_max_threads()};
    std::shared_ptr<const Compiled> compiled =
        state_->cache.GetOrCompile(key, shapes, state_->engine);
    return onednn_internal::MakeOneDnnPrimitive(plan, std::move(compiled), state_->engine,
                                                state_->stream, state_->isa, state_->convert);
  } catch (const dnnl::error& e) {
    return StatusFromDnnlError(e, "creating the matmul primitive", plan.desc);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory while preparing " + plan.desc.ToString());
  } catch (const std::exception& e) {
    return InternalError("unexpected exception while preparing " + plan.desc.ToString() + ": " +
                         e.what());
  }
}

StatusOr<std::unique_ptr<Backend>> CreateOneDnnBackend() {
  MM_ASSIGN_OR_RETURN(std::unique_ptr<OneDnnBackend> backend, OneDnnBackend::Create());
  return std::unique_ptr<Backend>(std::move(backend));
}

void LimitOneDnnPrimitiveCacheInWorker() {
  if (std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr) return;
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", std::to_string(kWorkerPrimitiveCacheCapacity).c_str(),
         /*overwrite=*/1);
  dnnl_set_primitive_cache_capacity(kWorkerPrimitiveCacheCapacity);
}

}  // namespace mm
