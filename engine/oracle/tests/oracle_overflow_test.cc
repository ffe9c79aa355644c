// The oracle's answer where double's range is too narrow for the terms: an infinite input decides
// beside finite products that overflow (in double, or in the dtype), and finite products beyond
// double that cancel give their exact sum, on the exact path and every part of the fast paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mm/oracle/exact_accumulator.h"
#include "mm/oracle/exact_matmul.h"
#include "oracle_internal.h"

namespace mm {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kMaxDouble = std::numeric_limits<double>::max();

// The element values of Y = A B, computed fast and exact-only; both must agree bit for bit on Y.
template <class T>
std::vector<double> OracleExact(Dims a_dims, const std::vector<double>& a, Dims b_dims,
                                const std::vector<double>& b, bool fast) {
  Tensor ta = Tensor::Create(DTypeOf<T>(), a_dims).value();
  Tensor tb = Tensor::Create(DTypeOf<T>(), b_dims).value();
  for (std::size_t i = 0; i < a.size(); ++i) ta.Data<T>()[i] = RoundFromDouble<T>(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) tb.Data<T>()[i] = RoundFromDouble<T>(b[i]);
  const MatMulPlan plan = PlanMatMul({DTypeOf<T>(), a_dims, b_dims}).value();
  const OracleResult o = ExactMatMul(plan, ta.view(), tb.view(), {.fast = fast}).value();
  for (std::size_t i = 0; i < o.exact.size(); ++i) {
    const double y = ToDouble(o.y.Data<T>()[i]);
    EXPECT_TRUE(std::isnan(y) ? std::isnan(o.exact[i])
                              : y == ToDouble(RoundFromDouble<T>(o.exact[i])))
        << "Y is the exact value rounded, element " << i;
  }
  return o.exact;
}

template <class T>
class OracleOverflowTest : public ::testing::Test {};
using OverflowTypes = ::testing::Types<float, float16, bfloat16, double>;
TYPED_TEST_SUITE(OracleOverflowTest, OverflowTypes);

// One element, A [1, 3] B [3, 1]: terms inf_a * 1, big * big and 1 * 1, where big * big is finite
// but beyond the dtype's range (and, for double, beyond double's): the infinities decide.
TYPED_TEST(OracleOverflowTest, AnInfiniteInputDecidesBesideAFiniteProductBeyondRange) {
  const double big = ToDouble(std::numeric_limits<TypeParam>::max());
  for (const bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast" : "exact path");
    const auto element = [&](double x0, double w0) {
      return OracleExact<TypeParam>({1, 3}, {x0, big, 1}, {3, 1}, {w0, big, 1}, fast)[0];
    };
    // The product overflows to +inf in the dtype (and in double for double): exactly -inf.
    EXPECT_EQ(element(-kInfinity, 1), -kInfinity);
    EXPECT_EQ(element(1, -kInfinity), -kInfinity);
    EXPECT_EQ(element(kInfinity, 1), kInfinity);
    // NaN only where the infinite terms make it: a NaN input, 0 * inf.
    EXPECT_TRUE(std::isnan(element(std::nan(""), 1)));
    EXPECT_TRUE(std::isnan(element(0, -kInfinity)));
    // Both infinities among the terms: NaN.
    EXPECT_TRUE(std::isnan(
        OracleExact<TypeParam>({1, 2}, {kInfinity, -kInfinity}, {2, 1}, {1, 1}, fast)[0]));
  }
}

// Finite double terms beyond double's range that cancel: their exact sum, not NaN or an infinity.
TEST(OracleOverflowDoubleTest, FiniteProductsBeyondDoubleGiveTheirExactSumRounded) {
  for (const bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast" : "exact path");
    // max^2 - max^2 + 3 = 3.
    EXPECT_EQ(OracleExact<double>({1, 3}, {kMaxDouble, -kMaxDouble, 3}, {3, 1},
                                  {kMaxDouble, kMaxDouble, 1}, fast)[0],
              3.0);
    // A partial sum beyond double brought back: max + max - max = max.
    EXPECT_EQ(OracleExact<double>({1, 3}, {kMaxDouble, kMaxDouble, -kMaxDouble}, {3, 1}, {1, 1, 1},
                                  fast)[0],
              kMaxDouble);
    // Beyond double's range exactly: the rounding gives the infinity of its sign.
    EXPECT_EQ(OracleExact<double>({1, 2}, {kMaxDouble, -1}, {2, 1}, {-2, 1}, fast)[0], -kInfinity);
  }
}

// Rows and columns the double fast path splits (|x| < 2^960) whose products pass 2^1024 and cancel:
// its groups of scattered elements, its dense chunks and the row-wise exact path (K too deep to
// split) all give the exact sum, bit for bit the exact path's.
TEST(OracleOverflowDoubleTest, EveryExactPathOfTheFastPathSumsBeyondDouble) {
  const std::int64_t m = 3, k = 3, n = 300;
  const double h = 0x1p600;
  std::vector<double> a(static_cast<std::size_t>(m * k));
  for (std::int64_t i = 0; i < m; ++i) {
    const double row[] = {h, -h, static_cast<double>(i + 1)};
    for (std::int64_t q = 0; q < k; ++q) a[static_cast<std::size_t>(i * k + q)] = row[q];
  }
  // Column j: [h, h, j] (h^2 - h^2 + (i + 1) j) where it overflows, else [0, 0, j] (decided).
  const auto columns = [&](std::int64_t every) {
    std::vector<double> b(static_cast<std::size_t>(k * n));
    for (std::int64_t j = 0; j < n; ++j) {
      const double top = j % every == 0 ? h : 0;
      b[static_cast<std::size_t>(j)] = b[static_cast<std::size_t>(n + j)] = top;
      b[static_cast<std::size_t>(2 * n + j)] = static_cast<double>(j);
    }
    return b;
  };
  // Every 16th column (under a third of a chunk: the groups), then every column (the chunks).
  for (const std::int64_t every : {16, 1}) {
    SCOPED_TRACE(every);
    const std::vector<double> b = columns(every);
    const std::vector<double> fast = OracleExact<double>({m, k}, a, {k, n}, b, true);
    const std::vector<double> slow = OracleExact<double>({m, k}, a, {k, n}, b, false);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(fast[static_cast<std::size_t>(i * n + j)], static_cast<double>((i + 1) * j));
      }
    }
    EXPECT_EQ(std::memcmp(fast.data(), slow.data(), fast.size() * sizeof(double)), 0);
  }
  Tensor ta = Tensor::FromValues<double>({m, k}, a).value();
  Tensor tb = Tensor::FromValues<double>({k, n}, columns(1)).value();
  const MatMulPlan plan = PlanMatMul({DType::kDouble, {m, k}, {k, n}}).value();
  OracleResult row_wise = ExactMatMul(plan, ta.view(), tb.view(), {.fast = false}).value();
  const std::vector<double> expected = row_wise.exact;
  std::fill(row_wise.exact.begin(), row_wise.exact.end(), -1.0);
  ASSERT_TRUE(
      oracle_internal::ExactDoubleMatMul(plan, ta.Data<double>(), tb.Data<double>(), row_wise)
          .ok());
  EXPECT_EQ(row_wise.exact, expected);
  EXPECT_EQ(row_wise.exact[2 * n + 7], 3.0 * 7);
}

// The accumulator itself: products of two and three doubles from anywhere in their range, exactly.
TEST(OracleExactAccumulatorTest, ThreeFactorProductsBeyondDoubleCancelExactly) {
  ExactAccumulator sum;
  // alpha a b with a b beyond double, alpha bringing it back: 2^-20 * 2^520 * 2^520 = 2^1020.
  sum.AddProduct(0x1p-20, 0x1p520, 0x1p520);
  EXPECT_EQ(sum.RoundToDouble(), 0x1p1020);
  // Minus the same in another grouping, plus the smallest subnormal: exactly that subnormal.
  sum.AddProduct(-0x1p520, 0x1p520, 0x1p-20);
  sum.AddProduct(0x1p-1074, 1.0);
  EXPECT_EQ(sum.RoundToDouble(), 0x1p-1074);
  // A tie below the last bit of 1 (2^-53) rounds to even (1); a bit beyond it rounds up.
  sum.Clear();
  sum.AddProduct(1.0, 1.0);
  sum.AddProduct(0x1p-27, 0x1p-26, 1.0);
  EXPECT_EQ(sum.RoundToDouble(), 1.0);
  sum.AddProduct(0x1p-600, 0x1p-600, 0x1p-600);
  EXPECT_EQ(sum.RoundToDouble(), 1 + 0x1p-52);
  // Exact cancellation is +0; the 159-bit significand of three factors is kept whole.
  sum.Clear();
  const double x = 1 + 0x1p-52, w = 1 - 0x1p-53;
  sum.AddProduct(x, w, x);
  sum.AddProduct(-x, x, w);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(sum.RoundToDouble()), 0u);
  sum.AddProduct(x, w, x);
  // x w x = 1 + 3 2^-53 - 2^-157: just below a midpoint, so 1 + 2^-52; without its last bits it
  // would be the midpoint, rounding to even (1 + 2^-51).
  EXPECT_EQ(sum.RoundToDouble(), 1 + 0x1p-52);
}

}  // namespace
}  // namespace mm
