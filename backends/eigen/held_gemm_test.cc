// HeldGemm is Eigen's own product, bit for bit, on buffers the thread keeps: compiled with the
// backend's flags, so that both sides run the same kernels.
#include "backends/eigen/held_gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <Eigen/Core>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mm::eigen_internal {
namespace {

struct Extents {
  Eigen::Index m, k, n;
  const char* why;
};

// Every path of HeldGemm, and blockings of more than one panel in each direction.
constexpr Extents kExtents[] = {
    {1, 64, 64, "one row: Eigen's GEMV"},
    {64, 64, 1, "one column: Eigen's GEMV"},
    {3, 4, 3, "coefficient-based: under Eigen's threshold of 20"},
    {4, 8, 8, "just at the threshold: the GEMM"},
    {8, 3, 2000, "a wide, shallow product"},
    {257, 257, 257, "odd sizes, remainders in every dimension"},
    {300, 1500, 120, "deeper than one kc panel: sums in several panels"},
    {1100, 300, 700, "taller than one mc block"},
    {96, 64, 3000, "wider than one nc block"},
};

template <class S>
std::vector<S> Random(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<S> v(count);
  for (S& x : v) {
    if constexpr (std::is_integral_v<S>) {
      x = static_cast<S>(rng() % 1000);  // int32 sums stay far from overflow.
    } else {
      x = static_cast<S>(std::uniform_real_distribution<double>(-1, 1)(rng));
    }
  }
  return v;
}

template <class S>
std::vector<S> EigenProduct(const std::vector<S>& a, const std::vector<S>& b, const Extents& e) {
  using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<S> y(static_cast<std::size_t>(e.m * e.n));
  Eigen::Map<Matrix>(y.data(), e.m, e.n).noalias() =
      Eigen::Map<const Matrix>(a.data(), e.m, e.k) * Eigen::Map<const Matrix>(b.data(), e.k, e.n);
  return y;
}

template <class S>
void ExpectEigensBits(const Extents& e, std::uint64_t seed) {
  const auto a = Random<S>(static_cast<std::size_t>(e.m * e.k), seed);
  const auto b = Random<S>(static_cast<std::size_t>(e.k * e.n), seed + 1);
  const std::vector<S> expected = EigenProduct(a, b, e);
  // Y starts as garbage: HeldGemm must not add to what was there.
  std::vector<S> y(expected.size(), S(7));
  HeldGemm(a.data(), b.data(), y.data(), e.m, e.k, e.n);
  EXPECT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(S)), 0)
      << e.m << "x" << e.k << "x" << e.n << " (" << e.why << ")";
}

template <class S>
class HeldGemmTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double, std::uint64_t, std::int32_t>;
TYPED_TEST_SUITE(HeldGemmTest, Scalars);

TYPED_TEST(HeldGemmTest, GivesEigensProductBitForBit) {
  for (const Extents& e : kExtents) ExpectEigensBits<TypeParam>(e, 1);
}

// Large, small, large again, with new data each time: what the held buffers kept from an earlier
// product never shows in a later one.
TYPED_TEST(HeldGemmTest, BuffersKeptFromEarlierProductsDoNotLeakIntoLaterOnes) {
  ExpectEigensBits<TypeParam>({1100, 300, 700, "large"}, 1);
  ExpectEigensBits<TypeParam>({40, 50, 60, "small"}, 2);
  ExpectEigensBits<TypeParam>({300, 1500, 120, "large again"}, 3);
}

// Each thread has its own buffers: concurrent products of different shapes on two threads each
// give Eigen's bits (Eigen runs single-threaded inside a parallel region, and so does HeldGemm).
TYPED_TEST(HeldGemmTest, ConcurrentProductsOnTwoThreadsEachGiveEigensBits) {
  const Extents shapes[] = {{257, 257, 257, "odd"}, {300, 1500, 120, "deep"}};
  std::vector<std::vector<TypeParam>> a(2), b(2), expected(2);
  for (int t = 0; t < 2; ++t) {
    const Extents& e = shapes[t];
    a[t] = Random<TypeParam>(static_cast<std::size_t>(e.m * e.k), 10 + t);
    b[t] = Random<TypeParam>(static_cast<std::size_t>(e.k * e.n), 20 + t);
    // Eigen's product on one thread, as it runs inside a parallel region (its parallel GEMM
    // blocks differently, and rounds differently).
    Eigen::setNbThreads(1);
    expected[t] = EigenProduct(a[t], b[t], e);
    Eigen::setNbThreads(0);
  }
  std::atomic<int> mismatches{0}, most_threads{0};
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (int round = 0; round < 8; ++round) {
    const int t = round % 2;
    const Extents& e = shapes[t];
    std::vector<TypeParam> y(expected[t].size(), TypeParam(5));
    HeldGemm(a[t].data(), b[t].data(), y.data(), e.m, e.k, e.n);
    if (std::memcmp(y.data(), expected[t].data(), y.size() * sizeof(TypeParam)) != 0) ++mismatches;
    int seen = most_threads.load();
    while (seen < omp_get_num_threads() &&
           !most_threads.compare_exchange_weak(seen, omp_get_num_threads())) {
    }
  }
  EXPECT_EQ(most_threads.load(), 2) << "the products did not run on two threads";
  EXPECT_EQ(mismatches.load(), 0) << "of 8 products, on two threads";
}

}  // namespace
}  // namespace mm::eigen_internal
