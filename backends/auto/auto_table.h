// The auto backend's table, the parts its policy (auto_backend.cc), its options (auto_options.cc)
// and its first use (first_use.cc) share: the environment the table's identity reads, ranking
// entries, the nearest cell, and reading a table file. The table's public types are in
// mm/backends/auto/auto_backend.h.
#ifndef MM_BACKENDS_AUTO_AUTO_TABLE_H_
#define MM_BACKENDS_AUTO_AUTO_TABLE_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "mm/backends/auto/auto_backend.h"

namespace mm::auto_table {

// The variable `name`, else `fallback`.
std::string EnvOr(const char* name, std::string fallback = {});

// The thread count this process was started with: OMP_NUM_THREADS (its first level), else every
// core.
int EnvironmentThreads();

// "2x3x4" for {2, 3, 4}.
std::string DimsText(const Dims& dims);

// A ranking entry: "openblas" (on the threads given) or "openblas@1" (on 1 thread).
struct Entry {
  std::string name;
  int threads = 0;  // 0: the threads given.
};

// The entry `text` names; nullopt when what follows '@' is not a thread count of at least 1.
std::optional<Entry> ParseEntry(std::string_view text);

// batch, M, K, N of a plan-able pair of shapes (1-D operands count as 1 row or column); all 1
// when the shapes cannot be planned.
std::array<double, 4> Extents(DType dtype, const Dims& a, const Dims& b);

// The table's cell of `dtype` nearest to a problem of `extents` at `threads` threads: the nearest
// calibrated thread count, then the nearest shape (log distance of batch, M, K, N). Null when the
// table has no cell of `dtype`.
const AutoCell* NearestCell(const AutoTable& table, DType dtype,
                            const std::array<double, 4>& extents, int threads);

// The table's family cell nearest to a problem of `desc` (a cell of the same operator and types,
// any version: every version of an operator runs the same kernels) of `extents` at `threads`
// threads, as above. Null when the table has none.
const AutoCell* NearestCell(const AutoTable& table, const family::OpDesc& desc,
                            const std::array<double, 4>& extents, int threads);

// The looser of two declared arithmetics (fewer accumulation mantissa bits; flushes if either
// flushes): what a backend that may run either declares.
Arithmetic Loosest(const Arithmetic& x, const Arithmetic& y);

// Sets the calling thread's OpenMP thread count for its lifetime (`threads` > 0; 0 leaves it):
// every backend follows the calling thread's count (the BLAS backends pass it to their library
// per call), so running one on fewer threads is setting it around the call.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads);
  ~ScopedOmpThreads();
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int previous_;
};

// Reads and parses the table at `path` (ParseAutoTable against `identity`); NOT_FOUND when there
// is no file.
StatusOr<AutoTable> ReadTable(const std::string& path, const AutoIdentity& identity);

}  // namespace mm::auto_table

#endif  // MM_BACKENDS_AUTO_AUTO_TABLE_H_
