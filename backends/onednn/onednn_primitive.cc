#include "onednn_primitive.h"

#include <oneapi/dnnl/dnnl.h>

#include <array>
#include <bit>
#include <cstdint>

namespace mm::onednn_internal {
namespace {

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
      // Declared in mm/oracle/error_bound.h; said here so every report shows it.
      if (plan().desc.dtype == DType::kBFloat16) how += ", bf16 subnormal inputs read as zero";
      return how;
    }
    const std::string type = ShortName(plan().desc.dtype);
    return type + " via f32: " + std::string(ConvertKernelName(convert_)) +
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
      WidenToFloat(convert_, dtype, a.data, src_f32_, a_elements_);
      WidenToFloat(convert_, dtype, b.data, weights_f32_, b_elements_);
      status = Execute(c.matmul, matmul_args_);
      if (status == dnnl_success) status = dnnl_stream_wait(stream_.get());
      if (status == dnnl_success) {
        NarrowFromFloat(convert_, dtype, dst_f32_, y.data, y_elements_);
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

// Builds the oneDNN objects for one problem on `engine`. Throws dnnl::error.
std::shared_ptr<const Compiled> Compile(const CacheKey& key, const ProblemShapes& shapes,
                                        const dnnl::engine& engine) {
  auto compiled = std::make_shared<Compiled>();
  compiled->via_f32 = key.via_f32;
  const DnnlType type = key.via_f32 ? DnnlType::f32 : ToDnnl(key.dtype);
  // kUInt8 is the family's int8 product: u8 x s8 -> s32 (onednn_int8.cc).
  const bool int8 = key.dtype == DType::kUInt8;
  compiled->src_md = DenseDesc(shapes.src, int8 ? DnnlType::u8 : type);
  compiled->weights_md = DenseDesc(shapes.weights, int8 ? DnnlType::s8 : type);
  compiled->dst_md = DenseDesc(shapes.dst, int8 ? DnnlType::s32 : type);
  dnnl::primitive_attr attr;
  if (key.gemm) {
    // Gemm: [M, K] x [K, N] with A ([K, M]) or B ([N, K]) read transposed through its strides.
    const std::int64_t m = shapes.src[0], k = shapes.src[1], n = shapes.weights[1];
    compiled->src_md = dnnl::memory::desc(shapes.src, type, key.trans_a ? Dims{1, m} : Dims{k, 1});
    compiled->weights_md =
        dnnl::memory::desc(shapes.weights, type, key.trans_b ? Dims{1, k} : Dims{n, 1});
    const auto alpha = std::bit_cast<float>(key.alpha_bits);
    if (alpha != 1) attr.set_output_scales(0, {alpha});
    if (key.has_sum) {
      dnnl::post_ops sum;
      sum.append_sum(std::bit_cast<float>(key.beta_bits));
      attr.set_post_ops(sum);
    }
  }
  const dnnl::matmul::desc desc(compiled->src_md, compiled->weights_md, compiled->dst_md);
  const dnnl::matmul::primitive_desc pd(desc, attr, engine);
  compiled->implementation = pd.impl_info_str();
  compiled->matmul = dnnl::matmul(pd);
  return compiled;
}

}  // namespace

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

std::size_t CacheKeyHash::operator()(const CacheKey& key) const {
  std::size_t h = static_cast<std::size_t>(key.dtype) * 2 + (key.via_f32 ? 1 : 0);
  h = h * 1000003u ^ static_cast<std::size_t>(key.threads);
  h = h * 1000003u ^
      (static_cast<std::size_t>(key.gemm) | key.trans_a << 1 | key.trans_b << 2 | key.has_sum << 3);
  h = h * 1000003u ^ (static_cast<std::size_t>(key.alpha_bits) << 32 | key.beta_bits);
  for (const Dims* dims : {&key.src, &key.weights}) {
    h = h * 1000003u ^ dims->size();
    for (std::int64_t d : *dims) h = h * 1000003u ^ std::hash<std::int64_t>()(d);
  }
  return h;
}

std::shared_ptr<const Compiled> CompiledCache::GetOrCompile(const CacheKey& key,
                                                            const ProblemShapes& shapes,
                                                            const dnnl::engine& engine) {
  if (auto it = index_.find(key); it != index_.end()) {
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  ++stats_.misses;
  std::shared_ptr<const Compiled> compiled = Compile(key, shapes, engine);
  if (capacity_ == 0) return compiled;
  while (lru_.size() >= capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(key, compiled);
  index_.emplace(key, lru_.begin());
  return compiled;
}

OneDnnBackend::CacheStats CompiledCache::stats() const {
  OneDnnBackend::CacheStats stats = stats_;
  stats.size = lru_.size();
  return stats;
}

std::unique_ptr<MatMulPrimitive> MakeOneDnnPrimitive(const MatMulPlan& plan,
                                                     std::shared_ptr<const Compiled> compiled,
                                                     const dnnl::engine& engine,
                                                     const dnnl::stream& stream, std::string isa,
                                                     ConvertKernel convert) {
  return std::make_unique<OneDnnPrimitive>(plan, std::move(compiled), engine, stream,
                                           std::move(isa), convert);
}

}  // namespace mm::onednn_internal
