// The oracle's fast paths and exact paths (engine/oracle_internal.h; the argument is in
// engine/error_bound.h): the GEMM-heavy kernels, compiled once per instruction-set level into the
// namespace MM_ISA_NAMESPACE (cmake/IsaKernels.cmake), each copy reached only through its table
// (oracle_kernels.h), which the end of this file defines.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "mm/engine/oracle_internal.h"
#include "oracle_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

namespace {

// Resizes an Eigen matrix, its storage advised for huge pages before it is written.
template <class M>
void Resize(M& m, Eigen::Index rows, Eigen::Index cols) {
  m.resize(rows, cols);
  AdviseHugePages(m.data(), static_cast<std::size_t>(m.size()) * sizeof(typename M::Scalar));
}

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
int Threads(std::int64_t tasks, double work) {
  if (tasks < 2 || omp_in_parallel()) return 1;
  const double threads = std::min({static_cast<double>(omp_get_max_threads()),
                                   static_cast<double>(tasks), work / kMinTaskWork});
  return std::max(1, static_cast<int>(threads));
}

// Whether the caller asked the oracle to stop (OracleOptions::cancel).
inline bool Cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

Status CancelledStatus() { return CancelledError("ExactMatMul: cancelled"); }

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
double SumDown(double a, double b) {
  const double s = a + b;
  const double z = s - a;
  const double e = (a - (s - z)) + (b - z);
  return e < 0 ? NextDown(s) : s;
}
double SumUp(double a, double b) {
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

template <class T>
bool IsSubnormalIn(double x) {
  const double min_normal = std::is_same_v<T, float16> ? 0x1p-14 : 0x1p-126;
  return x != 0 && std::fabs(x) < min_normal;
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

// Rows of a tile of A: the tile's double copies stay a few MB.
std::int64_t RowTile(std::int64_t k) {
  return std::clamp<std::int64_t>((std::int64_t{1} << 19) / std::max<std::int64_t>(k, 1), 32, 256);
}
// Columns of a panel of B: wide, so that each tile's GEMMs run long, within a bounded copy.
std::int64_t PanelCols(std::int64_t k, std::int64_t n) {
  return std::min(n, std::clamp<std::int64_t>(
                         (std::int64_t{1} << 21) / std::max<std::int64_t>(k, 1), 64, 4096));
}
// Columns one thread converts at a time.
constexpr std::int64_t kPanelGroup = 32;

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

// A tile: rows [i0, i0 + rows) of batch entry `batch` against the panel's columns [c0, c0 + cols).
struct Tile {
  std::int64_t batch, i0, rows, c0, cols;
};

// The part of S from terms with a subnormal input: |A_sub| |B| + (|A| - |A_sub|) |B_sub|, so no
// term counts twice. Nonnegative terms, at most 2K per element, in any order: error_bound.h's
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

// T's spacing: significand bits (with the implicit one), smallest normal exponent, largest value.
template <class T>
struct FloatFormat;
template <>
struct FloatFormat<float> {
  static constexpr int kDigits = 24, kMinExponent = -126;
  static constexpr double kMax = 0x1.fffffep127;
};
template <>
struct FloatFormat<float16> {
  static constexpr int kDigits = 11, kMinExponent = -14;
  static constexpr double kMax = 65504;
};
template <>
struct FloatFormat<bfloat16> {
  static constexpr int kDigits = 8, kMinExponent = -126;
  static constexpr double kMax = 0x1.fep127;
};

// 2^e as a double, for e within the normal range.
inline double PowerOfTwo(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// Decide's common case without its directed sums and two roundings: with q the spacing of T at v
// and n = v / q rounded to an integer, every real within r of v rounds to n q when the distance
// from v to the nearer midpoint, (1/2 - |v / q - n|) q, exceeds r (each step exact: powers of two
// and Sterbenz's lemma). Returns n q, or NaN for Decide to look further: at zero, beyond T's
// largest value and at the first value of a binade, where the spacing below is half the spacing
// above. Without branches, so that a row of them vectorises.
template <class T>
inline double QuickValue(double v, double r) {
  using Format = FloatFormat<T>;
  const double magnitude = std::fabs(v);
  const auto exponent =
      static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(magnitude) >> 52) - 1023;
  const std::int64_t scale =
      std::max<std::int64_t>(exponent, Format::kMinExponent) - (Format::kDigits - 1);
  const double unit = std::bit_cast<double>(static_cast<std::uint64_t>(scale + 1023) << 52);
  const double scaled = v * std::bit_cast<double>(static_cast<std::uint64_t>(1023 - scale) << 52);
  const double n = std::rint(scaled);
  const double value = n * unit;
  const bool first_of_binade =
      (std::fabs(n) == PowerOfTwo(Format::kDigits - 1)) & (exponent > Format::kMinExponent);
  const bool decided = (magnitude <= Format::kMax) & (n != 0) &
                       ((0.5 - std::fabs(scaled - n)) * unit > r) & !first_of_binade &
                       (std::fabs(value) <= Format::kMax);
  return decided ? value : std::numeric_limits<double>::quiet_NaN();
}

// Decide's common case: QuickValue's answer converted to T.
template <class T>
inline bool QuickDecide(double v, double r, T* y) {
  const double value = QuickValue<T>(v, r);
  if (std::isnan(value)) return false;
  *y = static_cast<T>(static_cast<float>(value));
  return true;
}

// DecideRounding, inlined into the tiles.
template <class T>
inline bool Decide(double v, double r, T* y) {
  if (QuickDecide(v, r, y)) return true;
  if (!(r < kInf) || std::isnan(v)) return false;
  const double lo = SumDown(v, -r), hi = SumUp(v, r);
  if (!(lo > 0 || hi < 0)) return false;
  const T y_lo = RoundFromDouble<T>(lo), y_hi = RoundFromDouble<T>(hi);
  if (ToDouble(y_lo) != ToDouble(y_hi)) return false;
  *y = y_lo;
  return true;
}

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
// its order (TwoProduct, TwoSum, the naive and absolute sums), so the same bits.
inline void AddExactTerm(double x, double w, double& hi, double& lo, double& naive, double& abs) {
  naive += x * w;
  abs += std::fabs(x) * std::fabs(w);
  const double prod = x * w;
  const double prod_err = std::fma(x, w, -prod);
  const double sum = hi + prod;
  const double z = sum - hi;
  const double sum_err = (hi - (sum - z)) + (prod - z);
  hi = sum;
  lo += sum_err + prod_err;
}

// An element's exact value from its sums, as ExactDot forms it (IEEE's naive sum where the double
// sums overflow).
inline double ExactFromSums(double hi, double lo, double naive, double abs) {
  const double exact = hi + lo;
  return std::isfinite(abs) && std::isfinite(exact) ? exact : naive;
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
    double hi[kExactGroup] = {}, lo[kExactGroup] = {}, naive[kExactGroup] = {},
           abs[kExactGroup] = {};
    for (std::int64_t p = 0; p < k_; ++p) {
      for (int g = 0; g < kExactGroup; ++g) {
        AddExactTerm(a[g][p], b[g][p], hi[g], lo[g], naive[g], abs[g]);
      }
    }
    const double up = 1 + Gamma(k_ + 1, 0x1p-53);
    for (int g = 0; g < count_; ++g) {
      StoreExact<T>({ExactFromSums(hi[g], lo[g], naive[g], abs[g]), abs[g] * up, 0.0, false},
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
    double hi[kRowChunk] = {}, lo[kRowChunk] = {}, naive[kRowChunk] = {}, abs[kRowChunk] = {};
    for (std::int64_t p = 0; p < k_; ++p) {
      const double x = a_row_[p];
      const T* w = b_ + p * n_ + c0;
      for (std::int64_t j = 0; j < width; ++j) {
        AddExactTerm(x, ToDouble(w[j]), hi[j], lo[j], naive[j], abs[j]);
      }
    }
    const double up = 1 + Gamma(k_ + 1, 0x1p-53);
    for (std::int64_t j = 0; j < width; ++j) {
      if (columns_[static_cast<std::size_t>(c0 + j)] == nullptr) continue;
      StoreExact<T>({ExactFromSums(hi[j], lo[j], naive[j], abs[j]), abs[j] * up, 0.0, false},
                    row_index_ + static_cast<std::size_t>(c0 + j), out_);
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

// Computes one tile against the panel; returns the number of its elements that took the exact
// path.
template <class T>
std::int64_t FloatTile(const MatMulPlan& plan, const T* a_mat, const T* b_mat, const Tile& t,
                       const Panel& p, FloatWorkspace& w, OracleResult& out,
                       const std::atomic<bool>* cancel) {
  const std::int64_t k = plan.k, n = plan.n;
  const bool a_sub = ConvertA(a_mat, k, t.i0, t.rows, w);
  Resize(w.v, t.rows, t.cols);
  Resize(w.s, t.rows, t.cols);
  w.gemm.Multiply(w.a, p.b.middleCols(t.c0, t.cols), w.v);
  w.gemm.Multiply(w.a_abs, p.b_abs.middleCols(t.c0, t.cols), w.s);
  const bool any_sub = a_sub || p.subnormal;
  if (any_sub) SubnormalSums<T>(p, t, a_sub, w);
  // S as computed may be low by gamma_K relative: rounded up as the exact path rounds it.
  const double up = 1 + Gamma(k + 1, 0x1p-53);
  const double sub_up = 1 + Gamma(2 * k + 1, 0x1p-53);
  const double error_factor = RadiusFactor(k), decision_factor = RadiusFactor(k + 1);
  T* y = out.y.Data<T>();
  std::int64_t fallbacks = 0;
  ExactRows<T> exact_rows(k, n, out);
  w.quick.resize(static_cast<std::size_t>(t.cols));
  // Rows whose elements all take the exact path cost K terms each: the caller may stop between.
  for (std::int64_t i = 0; i < t.rows && !Cancelled(cancel); ++i) {
    const auto row_index =
        static_cast<std::size_t>((t.batch * plan.m + t.i0 + i) * n + p.j0 + t.c0);
    const double* v = &w.v(i, 0);
    const double* s = &w.s(i, 0);
    // First every element as if decided by QuickDecide (vectorised), then the others one by one.
    {
      double* exact = out.exact.data() + row_index;
      double* exact_error = out.exact_error.data() + row_index;
      double* abs_sum = out.abs_sum.data() + row_index;
      // Empty when no input is subnormal (then neither is any of this tile's).
      double* subnormal_abs_sum =
          out.subnormal_abs_sum.empty() ? nullptr : out.subnormal_abs_sum.data() + row_index;
      double* quick = w.quick.data();
      const double* sub = any_sub ? &w.sub(i, 0) : nullptr;
      // Loops of few arrays each: g++ vectorises a loop only when it can check that its arrays
      // do not overlap in a few tests.
      for (std::int64_t j = 0; j < t.cols; ++j) {
        // The decision covers the fast value's error and the exact path's own (FastRadius of
        // K + 1, see error_bound.h), so a decided element is the exact path's, bit for bit.
        quick[j] = QuickValue<T>(v[j], RadiusFromRow(decision_factor, s[j]));
      }
      std::copy_n(v, t.cols, exact);
      for (std::int64_t j = 0; j < t.cols; ++j) {
        exact_error[j] = RadiusFromRow(error_factor, s[j]);
        abs_sum[j] = s[j] * up;
      }
      if (sub != nullptr) {
        for (std::int64_t j = 0; j < t.cols; ++j) subnormal_abs_sum[j] = sub[j] * sub_up;
      } else if (subnormal_abs_sum != nullptr) {
        std::fill_n(subnormal_abs_sum, t.cols, 0.0);
      }
      std::fill_n(out.special.data() + row_index, t.cols, std::uint8_t{0});
    }
    const bool row_special = w.row_special[static_cast<std::size_t>(i)] != 0;
    exact_rows.StartRow(&w.a(i, 0), b_mat + p.j0 + t.c0, row_index, t.cols);
    for (std::int64_t j = 0; j < t.cols; ++j) {
      const std::size_t index = row_index + static_cast<std::size_t>(j);
      const bool special = row_special || p.col_special[static_cast<std::size_t>(t.c0 + j)] != 0;
      if (!special) {
        const double quick = w.quick[static_cast<std::size_t>(j)];
        if (s[j] == 0) {
          y[index] = T(0.0f);
          out.exact[index] = 0.0;
          continue;
        }
        if (!std::isnan(quick)) {
          y[index] = static_cast<T>(static_cast<float>(quick));
          continue;
        }
        T decided{};
        if (Decide(v[j], RadiusFromRow(decision_factor, s[j]), &decided)) {
          y[index] = decided;
          continue;
        }
      }
      ++fallbacks;
      if (special) {
        // From the inputs themselves: the tile holds 0 for their non-finite values.
        StoreExact<T>(ExactDot<T>(a_mat + (t.i0 + i) * k, b_mat + p.j0 + t.c0 + j, k, n), index,
                      out);
      } else if (any_sub) {
        StoreExact<T>(ExactDot<T, double>(&w.a(i, 0), &p.b(0, t.c0 + j), k, 1), index, out);
      } else {
        exact_rows.Mark(j, &p.b(0, t.c0 + j));
      }
    }
    exact_rows.FinishRow();
  }
  exact_rows.Flush();
  return fallbacks;
}

// Double inputs (error_bound.h): each row of A and column of B split into three slices, the first
// two on grids coarse enough that their double GEMMs are exact.

// Bits per slice: two slices' products summed over 2K terms stay within 53 bits.
int SliceBits(std::int64_t k) {
  const int log2_k = std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(k, 1) - 1));
  return (53 - log2_k) / 2;
}
// Row and column exponents the splitting handles (its powers of two stay normal).
constexpr int kMaxSplitExponent = 960;
// Fewer bits per slice (K beyond 2^37) would leave the remainder too coarse to decide anything.
constexpr int kMinSliceBits = 8;
// Element exponents e_i + f_j whose GEMMs neither underflow a slice's grid nor overflow.
constexpr int kMinElementExponent = -900, kMaxElementExponent = 960;
// Results the decision handles: their neighbours' gaps are normal and finite.
constexpr double kMinDecided = 0x1p-1000, kMaxDecided = 0x1p1000;

// x rounded to the nearest integer, for |x| < 2^51 (vectorises, unlike std::nearbyint).
inline double RoundToInteger(double x) {
  constexpr double kShifter = 0x1.8p52;
  return (x + kShifter) - kShifter;
}

// One row of A or column of B split: its exponent e (every |x| < 2^e), whether the fast path may
// use it (finite, no double subnormal, e in range), and the slices.
struct SplitLine {
  int exponent = 0;
  bool usable = true;
};

// Finds count values' (stride apart) exponent and usability.
SplitLine Examine(const double* from, std::int64_t stride, std::int64_t count) {
  double largest = 0;
  bool usable = true;
  for (std::int64_t p = 0; p < count; ++p) {
    const double magnitude = std::fabs(from[p * stride]);
    usable &= magnitude <= std::numeric_limits<double>::max() &&
              (magnitude == 0 || magnitude >= std::numeric_limits<double>::min());
    largest = std::max(largest, magnitude);
  }
  SplitLine line;
  line.exponent = usable && largest > 0 ? std::ilogb(largest) + 1 : 0;
  line.usable = usable && std::abs(line.exponent) <= kMaxSplitExponent;
  return line;
}

// Splits count values x (stride apart) of a usable line with exponent e, tau bits per slice:
// x = h1 + h2 + r3 exactly, h1 on the grid 2^(e - tau) (|h1| <= 2^e), h2 on 2^(e - 2 tau)
// (|h2| <= 2^(e - tau - 1)), |r3| <= 2^(e - 2 tau - 1). Writes h1, h2, h1 + h2 (exact: x on the
// finer grid), r3, x and |x| at `out[0..5]` (stride `out_stride` between values; x is written
// after h1 + h2 and before r3). An unusable line gets zeros: its elements take the exact path.
void SplitValues(const double* from, std::int64_t stride, std::int64_t count, const SplitLine& line,
                 int tau, double* const out[6], std::int64_t out_stride) {
  const double p1 = std::ldexp(1.0, tau - line.exponent), q1 = std::ldexp(1.0, line.exponent - tau);
  const double p2 = std::ldexp(1.0, 2 * tau - line.exponent);
  const double q2 = std::ldexp(1.0, line.exponent - 2 * tau);
  for (std::int64_t p = 0; p < count; ++p) {
    const double x = line.usable ? from[p * stride] : 0.0;
    // Scaling by a power of two is exact unless it underflows, and then below 1/2 it rounds to 0
    // either way; the integer times the grid's power of two is exact (the grid is >= 2^-1074).
    const double h1 = RoundToInteger(x * p1) * q1;
    const double rest = x - h1;
    const double h2 = RoundToInteger(rest * p2) * q2;
    const std::int64_t at = p * out_stride;
    // In this order: a caller may point x's output at h1 + h2's or r3's (then not needed).
    out[0][at] = h1;
    out[1][at] = h2;
    out[2][at] = h1 + h2;
    out[4][at] = x;
    out[3][at] = rest - h2;
    out[5][at] = std::fabs(x);
  }
}

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

// Where [s2 + t + t_lo, s2 + t + t_hi] stands against the midpoints around the double y (exact:
// the gaps are normal): 0 strictly between them, -1 reaching below the lower one only, +1 above
// the upper one only, 2 both. Every step rounds towards failing.
inline int MidpointSide(double s2, double t, double t_lo, double t_hi, double y) {
  const double half_below = (y - NextDown(y)) * 0.5, half_above = (NextUp(y) - y) * 0.5;
  const bool above_lower = SumDown(SumDown(SumDown(SumDown(s2, -y), half_below), t), t_lo) > 0;
  const bool below_upper = SumDown(SumDown(SumDown(SumDown(y, -s2), half_above), -t), -t_hi) > 0;
  if (above_lower && below_upper) return 0;
  if (!above_lower && !below_upper) return 2;
  return above_lower ? 1 : -1;
}

// DecideDouble, inlined into the tiles: x lies within r of p11 + pc + rr (p11 and pc exact). True
// when every real in that interval lies strictly between the two midpoints around one double *y.
inline bool DecideNearest(double p11, double pc, double rr, double r, double* y) {
  double s1, e1, s2, e2;
  s1 = p11 + pc;
  {
    const double z = s1 - p11;
    e1 = (p11 - (s1 - z)) + (pc - z);
  }
  s2 = s1 + rr;
  {
    const double z = s2 - s1;
    e2 = (s1 - (s2 - z)) + (rr - z);
  }
  // x in s2 + t + [t_lo, t_hi] with t + te = e1 + e2 exactly.
  const double t = e1 + e2;
  const double z = t - e1, te = (e1 - (t - z)) + (e2 - z);
  const double t_lo = SumDown(te, -r), t_hi = SumUp(te, r);
  if (!(r < kInf)) return false;
  // s2 + t rounds twice: on a tie of the tail the nearest double is its neighbour.
  double candidate = s2 + t;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!(std::fabs(candidate) >= kMinDecided && std::fabs(candidate) <= kMaxDecided)) break;
    const int side = MidpointSide(s2, t, t_lo, t_hi, candidate);
    if (side == 0) {
      *y = candidate;
      return true;
    }
    if (side == 2) break;
    candidate = side > 0 ? NextUp(candidate) : NextDown(candidate);
  }
  return false;
}

// The radius of a double element (error_bound.h): the remainder GEMM's error plus the exact
// path's own, both rounded up, with an allowance for products that underflow.
struct DoubleRadius {
  double remainder_factor;  // Times 2^(e_i + f_j - 2 tau).
  double dot2_factor;       // Times s.
  double underflow;
};

DoubleRadius MakeDoubleRadius(std::int64_t k) {
  const double u = 0x1p-53, kd = static_cast<double>(k);
  // The remainder sums 3K terms of magnitude at most 1.25 * 2^(e_i + f_j - 2 tau) in all.
  const double remainder = Gamma(3 * k, u) * 1.25 * kd * (1 + 0x1p-40);
  // Dot2's sum before its last rounding is within gamma_2K^2 S of x (Ogita, Rump, Oishi); with
  // margin, over s (S <= s / (1 - gamma_K)).
  const double g = Gamma(2 * k + 2, u);
  return {remainder, 2 * g * g * (1 + 0x1p-40), 8 * kd * std::numeric_limits<double>::denorm_min()};
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

// Integer tile buffers (32-bit inputs widened to uint64).
struct IntegerWorkspace {
  using Matrix64 = Eigen::Matrix<std::uint64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix64 a, b, y;
};

template <class T>
void IntegerProduct(const T* a, const T* b, T* y, std::int64_t m, std::int64_t k, std::int64_t n,
                    IntegerWorkspace& w) {
  using Matrix64 = IntegerWorkspace::Matrix64;
  using Map = Eigen::Map<const Matrix64>;
  if constexpr (sizeof(T) == 8) {
    // int64 and uint64 share their bits: the unsigned product wraps modulo 2^64 by definition.
    Eigen::Map<Matrix64> y_mat(reinterpret_cast<std::uint64_t*>(y), m, n);
    y_mat.noalias() = Map(reinterpret_cast<const std::uint64_t*>(a), m, k) *
                      Map(reinterpret_cast<const std::uint64_t*>(b), k, n);
  } else {
    using U = std::make_unsigned_t<T>;
    w.a =
        Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(a, m, k)
            .unaryExpr([](T x) { return static_cast<std::uint64_t>(x); });
    w.b =
        Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(b, k, n)
            .unaryExpr([](T x) { return static_cast<std::uint64_t>(x); });
    w.y.noalias() = w.a * w.b;
    for (std::int64_t i = 0; i < m * n; ++i) {
      y[i] = static_cast<T>(static_cast<U>(w.y.data()[i]));
    }
  }
}

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
// loop: per element the operations of ExactDot in the same order (TwoProduct, TwoSum, the naive
// and absolute sums), so the same bits, for inputs with no NaN, infinity or subnormal.
void ExactDoubleRowChunk(const double* a_row, const double* b, std::int64_t k, std::int64_t n,
                         std::int64_t j0, std::int64_t cols, double* y, OracleResult& out,
                         std::size_t out_index) {
  double hi[kRowChunk] = {}, lo[kRowChunk] = {}, naive[kRowChunk] = {}, abs[kRowChunk] = {};
  for (std::int64_t p = 0; p < k; ++p) {
    const double x = a_row[p];
    const double* w = b + p * n + j0;
    for (std::int64_t j = 0; j < cols; ++j) AddExactTerm(x, w[j], hi[j], lo[j], naive[j], abs[j]);
  }
  const double up = 1 + Gamma(k + 1, 0x1p-53);
  for (std::int64_t j = 0; j < cols; ++j) {
    const double exact = ExactFromSums(hi[j], lo[j], naive[j], abs[j]);
    const std::size_t index = out_index + static_cast<std::size_t>(j);
    y[index] = exact;
    out.exact[index] = exact;
    out.abs_sum[index] = abs[j] * up;
  }
}

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
        return FloatTile(plan, a_batch, b_batch, t, panel, w, out, cancel);
      },
      cancel);
}

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

template <class T>
Status FastIntegerMatMul(const MatMulPlan& plan, const T* a, const T* b, T* y,
                         const std::atomic<bool>* cancel) {
  const std::int64_t m = plan.m, k = plan.k, n = plan.n;
  const double work = static_cast<double>(plan.y_elements) * static_cast<double>(k);
  const auto product = [&](std::int64_t batch, IntegerWorkspace& w) {
    if (Cancelled(cancel)) return;
    const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
    IntegerProduct(a + a_offset, b + b_offset, y + batch * m * n, m, k, n, w);
  };
  // Many products: one per thread; few: Eigen's own parallel GEMM on each.
  const int threads = Threads(plan.batch, work);
  if (threads > 1) {
    if (!Spread<IntegerWorkspace>(plan.batch, threads, product)) {
      return ResourceExhaustedError("ExactMatMul: out of memory for the integer product");
    }
    return Cancelled(cancel) ? CancelledStatus() : OkStatus();
  }
  try {
    IntegerWorkspace w;
    for (std::int64_t batch = 0; batch < plan.batch; ++batch) product(batch, w);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("ExactMatMul: out of memory for the integer product");
  }
  return Cancelled(cancel) ? CancelledStatus() : OkStatus();
}

template <class T>
bool DecideRounding(double v, double r, T* y) {
  return Decide(v, r, y);
}

bool DecideDouble(double p11, double pc, double rr, double r, double* y) {
  return DecideNearest(p11, pc, rr, r, y);
}

constexpr CpuIsa kIsa = CpuIsa::MM_ISA_ENUM;

}  // namespace
}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

// The only symbol of this copy that the rest of the program sees.
extern "C" __attribute__((visibility("default"))) const mm::oracle_internal::OracleKernels*
MM_ISA_ENTRY() {
  using namespace mm::oracle_internal::MM_ISA_NAMESPACE;
  using mm::bfloat16, mm::float16;
  static constexpr mm::oracle_internal::OracleKernels kKernels = {
      .isa = kIsa,
      .fast_float = &FastFloatMatMul<float>,
      .fast_float16 = &FastFloatMatMul<float16>,
      .fast_bfloat16 = &FastFloatMatMul<bfloat16>,
      .fast_double = &FastDoubleMatMul,
      .fast_int32 = &FastIntegerMatMul<std::int32_t>,
      .fast_int64 = &FastIntegerMatMul<std::int64_t>,
      .fast_uint32 = &FastIntegerMatMul<std::uint32_t>,
      .fast_uint64 = &FastIntegerMatMul<std::uint64_t>,
      .exact_float = &ExactFloatMatMul<float>,
      .exact_float16 = &ExactFloatMatMul<float16>,
      .exact_bfloat16 = &ExactFloatMatMul<bfloat16>,
      .exact_double_any = &ExactFloatMatMul<double>,
      .exact_double = &ExactDoubleMatMul,
      .decide_float = &DecideRounding<float>,
      .decide_float16 = &DecideRounding<float16>,
      .decide_bfloat16 = &DecideRounding<bfloat16>,
      .decide_double = &DecideDouble,
  };
  return &kKernels;
}
