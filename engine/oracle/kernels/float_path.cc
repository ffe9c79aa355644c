// The fast path for float, float16 and bfloat16 inputs (the argument is in
// mm/oracle/exact_matmul.h): per tile, the double GEMMs of A and B and of |A| and |B|, the decision
// of every element, and the exact path for those it leaves undecided. Compiled once per
// instruction-set level.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "decision.h"
#include "exact_rows.h"
#include "float_operands.h"
#include "kernel_support.h"
#include "kernels.h"
#include "mm/oracle/error_bound.h"
#include "oracle_internal.h"
#include "tiles.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

namespace {

// One tile of the float path against its panel: the GEMMs, then row by row the decision of every
// element and the exact path for those it leaves undecided.
template <class T>
class FloatTile {
 public:
  FloatTile(const MatMulPlan& plan, const T* a_mat, const T* b_mat, const Tile& t, const Panel& p,
            FloatWorkspace& w, OracleResult& out)
      : plan_(plan),
        a_mat_(a_mat),
        b_mat_(b_mat),
        t_(t),
        p_(p),
        w_(w),
        out_(out),
        // S as computed may be low by gamma_K relative: rounded up as the exact path rounds it.
        up_(1 + Gamma(plan.k + 1, 0x1p-53)),
        sub_up_(1 + Gamma(2 * plan.k + 1, 0x1p-53)),
        error_factor_(RadiusFactor(plan.k)),
        decision_factor_(RadiusFactor(plan.k + 1)),
        exact_rows_(plan.k, plan.n, out) {}

  // Computes the tile; returns the number of its elements that took the exact path.
  std::int64_t Run(const std::atomic<bool>* cancel) {
    const bool a_sub = ConvertA(a_mat_, plan_.k, t_.i0, t_.rows, w_);
    Resize(w_.v, t_.rows, t_.cols);
    Resize(w_.s, t_.rows, t_.cols);
    w_.gemm.Multiply(w_.a, p_.b.middleCols(t_.c0, t_.cols), w_.v);
    w_.gemm.Multiply(w_.a_abs, p_.b_abs.middleCols(t_.c0, t_.cols), w_.s);
    any_sub_ = a_sub || p_.subnormal;
    if (any_sub_) SubnormalSums<T>(p_, t_, a_sub, w_);
    std::int64_t fallbacks = 0;
    w_.quick.resize(static_cast<std::size_t>(t_.cols));
    // Rows whose elements all take the exact path cost K terms each: the caller may stop between.
    for (std::int64_t i = 0; i < t_.rows && !Cancelled(cancel); ++i) {
      const auto row_index =
          static_cast<std::size_t>((t_.batch * plan_.m + t_.i0 + i) * plan_.n + p_.j0 + t_.c0);
      // First every element as if decided by QuickDecide (vectorised), then the others one by one.
      QuickRow(i, row_index);
      fallbacks += FinishRow(i, row_index);
    }
    exact_rows_.Flush();
    return fallbacks;
  }

 private:
  // Row i's elements written as QuickValue decides them.
  void QuickRow(std::int64_t i, std::size_t row_index) {
    // Locals, not members: g++ vectorises a loop only when it can check that its arrays do not
    // overlap in a few tests, so the loops below have few arrays each and no member to reload.
    const std::int64_t cols = t_.cols;
    const double up = up_, sub_up = sub_up_;
    const double error_factor = error_factor_, decision_factor = decision_factor_;
    const double* v = &w_.v(i, 0);
    const double* s = &w_.s(i, 0);
    double* exact = out_.exact.data() + row_index;
    double* exact_error = out_.exact_error.data() + row_index;
    double* abs_sum = out_.abs_sum.data() + row_index;
    // Empty when no input is subnormal (then neither is any of this tile's).
    double* subnormal_abs_sum =
        out_.subnormal_abs_sum.empty() ? nullptr : out_.subnormal_abs_sum.data() + row_index;
    double* quick = w_.quick.data();
    const double* sub = any_sub_ ? &w_.sub(i, 0) : nullptr;
    for (std::int64_t j = 0; j < cols; ++j) {
      // The decision covers the fast value's error and the exact path's own (FastRadius of K + 1,
      // see mm/oracle/exact_matmul.h), so a decided element is the exact path's, bit for bit.
      quick[j] = QuickValue<T>(v[j], RadiusFromRow(decision_factor, s[j]));
    }
    std::copy_n(v, cols, exact);
    for (std::int64_t j = 0; j < cols; ++j) {
      exact_error[j] = RadiusFromRow(error_factor, s[j]);
      abs_sum[j] = s[j] * up;
    }
    if (sub != nullptr) {
      for (std::int64_t j = 0; j < cols; ++j) subnormal_abs_sum[j] = sub[j] * sub_up;
    } else if (subnormal_abs_sum != nullptr) {
      std::fill_n(subnormal_abs_sum, cols, 0.0);
    }
    std::fill_n(out_.special.data() + row_index, cols, std::uint8_t{0});
  }

  // Row i's elements QuickValue left: decided one by one, or to the exact path. Returns how many
  // took the exact path.
  std::int64_t FinishRow(std::int64_t i, std::size_t row_index) {
    const std::int64_t k = plan_.k, n = plan_.n;
    const double* v = &w_.v(i, 0);
    const double* s = &w_.s(i, 0);
    T* y = out_.y.Data<T>();
    std::int64_t fallbacks = 0;
    const bool row_special = w_.row_special[static_cast<std::size_t>(i)] != 0;
    exact_rows_.StartRow(&w_.a(i, 0), b_mat_ + p_.j0 + t_.c0, row_index, t_.cols);
    for (std::int64_t j = 0; j < t_.cols; ++j) {
      const std::size_t index = row_index + static_cast<std::size_t>(j);
      const bool special = row_special || p_.col_special[static_cast<std::size_t>(t_.c0 + j)] != 0;
      if (!special && Decided(v[j], s[j], w_.quick[static_cast<std::size_t>(j)], index, y)) {
        continue;
      }
      ++fallbacks;
      if (special) {
        // From the inputs themselves: the tile holds 0 for their non-finite values.
        StoreExact<T>(ExactDot<T>(a_mat_ + (t_.i0 + i) * k, b_mat_ + p_.j0 + t_.c0 + j, k, n),
                      index, out_);
      } else if (any_sub_) {
        StoreExact<T>(ExactDot<T, double>(&w_.a(i, 0), &p_.b(0, t_.c0 + j), k, 1), index, out_);
      } else {
        exact_rows_.Mark(j, &p_.b(0, t_.c0 + j));
      }
    }
    exact_rows_.FinishRow();
    return fallbacks;
  }

  // Writes y[index] when the element (v, s, its QuickValue `quick`) is decided; false otherwise.
  bool Decided(double v, double s, double quick, std::size_t index, T* y) {
    if (s == 0) {
      y[index] = T(0.0f);
      out_.exact[index] = 0.0;
      return true;
    }
    if (!std::isnan(quick)) {
      y[index] = static_cast<T>(static_cast<float>(quick));
      return true;
    }
    T decided{};
    if (!Decide(v, RadiusFromRow(decision_factor_, s), &decided)) return false;
    y[index] = decided;
    return true;
  }

  const MatMulPlan& plan_;
  const T* a_mat_;
  const T* b_mat_;
  const Tile& t_;
  const Panel& p_;
  FloatWorkspace& w_;
  OracleResult& out_;
  const double up_, sub_up_, error_factor_, decision_factor_;
  ExactRows<T> exact_rows_;
  bool any_sub_ = false;  // An input of the tile's rows or the panel is subnormal in T.
};

}  // namespace

template <class T>
StatusOr<std::int64_t> FastFloatMatMul(const MatMulPlan& plan, const T* a, const T* b,
                                       OracleResult& out, const std::atomic<bool>* cancel) {
  return ForEachTile<Panel, FloatWorkspace>(
      plan, a, b, RowTile(plan.k), PanelCols(plan.k, plan.n),
      [&](const T* b_batch, std::int64_t j0, std::int64_t width, Panel& panel) {
        return ConvertPanel(b_batch, plan.k, plan.n, j0, width, panel);
      },
      [&](const T* a_batch, const T* b_batch, const Tile& t, const Panel& panel,
          FloatWorkspace& w) {
        return FloatTile<T>(plan, a_batch, b_batch, t, panel, w, out).Run(cancel);
      },
      cancel);
}

#define MM_FAST_FLOAT(T)                                                                    \
  template StatusOr<std::int64_t> FastFloatMatMul<T>(const MatMulPlan&, const T*, const T*, \
                                                     OracleResult&, const std::atomic<bool>*);
MM_FAST_FLOAT(float)
MM_FAST_FLOAT(float16)
MM_FAST_FLOAT(bfloat16)
#undef MM_FAST_FLOAT

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal
