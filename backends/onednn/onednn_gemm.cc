// Gemm through oneDNN's matmul (onednn_family.h): Y = alpha A' B' + beta C as one primitive, alpha
// its output scale, beta a sum post-op over C broadcast into Y beforehand, the transposes as
// strides; bfloat16 or float16 without oneDNN's own matmul via f32 (exact conversions of A, B and
// C, one rounding of Y), as the MatMul path does.
#include <omp.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "onednn_family.h"

namespace mm::onednn_internal {
namespace {

using family::CForm;
using family::Plan;

// C broadcast to [M, N] into `out`, each element as Out (T itself, or float on the via-f32 path).
template <class T, class Out>
void BroadcastC(const Plan& plan, Out* out) {
  const family::GemmPlan& g = plan.gemm;
  const T* c = g.c.Data<T>();
  const std::int64_t m = plan.product.m, n = plan.product.n;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if constexpr (std::is_same_v<T, Out>) {
        out[i * n + j] = c[g.CIndex(i, j)];
      } else {
        out[i * n + j] = static_cast<Out>(ToDouble(c[g.CIndex(i, j)]));
      }
    }
  }
}

// Y = beta C (or 0) where the products do not count (K = 0: empty sums; alpha = 0: not read, as
// BLAS does): in double, one rounding.
template <class T>
void OnlyBetaC(const Plan& plan, T* y) {
  const family::GemmPlan& g = plan.gemm;
  const std::int64_t m = plan.product.m, n = plan.product.n;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double c = g.c_form == CForm::kAbsent ? 0 : ToDouble(g.c.Data<T>()[g.CIndex(i, j)]);
      y[i * n + j] = RoundFromDouble<T>(static_cast<double>(g.beta) * c);
    }
  }
}

template <class F>
void VisitGemmType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBFloat16:
      return f(std::integral_constant<DType, DType::kBFloat16>{});
    case DType::kFloat16:
      return f(std::integral_constant<DType, DType::kFloat16>{});
    default:
      return f(std::integral_constant<DType, DType::kFloat>{});
  }
}

}  // namespace

Status GemmRunner::Compute(const Plan& plan, bool via_f32, MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const family::GemmPlan& g = plan.gemm;
  if (p.y_elements == 0) {
    implementation_ = "no oneDNN call: Y is empty";
    return OkStatus();
  }
  // alpha = 0: with an output scale of 0 oneDNN 2.6 returned some elements of Y as they were
  // (mm-fuzz's NaN poison; bfloat16 capped at AVX512_CORE), so mm answers it; with
  // non-finite products that is BLAS's reading (docs/family.md,
  // gemm-alpha-zero-non-finite-product).
  if (p.k == 0 || g.alpha == 0) {
    implementation_ = "no oneDNN call: beta C computed in mm (K = 0 or alpha = 0)";
    VisitGemmType(plan.y_dtype, [&](auto tag) {
      OnlyBetaC<CppType<decltype(tag)::value>>(plan, y.Data<CppType<decltype(tag)::value>>());
    });
    return OkStatus();
  }
  const Support limits = WithinOneDnnLimits(p, Support::Native());
  if (!limits.supported()) {
    return ConformanceGapError("oneDNN cannot take " + plan.ToString() + ": " + limits.note);
  }
  try {
    bool epilogue = false;
    std::shared_ptr<const Compiled> compiled = CompiledFor(plan, via_f32, false);
    if (g.alpha != 1 && compiled->implementation.rfind("gemm:", 0) == 0) {
      // oneDNN's gemm:jit applies its output scale before the products (alpha * a overflowing to
      // -inf times 0 gave NaN where Y is 0: mm-fuzz --op Gemm capped at AVX2): there the products
      // are summed unscaled into f32 and alpha and beta C are applied here, in f32.
      epilogue = true;
      via_f32 = via_f32 || plan.y_dtype != DType::kFloat;
      compiled = CompiledFor(plan, via_f32, true);
    }
    implementation_ =
        compiled->implementation + (epilogue ? ", alpha and beta C applied in mm" : "");
    Run(plan, *compiled, via_f32, epilogue, y);
  } catch (const dnnl::error& e) {
    return StatusFromDnnlError(e, "running Gemm's matmul", p.desc);
  }
  return OkStatus();
}

std::shared_ptr<const Compiled> GemmRunner::CompiledFor(const Plan& plan, bool via_f32,
                                                        bool plain) {
  const MatMulPlan& p = plan.product;
  const family::GemmPlan& g = plan.gemm;
  // beta = 0 leaves C unread, as BLAS does (docs/family.md: gemm-beta-zero-non-finite-c).
  const bool has_sum = !plain && g.c_form != CForm::kAbsent && g.beta != 0;
  CacheKey key{plan.y_dtype, via_f32, {p.m, p.k}, {p.k, p.n}, omp_get_max_threads()};
  key.gemm = true;
  key.trans_a = g.trans_a;
  key.trans_b = g.trans_b;
  key.has_sum = has_sum;
  key.alpha_bits = std::bit_cast<std::uint32_t>(plain ? 1.0f : g.alpha);
  key.beta_bits = has_sum ? std::bit_cast<std::uint32_t>(g.beta) : 0;
  const ProblemShapes shapes{{p.m, p.k}, {p.k, p.n}, {p.m, p.n}};
  return cache_->GetOrCompile(key, shapes, engine_);
}

void GemmRunner::Run(const Plan& plan, const Compiled& compiled, bool via_f32, bool epilogue,
                     MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const family::GemmPlan& g = plan.gemm;
  const bool use_c = g.c_form != CForm::kAbsent && g.beta != 0;
  const void* a = plan.a.data;
  const void* b = plan.b.data;
  void* dst = y.data;
  if (via_f32) {
    a_f32_.resize(static_cast<std::size_t>(plan.a.NumElements()));
    b_f32_.resize(static_cast<std::size_t>(plan.b.NumElements()));
    y_f32_.resize(static_cast<std::size_t>(p.y_elements));
    WidenToFloat(convert_, plan.a.dtype, a, a_f32_.data(), a_f32_.size());
    WidenToFloat(convert_, plan.b.dtype, b, b_f32_.data(), b_f32_.size());
    a = a_f32_.data();
    b = b_f32_.data();
    dst = y_f32_.data();
  }
  if (use_c && !epilogue) {
    VisitGemmType(plan.y_dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if (via_f32) {
        BroadcastC<T, float>(plan, static_cast<float*>(dst));
      } else {
        BroadcastC<T, T>(plan, static_cast<T*>(dst));
      }
    });
  }
  const dnnl::memory src(compiled.src_md, engine_, const_cast<void*>(a));
  const dnnl::memory weights(compiled.weights_md, engine_, const_cast<void*>(b));
  const dnnl::memory out(compiled.dst_md, engine_, dst);
  compiled.matmul.execute(stream_,
                          {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, out}});
  stream_.wait();
  if (epilogue) {
    auto* acc = static_cast<float*>(dst);
    std::vector<float> c(use_c ? static_cast<std::size_t>(p.y_elements) : 0);
    if (use_c) {
      VisitGemmType(plan.y_dtype, [&](auto tag) {
        BroadcastC<CppType<decltype(tag)::value>, float>(plan, c.data());
      });
    }
    for (std::int64_t i = 0; i < p.y_elements; ++i) {
      const float scaled = g.alpha * acc[i];
      acc[i] = use_c ? scaled + g.beta * c[i] : scaled;
    }
  }
  if (via_f32) NarrowFromFloat(convert_, plan.y_dtype, y_f32_.data(), y.data, y_f32_.size());
}

}  // namespace mm::onednn_internal
