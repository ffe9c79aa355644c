// Gemm's exact answer: alpha sum a b + beta c from ExactMatMul's sum with error-free products and
// sums (this file is compiled with -ffp-contract=off), its bound (docs/family.md, "The Gemm
// bound"), and the other reading where the standard is ambiguous.
#include <cmath>
#include <cstring>
#include <limits>

#include "exact_internal.h"
#include "mm/oracle/error_free.h"
#include "mm/oracle/exact_accumulator.h"

namespace mm::family::internal {
namespace {

// The row-major [cols, rows] transpose of a 2-D tensor.
StatusOr<Tensor> Transposed(TensorView t) {
  const std::int64_t rows = t.dims[0], cols = t.dims[1];
  MM_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(t.dtype, {cols, rows}));
  const std::size_t size = DTypeSize(t.dtype);
  const auto* in = static_cast<const std::byte*>(t.data);
  auto* to = static_cast<std::byte*>(out.raw_data());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      std::memcpy(to + (c * rows + r) * size, in + (r * cols + c) * size, size);
    }
  }
  return out;
}

// One element's terms: the product's exact sum x (within x_error; NaN or infinite when special),
// S = sum |a||b|, and C's value (0 when absent).
struct Terms {
  double x = 0, x_error = 0, abs_sum = 0, subnormal_sum = 0;
  bool x_special = false;
  double c = 0;
  bool c_subnormal = false;
};

// The bound of alpha x + beta c for a backend of `arithmetic` over k products, with the product
// left out when !use_product and C when !use_c (the ambiguous readings).
ElementBound GemmBound(const Terms& t, double alpha, double beta, bool use_product, bool use_c,
                       const Arithmetic& arithmetic, std::int64_t k, int extra_roundings) {
  const double a = use_product ? alpha : 0, b = use_c ? beta : 0;
  // alpha = 0 times the sum of finite products is 0 exactly, even where that sum overflowed.
  const double x = use_product && (a != 0 || t.x_special) ? t.x : 0, c = use_c ? t.c : 0;
  // The product sum itself (S reaching the accumulation type's largest value) may overflow before
  // alpha scales it, as it does where a kernel scales each block's sum (Eigen's GEMM, BLAS
  // kernels) and alpha is below 1: found by mm-fuzz --op Gemm on every float32 backend.
  const bool sum_may_overflow =
      use_product && std::isinf(AccumulationError(arithmetic.accumulation, k, t.abs_sum));
  if ((use_product && t.x_special) || !std::isfinite(c)) {
    // The infinite parts decide (NaN where one is NaN or both signs meet): without an infinite or
    // NaN input the product part is a finite real, and so is beta c for a finite C, however large
    // (even where their doubles overflow). A flushed subnormal times an infinity may also give
    // NaN, and so may finite parts that overflow (S is over the finite terms: beside an infinite
    // input they may overflow the other way; or, alpha = 0, the sum times 0): docs/conformance.md,
    // "Overflow beside an infinite input".
    const double finite_c = std::isfinite(c) ? std::fabs(b * c) : 0;
    const bool overflow =
        (use_product && sum_may_overflow) ||
        std::isinf(AccumulationError(arithmetic.accumulation, k,
                                     (use_product ? std::fabs(a) * t.abs_sum : 0) + finite_c));
    const double product = use_product && t.x_special ? a * x : 0;
    const double c_part = std::isfinite(c) ? 0 : b * c;
    return {product + c_part, 0, true, arithmetic.flushes_subnormals || overflow};
  }
  double p1, e1, p2, e2, s, e3;
  TwoProduct(a, x, p1, e1);
  TwoProduct(b, c, p2, e2);
  TwoSum(p1, p2, s, e3);
  const double center = s + (e1 + e2 + e3);
  // The oracle's own error through alpha, the last two roundings above, and TwoProduct's errors
  // that underflow (each below 2^-1074).
  const double center_error = std::fabs(a) * (use_product ? t.x_error : 0) +
                              std::ldexp(std::fabs(center), -51) + std::ldexp(1.0, -1071);
  const double scaled_sum = std::fabs(a) * (use_product ? t.abs_sum : 0) + std::fabs(b * c);
  const double subnormal_sum = std::fabs(a) * (use_product ? t.subnormal_sum : 0) +
                               (use_c && t.c_subnormal ? std::fabs(b * c) : 0);
  // gamma_{K+2} (or K+3) over S' = |alpha| S + |beta| |c|, and an underflow allowance for the K
  // products, their K scalings by alpha and beta c: (K + extra) + (K + 2) halves of the smallest
  // subnormal.
  const double e = AccumulationError(arithmetic, k + extra_roundings, scaled_sum, subnormal_sum) +
                   AccumulationError(arithmetic.accumulation, k + 2, 0.0);
  // An intermediate may overflow (S' reaches the accumulation type's largest value): any value,
  // as in MatMul's bound; where the center's doubles overflowed, the caller puts the exact value
  // in its place (ExactCenterBeyondDouble).
  if (std::isinf(e) || sum_may_overflow) {
    return {center, std::numeric_limits<double>::infinity(), false, false};
  }
  // Rounded upward: a few double operations above each lose at most 2^-53 relatively.
  return {center, (e + center_error) * (1 + 0x1p-48), false, false};
}

// True when `value` is a value of the float type `dtype`.
bool Representable(DType dtype, double value) {
  switch (dtype) {
    case DType::kFloat16:
      return ToDouble(RoundToFloat16(value)) == value;
    case DType::kBFloat16:
      return ToDouble(RoundToBFloat16(value)) == value;
    case DType::kFloat:
      return static_cast<double>(static_cast<float>(value)) == value;
    default:
      return true;
  }
}

// Where the double evaluation of a reading of the formula overflowed without an infinite or NaN
// input (alpha x or beta c beyond double, or x itself: double inputs only), its exact value
// sum_k alpha a_k b_k + beta c instead, rounded once (+-inf only beyond double's range). The bound
// is infinite there: |alpha| S + |beta c| reaches double's largest value.
template <class T>
void ExactCenterBeyondDouble(const Plan& plan, const T* a_row, const T* b_col, double c,
                             bool use_product, bool use_c, ElementBound& bound) {
  if (bound.special || std::isfinite(bound.center)) return;
  const MatMulPlan& p = plan.product;
  ExactAccumulator sum;
  if (use_product) {
    for (std::int64_t q = 0; q < p.k; ++q) {
      sum.AddProduct(plan.gemm.alpha, ToDouble(a_row[q]), ToDouble(b_col[q * p.n]));
    }
  }
  if (use_c) sum.AddProduct(plan.gemm.beta, c);
  bound.center = sum.RoundToDouble();
}

template <class T>
void FloatGemm(const Plan& plan, const T* a, const T* b, const OracleResult& r,
               const Arithmetic& arithmetic, FamilyOracle& out) {
  const MatMulPlan& p = plan.product;
  const GemmPlan& g = plan.gemm;
  const double alpha = g.alpha, beta = g.beta;
  const int extra =
      Representable(arithmetic.accumulation, alpha) && Representable(arithmetic.accumulation, beta)
          ? 2
          : 3;
  const T* c = g.c_form == CForm::kAbsent ? nullptr : g.c.Data<T>();
  T* y = out.y.Data<T>();
  out.bounds.resize(static_cast<std::size_t>(p.y_elements));
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const auto index = static_cast<std::size_t>(i * p.n + j);
      Terms t;
      t.x = r.exact[index];
      t.x_error = r.exact_error.empty() ? 0 : r.exact_error[index];
      t.abs_sum = r.abs_sum[index];
      t.subnormal_sum = r.subnormal_abs_sum.empty() ? 0 : r.subnormal_abs_sum[index];
      t.x_special = r.special[index] != 0;
      if (c != nullptr) {
        t.c = ToDouble(c[g.CIndex(i, j)]);
        t.c_subnormal = t.c != 0 && std::fabs(t.c) < std::numeric_limits<T>::min();
      }
      const T* a_row = a + i * p.k;
      const T* b_col = b + j;
      ElementBound formula = GemmBound(t, alpha, beta, true, true, arithmetic, p.k, extra);
      ExactCenterBeyondDouble(plan, a_row, b_col, t.c, true, true, formula);
      out.bounds[index] = formula;
      y[index] = RoundFromDouble<T>(formula.center);
      // The readings differ where a zero scaling meets a NaN or an infinity.
      const bool skip_c = c != nullptr && beta == 0 && !std::isfinite(t.c);
      const bool skip_product = alpha == 0 && t.x_special;
      if (!skip_c && !skip_product) continue;
      ElementBound skipped =
          GemmBound(t, alpha, beta, !skip_product, !skip_c, arithmetic, p.k, extra);
      ExactCenterBeyondDouble(plan, a_row, b_col, t.c, !skip_product, !skip_c, skipped);
      // Both readings NaN: no ambiguity, unless the other reading allows any value (its sum may
      // overflow), which the formula's NaN alone does not.
      if (std::isnan(skipped.center) && std::isnan(formula.center) && !std::isinf(skipped.radius)) {
        continue;
      }
      out.ambiguous.push_back(
          {static_cast<std::int64_t>(index),
           skip_c ? Ambiguity::kGemmBetaZeroNonFiniteC : Ambiguity::kGemmAlphaZeroNonFiniteProduct,
           skipped});
    }
  }
}

// Integer Gemm: alpha x + beta c modulo 2^bits (alpha and beta are integers, PlanProblem checked).
template <class T>
void IntegerGemm(const Plan& plan, const OracleResult& r, FamilyOracle& out) {
  const MatMulPlan& p = plan.product;
  const GemmPlan& g = plan.gemm;
  const auto alpha = static_cast<std::uint64_t>(static_cast<std::int64_t>(g.alpha));
  const auto beta = static_cast<std::uint64_t>(static_cast<std::int64_t>(g.beta));
  const T* x = r.y.Data<T>();
  const T* c = g.c_form == CForm::kAbsent ? nullptr : g.c.Data<T>();
  T* y = out.y.Data<T>();
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const std::int64_t index = i * p.n + j;
      // Sign-extended to 64 bits, then wrapping products and sums: exact modulo 2^bits.
      const auto xv = static_cast<std::uint64_t>(static_cast<std::int64_t>(x[index]));
      const auto cv =
          c == nullptr ? 0
                       : static_cast<std::uint64_t>(static_cast<std::int64_t>(c[g.CIndex(i, j)]));
      y[index] = static_cast<T>(alpha * xv + beta * cv);
    }
  }
}

}  // namespace

StatusOr<FamilyOracle> ExactGemm(const Plan& plan, const Arithmetic& arithmetic,
                                 const OracleOptions& options) {
  Tensor a_copy, b_copy;
  TensorView a = plan.a, b = plan.b;
  if (plan.gemm.trans_a) {
    MM_ASSIGN_OR_RETURN(a_copy, Transposed(plan.a));
    a = a_copy.view();
  }
  if (plan.gemm.trans_b) {
    MM_ASSIGN_OR_RETURN(b_copy, Transposed(plan.b));
    b = b_copy.view();
  }
  MM_ASSIGN_OR_RETURN(const OracleResult r, ExactMatMul(plan.product, a, b, options));
  FamilyOracle out;
  MM_ASSIGN_OR_RETURN(out.y, Tensor::Create(plan.y_dtype, plan.y_dims()));
  VisitDType(plan.y_dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (std::is_integral_v<T>) {
      IntegerGemm<T>(plan, r, out);
    } else {
      FloatGemm<T>(plan, a.Data<T>(), b.Data<T>(), r, arithmetic, out);
    }
  });
  return out;
}

}  // namespace mm::family::internal
