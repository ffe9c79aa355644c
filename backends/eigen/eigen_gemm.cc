// The eigen backend's Gemm (eigen_family.h): one Eigen GEMM per block of rows, Y holding beta C.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "mm/backends/eigen/eigen_family.h"
#include "mm/backends/eigen/eigen_kernels.h"
#include "mm/backends/eigen/row_blocks.h"
#include "mm/backends/eigen/spread.h"

namespace mm::eigen_internal {
namespace {

using family::CForm;
using family::GemmPlan;
using family::Plan;

// The type Eigen multiplies T in: float for the 16-bit floats (float32 accumulation, one
// rounding of Y), uint64 for every integer type (sums modulo 2^64 truncate to the sums modulo
// 2^32; signed values sign-extended), T itself for float and double.
template <class T>
using GemmType = std::conditional_t<std::is_integral_v<T>, std::uint64_t,
                                    std::conditional_t<std::is_same_v<T, double>, double, float>>;

// A value of T in S exactly: integers modulo 2^64 (sign-extended), 16-bit floats widened.
template <class S, class T>
S InComputeType(T value) {
  if constexpr (std::is_integral_v<T> || std::is_same_v<T, S>) {
    return static_cast<S>(value);
  } else {
    return static_cast<S>(ToDouble(value));
  }
}

// alpha or beta in S: the float32 attribute itself, or (integer Gemm, where PlanProblem admits
// integers below 2^63 only) its two's complement modulo 2^64.
template <class S>
S Scaling(float value) {
  if constexpr (std::is_integral_v<S>) {
    return static_cast<S>(static_cast<std::int64_t>(value));
  } else {
    return static_cast<S>(value);
  }
}

// `t`'s elements in S: the tensor itself where T and S have the same bits (float, double, the
// 64-bit integers), else a widened copy in `storage`.
template <class T, class S>
const S* Operand(const EigenKernels& kernels, TensorView t, std::vector<S>& storage) {
  if constexpr (sizeof(T) == sizeof(S)) {
    return static_cast<const S*>(t.data);
  } else {
    storage.resize(static_cast<std::size_t>(t.NumElements()));
    if (!storage.empty()) kernels.Cast<S, T>()(t.Data<T>(), storage.data(), t.NumElements());
    return storage.data();
  }
}

// Y (in S, [M, N]) = beta C broadcast, one rounding (or wrap) per element; 0 without C. Row by
// row, each a contiguous loop (C's row, or its one value), rows C repeats copied from the first.
template <class T, class S>
void FillWithScaledC(const GemmPlan& g, std::int64_t m, std::int64_t n, S* y) {
  if (g.c_form == CForm::kAbsent) {
    std::fill(y, y + m * n, S{0});
    return;
  }
  const T* c = g.c.Data<T>();
  const S beta = Scaling<S>(g.beta);
  for (std::int64_t i = 0; i < m; ++i) {
    S* row = y + i * n;
    if (i > 0 && g.c_row_stride == 0) {
      std::copy(y, y + n, row);
    } else if (g.c_col_stride == 0) {
      std::fill(row, row + n, beta * InComputeType<S>(c[i * g.c_row_stride]));
    } else {
      const T* c_row = c + i * g.c_row_stride;
      for (std::int64_t j = 0; j < n; ++j) row[j] = beta * InComputeType<S>(c_row[j]);
    }
  }
}

// Y += alpha op(A) op(B), each block of rows an independent single-threaded Eigen GEMM on its own
// thread (as MatMul's SplitProduct). Returns false when a worker ran out of memory.
template <class S>
bool BlockedGemm(const EigenKernels& kernels, GemmCall<S> call) {
  const GemmFn<S> gemm = kernels.Gemm<S>();
  const double work =
      static_cast<double>(call.m) * static_cast<double>(call.k) * static_cast<double>(call.n);
  const int threads = SpreadThreads(call.m, work);
  if (threads == 1) {
    gemm(call);
    return true;
  }
  const std::vector<std::int64_t> bounds = RowBlockBounds(call.m, threads, kRowAlignment);
  return Spread(static_cast<std::int64_t>(bounds.size()) - 1, threads, [&](std::int64_t i) {
    GemmCall<S> block = call;
    // Row r of op(A) starts at r * lda in a row-major A, at r in a transposed one.
    block.a = call.a + bounds[i] * (call.trans_a ? 1 : call.lda);
    block.y = call.y + bounds[i] * call.n;
    block.m = bounds[i + 1] - bounds[i];
    gemm(block);
  });
}

// Y += alpha op(A) op(B) with alpha applied to the products' sums only. Eigen's matrix-vector and
// coefficient-based products (M or N = 1, tiny products) scale an operand by alpha before
// multiplying, so that alpha a overflows to an infinity and a zero b makes NaN where the exact
// value is 0 (found by mm-fuzz --op Gemm): for floats with alpha != 1 the product is formed
// unscaled and each element scaled as it is added (two roundings, within Gemm's bound).
template <class S>
bool ScaledGemm(const EigenKernels& kernels, GemmCall<S> call) {
  if (std::is_integral_v<S> || call.alpha == S{1}) return BlockedGemm(kernels, call);
  std::vector<S> product(static_cast<std::size_t>(call.m * call.n));
  const S alpha = call.alpha;
  S* y = call.y;
  call.y = product.data();
  call.alpha = 1;
  call.accumulate = false;
  if (!BlockedGemm(kernels, call)) return false;
  for (std::size_t i = 0; i < product.size(); ++i) y[i] += alpha * product[i];
  return true;
}

template <class T>
Status TypedGemm(const EigenKernels& kernels, const Plan& plan, MutableTensorView y) {
  using S = GemmType<T>;
  const MatMulPlan& p = plan.product;
  const GemmPlan& g = plan.gemm;
  std::vector<S> a_storage, b_storage, y_storage;
  S* out = reinterpret_cast<S*>(y.data);
  if constexpr (sizeof(T) != sizeof(S)) {
    y_storage.resize(static_cast<std::size_t>(p.y_elements));
    out = y_storage.data();
  }
  FillWithScaledC<T>(g, p.m, p.n, out);
  if (p.m > 0 && p.n > 0 && p.k > 0) {
    GemmCall<S> call;
    call.a = Operand<T>(kernels, plan.a, a_storage);
    call.b = Operand<T>(kernels, plan.b, b_storage);
    call.lda = g.trans_a ? p.m : p.k;  // A is [K, M] or [M, K], row-major.
    call.ldb = g.trans_b ? p.k : p.n;  // B is [N, K] or [K, N].
    call.trans_a = g.trans_a;
    call.trans_b = g.trans_b;
    call.y = out;
    call.m = p.m;
    call.k = p.k;
    call.n = p.n;
    call.alpha = Scaling<S>(g.alpha);
    call.accumulate = true;
    if (!ScaledGemm(kernels, call)) {
      return ResourceExhaustedError("eigen: out of memory in the Gemm " + plan.ToString());
    }
  }
  if constexpr (sizeof(T) != sizeof(S)) {
    if (p.y_elements > 0) kernels.Cast<T, S>()(out, y.Data<T>(), p.y_elements);
  }
  return OkStatus();
}

}  // namespace

Status EigenGemm(const Plan& plan, MutableTensorView y) {
  MM_ASSIGN_OR_RETURN(const EigenKernels* kernels, ChosenEigenKernels());
  try {
    return VisitDType(plan.y_dtype, [&](auto tag) {
      return TypedGemm<CppType<decltype(tag)::value>>(*kernels, plan, y);
    });
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("eigen: out of memory for the Gemm " + plan.ToString());
  }
}

}  // namespace mm::eigen_internal
