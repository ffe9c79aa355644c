// The fast paths' panels-and-tiles loop: B's columns converted a panel at a time and shared, A's
// rows a tile at a time per thread.
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_TILES_H_
#define MM_ORACLE_KERNELS_TILES_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

#include "kernel_support.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// Rows of a tile of A: the tile's double copies stay a few MB.
inline std::int64_t RowTile(std::int64_t k) {
  return std::clamp<std::int64_t>((std::int64_t{1} << 19) / std::max<std::int64_t>(k, 1), 32, 256);
}
// Columns of a panel of B: wide, so that each tile's GEMMs run long, within a bounded copy.
inline std::int64_t PanelCols(std::int64_t k, std::int64_t n) {
  return std::min(n, std::clamp<std::int64_t>(
                         (std::int64_t{1} << 21) / std::max<std::int64_t>(k, 1), 64, 4096));
}
// Columns one thread converts at a time.
constexpr std::int64_t kPanelGroup = 32;

// A tile: rows [i0, i0 + rows) of batch entry `batch` against the panel's columns [c0, c0 + cols).
struct Tile {
  std::int64_t batch, i0, rows, c0, cols;
};

// The panels-and-tiles loop of the fast paths: for each batch entry and each panel of `cols` of B's
// columns, convert(b_batch, j0, width, panel) fills the shared panel, then tile(a_batch, b_batch,
// Tile, panel, workspace) runs for every tile of `rows` of A's rows (the panel's columns split too
// when A is short) on the threads and returns its exact-path count. Once `cancel` is true, no
// further panel or tile starts: kCancelled.
template <class Panel, class Workspace, class T, class Convert, class TileFn>
StatusOr<std::int64_t> ForEachTile(const MatMulPlan& plan, const T* a, const T* b,
                                   std::int64_t rows, std::int64_t cols, const Convert& convert,
                                   const TileFn& run_tile, const std::atomic<bool>* cancel) {
  const std::int64_t row_tiles = (plan.m + rows - 1) / rows;
  // Few row tiles (a short A): the panel's columns are split too, so every thread has work.
  const std::int64_t splits = std::clamp<std::int64_t>(2 * omp_get_max_threads() / row_tiles, 1,
                                                       std::max<std::int64_t>(cols / 64, 1));
  const std::int64_t split_cols = (cols + splits - 1) / splits;
  std::atomic<std::int64_t> fallbacks{0};
  Panel panel;
  try {
    for (std::int64_t batch = 0; batch < plan.batch; ++batch) {
      // Pointers, not a structured binding: clang 14 (the fuzz build) cannot capture a binding.
      const auto offsets = plan.BatchOffsets(batch);
      const T* a_batch = a + offsets.first;
      const T* b_batch = b + offsets.second;
      for (std::int64_t j0 = 0; j0 < plan.n; j0 += cols) {
        const std::int64_t width = std::min(cols, plan.n - j0);
        const std::int64_t tasks = row_tiles * ((width + split_cols - 1) / split_cols);
        const double work = static_cast<double>(plan.m * width) * static_cast<double>(plan.k);
        const auto tile = [&](std::int64_t task, Workspace& w) {
          if (Cancelled(cancel)) return;
          const std::int64_t i0 = task % row_tiles * rows, c0 = task / row_tiles * split_cols;
          const Tile t{batch, i0, std::min(rows, plan.m - i0), c0,
                       std::min(split_cols, width - c0)};
          fallbacks.fetch_add(run_tile(a_batch, b_batch, t, panel, w), std::memory_order_relaxed);
        };
        if (Cancelled(cancel)) return CancelledStatus();
        if (!convert(b_batch, j0, width, panel) ||
            !Spread<Workspace>(tasks, Threads(tasks, work), tile)) {
          return ResourceExhaustedError("ExactMatMul: out of memory for the oracle's tiles");
        }
        if (Cancelled(cancel)) return CancelledStatus();
      }
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("ExactMatMul: out of memory for the oracle's panel of B");
  }
  return fallbacks.load();
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_TILES_H_
