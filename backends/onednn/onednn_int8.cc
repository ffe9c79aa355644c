// MatMulInteger's and QLinearMatMul's accumulation through oneDNN's int8 matmul (onednn_family.h).
//
// oneDNN 2.6 computes exactly, modulo 2^32, only its plain u8 x s8 -> s32 matmul on a VNNI kernel:
// with any zero point attribute, or with an s8 source (its s8s8 compensation), its brgemm kernel
// passes the s32 result through f32, so sums beyond 2^24 come back rounded (docs/backends.md,
// "oneDNN backend"). So oneDNN is given u8 x s8 without attributes, and the rest is mm's, exact in
// uint32 arithmetic (a ring homomorphism of the integers, so modulo 2^32 throughout):
//   a' = a + 128 (int8 A), b' = b - 128 (uint8 B), za' = za + 128, zb' = zb - 128 likewise;
//   Y[i, j] = sum_k (a'_ik - za'_i)(b'_kj - zb'_j)
//           = P[i, j] - zb'_j * (R_i - K * za'_i) - za'_i * C_j,
// with P = A' B' (oneDNN), R_i = sum_k a'_ik and C_j = sum_k b'_kj, the sums only where a zero
// point is not 0.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mm/family/requantize.h"
#include "onednn_family.h"

namespace mm::onednn_internal {
namespace {

using family::Plan;
using family::QuantForm;
using family::QuantParam;

// The shifted zero point of every row of A (every column of B), `count` of them, whatever the
// form: one value repeated when per tensor or absent.
std::vector<std::uint32_t> ShiftedZeroPoints(const QuantParam& zp, std::int64_t count,
                                             std::int64_t shift) {
  const bool each = zp.form == QuantForm::kPerRow || zp.form == QuantForm::kPerColumn;
  std::vector<std::uint32_t> out(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] =
        static_cast<std::uint32_t>(zp.ZeroPoint(each ? static_cast<std::int64_t>(i) : 0) + shift);
  }
  return out;
}

bool AllZero(const std::vector<std::uint32_t>& values) {
  return std::all_of(values.begin(), values.end(), [](std::uint32_t v) { return v == 0; });
}

// The loops below run once per call over A, B or Y: cloned for AVX2 (chosen at run time; the
// int8 path runs only where oneDNN has VNNI, so on AVX-512 CPUs), x86-64's baseline otherwise.
// Named ...Avx2 for scripts/check-isa.sh, which allows AVX2 code only in functions so named.
#define MM_INT8_LOOP __attribute__((target_clones("avx2", "default")))

// Sum over K of each of the `rows` rows of A' ([rows, k], row-major).
MM_INT8_LOOP std::vector<std::uint32_t> RowSumsAvx2(const std::uint8_t* a, std::int64_t rows,
                                                    std::int64_t k) {
  std::vector<std::uint32_t> sums(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint32_t sum = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) sum += a[r * k + kk];
    sums[r] = sum;
  }
  return sums;
}

// Sum over K of each column of each of B's `matrices` matrices [k, n], modulo 2^32.
MM_INT8_LOOP std::vector<std::uint32_t> ColumnSumsAvx2(const std::int8_t* b, std::int64_t matrices,
                                                       std::int64_t k, std::int64_t n) {
  std::vector<std::uint32_t> sums(static_cast<std::size_t>(matrices * n));
  for (std::int64_t m = 0; m < matrices; ++m) {
    std::uint32_t* out = sums.data() + m * n;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const std::int8_t* row = b + (m * k + kk) * n;
      for (std::int64_t j = 0; j < n; ++j) out[j] += static_cast<std::uint32_t>(row[j]);
    }
  }
  return sums;
}

// y[j] -= zb[j] * t + za * c[j] for the n elements of one row of Y.
MM_INT8_LOOP void SubtractRowTermsAvx2(std::uint32_t* y, const std::uint32_t* zb,
                                       const std::uint32_t* c, std::uint32_t t, std::uint32_t za,
                                       std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) y[j] -= zb[j] * t + za * c[j];
}

// Subtracts every zero point's terms from P in `acc` (the header's formula). Branch-free inner
// loops over contiguous rows, so that the compiler vectorises them.
void SubtractZeroPointTerms(const Plan& plan, const std::uint8_t* a, const std::int8_t* b,
                            std::int64_t a_shift, std::int64_t b_shift, std::int32_t* acc) {
  const MatMulPlan& p = plan.product;
  // Per tensor (or absent) on both sides and 0 after the shifts: P is Y (uint8 x int8 without
  // zero points, the common case, costs nothing here).
  const auto single = [](const QuantParam& zp, std::int64_t shift) {
    return zp.form != QuantForm::kPerRow && zp.form != QuantForm::kPerColumn &&
           zp.ZeroPoint(0) + shift == 0;
  };
  if (single(plan.a_zero_point, a_shift) && single(plan.b_zero_point, -b_shift)) return;
  const std::int64_t a_rows = plan.a.NumElements() / p.k;
  const std::int64_t b_matrices = plan.b.NumElements() / (p.k * p.n);
  const std::vector<std::uint32_t> za = ShiftedZeroPoints(plan.a_zero_point, a_rows, a_shift);
  const std::vector<std::uint32_t> zb =
      ShiftedZeroPoints(plan.b_zero_point, b_matrices * p.n, -b_shift);
  const bool use_za = !AllZero(za), use_zb = !AllZero(zb);
  if (!use_za && !use_zb) return;
  const std::vector<std::uint32_t> row_sums =
      use_zb ? RowSumsAvx2(a, a_rows, p.k) : std::vector<std::uint32_t>(a_rows, 0);
  const std::vector<std::uint32_t> column_sums =
      use_za ? ColumnSumsAvx2(b, b_matrices, p.k, p.n) : std::vector<std::uint32_t>(zb.size(), 0);
  const auto k = static_cast<std::uint32_t>(p.k);
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_matrix, b_matrix] = plan.OperandMatrices(batch);
    const std::uint32_t* zb_j = zb.data() + b_matrix * p.n;
    const std::uint32_t* c_j = column_sums.data() + b_matrix * p.n;
    for (std::int64_t i = 0; i < p.m; ++i) {
      const std::int64_t row = a_matrix * p.m + i;
      const std::uint32_t za_i = za[row];
      const std::uint32_t t_i = row_sums[row] - k * za_i;
      auto* y = reinterpret_cast<std::uint32_t*>(acc + (batch * p.m + i) * p.n);
      SubtractRowTermsAvx2(y, zb_j, c_j, t_i, za_i, p.n);
    }
  }
}

}  // namespace

Int8Probe ProbeInt8Matmul(const dnnl::engine& engine) {
  try {
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(DenseDesc({2, 4}, DnnlType::u8), DenseDesc({4, 2}, DnnlType::s8),
                           DenseDesc({2, 2}, DnnlType::s32)),
        engine, /*allow_empty=*/true);
    if (!pd) return {};
    const std::string impl = pd.impl_info_str();
    return {impl, impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos};
  } catch (const dnnl::error&) {
    return {};
  }
}

Status Int8Runner::Accumulate(const Plan& plan, std::int32_t* acc) {
  const MatMulPlan& p = plan.product;
  if (p.y_elements == 0) return OkStatus();
  if (p.k == 0) {
    std::fill(acc, acc + p.y_elements, 0);  // Empty sums; the zero points multiply nothing.
    return OkStatus();
  }
  const int threads = omp_get_max_threads();
  // A problem of the last run's shapes runs its primitive again, with no planning of its own.
  const bool same = compiled_ != nullptr && threads == threads_ && p.desc.a_dims == a_dims_ &&
                    p.desc.b_dims == b_dims_;
  if (!same) {
    const Support limits = WithinOneDnnLimits(p, Support::Native());
    if (!limits.supported()) {
      return ConformanceGapError("oneDNN cannot take " + plan.ToString() + ": " + limits.note);
    }
  }
  const std::int64_t a_shift = plan.a_dtype == DType::kInt8 ? 128 : 0;
  const std::int64_t b_shift = plan.b_dtype == DType::kUInt8 ? 128 : 0;
  const auto* a = static_cast<const std::uint8_t*>(plan.a.data);
  const auto* b = static_cast<const std::int8_t*>(plan.b.data);
  if (a_shift != 0) {
    a_shifted_.resize(static_cast<std::size_t>(plan.a.NumElements()));
    for (std::size_t i = 0; i < a_shifted_.size(); ++i) a_shifted_[i] = a[i] ^ 0x80;
    a = a_shifted_.data();
  }
  if (b_shift != 0) {
    b_shifted_.resize(static_cast<std::size_t>(plan.b.NumElements()));
    const auto* raw = static_cast<const std::uint8_t*>(plan.b.data);
    for (std::size_t i = 0; i < b_shifted_.size(); ++i) {
      b_shifted_[i] = static_cast<std::int8_t>(raw[i] ^ 0x80);
    }
    b = b_shifted_.data();
  }
  try {
    std::shared_ptr<const Compiled> compiled = compiled_;
    if (!same) {
      const ProblemShapes shapes = CollapseShapes(p);
      const CacheKey key{DType::kUInt8, false, shapes.src, shapes.weights, threads};
      compiled = cache_->GetOrCompile(key, shapes, engine_);
    }
    MM_RETURN_IF_ERROR(Run(std::move(compiled), a, b, acc, plan));
    a_dims_ = p.desc.a_dims;
    b_dims_ = p.desc.b_dims;
    threads_ = threads;
  } catch (const dnnl::error& e) {
    return StatusFromDnnlError(e, "running the int8 matmul", p.desc);
  }
  SubtractZeroPointTerms(plan, a, b, a_shift, b_shift, acc);
  return OkStatus();
}

Status Int8Runner::Run(std::shared_ptr<const Compiled> compiled, const void* a, const void* b,
                       void* y, const Plan& plan) {
  if (compiled != compiled_) {
    // A problem of another signature: its memory objects, bound to nothing yet.
    src_ = dnnl::memory(compiled->src_md, engine_, DNNL_MEMORY_NONE);
    weights_ = dnnl::memory(compiled->weights_md, engine_, DNNL_MEMORY_NONE);
    dst_ = dnnl::memory(compiled->dst_md, engine_, DNNL_MEMORY_NONE);
    compiled_ = std::move(compiled);
    bound_ = {};
  }
  dnnl_status_t status = dnnl_success;
  const std::array<const void*, 3> want = {a, b, y};
  if (want != bound_) {
    bound_ = {};  // Unknown until all three succeed.
    status = dnnl_memory_set_data_handle_v2(src_.get(), const_cast<void*>(a), nullptr);
    if (status == dnnl_success) {
      status = dnnl_memory_set_data_handle_v2(weights_.get(), const_cast<void*>(b), nullptr);
    }
    if (status == dnnl_success) status = dnnl_memory_set_data_handle_v2(dst_.get(), y, nullptr);
    if (status == dnnl_success) bound_ = want;
  }
  const std::array<dnnl_exec_arg_t, 3> args = {
      {{DNNL_ARG_SRC, src_.get()}, {DNNL_ARG_WEIGHTS, weights_.get()}, {DNNL_ARG_DST, dst_.get()}}};
  if (status == dnnl_success) {
    status = dnnl_primitive_execute(compiled_->matmul.get(), stream_.get(),
                                    static_cast<int>(args.size()), args.data());
  }
  if (status == dnnl_success) status = dnnl_stream_wait(stream_.get());
  if (status != dnnl_success) return StatusFromDnnl(status, "executing", plan.product.desc);
  return OkStatus();
}

std::string Int8Runner::implementation() const {
  return compiled_ == nullptr ? std::string() : compiled_->implementation;
}

void RequantizeInto(const Plan& plan, const std::int32_t* acc, MutableTensorView y) {
  const auto y_scale = static_cast<float>(plan.y_scale.Scale(0));
  const std::int64_t y_zp = plan.y_zero_point.ZeroPoint(0);
  const bool is_signed = plan.y_dtype == DType::kInt8;
  const family::OutputRange range =
      is_signed ? family::OutputRange{-128, 127} : family::OutputRange{0, 255};
  family::ForEachScaledElement(plan, [&](std::int64_t index, float a_scale, float b_scale) {
    const std::int64_t v =
        family::RequantizeExact(acc[index], a_scale, b_scale, y_scale, y_zp, range);
    if (is_signed) {
      y.Data<std::int8_t>()[index] = static_cast<std::int8_t>(v);
    } else {
      y.Data<std::uint8_t>()[index] = static_cast<std::uint8_t>(v);
    }
  });
}

}  // namespace mm::onednn_internal
