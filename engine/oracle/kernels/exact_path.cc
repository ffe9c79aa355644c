// The exact path for every element (OracleOptions::fast false, K = 0, or a double problem that the
// splitting cannot take), spread over the OpenMP threads by rows. Compiled once per
// instruction-set level.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "exact_rows.h"
#include "kernel_support.h"
#include "kernels.h"
#include "mm/oracle/error_bound.h"
#include "oracle_internal.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

namespace {

// Whether every value is finite and not subnormal.
bool AllNormalOrZero(const double* x, std::int64_t count) {
  bool ok = true;
  for (std::int64_t i = 0; i < count; ++i) {
    const double magnitude = std::fabs(x[i]);
    ok &= magnitude == 0 || (magnitude >= std::numeric_limits<double>::min() &&
                             magnitude <= std::numeric_limits<double>::max());
  }
  return ok;
}

// Columns [j0, j0 + cols) of one row of the exact path for double inputs, columns in the inner
// loop: per element the operations of ExactDot in the same order (TwoProduct, TwoSum, the absolute
// sum; WideDot where they overflow), so the same bits, for inputs with no NaN, infinity or
// subnormal.
void ExactDoubleRowChunk(const double* a_row, const double* b, std::int64_t k, std::int64_t n,
                         std::int64_t j0, std::int64_t cols, double* y, OracleResult& out,
                         std::size_t out_index) {
  double hi[kRowChunk] = {}, lo[kRowChunk] = {}, abs[kRowChunk] = {};
  for (std::int64_t p = 0; p < k; ++p) {
    const double x = a_row[p];
    const double* w = b + p * n + j0;
    for (std::int64_t j = 0; j < cols; ++j) AddExactTerm(x, w[j], hi[j], lo[j], abs[j]);
  }
  const double up = 1 + Gamma(k + 1, 0x1p-53);
  for (std::int64_t j = 0; j < cols; ++j) {
    const double exact = ExactFromSums(hi[j], lo[j], abs[j], a_row, b + j0 + j, k, n);
    const std::size_t index = out_index + static_cast<std::size_t>(j);
    y[index] = exact;
    out.exact[index] = exact;
    out.abs_sum[index] = abs[j] * up;
  }
}

}  // namespace

template <class T>
Status ExactFloatMatMul(const MatMulPlan& plan, const T* a, const T* b, OracleResult& out,
                        const std::atomic<bool>* cancel) {
  const std::int64_t rows = plan.batch * plan.m, k = plan.k, n = plan.n;
  const double work = static_cast<double>(plan.y_elements) * static_cast<double>(k);
  struct NoWorkspace {};
  Spread<NoWorkspace>(rows, Threads(rows, work), [&](std::int64_t row, NoWorkspace&) {
    const auto [a_offset, b_offset] = plan.BatchOffsets(row / plan.m);
    const T* a_row = a + a_offset + row % plan.m * k;
    // Each element costs K terms: a long row stops between two of them.
    for (std::int64_t j = 0; j < n && !Cancelled(cancel); ++j) {
      StoreExact<T>(ExactDot<T>(a_row, b + b_offset + j, k, n),
                    static_cast<std::size_t>(row * n + j), out);
    }
  });
  return Cancelled(cancel) ? CancelledStatus() : OkStatus();
}

Status ExactDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                         OracleResult& out, const std::atomic<bool>* cancel) {
  if (!AllNormalOrZero(a, plan.a_elements) || !AllNormalOrZero(b, plan.b_elements)) {
    return ExactFloatMatMul(plan, a, b, out, cancel);
  }
  const std::int64_t m = plan.m, k = plan.k, n = plan.n;
  const std::int64_t chunks = (n + kRowChunk - 1) / kRowChunk;
  const std::int64_t tasks = plan.batch * m * chunks;
  const double work = static_cast<double>(plan.y_elements) * static_cast<double>(k);
  struct NoWorkspace {};
  Spread<NoWorkspace>(tasks, Threads(tasks, work), [&](std::int64_t task, NoWorkspace&) {
    if (Cancelled(cancel)) return;
    const std::int64_t row = task / chunks, j0 = task % chunks * kRowChunk;
    const auto [a_offset, b_offset] = plan.BatchOffsets(row / m);
    ExactDoubleRowChunk(a + a_offset + row % m * k, b + b_offset, k, n, j0,
                        std::min(kRowChunk, n - j0), out.y.Data<double>(), out,
                        static_cast<std::size_t>(row * n + j0));
  });
  return Cancelled(cancel) ? CancelledStatus() : OkStatus();
}

template Status ExactFloatMatMul<float>(const MatMulPlan&, const float*, const float*,
                                        OracleResult&, const std::atomic<bool>*);
template Status ExactFloatMatMul<float16>(const MatMulPlan&, const float16*, const float16*,
                                          OracleResult&, const std::atomic<bool>*);
template Status ExactFloatMatMul<bfloat16>(const MatMulPlan&, const bfloat16*, const bfloat16*,
                                           OracleResult&, const std::atomic<bool>*);
template Status ExactFloatMatMul<double>(const MatMulPlan&, const double*, const double*,
                                         OracleResult&, const std::atomic<bool>*);

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal
