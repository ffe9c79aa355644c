// Passes over the elements of a result on the OpenMP threads, for the judgement that follows the
// oracle: a 4096 x 4096 product has 16 M elements to examine, and one thread would spend seconds.
#ifndef MM_ORACLE_PARALLEL_H_
#define MM_ORACLE_PARALLEL_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace mm {

// How many contiguous ranges ForEachRange splits [0, n) into: one per OpenMP thread
// (omp_get_max_threads; one inside a parallel region), each of at least `grain` elements; at
// least 1 (a single range, possibly empty, for small n).
int RangeCount(std::int64_t n, std::int64_t grain);

// Runs body(part, begin, end) for the `parts` ranges [n * part / parts, n * (part + 1) / parts),
// each once, on the OpenMP threads. `body` must not throw.
void ForEachRange(std::int64_t n, int parts,
                  const std::function<void(int part, std::int64_t begin, std::int64_t end)>& body);

// The elements a pass over below this many does not split: thread start-up costs more.
inline constexpr std::int64_t kParallelGrain = 1 << 16;

// A reduction over [0, n) whose result is what one serial pass in index order gives: `examine`
// (std::int64_t begin, std::int64_t end) -> Partial covers one range, and `merge`(Partial& left,
// Partial&& right) folds the next range's partial into everything before it, so a tie can keep
// the first index as a serial pass would.
template <class Partial, class Examine, class Merge>
Partial ReduceInOrder(std::int64_t n, Examine examine, Merge merge) {
  const int parts = RangeCount(n, kParallelGrain);
  if (parts == 1) return examine(std::int64_t{0}, n);
  std::vector<Partial> partial(static_cast<std::size_t>(parts));
  ForEachRange(n, parts, [&](int part, std::int64_t begin, std::int64_t end) {
    partial[static_cast<std::size_t>(part)] = examine(begin, end);
  });
  Partial out = std::move(partial[0]);
  for (int part = 1; part < parts; ++part) {
    merge(out, std::move(partial[static_cast<std::size_t>(part)]));
  }
  return out;
}

}  // namespace mm

#endif  // MM_ORACLE_PARALLEL_H_
