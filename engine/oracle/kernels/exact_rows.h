// The exact path inside the fast paths' tiles: the elements they leave undecided, computed with
// ExactDot's operations in its order (the same bits) but several at a time: eight interleaved
// chains (the groups), or a whole chunk of a row's columns (the row kernel).
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_EXACT_ROWS_H_
#define MM_ORACLE_KERNELS_EXACT_ROWS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/oracle/error_bound.h"
#include "oracle_internal.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// Writes one element of the exact path at `index`.
template <class T>
void StoreExact(const ExactElement& e, std::size_t index, OracleResult& out) {
  out.y.Data<T>()[index] = RoundFromDouble<T>(e.exact);
  out.exact[index] = e.exact;
  if (!out.exact_error.empty()) out.exact_error[index] = 0;
  out.abs_sum[index] = e.abs_sum;
  if (!out.subnormal_abs_sum.empty()) out.subnormal_abs_sum[index] = e.subnormal_abs_sum;
  out.special[index] = e.special ? 1 : 0;
}

// One term x * w of the exact path's Dot2 added to an element's sums: ExactDot's operations in
// its order (TwoProduct, TwoSum, the absolute sum), so the same bits.
inline void AddExactTerm(double x, double w, double& hi, double& lo, double& abs) {
  abs += std::fabs(x) * std::fabs(w);
  const double prod = x * w;
  const double prod_err = std::fma(x, w, -prod);
  const double sum = hi + prod;
  const double z = sum - hi;
  const double sum_err = (hi - (sum - z)) + (prod - z);
  hi = sum;
  lo += sum_err + prod_err;
}

// An element's exact value from its sums, as ExactDot forms it for finite inputs: where the double
// sums overflow, WideDot over its terms a[p] b[p * stride].
template <class V>
double ExactFromSums(double hi, double lo, double abs, const double* a, const V* b, std::int64_t k,
                     std::int64_t stride) {
  const double exact = hi + lo;
  return std::isfinite(abs) && std::isfinite(exact) ? exact : WideDot(a, b, k, 1, stride);
}

// Elements of the exact path computed together.
constexpr int kExactGroup = 8;

// The exact path for a tile's elements whose inputs are all finite and normal or zero, in double
// and in T (no special, no subnormal part): each element's operations are ExactDot's in its
// order, so the same bits, but kExactGroup elements run interleaved. One element's Dot2 is a chain
// of dependent additions and waits on their latency; independent chains side by side do not.
template <class T>
class ExactGroups {
 public:
  ExactGroups(std::int64_t k, OracleResult& out) : k_(k), out_(out) {}
  ExactGroups(const ExactGroups&) = delete;
  ExactGroups& operator=(const ExactGroups&) = delete;

  // Queues the element at `index`: the dot product of a[0..k) and b[0..k) (both contiguous,
  // alive until the next Flush). Computes the queue when it is full; the caller flushes the rest.
  void Add(const double* a, const double* b, std::size_t index) {
    queued_[count_++] = {a, b, index};
    if (count_ == kExactGroup) Flush();
  }

  // Computes and stores the queued elements.
  void Flush() {
    if (count_ == 0) return;
    const double* a[kExactGroup];
    const double* b[kExactGroup];
    for (int g = 0; g < kExactGroup; ++g) {
      // A partial group repeats its last element; those copies are not stored.
      const Queued& q = queued_[std::min(g, count_ - 1)];
      a[g] = q.a;
      b[g] = q.b;
    }
    double hi[kExactGroup] = {}, lo[kExactGroup] = {}, abs[kExactGroup] = {};
    for (std::int64_t p = 0; p < k_; ++p) {
      for (int g = 0; g < kExactGroup; ++g) AddExactTerm(a[g][p], b[g][p], hi[g], lo[g], abs[g]);
    }
    const double up = 1 + Gamma(k_ + 1, 0x1p-53);
    for (int g = 0; g < count_; ++g) {
      StoreExact<T>(
          {ExactFromSums(hi[g], lo[g], abs[g], a[g], b[g], k_, 1), abs[g] * up, 0.0, false},
          queued_[g].index, out_);
    }
    count_ = 0;
  }

 private:
  struct Queued {
    const double* a;
    const double* b;
    std::size_t index;
  };
  std::int64_t k_;
  OracleResult& out_;
  Queued queued_[kExactGroup];
  int count_ = 0;
};

// Columns of one pass of a row kernel of the exact path: its four running sums stay in the L1
// cache.
constexpr std::int64_t kRowChunk = 256;

// A tile row's elements of the exact path, whose inputs are all finite and normal or zero in
// double and in T: marked one by one, then computed together. Where marked elements fill a third
// or more of a chunk of the row's columns, the chunk is computed whole with the columns in the
// inner loop (vectorised; the unmarked columns' values are not kept), else the marked elements go
// to the groups. Either way each element has ExactDot's operations in its order: the same bits.
template <class T>
class ExactRows {
 public:
  ExactRows(std::int64_t k, std::int64_t n, OracleResult& out)
      : k_(k), n_(n), out_(out), groups_(k, out) {}

  // Starts a row of `cols` elements: A's row (contiguous, in double), B's columns from `b` on
  // (row-major, stride n), the output index of the row's first element.
  void StartRow(const double* a_row, const T* b, std::size_t row_index, std::int64_t cols) {
    a_row_ = a_row;
    b_ = b;
    row_index_ = row_index;
    columns_.assign(static_cast<std::size_t>(cols), nullptr);
  }

  // Marks column j of the row; `column` is B's column j, contiguous, alive until Flush.
  void Mark(std::int64_t j, const double* column) {
    columns_[static_cast<std::size_t>(j)] = column;
  }

  // Computes the row's marked elements, or queues them in the groups.
  void FinishRow() {
    const auto cols = static_cast<std::int64_t>(columns_.size());
    for (std::int64_t c0 = 0; c0 < cols; c0 += kRowChunk) {
      const std::int64_t width = std::min(kRowChunk, cols - c0);
      const auto first = columns_.begin() + c0;
      const std::int64_t marked =
          std::count_if(first, first + width, [](const double* c) { return c != nullptr; });
      if (marked == 0) continue;
      if (3 * marked >= width) {
        Chunk(c0, width);
        continue;
      }
      for (std::int64_t j = c0; j < c0 + width; ++j) {
        const double* column = columns_[static_cast<std::size_t>(j)];
        if (column != nullptr) {
          groups_.Add(a_row_, column, row_index_ + static_cast<std::size_t>(j));
        }
      }
    }
  }

  // Computes what the groups still hold: after the tile's last row.
  void Flush() { groups_.Flush(); }

 private:
  // Columns [c0, c0 + width) of the row, the marked ones stored.
  void Chunk(std::int64_t c0, std::int64_t width) {
    double hi[kRowChunk] = {}, lo[kRowChunk] = {}, abs[kRowChunk] = {};
    for (std::int64_t p = 0; p < k_; ++p) {
      const double x = a_row_[p];
      const T* w = b_ + p * n_ + c0;
      for (std::int64_t j = 0; j < width; ++j) {
        AddExactTerm(x, ToDouble(w[j]), hi[j], lo[j], abs[j]);
      }
    }
    const double up = 1 + Gamma(k_ + 1, 0x1p-53);
    for (std::int64_t j = 0; j < width; ++j) {
      if (columns_[static_cast<std::size_t>(c0 + j)] == nullptr) continue;
      const double exact = ExactFromSums(hi[j], lo[j], abs[j], a_row_, b_ + c0 + j, k_, n_);
      StoreExact<T>({exact, abs[j] * up, 0.0, false}, row_index_ + static_cast<std::size_t>(c0 + j),
                    out_);
    }
  }

  std::int64_t k_, n_;
  OracleResult& out_;
  ExactGroups<T> groups_;
  const double* a_row_ = nullptr;
  const T* b_ = nullptr;
  std::size_t row_index_ = 0;
  std::vector<const double*> columns_;  // Per column of the row: B's column if marked, else null.
};

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_EXACT_ROWS_H_
