// The fast path for double inputs (the argument is in mm/oracle/exact_matmul.h): per tile, the rows
// of A split against the panel's split columns of B, four double GEMMs, the decision of every
// element, and the exact path for those it leaves undecided. Compiled once per instruction-set
// level.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "decision.h"
#include "exact_rows.h"
#include "gemm.h"
#include "kernel_support.h"
#include "kernels.h"
#include "mm/oracle/error_bound.h"
#include "oracle_internal.h"
#include "radius.h"
#include "splitting.h"
#include "tiles.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

namespace {

// One thread's buffers for a tile of A's rows: [A1 | A2], [A12 | A2 | A3] and |A|, and the
// products.
struct DoubleWorkspace {
  static constexpr bool kKept = true;
  Matrix cross, rest, abs, p11, pc, r, s;
  GemmBuffers gemm;
  std::vector<SplitLine> lines;
};

// Columns [j0, j0 + cols) of one B matrix split: [B2; B1], [B3; B2; B] and |B|, shared.
struct DoublePanel {
  std::int64_t j0 = 0;
  ColMatrix cross, rest, abs;
  std::vector<SplitLine> lines;
};

// Columns of a double panel: six copies of each, so a quarter of the float panel's width.
std::int64_t DoublePanelCols(std::int64_t k, std::int64_t n) {
  return std::min(n, std::clamp<std::int64_t>(
                         (std::int64_t{1} << 19) / std::max<std::int64_t>(k, 1), 64, 4096));
}

bool ConvertDoublePanel(const double* b, std::int64_t k, std::int64_t n, std::int64_t j0,
                        std::int64_t cols, int tau, DoublePanel& p) {
  p.j0 = j0;
  Resize(p.cross, 2 * k, cols);
  Resize(p.rest, 3 * k, cols);
  Resize(p.abs, k, cols);
  p.lines.assign(static_cast<std::size_t>(cols), SplitLine{});
  const std::int64_t groups = (cols + kPanelGroup - 1) / kPanelGroup;
  struct NoWorkspace {};
  return Spread<NoWorkspace>(
      groups, Threads(groups, static_cast<double>(k * cols)), [&](std::int64_t g, NoWorkspace&) {
        for (std::int64_t j = g * kPanelGroup; j < std::min(cols, (g + 1) * kPanelGroup); ++j) {
          SplitLine& line = p.lines[static_cast<std::size_t>(j)];
          line = Examine(b + j0 + j, n, k);
          // B1 below B2 in `cross`; B3, B2, B in `rest`; h1 + h2 is not needed for B.
          double* const out[6] = {&p.cross(k, j), &p.cross(0, j),    &p.rest(2 * k, j),
                                  &p.rest(0, j),  &p.rest(2 * k, j), &p.abs(0, j)};
          SplitValues(b + j0 + j, n, k, line, tau, out, 1);
          for (std::int64_t q = 0; q < k; ++q) p.rest(k + q, j) = p.cross(q, j);
        }
      });
}

// Splits rows [i0, i0 + rows) of `a` (m x k) into the workspace.
void ConvertDoubleA(const double* a, std::int64_t k, std::int64_t i0, std::int64_t rows, int tau,
                    DoubleWorkspace& w) {
  Resize(w.cross, rows, 2 * k);
  Resize(w.rest, rows, 3 * k);
  Resize(w.abs, rows, k);
  w.lines.resize(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    const double* row = a + (i0 + i) * k;
    SplitLine& line = w.lines[static_cast<std::size_t>(i)];
    line = Examine(row, 1, k);
    // A2 is written twice (in `cross` and `rest`); x itself is not needed for A.
    double* const out[6] = {&w.cross(i, 0),    &w.cross(i, k),    &w.rest(i, 0),
                            &w.rest(i, 2 * k), &w.rest(i, 2 * k), &w.abs(i, 0)};
    SplitValues(row, 1, k, line, tau, out, 1);
    for (std::int64_t q = 0; q < k; ++q) w.rest(i, k + q) = w.cross(i, k + q);
  }
}

// Computes one double tile against the panel; returns the number of exact-path elements.
std::int64_t DoubleTile(const MatMulPlan& plan, const double* a_mat, const double* b_mat,
                        const Tile& t, const DoublePanel& p, int tau, DoubleWorkspace& w,
                        OracleResult& out, const std::atomic<bool>* cancel) {
  const std::int64_t k = plan.k, n = plan.n;
  ConvertDoubleA(a_mat, k, t.i0, t.rows, tau, w);
  for (Matrix* product : {&w.p11, &w.pc, &w.r, &w.s}) Resize(*product, t.rows, t.cols);
  w.gemm.Multiply(w.cross.leftCols(k), p.cross.block(k, t.c0, k, t.cols), w.p11);
  w.gemm.Multiply(w.cross, p.cross.middleCols(t.c0, t.cols), w.pc);
  w.gemm.Multiply(w.rest, p.rest.middleCols(t.c0, t.cols), w.r);
  w.gemm.Multiply(w.abs, p.abs.middleCols(t.c0, t.cols), w.s);
  const DoubleRadius radius = MakeDoubleRadius(k);
  const double up = 1 + Gamma(k + 1, 0x1p-53);
  double* y = out.y.Data<double>();
  std::int64_t fallbacks = 0;
  ExactRows<double> exact_rows(k, n, out);
  for (std::int64_t i = 0; i < t.rows && !Cancelled(cancel); ++i) {
    const SplitLine& row = w.lines[static_cast<std::size_t>(i)];
    const auto row_index =
        static_cast<std::size_t>((t.batch * plan.m + t.i0 + i) * n + p.j0 + t.c0);
    exact_rows.StartRow(a_mat + (t.i0 + i) * k, b_mat + p.j0 + t.c0, row_index, t.cols);
    for (std::int64_t j = 0; j < t.cols; ++j) {
      const std::size_t index = row_index + static_cast<std::size_t>(j);
      const SplitLine& col = p.lines[static_cast<std::size_t>(t.c0 + j)];
      const int exponent = row.exponent + col.exponent;
      const double s = w.s(i, j);
      double decided = 0;
      bool ok = row.usable && col.usable && s < kMaxDecided;
      if (ok && s > 0) {
        ok = exponent >= kMinElementExponent && exponent <= kMaxElementExponent;
        if (ok) {
          const double grid = std::ldexp(1.0, exponent - 2 * tau);
          const double r =
              SumUp(SumUp(MulUp(radius.remainder_factor, grid), MulUp(radius.dot2_factor, s)),
                    radius.underflow);
          ok = DecideNearest(w.p11(i, j), w.pc(i, j), w.r(i, j), r, &decided);
        }
      }
      if (ok) {
        y[index] = decided;
        out.exact[index] = decided;
        out.abs_sum[index] = s * up;
        if (!out.subnormal_abs_sum.empty()) out.subnormal_abs_sum[index] = 0;
        out.special[index] = 0;
        continue;
      }
      ++fallbacks;
      if (row.usable && col.usable) {
        // The panel's copy of B's column (contiguous, unlike B's).
        exact_rows.Mark(j, &p.rest(2 * k, t.c0 + j));
      } else {
        StoreExact<double>(ExactDot<double>(a_mat + (t.i0 + i) * k, b_mat + p.j0 + t.c0 + j, k, n),
                           index, out);
      }
    }
    exact_rows.FinishRow();
  }
  exact_rows.Flush();
  return fallbacks;
}

}  // namespace

StatusOr<std::int64_t> FastDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                                        OracleResult& out, const std::atomic<bool>* cancel) {
  const int tau = SliceBits(plan.k);
  if (tau < kMinSliceBits) {
    MM_RETURN_IF_ERROR(ExactDoubleMatMul(plan, a, b, out, cancel));
    return plan.y_elements;
  }
  // A's tiles hold six copies of their rows: half the float path's rows.
  return ForEachTile<DoublePanel, DoubleWorkspace>(
      plan, a, b, std::max<std::int64_t>(RowTile(plan.k) / 2, 32), DoublePanelCols(plan.k, plan.n),
      [&](const double* b_batch, std::int64_t j0, std::int64_t width, DoublePanel& panel) {
        return ConvertDoublePanel(b_batch, plan.k, plan.n, j0, width, tau, panel);
      },
      [&](const double* a_batch, const double* b_batch, const Tile& t, const DoublePanel& panel,
          DoubleWorkspace& w) {
        return DoubleTile(plan, a_batch, b_batch, t, panel, tau, w, out, cancel);
      },
      cancel);
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal
