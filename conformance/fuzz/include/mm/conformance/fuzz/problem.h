// Random MatMul problems for differential fuzzing: every numpy.matmul form, sizes biased to the
// edges where kernels break, and value families that expose rounding, overflow and wraparound.
// Reproducible everywhere: problem `index` of `seed` depends only on (seed, index, its dtype), and
// only integer arithmetic of our own decides it (no std:: distributions, no libm).
#ifndef MM_CONFORMANCE_FUZZ_PROBLEM_H_
#define MM_CONFORMANCE_FUZZ_PROBLEM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/tensor.h"

namespace mm::fuzz {

// A small, fast, fully specified random generator (splitmix64).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next();
  // Uniform in [0, n) (n > 0).
  std::uint64_t Below(std::uint64_t n) { return Next() % n; }
  // Uniform in [lo, hi].
  std::int64_t Between(std::int64_t lo, std::int64_t hi);
  // Uniform double in [0, 1), 53 random bits.
  double Unit();
  // True with probability `p`.
  bool Chance(double p) { return Unit() < p; }
  // An element of `items` (non-empty).
  template <class T>
  const T& Pick(const std::vector<T>& items) {
    return items[Below(items.size())];
  }

 private:
  std::uint64_t state_;
};

// Limits of the problems generated.
struct GeneratorOptions {
  std::vector<DType> dtypes;  // Picked uniformly per problem; empty means every MatMul dtype.
  // Upper bound on each operand's and Y's element count, and on batch * M * N * K.
  std::int64_t max_elements = 1 << 14;
  std::int64_t max_products = 1 << 18;
  // Generate the value families whose elements may overflow or hold NaN/inf (default yes).
  bool specials = true;
  // The size-threshold family: with this chance a problem is made so that one operand (A, B or
  // Y) holds just over one of PathThresholds() elements, past max_elements (max_products then
  // allows up to 4 products per element of it). 0 turns the family off.
  double threshold_chance = 1.0 / 48;
  // The large-shape family (mm-fuzz --large), where split-K, blocking and accumulation-width bugs
  // live: when > 0 every problem is a large one of at most this many products (batch * M * N *
  // K), K up to kLargeMaxK, each of A, B and Y at most kLargeMaxElements elements; 2-D, square,
  // batched, broadcast and matrix-vector forms. max_elements, max_products and the threshold
  // family then do not apply.
  std::int64_t large_products = 0;
};

// Limits of the large-shape family.
inline constexpr std::int64_t kLargeMaxK = 16384;
inline constexpr std::int64_t kLargeMaxElements = std::int64_t{1} << 24;
// The large family's default product budget: a float 4096 x 4096 x 4096 product.
inline constexpr std::int64_t kLargeDefaultProducts = std::int64_t{1} << 36;

// The products per large problem for a run of `seconds` (0: no budget) on `threads` threads: a
// power of two, so that a replay line names it exactly; the default budget without a time limit,
// else about a quarter of the time for one problem at a conservative 2^30 products per thread
// and second (oracle, backend and judge together), from 2^24 up to the default.
std::int64_t LargeProductsFor(double seconds, int threads);

// Element counts at which a backend changes path, so that the size-threshold family crosses each:
// 65,536 (eigen converts float16/bfloat16 and 32-bit integers in chunks of 2^16 elements, threaded
// from two chunks on), 131,072 (two whole chunks and a remainder), 262,144 (four chunks: one per
// thread of a 4-core machine). Every other path change of mm's backends (Eigen's blocking and its
// 50,000 multiply-adds per thread, oneDNN's and the BLAS libraries' blocking) lies within
// max_products and the edge sizes, which the other families reach.
const std::vector<std::int64_t>& PathThresholds();

// One generated problem.
struct Problem {
  std::uint64_t seed = 0;
  std::int64_t index = 0;
  std::string form;    // "2-D", "batched", "broadcast A", "1-D x N-D", "high rank", ...
  std::string values;  // Value family, e.g. "cancellation", "extremes+specials".
  Tensor a, b;

  MatMulDesc desc() const { return {a.dtype(), a.dims(), b.dims()}; }
};

// Problem `index` of `seed`. The dtype is picked from options.dtypes by (seed, index) alone, and
// the rest from (seed, index, dtype), so a problem found with several dtypes replays with
// `--dtype` of its own dtype alone.
Problem GenerateProblem(std::uint64_t seed, std::int64_t index, const GeneratorOptions& options);

// The sizes kernels get wrong: around powers of two and vector widths.
const std::vector<std::int64_t>& EdgeSizes();

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_PROBLEM_H_
