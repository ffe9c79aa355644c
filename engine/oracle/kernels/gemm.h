// The kernels' double matrices and Eigen's single-threaded GEMM on them, with its packing
// buffers kept from tile to tile.
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_GEMM_H_
#define MM_ORACLE_KERNELS_GEMM_H_

#include <Eigen/Core>
#include <cstddef>
#include <memory>
#include <vector>

#include "oracle_internal.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// Resizes an Eigen matrix, its storage advised for huge pages before it is written.
template <class M>
void Resize(M& m, Eigen::Index rows, Eigen::Index cols) {
  m.resize(rows, cols);
  AdviseHugePages(m.data(), static_cast<std::size_t>(m.size()) * sizeof(typename M::Scalar));
}

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// Eigen's packing buffers for each product shape, kept from tile to tile: Eigen's own product
// allocates them afresh on every call, and the first touch of each of their pages is a fault.
class GemmBuffers {
 public:
  // out = a * b through Eigen's single-threaded GEMM, for a row-major a (a block of rows or
  // columns is fine), column-major columns b and a row-major out already of the product's size.
  template <class A, class B>
  void Multiply(const A& a, const B& b, Matrix& out) {
    static_assert(A::IsRowMajor && !B::IsRowMajor, "row-major A, column-major B");
    out.setZero();  // Eigen's kernel adds the product to out.
    if (out.size() == 0 || a.cols() == 0) return;
    using Gemm =
        Eigen::internal::general_matrix_matrix_product<Eigen::Index, double, Eigen::RowMajor, false,
                                                       double, Eigen::ColMajor, false,
                                                       Eigen::RowMajor, 1>;
    Gemm::run(a.rows(), b.cols(), a.cols(), a.data(), a.outerStride(), b.data(), b.outerStride(),
              out.data(), 1, out.outerStride(), 1.0, For(a.rows(), b.cols(), a.cols()));
  }

 private:
  using Blocking =
      Eigen::internal::gemm_blocking_space<Eigen::RowMajor, double, double, Eigen::Dynamic,
                                           Eigen::Dynamic, Eigen::Dynamic>;
  struct Entry {
    Eigen::Index rows, cols, depth;
    std::unique_ptr<Blocking> blocking;
  };

  // The buffers for a rows x depth by depth x cols product, made on first use (as Eigen's own
  // product makes them: one thread, blocking for the last-level cache too).
  Blocking& For(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth) {
    for (Entry& entry : entries_) {
      if (entry.rows == rows && entry.cols == cols && entry.depth == depth) return *entry.blocking;
    }
    // A workspace kept by its thread meets many shapes over a campaign: the oldest go.
    if (entries_.size() >= kMaxShapes) entries_.erase(entries_.begin());
    auto blocking = std::make_unique<Blocking>(rows, cols, depth, 1, true);
    blocking->allocateAll();
    entries_.push_back({rows, cols, depth, std::move(blocking)});
    return *entries_.back().blocking;
  }

  // The double path's tiles have three product depths; a fourth for the last tile's shape.
  static constexpr std::size_t kMaxShapes = 4;
  std::vector<Entry> entries_;
};

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_GEMM_H_
