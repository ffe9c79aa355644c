// Shrinking a failing MatMul problem to a minimal one that still fails the same way: drop batch
// axes, halve M, N and K, then simplify values (small integers, zeros), within a time limit.
#ifndef MM_CONFORMANCE_FUZZ_SHRINK_H_
#define MM_CONFORMANCE_FUZZ_SHRINK_H_

#include <atomic>
#include <functional>
#include <utility>
#include <vector>

#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/judging/compare.h"
#include "mm/engine/backend.h"
#include "mm/engine/tensor.h"

namespace mm::fuzz {

struct ShrinkOptions {
  double seconds = 2;     // Time limit; 0 = no shrinking (the problem is judged once).
  Arithmetic arithmetic;  // The backend's declared arithmetic.
  conformance::Tolerance tolerance;
  // Whether a candidate's verdict still counts as the same failure.
  std::function<bool(Verdict)> keeps_failing;
  // A stop request: when set and true, shrinking stops before its next step (timed_out).
  const std::atomic<bool>* cancel = nullptr;
};

struct ShrinkResult {
  Tensor a, b;             // The smallest failing problem found.
  Outcome outcome;         // Its judged run.
  int steps = 0;           // Candidates accepted.
  bool timed_out = false;  // Stopped by the time limit or a stop request.
};

// Shrinks (a, b), which fails on `backend`, greedily: each accepted candidate is smaller (fewer
// elements) or simpler (more zeros and small integers) and still fails per options.keeps_failing.
ShrinkResult Shrink(Backend& backend, const Tensor& a, const Tensor& b,
                    const ShrinkOptions& options);

// A deep copy.
Tensor Clone(const Tensor& tensor);

// The sub-tensor of `tensor` with axis `axis` restricted to [start, start + length).
Tensor SliceAxis(const Tensor& tensor, std::size_t axis, std::int64_t start, std::int64_t length);

// The [start, length) ranges shrinking tries for an extent `e`: its halves (first, second), then
// one less from either end; none below 2.
std::vector<std::pair<std::int64_t, std::int64_t>> HalvingRanges(std::int64_t e);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_SHRINK_H_
