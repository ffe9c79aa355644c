#include "mm/backends/onednn/onednn_backend.h"

#include <cpuid.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <list>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mm/backends/onednn/half_convert.h"
#include "mm/backends/onednn/onednn_internal.h"

namespace mm {
namespace onednn_internal {

Dims DenseStrides(const Dims& dims) {
  Dims strides(dims.size());
  std::int64_t stride = 1;
  for (std::size_t axis = dims.size(); axis-- > 0;) {
    strides[axis] = stride;
    stride *= std::max<std::int64_t>(dims[axis], 1);
  }
  return strides;
}

ProblemShapes CollapseShapes(const MatMulPlan& plan) {
  struct Axis {
    std::int64_t y, a, b;
  };
  std::vector<Axis> axes;
  for (std::size_t i = 0; i < plan.batch_dims.size(); ++i) {
    const Axis axis{plan.batch_dims[i], plan.a_batch_dims[i], plan.b_batch_dims[i]};
    // Y's extent 1 means both operands have 1 there too: the axis carries nothing.
    if (axis.y == 1) continue;
    if (!axes.empty()) {
      Axis& previous = axes.back();
      // Row-major, two neighbouring axes that an operand spans fully are one axis of the product
      // extent; two it broadcasts on are one broadcast axis. Mixed patterns cannot merge.
      if ((previous.a == 1) == (axis.a == 1) && (previous.b == 1) == (axis.b == 1)) {
        previous.y *= axis.y;
        previous.a *= axis.a;
        previous.b *= axis.b;
        continue;
      }
    }
    axes.push_back(axis);
  }
  std::int64_t m = plan.m;
  // One B for every batch entry and A a plain stack: A's [batch, m, k] bytes are [batch*m, k].
  if (axes.size() == 1 && axes[0].b == 1 && axes[0].a == axes[0].y &&
      axes[0].y <= kMaxExtent / std::max<std::int64_t>(m, 1)) {
    m *= axes[0].y;
    axes.clear();
  }
  ProblemShapes shapes;
  for (const Axis& axis : axes) {
    shapes.src.push_back(axis.a);
    shapes.weights.push_back(axis.b);
    shapes.dst.push_back(axis.y);
  }
  shapes.src.insert(shapes.src.end(), {m, plan.k});
  shapes.weights.insert(shapes.weights.end(), {plan.k, plan.n});
  shapes.dst.insert(shapes.dst.end(), {m, plan.n});
  return shapes;
}

Status StatusFromDnnl(dnnl_status_t status, std::string_view doing, const MatMulDesc& desc,
                      std::string_view detail) {
  std::string message = "oneDNN status " + std::string(dnnl_status2str(status)) + " while " +
                        std::string(doing) + " for " + desc.ToString();
  if (!detail.empty()) message += ": " + std::string(detail);
  switch (status) {
    case dnnl_out_of_memory:
      return ResourceExhaustedError(std::move(message));
    case dnnl_invalid_arguments:
      return InvalidArgumentError(std::move(message));
    case dnnl_unimplemented:
      return UnimplementedError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

}  // namespace onednn_internal

namespace {

using onednn_internal::CollapseShapes;
using onednn_internal::ConvertKernel;
using onednn_internal::DenseStrides;
using onednn_internal::ProblemShapes;
using onednn_internal::StatusFromDnnl;
using onednn_internal::StatusFromDnnlError;
using DnnlType = dnnl::memory::data_type;

DnnlType ToDnnl(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16:
      return DnnlType::bf16;
    case DType::kFloat16:
      return DnnlType::f16;
    default:
      return DnnlType::f32;
  }
}

dnnl::memory::desc DenseDesc(const Dims& dims, DnnlType type) {
  return dnnl::memory::desc(dims, type, DenseStrides(dims));
}

// oneDNN's short name of a matmul type ("f32", "bf16", "f16").
const char* ShortName(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat16:
      return "f16";
    default:
      return "f32";
  }
}

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
  DType dtype;
  bool via_f32;
  Dims src;
  Dims weights;
  int threads;
  friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& key) const {
    std::size_t h = static_cast<std::size_t>(key.dtype) * 2 + (key.via_f32 ? 1 : 0);
    h = h * 1000003u ^ static_cast<std::size_t>(key.threads);
    for (const Dims* dims : {&key.src, &key.weights}) {
      h = h * 1000003u ^ dims->size();
      for (std::int64_t d : *dims) h = h * 1000003u ^ std::hash<std::int64_t>()(d);
    }
    return h;
  }
};

// One prepared problem: the shared compiled primitive plus this primitive's own memory objects,
// whose data handles Run points at the caller's buffers. Nothing is allocated or copied in Run on
// the native paths; the via-f32 path converts A and B into f32 buffers allocated here, and Y back.
class OneDnnPrimitive final : public MatMulPrimitive {
 public:
  // Throws dnnl::error (caught by Prepare) when oneDNN cannot create the memory objects.
  OneDnnPrimitive(const MatMulPlan& plan, std::shared_ptr<const Compiled> compiled,
                  const dnnl::engine& engine, const dnnl::stream& stream, std::string isa,
                  ConvertKernel convert)
      : MatMulPrimitive(plan),
        compiled_(std::move(compiled)),
        engine_(engine),
        stream_(stream),
        isa_(std::move(isa)),
        convert_(convert) {
    const Compiled& c = *compiled_;
    if (c.via_f32) {
      // oneDNN allocates the f32 copies of A, B and Y once, here.
      src_ = dnnl::memory(c.src_md, engine_);
      weights_ = dnnl::memory(c.weights_md, engine_);
      dst_ = dnnl::memory(c.dst_md, engine_);
      src_f32_ = static_cast<float*>(src_.get_data_handle());
      weights_f32_ = static_cast<float*>(weights_.get_data_handle());
      dst_f32_ = static_cast<float*>(dst_.get_data_handle());
      a_elements_ = c.src_md.get_size() / sizeof(float);
      b_elements_ = c.weights_md.get_size() / sizeof(float);
      y_elements_ = c.dst_md.get_size() / sizeof(float);
    } else {
      src_ = dnnl::memory(c.src_md, engine_, DNNL_MEMORY_NONE);
      weights_ = dnnl::memory(c.weights_md, engine_, DNNL_MEMORY_NONE);
      dst_ = dnnl::memory(c.dst_md, engine_, DNNL_MEMORY_NONE);
    }
    matmul_args_ = {{{DNNL_ARG_SRC, src_.get()},
                     {DNNL_ARG_WEIGHTS, weights_.get()},
                     {DNNL_ARG_DST, dst_.get()}}};
  }

 public:
  std::string implementation() const override {
    const Compiled& c = *compiled_;
    std::string how = "oneDNN " + c.implementation + " (ISA " + isa_ + ")";
    if (!c.via_f32) {
      // oneDNN 2.6's native bf16 kernels (vdpbf16ps) read bf16 subnormal inputs as zero.
      // Declared in engine/error_bound.h; said here so every report shows it.
      if (plan().desc.dtype == DType::kBFloat16) how += ", bf16 subnormal inputs read as zero";
      return how;
    }
    const std::string type = ShortName(plan().desc.dtype);
    return type + " via f32: " + std::string(onednn_internal::ConvertKernelName(convert_)) +
           " conversions, f32 matmul " + how + ", one rounding of Y to " + type;
  }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    // The C API directly: the C++ execute() builds a std::vector of arguments on every call.
    const Compiled& c = *compiled_;
    dnnl_status_t status = dnnl_success;
    if (!c.via_f32) {
      status = Bind(src_, a.data, weights_, b.data, dst_, y.data);
      if (status == dnnl_success) status = Execute(c.matmul, matmul_args_);
    } else {
      const DType dtype = plan().desc.dtype;
      onednn_internal::WidenToFloat(convert_, dtype, a.data, src_f32_, a_elements_);
      onednn_internal::WidenToFloat(convert_, dtype, b.data, weights_f32_, b_elements_);
      status = Execute(c.matmul, matmul_args_);
      if (status == dnnl_success) status = dnnl_stream_wait(stream_.get());
      if (status == dnnl_success) {
        onednn_internal::NarrowFromFloat(convert_, dtype, dst_f32_, y.data, y_elements_);
      }
    }
    if (status == dnnl_success && !c.via_f32) status = dnnl_stream_wait(stream_.get());
    if (status != dnnl_success) return StatusFromDnnl(status, "executing", plan().desc);
    return OkStatus();
  }

 private:
  // Points the memory objects of A, B and Y at the caller's buffers. Rebinding has a cost inside
  // oneDNN, so buffers already bound (the usual case of repeated calls on the same tensors) are
  // left alone.
  dnnl_status_t Bind(const dnnl::memory& am, const void* a, const dnnl::memory& bm, const void* b,
                     const dnnl::memory& ym, void* y) {
    if (a == bound_a_ && b == bound_b_ && y == bound_y_) return dnnl_success;
    bound_a_ = bound_b_ = bound_y_ = nullptr;  // Unknown until all three succeed.
    dnnl_status_t status = dnnl_memory_set_data_handle_v2(am.get(), const_cast<void*>(a), nullptr);
    if (status == dnnl_success) {
      status = dnnl_memory_set_data_handle_v2(bm.get(), const_cast<void*>(b), nullptr);
    }
    if (status == dnnl_success) status = dnnl_memory_set_data_handle_v2(ym.get(), y, nullptr);
    if (status == dnnl_success) {
      bound_a_ = a;
      bound_b_ = b;
      bound_y_ = y;
    }
    return status;
  }

  template <std::size_t N>
  dnnl_status_t Execute(const dnnl::primitive& primitive,
                        const std::array<dnnl_exec_arg_t, N>& args) {
    return dnnl_primitive_execute(primitive.get(), stream_.get(), static_cast<int>(N), args.data());
  }

  std::shared_ptr<const Compiled> compiled_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::string isa_;
  ConvertKernel convert_;
  dnnl::memory src_, weights_, dst_;
  // Via f32: the f32 buffers of src_, weights_ and dst_ and their element counts.
  float* src_f32_ = nullptr;
  float* weights_f32_ = nullptr;
  float* dst_f32_ = nullptr;
  std::size_t a_elements_ = 0, b_elements_ = 0, y_elements_ = 0;
  std::array<dnnl_exec_arg_t, 3> matmul_args_{};
  // The buffers the A, B and Y memory objects point at now (null: none, or unknown).
  const void* bound_a_ = nullptr;
  const void* bound_b_ = nullptr;
  void* bound_y_ = nullptr;
};

// oneDNN's name of an ISA, as dnnl_cpu_isa_t spells it.
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

// Does this CPU's oneDNN (after ONEDNN_MAX_CPU_ISA) implement a matmul of `type`? A primitive
// descriptor for a small dense problem; allow_empty turns "no" into an empty descriptor.
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

}  // namespace

struct OneDnnBackend::State {
  Options options;
  dnnl::engine engine;
  dnnl::stream stream;
  std::string isa;  // The effective ISA, read once (oneDNN fixes it at its first use).
  ConvertKernel convert = ConvertKernel::kScalar;  // The via-f32 path's conversions.
  Probe f32, bf16, f16;

  // LRU: most recently used at the front; index points into the list.
  using Entry = std::pair<CacheKey, std::shared_ptr<const Compiled>>;
  std::list<Entry> lru;
  std::unordered_map<CacheKey, std::list<Entry>::iterator, CacheKeyHash> index;
  CacheStats stats;

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
    // Zero-size problems never reach oneDNN (the engine answers them), so its limits do not
    // apply to them.
    if (plan.y_elements == 0 || plan.k == 0) return yes;
    const ProblemShapes shapes = CollapseShapes(plan);
    if (shapes.dst.size() > static_cast<std::size_t>(onednn_internal::kMaxRank)) {
      return Support::No("its batch dims collapse to " + std::to_string(shapes.dst.size() - 2) +
                         " axes, Y " + DimsToString(shapes.dst) + " has rank " +
                         std::to_string(shapes.dst.size()) + ", beyond oneDNN's " +
                         std::to_string(onednn_internal::kMaxRank) + "-dim limit");
    }
    for (const Dims* dims : {&shapes.src, &shapes.weights, &shapes.dst}) {
      for (std::int64_t d : *dims) {
        if (d > onednn_internal::kMaxExtent) {
          return Support::No("extent " + std::to_string(d) +
                             " exceeds 2^31-1, beyond what "
                             "oneDNN 2.6's matmul handles (it crashes on an M of 2^32)");
        }
      }
    }
    return yes;
  }

  // Builds the oneDNN objects for one problem. Throws dnnl::error.
  std::shared_ptr<const Compiled> Compile(const CacheKey& key, const ProblemShapes& shapes) const {
    auto compiled = std::make_shared<Compiled>();
    compiled->via_f32 = key.via_f32;
    const DnnlType type = key.via_f32 ? DnnlType::f32 : ToDnnl(key.dtype);
    compiled->src_md = DenseDesc(shapes.src, type);
    compiled->weights_md = DenseDesc(shapes.weights, type);
    compiled->dst_md = DenseDesc(shapes.dst, type);
    const dnnl::matmul::desc desc(compiled->src_md, compiled->weights_md, compiled->dst_md);
    const dnnl::matmul::primitive_desc pd(desc, engine);
    compiled->implementation = pd.impl_info_str();
    compiled->matmul = dnnl::matmul(pd);
    return compiled;
  }

  // The cached compiled problem for `key`, compiling (and caching) it on a miss. Throws
  // dnnl::error.
  std::shared_ptr<const Compiled> GetOrCompile(const CacheKey& key, const ProblemShapes& shapes) {
    if (auto it = index.find(key); it != index.end()) {
      ++stats.hits;
      lru.splice(lru.begin(), lru, it->second);
      return it->second->second;
    }
    ++stats.misses;
    std::shared_ptr<const Compiled> compiled = Compile(key, shapes);
    if (options.cache_capacity == 0) return compiled;
    while (lru.size() >= options.cache_capacity) {
      index.erase(lru.back().first);
      lru.pop_back();
    }
    lru.emplace_front(key, compiled);
    index.emplace(key, lru.begin());
    return compiled;
  }
};

StatusOr<std::unique_ptr<OneDnnBackend>> OneDnnBackend::Create(Options options) {
  ApplyIsaPolicy();
  auto state = std::make_unique<State>();
  state->options = options;
  try {
    state->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    state->stream = dnnl::stream(state->engine);
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN status " + std::string(dnnl_status2str(e.status)) +
                         " while creating its CPU engine and stream: " + e.what());
  }
  state->isa = EffectiveIsa();
  const dnnl::cpu_isa effective = dnnl::get_effective_cpu_isa();
  const bool avx512 =
      effective == dnnl::cpu_isa::avx512_core || effective == dnnl::cpu_isa::avx512_core_vnni ||
      effective == dnnl::cpu_isa::avx512_core_bf16 || effective == dnnl::cpu_isa::avx512_core_amx;
  const bool avx2 =
      avx512 || effective == dnnl::cpu_isa::avx2 || effective == dnnl::cpu_isa::avx2_vnni;
  state->convert = onednn_internal::PickConvertKernel(avx512, avx2);
  state->f32 = ProbeMatmul(state->engine, DnnlType::f32);
  state->bf16 = ProbeMatmul(state->engine, DnnlType::bf16);
  state->f16 = ProbeMatmul(state->engine, DnnlType::f16);
  return std::unique_ptr<OneDnnBackend>(new OneDnnBackend(std::move(state)));
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

std::string OneDnnBackend::EffectiveIsa() {
  ApplyIsaPolicy();
  return IsaName(dnnl::get_effective_cpu_isa());
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

OneDnnBackend::CacheStats OneDnnBackend::cache_stats() const {
  CacheStats stats = state_->stats;
  stats.size = state_->lru.size();
  return stats;
}

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
    std::shared_ptr<const Compiled> compiled = state_->GetOrCompile(key, shapes);
    return std::unique_ptr<MatMulPrimitive>(std::make_unique<OneDnnPrimitive>(
        plan, std::move(compiled), state_->engine, state_->stream, state_->isa, state_->convert));
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
