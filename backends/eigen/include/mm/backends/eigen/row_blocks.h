// How the eigen backend splits one product's rows over threads.
#ifndef MM_BACKENDS_EIGEN_ROW_BLOCKS_H_
#define MM_BACKENDS_EIGEN_ROW_BLOCKS_H_

#include <cstdint>
#include <vector>

namespace mm::eigen_internal {

// The bounds of at most `threads` blocks of `rows` rows (rows > 0, threads > 0): {0, ..., rows},
// block i being rows [bounds[i], bounds[i + 1]), none empty. Each interior bound is the even
// share's (i * rows / threads) rounded to the nearest multiple of `alignment`, so blocks keep whole
// register tiles and no block is more than `alignment` rows above the even share: the slowest
// block sets the product's time (rounding each share up gave 129 rows on 2 threads blocks of 72
// and 57).
inline std::vector<std::int64_t> RowBlockBounds(std::int64_t rows, int threads,
                                                std::int64_t alignment) {
  std::vector<std::int64_t> bounds = {0};
  for (int i = 1; i < threads; ++i) {
    const std::int64_t even = (rows * i + threads / 2) / threads;
    const std::int64_t bound = (even + alignment / 2) / alignment * alignment;
    if (bound > bounds.back() && bound < rows) bounds.push_back(bound);
  }
  bounds.push_back(rows);
  return bounds;
}

}  // namespace mm::eigen_internal

#endif  // MM_BACKENDS_EIGEN_ROW_BLOCKS_H_
