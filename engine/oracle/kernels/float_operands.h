// The float path's operands: tiles of A and panels of B widened to double with their magnitudes,
// the non-finite lines marked, and the part of S from terms with a subnormal input.
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_FLOAT_OPERANDS_H_
#define MM_ORACLE_KERNELS_FLOAT_OPERANDS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "gemm.h"
#include "kernel_support.h"
#include "mm/engine/dtype.h"
#include "tiles.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

template <class T>
bool IsSubnormalIn(double x) {
  const double min_normal = std::is_same_v<T, float16> ? 0x1p-14 : 0x1p-126;
  return x != 0 && std::fabs(x) < min_normal;
}

// One thread's buffers for a tile of A's rows, reused from tile to tile. A's rows are contiguous,
// so the exact path can run on them too.
// An input subnormal in T: its row and column (within a tile of A or a panel of B) and magnitude.
struct SubnormalInput {
  std::int64_t row, col;
  double magnitude;
};

// Subnormal inputs are rare in most data: their terms of S are then added one by one. When more
// than one input in kSparseSubnormals is subnormal, a GEMM over their magnitudes does it instead.
constexpr std::int64_t kSparseSubnormals = 64;

struct FloatWorkspace {
  static constexpr bool kKept = true;
  Matrix a, a_abs, a_sub, v, s, sub;
  GemmBuffers gemm;
  std::vector<std::uint8_t> row_special;
  std::vector<double> quick;  // One row's QuickValue.
  std::vector<SubnormalInput> a_subnormals;
};

// Columns [j0, j0 + cols) of one B matrix in double, converted once and shared by every thread's
// row tiles (column-major: a column is contiguous for the exact path).
struct Panel {
  std::int64_t j0 = 0;
  ColMatrix b, b_abs;
  std::vector<std::uint8_t> col_special, col_subnormal;
  bool subnormal = false;
  // T's subnormals among the panel's inputs: listed by column when few, else as the magnitudes
  // of the subnormals only (b_sub, zero elsewhere).
  bool dense_subnormals = false;
  std::vector<SubnormalInput> b_subnormals;
  ColMatrix b_sub;
};

// Widens count values of T at `from` (stride apart) into `to` and their magnitudes into `abs`,
// non-finite ones as 0. Sets *special when one was non-finite and *subnormal when one is
// subnormal in T. Branch-free, so that it vectorises.
template <class T>
void Widen(const T* from, std::int64_t stride, std::int64_t count, double* to, double* abs,
           std::uint8_t* special, std::uint8_t* subnormal) {
  constexpr double kMinNormal = std::is_same_v<T, float16> ? 0x1p-14 : 0x1p-126;
  int any_special = 0, any_subnormal = 0;
  for (std::int64_t p = 0; p < count; ++p) {
    const double x = ToDouble(from[p * stride]);
    const double magnitude = std::fabs(x);
    const int finite = magnitude <= std::numeric_limits<double>::max();
    any_special |= 1 - finite;
    any_subnormal |= static_cast<int>(magnitude < kMinNormal) & static_cast<int>(magnitude != 0);
    to[p] = finite ? x : 0.0;
    abs[p] = finite ? magnitude : 0.0;
  }
  *special |= static_cast<std::uint8_t>(any_special);
  *subnormal |= static_cast<std::uint8_t>(any_subnormal);
}

// Converts rows [i0, i0 + rows) of `a` (m x k) into the workspace; true when one is subnormal.
template <class T>
bool ConvertA(const T* a, std::int64_t k, std::int64_t i0, std::int64_t rows, FloatWorkspace& w) {
  Resize(w.a, rows, k);
  Resize(w.a_abs, rows, k);
  w.row_special.assign(static_cast<std::size_t>(rows), 0);
  std::uint8_t subnormal = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    Widen(a + (i0 + i) * k, 1, k, &w.a(i, 0), &w.a_abs(i, 0),
          &w.row_special[static_cast<std::size_t>(i)], &subnormal);
  }
  return subnormal != 0;
}

// The magnitudes of T's subnormals only.
template <class T, class M>
M SubnormalPart(const M& magnitudes) {
  return magnitudes.unaryExpr([](double x) { return IsSubnormalIn<T>(x) ? x : 0.0; });
}

// Appends the subnormals in T of `magnitudes` (a row or column of a tile or panel, at `row` and
// `col`, the other coordinate counting along it) to `list`; false, once the list holds more than
// `most`.
template <class T, class Vector>
bool ListSubnormals(const Vector& magnitudes, std::int64_t row, std::int64_t col, std::int64_t most,
                    std::vector<SubnormalInput>& list) {
  constexpr bool kAlongRow = Vector::IsRowMajor;
  for (Eigen::Index q = 0; q < magnitudes.size(); ++q) {
    const double x = magnitudes(q);
    if (!IsSubnormalIn<T>(x)) continue;
    list.push_back({kAlongRow ? row : q, kAlongRow ? q : col, x});
    if (static_cast<std::int64_t>(list.size()) > most) return false;
  }
  return true;
}

// Fills `p` with columns [j0, j0 + cols) of `b` (k x n), groups of columns on the threads.
template <class T>
bool ConvertPanel(const T* b, std::int64_t k, std::int64_t n, std::int64_t j0, std::int64_t cols,
                  Panel& p) {
  p.j0 = j0;
  Resize(p.b, k, cols);
  Resize(p.b_abs, k, cols);
  p.col_special.assign(static_cast<std::size_t>(cols), 0);
  p.col_subnormal.assign(static_cast<std::size_t>(cols), 0);
  const std::int64_t groups = (cols + kPanelGroup - 1) / kPanelGroup;
  struct NoWorkspace {};
  const bool ok = Spread<NoWorkspace>(
      groups, Threads(groups, static_cast<double>(k * cols)), [&](std::int64_t g, NoWorkspace&) {
        for (std::int64_t j = g * kPanelGroup; j < std::min(cols, (g + 1) * kPanelGroup); ++j) {
          const auto u = static_cast<std::size_t>(j);
          Widen(b + j0 + j, n, k, &p.b(0, j), &p.b_abs(0, j), &p.col_special[u],
                &p.col_subnormal[u]);
        }
      });
  p.subnormal = std::any_of(p.col_subnormal.begin(), p.col_subnormal.end(),
                            [](std::uint8_t x) { return x != 0; });
  p.b_subnormals.clear();
  p.dense_subnormals = false;
  if (p.subnormal) {
    const std::int64_t most = k * cols / kSparseSubnormals;
    for (std::int64_t j = 0; j < cols && !p.dense_subnormals; ++j) {
      if (p.col_subnormal[static_cast<std::size_t>(j)] == 0) continue;
      p.dense_subnormals = !ListSubnormals<T>(p.b_abs.col(j), 0, j, most, p.b_subnormals);
    }
    if (p.dense_subnormals) p.b_sub = SubnormalPart<T>(p.b_abs);
  }
  return ok;
}

// The part of S from terms with a subnormal input: |A_sub| |B| + (|A| - |A_sub|) |B_sub|, so no
// term counts twice. Nonnegative terms, at most 2K per element, in any order: exact_matmul.h's
// bound holds for the term-by-term sums as for the GEMMs.
template <class T>
void SubnormalSums(const Panel& p, const Tile& t, bool a_subnormal, FloatWorkspace& w) {
  const auto b_abs = p.b_abs.middleCols(t.c0, t.cols);
  const std::int64_t k = w.a_abs.cols();
  w.a_subnormals.clear();
  bool a_dense = false;
  for (std::int64_t i = 0; a_subnormal && i < t.rows && !a_dense; ++i) {
    a_dense =
        !ListSubnormals<T>(w.a_abs.row(i), i, 0, t.rows * k / kSparseSubnormals, w.a_subnormals);
  }
  if (a_dense || p.dense_subnormals) w.a_sub = SubnormalPart<T>(w.a_abs);
  if (a_dense) {
    w.sub.noalias() = w.a_sub * b_abs;
  } else {
    Resize(w.sub, t.rows, t.cols);
    w.sub.setZero();
    for (const SubnormalInput& e : w.a_subnormals)
      w.sub.row(e.row) += e.magnitude * b_abs.row(e.col);
  }
  if (!p.subnormal) return;
  if (p.dense_subnormals) {
    w.a_sub = w.a_abs - w.a_sub;
    w.sub.noalias() += w.a_sub * p.b_sub.middleCols(t.c0, t.cols);
    return;
  }
  const auto by_col = [](const SubnormalInput& e, std::int64_t col) { return e.col < col; };
  auto e = std::lower_bound(p.b_subnormals.begin(), p.b_subnormals.end(), t.c0, by_col);
  for (; e != p.b_subnormals.end() && e->col < t.c0 + t.cols; ++e) {
    for (std::int64_t i = 0; i < t.rows; ++i) {
      const double a = w.a_abs(i, e->row);
      if (!IsSubnormalIn<T>(a)) w.sub(i, e->col - t.c0) += a * e->magnitude;
    }
  }
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_FLOAT_OPERANDS_H_
