// A pass split over the OpenMP threads covers every element once and merges as a serial pass would.
#include "mm/oracle/parallel.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <vector>

namespace mm {
namespace {

// Sets the OpenMP thread count for one scope.
class Threads {
 public:
  explicit Threads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

TEST(RangeCountTest, OneRangePerThreadEachOfAtLeastTheGrain) {
  const Threads four(4);
  EXPECT_EQ(RangeCount(0, 100), 1);
  EXPECT_EQ(RangeCount(99, 100), 1);
  EXPECT_EQ(RangeCount(250, 100), 2);
  EXPECT_EQ(RangeCount(1'000'000, 100), 4);
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    inside = RangeCount(1'000'000, 100);
  }
  EXPECT_EQ(inside, 1) << "a pass inside a parallel region stays on its thread";
}

TEST(ForEachRangeTest, CoversEveryIndexOnceInContiguousOrderedRanges) {
  const Threads three(3);
  for (const std::int64_t n :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{1000}}) {
    for (const int parts : {1, 2, 3, 5}) {
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      std::vector<std::int64_t> begins(parts, -1), ends(parts, -1);
      ForEachRange(n, parts, [&](int part, std::int64_t begin, std::int64_t end) {
        begins[part] = begin;
        ends[part] = end;
        for (std::int64_t i = begin; i < end; ++i) ++seen[static_cast<std::size_t>(i)];
      });
      for (int v : seen) EXPECT_EQ(v, 1) << n << " in " << parts;
      EXPECT_EQ(begins.front(), 0);
      EXPECT_EQ(ends.back(), n);
      for (int part = 1; part < parts; ++part) EXPECT_EQ(begins[part], ends[part - 1]);
    }
  }
}

// The first index holding the largest value: ties keep the first, so the merge must see the ranges
// in index order.
struct FirstMax {
  std::int64_t index = -1;
  int value = 0;
  void Offer(std::int64_t i, int v) {
    if (index < 0 || v > value) {
      index = i;
      value = v;
    }
  }
};

TEST(ReduceInOrderTest, MergesInIndexOrderSoTiesKeepTheFirstIndex) {
  const std::int64_t n = 8 * kParallelGrain;
  std::vector<int> values(static_cast<std::size_t>(n), 1);
  // The same largest value in the last range and in the second: the second's must win.
  values[static_cast<std::size_t>(n - 3)] = 9;
  values[static_cast<std::size_t>(n / 4 + 11)] = 9;
  for (const int threads : {1, 2, 4}) {
    const Threads set(threads);
    const FirstMax found = ReduceInOrder<FirstMax>(
        n,
        [&](std::int64_t begin, std::int64_t end) {
          FirstMax part;
          for (std::int64_t i = begin; i < end; ++i)
            part.Offer(i, values[static_cast<std::size_t>(i)]);
          return part;
        },
        [](FirstMax& left, FirstMax&& right) {
          if (right.index >= 0) left.Offer(right.index, right.value);
        });
    EXPECT_EQ(found.index, n / 4 + 11) << threads << " threads";
    EXPECT_EQ(found.value, 9);
  }
}

}  // namespace
}  // namespace mm
