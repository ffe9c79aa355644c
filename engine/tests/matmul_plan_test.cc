// PlanMatMul against numpy.matmul's shape rules. Each row says why it is in the table.
#include "mm/engine/matmul_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "mm/engine/testing/test_names.h"

namespace mm {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kHuge = std::int64_t{1} << 40;

struct ValidCase {
  const char* why;
  Dims a, b;
  Dims y;
  std::int64_t batch, m, k, n;
};

// Valid shapes: expected Y shape and the (batch, m, k, n) the backends will loop over.
const ValidCase kValidCases[] = {
    // The 9 worked examples of the ONNX MatMul page, by shape.
    {"example 1d_1d: vector . vector gives a rank-0 scalar", {3}, {3}, {}, 1, 1, 3, 1},
    {"example 1d_3d: 1-D A promoted to [1,K], batch taken from B",
     {4},
     {2, 4, 3},
     {2, 3},
     2,
     1,
     4,
     3},
    {"example 2d: plain matrix product", {2, 3}, {3, 4}, {2, 4}, 1, 2, 3, 4},
    {"example 3d: equal batch dims", {2, 3, 4}, {2, 4, 3}, {2, 3, 3}, 2, 3, 4, 3},
    {"example 4d: leading batch dim of 1 on both",
     {1, 2, 3, 4},
     {1, 2, 4, 3},
     {1, 2, 3, 3},
     2,
     3,
     4,
     3},
    {"example 4d_1d: 1-D B promoted to [K,1] and removed",
     {2, 3, 4, 5},
     {5},
     {2, 3, 4},
     6,
     4,
     5,
     1},
    {"example batch_broadcast: B's batch 1 stretches", {2, 2, 3}, {1, 3, 4}, {2, 2, 4}, 2, 2, 3, 4},
    {"example bcast: 2-D B shared by every batch of A", {2, 3, 4}, {4, 5}, {2, 3, 5}, 2, 3, 4, 5},
    {"example vector_matrix: 1-D A times a matrix gives 1-D", {3}, {3, 2}, {2}, 1, 1, 3, 2},
    // More 1-D forms.
    {"matrix . vector gives 1-D", {2, 3}, {3}, {2}, 1, 2, 3, 1},
    {"1-D A with a rank-4 B keeps B's batch", {3}, {2, 1, 3, 4}, {2, 1, 4}, 2, 1, 3, 4},
    {"1-D x 1-D of length 1", {1}, {1}, {}, 1, 1, 1, 1},
    // Broadcasting.
    {"A's batch 1 stretches to B's", {1, 3, 4}, {5, 4, 2}, {5, 3, 2}, 5, 3, 4, 2},
    {"broadcast in both operands at once", {3, 1, 2, 4}, {1, 5, 4, 6}, {3, 5, 2, 6}, 15, 2, 4, 6},
    {"A of lower rank than B gets leading 1s", {2, 3}, {7, 3, 2}, {7, 2, 2}, 7, 2, 3, 2},
    {"B of lower rank than A gets leading 1s", {4, 2, 2, 3}, {2, 3, 5}, {4, 2, 2, 5}, 8, 2, 3, 5},
    {"rank 6 with mixed broadcasting",
     {2, 1, 3, 1, 2, 3},
     {1, 4, 1, 5, 3, 2},
     {2, 4, 3, 5, 2, 2},
     120,
     2,
     3,
     2},
    // Zero-size dims are legal.
    {"K = 0: Y is all zeros of shape [M, N]", {2, 0}, {0, 3}, {2, 3}, 1, 2, 0, 3},
    {"M = 0: empty Y", {0, 4}, {4, 3}, {0, 3}, 1, 0, 4, 3},
    {"N = 0: empty Y", {2, 4}, {4, 0}, {2, 0}, 1, 2, 4, 0},
    {"batch = 0 on A: empty Y", {0, 2, 3}, {3, 4}, {0, 2, 4}, 0, 2, 3, 4},
    {"batch 0 broadcast against 1", {1, 2, 3}, {0, 3, 4}, {0, 2, 4}, 0, 2, 3, 4},
    {"1-D of length 0 on both sides: rank-0 zero", {0}, {0}, {}, 1, 1, 0, 1},
    {"zero batch with huge other extents is fine when the rest fits",
     {0, kHuge},
     {kHuge, 1},
     {0, 1},
     1,
     0,
     kHuge,
     1},
    // Degenerate but valid.
    {"K = 1: an outer product", {3, 1}, {1, 4}, {3, 4}, 1, 3, 1, 4},
    {"1 x 1 matrices", {1, 1}, {1, 1}, {1, 1}, 1, 1, 1, 1},
};

class ValidPlanTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidPlanTest, MatchesNumpyShapes) {
  const ValidCase& c = GetParam();
  auto plan = PlanMatMul({DType::kFloat, c.a, c.b});
  ASSERT_TRUE(plan.ok()) << c.why << ": " << plan.status();
  EXPECT_EQ(plan->y_dims, c.y) << c.why;
  EXPECT_EQ(plan->batch, c.batch) << c.why;
  EXPECT_EQ(plan->m, c.m) << c.why;
  EXPECT_EQ(plan->k, c.k) << c.why;
  EXPECT_EQ(plan->n, c.n) << c.why;
  std::int64_t y_elements = 1;
  for (std::int64_t d : c.y) y_elements *= d;
  EXPECT_EQ(plan->y_elements, y_elements) << c.why;
  EXPECT_EQ(plan->batch * plan->m * plan->n, y_elements) << c.why;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ValidPlanTest, ::testing::ValuesIn(kValidCases),
                         mm::testing::NameFromWhy());

struct InvalidCase {
  const char* why;
  Dims a, b;
  StatusCode code;
  const char* message;  // Must appear in the error.
};

const InvalidCase kInvalidCases[] = {
    {"K mismatch names both shapes and both Ks",
     {2, 3, 4},
     {5, 6},
     StatusCode::kInvalidArgument,
     "K mismatch: A [2,3,4] has K=4, B [5,6] has K=5"},
    {"K mismatch between two vectors",
     {3},
     {4},
     StatusCode::kInvalidArgument,
     "K mismatch: A [3] has K=3, B [4] has K=4"},
    {"K mismatch with a 1-D B", {2, 3}, {2}, StatusCode::kInvalidArgument, "K mismatch"},
    {"batch dims that do not broadcast name the axis",
     {2, 3, 2, 4},
     {2, 2, 4, 5},
     StatusCode::kInvalidArgument,
     "batch dims not broadcastable at axis 1: 3 vs 2"},
    {"batch mismatch after left-padding B",
     {3, 2, 4},
     {2, 4, 5},
     StatusCode::kInvalidArgument,
     "batch dims not broadcastable at axis 0: 3 vs 2"},
    {"a scalar A is not a MatMul operand (numpy refuses too)",
     {},
     {3},
     StatusCode::kInvalidArgument,
     "A is a scalar"},
    {"a scalar B is not a MatMul operand", {3}, {}, StatusCode::kInvalidArgument, "B is a scalar"},
    {"negative dims are refused",
     {2, -3},
     {-3, 4},
     StatusCode::kInvalidArgument,
     "negative dimension -3"},
    {"A whose element count overflows int64",
     {kHuge, kHuge, 2},
     {2, 2},
     StatusCode::kOutOfRange,
     "overflows int64"},
    {"A whose byte count overflows though its element count fits",
     {std::int64_t{1} << 31, std::int64_t{1} << 30, 2},
     {2, 1},
     StatusCode::kOutOfRange,
     "overflows int64"},
    {"Y whose size overflows though A and B fit",
     {kHuge, 1},
     {1, kHuge},
     StatusCode::kOutOfRange,
     "output of MatMul"},
    {"Y overflowing through broadcast batch dims of both operands",
     {kHuge, 1, 1, 1},
     {kHuge, 1, 1},
     StatusCode::kOutOfRange,
     "output of MatMul"},
    {"a zero dim does not excuse absurd other dims",
     {0, kHuge, kHuge, 2},
     {2, 2},
     StatusCode::kOutOfRange,
     "overflows int64"},
};

class InvalidPlanTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidPlanTest, ExplainsTheProblem) {
  const InvalidCase& c = GetParam();
  auto plan = PlanMatMul({DType::kFloat, c.a, c.b});
  ASSERT_FALSE(plan.ok()) << c.why;
  EXPECT_EQ(plan.status().code(), c.code) << c.why << ": " << plan.status();
  EXPECT_THAT(plan.status().message(), HasSubstr(c.message)) << c.why;
}

INSTANTIATE_TEST_SUITE_P(Shapes, InvalidPlanTest, ::testing::ValuesIn(kInvalidCases),
                         mm::testing::NameFromWhy());

TEST(PlanMatMulTest, BroadcastStridesPointAtTheRightMatrices) {
  // A [3,1,2,4] x B [1,5,4,6]: A's matrix depends only on the first batch axis, B's on the second.
  auto plan = PlanMatMul({DType::kFloat, {3, 1, 2, 4}, {1, 5, 4, 6}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->batch_dims, (Dims{3, 5}));
  for (std::int64_t i = 0; i < 3; ++i) {
    for (std::int64_t j = 0; j < 5; ++j) {
      const auto [a_offset, b_offset] = plan->BatchOffsets(i * 5 + j);
      EXPECT_EQ(a_offset, i * 2 * 4);
      EXPECT_EQ(b_offset, j * 4 * 6);
    }
  }
  EXPECT_FALSE(plan->a_batch_contiguous());
  EXPECT_FALSE(plan->b_batch_contiguous());
  EXPECT_FALSE(plan->b_shared_across_batch());
}

TEST(PlanMatMulTest, StackAndSharedOperandPredicates) {
  auto bcast = PlanMatMul({DType::kFloat, {2, 3, 4}, {4, 5}});
  ASSERT_TRUE(bcast.ok());
  EXPECT_TRUE(bcast->a_batch_contiguous());
  EXPECT_TRUE(bcast->b_shared_across_batch());
  auto stack = PlanMatMul({DType::kFloat, {2, 3, 4}, {2, 4, 5}});
  ASSERT_TRUE(stack.ok());
  EXPECT_TRUE(stack->a_batch_contiguous());
  EXPECT_TRUE(stack->b_batch_contiguous());
  EXPECT_FALSE(stack->b_shared_across_batch());
}

TEST(PlanMatMulTest, ByteCountDependsOnDtype) {
  // A [2^30, 2^31] has 2^61 elements: 2^62 bytes as float16 fits int64, 2^64 bytes as double does
  // not.
  const Dims a{std::int64_t{1} << 30, std::int64_t{1} << 31};
  const Dims b{std::int64_t{1} << 31, 1};
  EXPECT_TRUE(PlanMatMul({DType::kFloat16, a, b}).ok());
  auto plan = PlanMatMul({DType::kDouble, a, b});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(plan.status().message(), HasSubstr("A: shape [1073741824,2147483648] is too large"));
}

}  // namespace
}  // namespace mm
