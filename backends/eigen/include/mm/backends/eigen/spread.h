// How the eigen backend spreads independent single-threaded Eigen products over OpenMP threads
// (MatMul's batches and row blocks, Gemm's row blocks). Internal to the backend.
#ifndef MM_BACKENDS_EIGEN_SPREAD_H_
#define MM_BACKENDS_EIGEN_SPREAD_H_

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

namespace mm::eigen_internal {

// Eigen's GEMM gives one thread at most every 50000 multiply-adds (kMinTaskSize in Eigen's
// Parallelizer.h); we use the same grain: less work per thread does not pay for the parallel
// region.
inline constexpr double kEigenMinTaskSize = 50000;

// Rows of a block when a product is split over threads: a multiple of 8, so blocks keep whole
// register tiles of Eigen's kernels.
inline constexpr std::int64_t kRowAlignment = 8;

// Threads to spread `tasks` independent products totalling `work` multiply-adds over: at most one
// per task and, like Eigen's own GEMM, at most one per kEigenMinTaskSize multiply-adds (so a tiny
// product never pays for a parallel region).
inline int SpreadThreads(std::int64_t tasks, double work) {
  if (tasks < 2 || omp_in_parallel()) return 1;
  const double threads = std::min({static_cast<double>(omp_get_max_threads()),
                                   static_cast<double>(tasks), work / kEigenMinTaskSize});
  return std::max(1, static_cast<int>(threads));
}

// Runs task(0) .. task(count - 1) on `threads` OpenMP threads, each product single-threaded
// (Eigen does not nest parallelism). Returns false when a task ran out of memory: std::bad_alloc is
// caught where it is raised, since an exception must not leave an OpenMP region.
template <class Task>
bool Spread(std::int64_t count, int threads, const Task& task) {
  std::atomic<bool> failed{false};
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    try {
      task(i);
    } catch (const std::bad_alloc&) {
      failed.store(true, std::memory_order_relaxed);
    }
  }
  return !failed.load();
}

}  // namespace mm::eigen_internal

#endif  // MM_BACKENDS_EIGEN_SPREAD_H_
