// The kernels' threads and arithmetic: OpenMP tasks with per-thread workspaces kept from call to
// call, gradual underflow on every thread, cancellation, and sums and products rounded in a chosen
// direction.
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_KERNEL_SUPPORT_H_
#define MM_ORACLE_KERNELS_KERNEL_SUPPORT_H_

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "mm/engine/status.h"
#include "oracle_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Like Eigen's own GEMM, at most one thread per 50000 multiply-adds.
constexpr double kMinTaskWork = 50000;

// Gradual underflow (no flush-to-zero, no denormals-are-zero) on this thread while it lives: the
// bound assumes IEEE sums, and a library in the same process may have set either mode.
class GradualUnderflow {
 public:
#if defined(__x86_64__) || defined(__i386__)
  GradualUnderflow() : csr_(_mm_getcsr()) { _mm_setcsr(csr_ & ~kFlushBits); }
  ~GradualUnderflow() { _mm_setcsr(csr_); }

 private:
  static constexpr unsigned kFlushBits = 0x8040;  // FTZ | DAZ.
  unsigned csr_;
#endif
};

// Threads for `tasks` independent tasks of `work` multiply-adds in all.
inline int Threads(std::int64_t tasks, double work) {
  if (tasks < 2 || omp_in_parallel()) return 1;
  const double threads = std::min({static_cast<double>(omp_get_max_threads()),
                                   static_cast<double>(tasks), work / kMinTaskWork});
  return std::max(1, static_cast<int>(threads));
}

// Whether the caller asked the oracle to stop (OracleOptions::cancel).
inline bool Cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

inline Status CancelledStatus() { return CancelledError("ExactMatMul: cancelled"); }

// Workspaces of a type that declares kKept, kept from call to call (at most one per thread that
// ever ran a tile at once): their buffers, bounded by the tile sizes, are allocated and first
// touched once, not on every call. Any other type is made fresh for each call.
template <class W>
struct KeptWorkspaces {
  std::mutex mutex;
  std::vector<std::unique_ptr<W>> workspaces;

  // Never destroyed: threads may still hold workspaces when the process exits.
  static KeptWorkspaces& Get() {
    static auto* const kept = new KeptWorkspaces;
    return *kept;
  }
};

template <class W>
std::unique_ptr<W> TakeWorkspace() {
  if constexpr (requires { W::kKept; }) {
    auto& kept = KeptWorkspaces<W>::Get();
    const std::lock_guard<std::mutex> lock(kept.mutex);
    if (!kept.workspaces.empty()) {
      std::unique_ptr<W> w = std::move(kept.workspaces.back());
      kept.workspaces.pop_back();
      return w;
    }
  }
  return std::make_unique<W>();
}

template <class W>
void ReturnWorkspace(std::unique_ptr<W> w) {
  if constexpr (requires { W::kKept; }) {
    auto& kept = KeptWorkspaces<W>::Get();
    const std::lock_guard<std::mutex> lock(kept.mutex);
    try {
      kept.workspaces.push_back(std::move(w));
    } catch (const std::bad_alloc&) {
      // Not kept, then: a later call makes another.
    }
  }
}

// Runs task(0) .. task(count - 1) on `threads` threads; task(i, workspace) with one workspace per
// thread. False when a task ran out of memory (no exception may leave an OpenMP region).
template <class Workspace, class Task>
bool Spread(std::int64_t count, int threads, const Task& task) {
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(threads)
  {
    // Eigen's GEMM inside would otherwise open a nested team (a team of one is not an active
    // region) whose threads keep whatever flush-to-zero mode they have.
    omp_set_num_threads(1);
    GradualUnderflow gradual;
    std::unique_ptr<Workspace> workspace;
    try {
      workspace = TakeWorkspace<Workspace>();
    } catch (const std::bad_alloc&) {
      failed.store(true, std::memory_order_relaxed);
    }
#pragma omp for schedule(dynamic)
    for (std::int64_t i = 0; i < count; ++i) {
      if (workspace == nullptr) continue;
      try {
        task(i, *workspace);
      } catch (const std::bad_alloc&) {
        failed.store(true, std::memory_order_relaxed);
      }
    }
    if (workspace != nullptr) ReturnWorkspace(std::move(workspace));
  }
  return !failed.load();
}

// a + b rounded downward / upward (TwoSum's exact error gives the direction).
inline double SumDown(double a, double b) {
  const double s = a + b;
  const double z = s - a;
  const double e = (a - (s - z)) + (b - z);
  return e < 0 ? NextDown(s) : s;
}
inline double SumUp(double a, double b) {
  const double s = a + b;
  const double z = s - a;
  const double e = (a - (s - z)) + (b - z);
  return e > 0 ? NextUp(s) : s;
}

// a * b rounded upward, for a, b >= 0: fma's residual gives the direction, except where it may
// underflow (then one step up regardless).
inline double MulUp(double a, double b) {
  if (a == 0 || b == 0) return 0;
  const double p = a * b;
  return std::fma(a, b, -p) > 0 || p < 0x1p-960 ? NextUp(p) : p;
}

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_KERNEL_SUPPORT_H_
