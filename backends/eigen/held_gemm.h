// The eigen backend's one row-major product: Eigen's own GEMM, with its packing buffers held by the
// calling thread instead of allocated by every call.
#ifndef MM_BACKENDS_EIGEN_HELD_GEMM_H_
#define MM_BACKENDS_EIGEN_HELD_GEMM_H_

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace mm::eigen_internal {

// A grow-only 64-byte-aligned buffer of the calling thread, one per scalar type and `Slot`; it
// lives as long as the thread. Throws std::bad_alloc when it cannot grow.
template <class S, int Slot>
S* ThreadBuffer(std::size_t count) {
  struct Buffer {
    S* data = nullptr;
    std::size_t count = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (buffer.count < count) {
    std::free(buffer.data);
    buffer.count = 0;
    const std::size_t bytes = (count * sizeof(S) + 63) / 64 * 64;
    buffer.data = static_cast<S*>(std::aligned_alloc(64, bytes));
    if (buffer.data == nullptr) throw std::bad_alloc();
    buffer.count = count;
  }
  return buffer.data;
}

// Eigen's blocking of an m x k times k x n product with a row-major result (the sizes its own
// product computes, for one thread), on the calling thread's buffers. Eigen transposes a
// row-major product, so its "rows" are n.
template <class S>
class HeldBlocking final : public Eigen::internal::level3_blocking<S, S> {
 public:
  HeldBlocking(Eigen::Index m, Eigen::Index k, Eigen::Index n) {
    this->m_mc = n;
    this->m_nc = m;
    this->m_kc = k;
    Eigen::internal::computeProductBlockingSizes<S, S, 1>(this->m_kc, this->m_mc, this->m_nc,
                                                          Eigen::Index{1});
    this->m_blockA = ThreadBuffer<S, 0>(static_cast<std::size_t>(this->m_mc * this->m_kc));
    this->m_blockB = ThreadBuffer<S, 1>(static_cast<std::size_t>(this->m_kc * this->m_nc));
  }
};

// Whether Eigen's product of these extents runs its GEMM on one thread: its own rule
// (parallelize_gemm in Eigen's Parallelizer.h, for a row-major result): at most one thread per nr
// rows and per 50000 multiply-adds, at most nbThreads(), and one inside a parallel region.
template <class S>
bool EigenGemmRunsOnOneThread(Eigen::Index m, Eigen::Index k, Eigen::Index n) {
  if (omp_get_num_threads() > 1) return true;
  const Eigen::Index by_rows =
      std::max<Eigen::Index>(1, m / Eigen::internal::gebp_traits<S, S>::nr);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const Eigen::Index by_work = static_cast<Eigen::Index>(work / 50000);
  const Eigen::Index threads = std::min<Eigen::Index>(
      Eigen::nbThreads(), std::max<Eigen::Index>(1, std::min(by_rows, by_work)));
  return threads == 1;
}

// Y = A x B for row-major m x k and k x n matrices (every extent > 0): what
// `y.noalias() = a * b` computes, bit for bit. Where Eigen would run its GEMM on one thread, the
// same GEMM runs on HeldBlocking: Eigen's product allocates its packing blocks on every call
// (from the heap above 128 KB), and page faults on those made eigen's bfloat16 256^3 take 0.41 ms
// against 0.34 ms, depending on what the process had allocated before. GEMV (m or n is 1), the
// coefficient-based products of tiny sizes, and Eigen's parallel GEMM go through Eigen's product.
// Throws std::bad_alloc when a buffer cannot grow.
template <class S>
void HeldGemm(const S* a, const S* b, S* y, Eigen::Index m, Eigen::Index k, Eigen::Index n) {
  using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const bool gemm = m > 1 && n > 1 && k + m + n >= EIGEN_GEMM_TO_COEFFBASED_THRESHOLD;
  if (!gemm || !EigenGemmRunsOnOneThread<S>(m, k, n)) {
    Eigen::Map<Matrix>(y, m, n).noalias() =
        Eigen::Map<const Matrix>(a, m, k) * Eigen::Map<const Matrix>(b, k, n);
    return;
  }
  HeldBlocking<S> blocking(m, k, n);
  std::fill(y, y + m * n, S(0));
  Eigen::internal::general_matrix_matrix_product<Eigen::Index, S, Eigen::RowMajor, false, S,
                                                 Eigen::RowMajor, false, Eigen::RowMajor,
                                                 1>::run(m, n, k, a, k, b, n, y, 1, n, S(1),
                                                         blocking, nullptr);
}

}  // namespace mm::eigen_internal

#endif  // MM_BACKENDS_EIGEN_HELD_GEMM_H_
