// The oneDNN backend against the reference backend over every numpy.matmul form, its honest
// refusals, its primitive cache, and its error path. ctest runs this binary twice, with
// OMP_NUM_THREADS=1 and =2 (suffixes .omp1 / .omp2).
#include "backends/onednn/onednn_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend_list.h"
#include "backends/onednn/onednn_internal.h"
#include "backends/testing/matmul_tester.h"
#include "engine/testing/test_names.h"

namespace mm {
namespace {

using ::testing::HasSubstr;
using testing::MatMulTester;

std::unique_ptr<OneDnnBackend> MakeBackend(OneDnnBackend::Options options = {}) {
  auto backend = OneDnnBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

struct ShapeCase {
  const char* why;
  Dims a;
  Dims b;
};

// Batch dims of `extents` followed by the matrix dims `matrix`.
Dims With(Dims extents, std::initializer_list<std::int64_t> matrix) {
  extents.insert(extents.end(), matrix);
  return extents;
}

const ShapeCase kShapes[] = {
    // 1-D forms: oneDNN has no 1-D matmul; the plan's promoted matrices must give numpy's shapes.
    {"1-D x 1-D: dot product, rank-0 Y", {7}, {7}},
    {"1-D A x 2-D B: A promoted to a row", {5}, {5, 3}},
    {"2-D A x 1-D B: B promoted to a column", {4, 5}, {5}},
    {"1-D A x batched B: the promoted row broadcasts over B's batch", {5}, {2, 3, 5, 4}},
    {"batched A x 1-D B: the column is shared by the batch (folds into M)", {2, 3, 4, 5}, {5}},
    {"1-D x 1-D of length 0: K = 0 gives a scalar 0", {0}, {0}},
    // Batch broadcasting, handed to oneDNN natively.
    {"broadcast on A: 2-D A against a batched B", {3, 5}, {2, 5, 4}},
    {"broadcast on A: A's batch axis is 1", {1, 3, 5}, {4, 5, 6}},
    {"broadcast on B: 2-D B shared by a rank-4 batch (folds into M)", {2, 3, 4, 5}, {5, 6}},
    {"broadcast on B: B is 1 in the middle batch axis", {2, 3, 4, 5}, {2, 1, 5, 6}},
    {"broadcast on both: 3x1 against 1x2", {3, 1, 3, 4}, {1, 2, 4, 2}},
    {"broadcast on both with different ranks", {2, 1, 3, 4}, {5, 4, 2}},
    {"rank 5 with broadcast in both operands", {2, 1, 3, 3, 4}, {1, 2, 3, 4, 5}},
    {"rank 5 without broadcast: 3 batch axes merge into one", {2, 3, 4, 5, 6}, {2, 3, 4, 6, 7}},
    {"rank 12, oneDNN's limit, with no batch axis that can merge",
     With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {3, 4}), With({1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {4, 5})},
    {"rank 14 that collapses to rank 4: A's 6 axes against B's 6 other axes",
     With({2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1}, {3, 4}),
     With({1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}, {4, 5})},
    {"rank 14 with no broadcast: collapses to one batch axis",
     With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {3, 4}),
     With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {4, 2})},
    // Degenerate extents.
    {"K = 1: an outer product", {6, 1}, {1, 5}},
    {"K = 0: Y is all zeros, without calling oneDNN", {3, 0}, {0, 4}},
    {"K = 0 with a broadcast batch", {2, 3, 0}, {0, 4}},
    {"M = 0: empty Y", {0, 4}, {4, 3}},
    {"N = 0: empty Y", {3, 4}, {4, 0}},
    {"batch = 0 broadcast against 1: empty Y", {0, 3, 4}, {1, 4, 5}},
    // Odd sizes, off every vector width and blocking oneDNN uses.
    {"odd sizes 1x1x1", {1, 1}, {1, 1}},
    {"odd sizes 7x7x7", {7, 7}, {7, 7}},
    {"odd sizes 17x33x7", {17, 33}, {33, 7}},
    {"odd sizes 33x257x17", {33, 257}, {257, 17}},
    {"odd sizes 257x33x257", {257, 33}, {33, 257}},
    // Long accumulation: float32 accumulation error grows with K; the tester's bound scales with
    // it.
    {"K = 4096: long float32 accumulation", {8, 4096}, {4096, 16}},
};

constexpr DType kComputedDTypes[] = {DType::kFloat, DType::kBFloat16, DType::kFloat16};

class OneDnnShapeTest : public ::testing::TestWithParam<std::tuple<ShapeCase, DType>> {};

TEST_P(OneDnnShapeTest, MatchesTheReference) {
  const auto& [shape, dtype] = GetParam();
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  MatMulTester().a_dims(shape.a).b_dims(shape.b).dtype(dtype).Test(*backend);
}

INSTANTIATE_TEST_SUITE_P(AllForms, OneDnnShapeTest,
                         ::testing::Combine(::testing::ValuesIn(kShapes),
                                            ::testing::ValuesIn(kComputedDTypes)),
                         [](const auto& info) {
                           return testing::TestNameFromWhy(std::get<0>(info.param).why) + "_" +
                                  std::string(DTypeName(std::get<1>(info.param)));
                         });

TEST(OneDnnBackendTest, RepeatedExecuteOnOnePrimitiveGivesTheSameAnswerEachTime) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  for (DType dtype : kComputedDTypes) {
    MatMulTester()
        .a_dims({3, 1, 5, 7})
        .b_dims({1, 2, 7, 6})
        .dtype(dtype)
        .iterations(3)
        .Test(*backend);
    MatMulTester().a_dims({3, 0}).b_dims({0, 4}).dtype(dtype).iterations(3).Test(*backend);
  }
}

TEST(OneDnnBackendTest, ExecuteFollowsTheBuffersItIsGivenOnEveryCall) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  auto primitive = backend->Prepare(PlanMatMul({DType::kFloat, {2, 2}, {2, 1}}).value());
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  const float a1_values[] = {1, 2, 3, 4};
  const float a2_values[] = {10, 20, 30, 40};
  const float b_values[] = {1, 1};
  Tensor a1 = Tensor::FromValues<float>({2, 2}, a1_values).value();
  Tensor a2 = Tensor::FromValues<float>({2, 2}, a2_values).value();
  Tensor b = Tensor::FromValues<float>({2, 1}, b_values).value();
  Tensor y1 = Tensor::Create(DType::kFloat, {2, 1}).value();
  Tensor y2 = Tensor::Create(DType::kFloat, {2, 1}).value();
  auto run = [&](const Tensor& a, Tensor& y) {
    ASSERT_TRUE((*primitive)->Execute(a.view(), b.view(), y.mutable_view()).ok());
  };
  run(a1, y1);
  EXPECT_EQ(y1.Data<float>()[1], 7.0f);
  run(a2, y1);  // New A, same Y.
  EXPECT_EQ(y1.Data<float>()[1], 70.0f);
  run(a1, y2);  // Back to the first A, new Y; y1 is left alone.
  EXPECT_EQ(y2.Data<float>()[1], 7.0f);
  EXPECT_EQ(y1.Data<float>()[1], 70.0f);
  run(a1, y2);  // Exactly the buffers of the last call.
  EXPECT_EQ(y2.Data<float>()[0], 3.0f);
}

TEST(OneDnnBackendTest, DoubleAndIntegersAreUnsupportedWithAReason) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  for (DType dtype :
       {DType::kDouble, DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    MatMulTester().a_dims({3, 4}).b_dims({4, 5}).dtype(dtype).TestUnsupported(*backend);
    // Zero-size problems are refused too: support is per dtype, not per shape.
    MatMulTester().a_dims({3, 0}).b_dims({0, 5}).dtype(dtype).TestUnsupported(*backend);
    const Support support = backend->Supports({dtype, {2, 3}, {3, 2}});
    EXPECT_THAT(support.note, HasSubstr("oneDNN has no"));
    EXPECT_THAT(support.note, HasSubstr(DTypeName(dtype) == "double" ? "f64" : DTypeName(dtype)));
  }
}

TEST(OneDnnBackendTest, Float16SaysWhichPathItTakes) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  const Support support = backend->Supports({DType::kFloat16, {2, 3}, {3, 4}});
  if (backend->float16_native()) {
    EXPECT_EQ(support.level, Support::Level::kNative);
  } else {
    EXPECT_EQ(support.level, Support::Level::kByConversion);
    EXPECT_THAT(support.note, HasSubstr("f16 via f32"));
  }
  EXPECT_EQ(backend->Supports({DType::kFloat, {2, 3}, {3, 4}}).level, Support::Level::kNative);
  EXPECT_EQ(backend->Supports({DType::kBFloat16, {2, 3}, {3, 4}}).level, Support::Level::kNative);
}

TEST(OneDnnBackendTest, Float16ViaFloat32ComputesWithOneRounding) {
  auto backend = MakeBackend({.float16_path = OneDnnBackend::Float16Path::kViaFloat32});
  ASSERT_NE(backend, nullptr);
  EXPECT_FALSE(backend->float16_native());
  EXPECT_EQ(backend->Supports({DType::kFloat16, {2, 3}, {3, 4}}).level,
            Support::Level::kByConversion);
  MatMulTester().a_dims({3, 1, 9, 17}).b_dims({1, 2, 17, 5}).dtype(DType::kFloat16).Test(*backend);
  MatMulTester().a_dims({33}).b_dims({33}).dtype(DType::kFloat16).Test(*backend);
  // 1 + 2^-11 + 2^-20 (exact in f32) lies just above the tie between 1 and 1 + 2^-10: one rounding
  // of the f32 sum gives 1 + 2^-10; an f16 accumulator would round 1 + 2^-11 to 1 first and stay.
  const float16 a_values[] = {float16(1.0f), float16(std::ldexp(1.0f, -11)),
                              float16(std::ldexp(1.0f, -20))};
  const float16 b_values[] = {float16(1.0f), float16(1.0f), float16(1.0f)};
  Tensor a = Tensor::FromValues<float16>({3}, a_values).value();
  Tensor b = Tensor::FromValues<float16>({3}, b_values).value();
  auto y = MatMul(*backend, a.view(), b.view());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(static_cast<float>(y->Data<float16>()[0]), 1.0f + std::ldexp(1.0f, -10));
}

TEST(OneDnnBackendTest, ForcedNativeFloat16ComputesOrFailsWithAStatusNamingOneDnn) {
  auto automatic = MakeBackend();
  auto forced = MakeBackend({.float16_path = OneDnnBackend::Float16Path::kNative});
  ASSERT_NE(automatic, nullptr);
  ASSERT_NE(forced, nullptr);
  const MatMulPlan plan = PlanMatMul({DType::kFloat16, {2, 3, 4}, {4, 5}}).value();
  auto primitive = forced->Prepare(plan);
  if (automatic->float16_native()) {
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(DType::kFloat16).Test(*forced);
  } else {
    // This CPU's oneDNN has no f16 matmul: primitive creation throws inside oneDNN, and the
    // backend's edge turns that into a Status, never an exception.
    ASSERT_FALSE(primitive.ok());
    EXPECT_EQ(primitive.status().code(), StatusCode::kUnimplemented);
    EXPECT_THAT(primitive.status().message(), HasSubstr("oneDNN status unimplemented"));
    EXPECT_THAT(primitive.status().message(), HasSubstr("float16 [2,3,4] x [4,5]"));
  }
}

TEST(OneDnnBackendTest, OneDnnErrorsBecomeStatusesNamingTheStatusAndShapes) {
  const MatMulDesc desc{DType::kFloat, {2, 3}, {3, 4}};
  try {
    // 13 dims is one more than oneDNN accepts: a real dnnl::error.
    dnnl::memory::desc md(Dims(13, 1), dnnl::memory::data_type::f32, Dims(13, 1));
    FAIL() << "oneDNN accepted 13 dims";
  } catch (const dnnl::error& e) {
    const Status status = onednn_internal::StatusFromDnnlError(e, "describing A", desc);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("oneDNN status invalid_arguments"));
    EXPECT_THAT(status.message(), HasSubstr("while describing A"));
    EXPECT_THAT(status.message(), HasSubstr("float [2,3] x [3,4]"));
  }
  EXPECT_EQ(onednn_internal::StatusFromDnnl(dnnl_out_of_memory, "x", desc).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(onednn_internal::StatusFromDnnl(dnnl_runtime_error, "x", desc).code(),
            StatusCode::kInternal);
}

TEST(OneDnnBackendTest, RanksThatDoNotCollapseTo12DimsAreUnsupportedWithTheReason) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  // 11 batch axes alternating which operand broadcasts: nothing merges, Y would have rank 13.
  const Dims a = With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {3, 4});
  const Dims b = With({1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {4, 5});
  MatMulTester().a_dims(a).b_dims(b).TestUnsupported(*backend);
  EXPECT_THAT(backend->Supports({DType::kFloat, a, b}).note, HasSubstr("12-dim limit"));
  // The same rank with K = 0 never reaches oneDNN, so it is computed (as zeros).
  MatMulTester()
      .a_dims(With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {3, 0}))
      .b_dims(With({1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {0, 5}))
      .Test(*backend);
}

TEST(OneDnnBackendTest, ExtentsBeyondInt32AreUnsupportedWithTheReason) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  // oneDNN 2.6 dies with SIGFPE creating a primitive with M = 2^32; we refuse instead.
  MatMulTester().a_dims({std::int64_t{1} << 32, 1}).b_dims({1, 4}).TestUnsupported(*backend);
  EXPECT_THAT(backend->Supports({DType::kFloat, {std::int64_t{1} << 32, 1}, {1, 4}}).note,
              HasSubstr("2^31-1"));
}

TEST(OneDnnBackendTest, InvalidDescsAreRefusedWithThePlannerReason) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  const Support support = backend->Supports({DType::kFloat, {2, 3}, {4, 5}});
  EXPECT_EQ(support.level, Support::Level::kNo);
  EXPECT_THAT(support.note, HasSubstr("K mismatch"));
}

TEST(OneDnnShapesTest, CollapsingKeepsTheBytesAndMergesOnlyWhatIsExact) {
  auto shapes = [](Dims a, Dims b) {
    return onednn_internal::CollapseShapes(PlanMatMul({DType::kFloat, a, b}).value());
  };
  // 1-D operands are the plan's promoted matrices.
  auto s = shapes({5}, {5, 3});
  EXPECT_EQ(s.src, (Dims{1, 5}));
  EXPECT_EQ(s.dst, (Dims{1, 3}));
  // A shared B folds the batch into M.
  s = shapes({2, 3, 4, 5}, {5, 6});
  EXPECT_EQ(s.src, (Dims{24, 5}));
  EXPECT_EQ(s.weights, (Dims{5, 6}));
  EXPECT_EQ(s.dst, (Dims{24, 6}));
  // Two-sided broadcast cannot merge: kept as oneDNN broadcasts it.
  s = shapes({3, 1, 3, 4}, {1, 2, 4, 2});
  EXPECT_EQ(s.src, (Dims{3, 1, 3, 4}));
  EXPECT_EQ(s.weights, (Dims{1, 2, 4, 2}));
  EXPECT_EQ(s.dst, (Dims{3, 2, 3, 2}));
  // Axes of extent 1 vanish; neighbours that both operands span merge.
  s = shapes({2, 1, 3, 4, 5}, {2, 1, 3, 5, 6});
  EXPECT_EQ(s.src, (Dims{6, 4, 5}));
  EXPECT_EQ(s.weights, (Dims{6, 5, 6}));
  // B broadcast over A's leading axes, then both span the last one: [2,3] (A only) and [4].
  s = shapes({2, 3, 4, 7, 5}, {4, 5, 6});
  EXPECT_EQ(s.src, (Dims{6, 4, 7, 5}));
  EXPECT_EQ(s.weights, (Dims{1, 4, 5, 6}));
  EXPECT_EQ(s.dst, (Dims{6, 4, 7, 6}));
}

TEST(OneDnnCacheTest, TheSameProblemTwiceCompilesOnce) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {2, 3, 4}, {2, 4, 5}}).value();
  ASSERT_TRUE(backend->Prepare(plan).ok());
  ASSERT_TRUE(backend->Prepare(plan).ok());
  EXPECT_EQ(backend->cache_stats().misses, 1);
  EXPECT_EQ(backend->cache_stats().hits, 1);
  EXPECT_EQ(backend->cache_stats().size, 1u);
  // The one-shot path (plan + prepare + execute per call) reuses it too.
  const Tensor a =
      MatMulTester::RandomTensor(DType::kFloat, {2, 3, 4}, 1, MatMulTester::Values::kSmall);
  const Tensor b =
      MatMulTester::RandomTensor(DType::kFloat, {2, 4, 5}, 2, MatMulTester::Values::kSmall);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(MatMul(*backend, a.view(), b.view()).ok());
  EXPECT_EQ(backend->cache_stats().misses, 1);
  EXPECT_EQ(backend->cache_stats().hits, 4);
  // A 1-D A is the same oneDNN problem as its promoted [1, K] form.
  ASSERT_TRUE(backend->Prepare(PlanMatMul({DType::kFloat, {4}, {4, 5}}).value()).ok());
  ASSERT_TRUE(backend->Prepare(PlanMatMul({DType::kFloat, {1, 4}, {4, 5}}).value()).ok());
  EXPECT_EQ(backend->cache_stats().misses, 2);
  EXPECT_EQ(backend->cache_stats().hits, 5);
}

TEST(OneDnnCacheTest, DifferentProblemsDoNotCollide) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  // Same element counts, different shapes; same shapes, different dtypes: each is its own entry,
  // and each primitive, used interleaved, computes its own problem.
  MatMulTester().a_dims({4, 6}).b_dims({6, 4}).Test(*backend);
  MatMulTester().a_dims({6, 4}).b_dims({4, 6}).Test(*backend);
  MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).Test(*backend);
  MatMulTester().a_dims({4, 6}).b_dims({6, 4}).dtype(DType::kBFloat16).Test(*backend);
  MatMulTester().a_dims({4, 6}).b_dims({6, 4}).dtype(DType::kFloat16).Test(*backend);
  MatMulTester().a_dims({4, 6}).b_dims({6, 4}).Test(*backend);
  // Tester runs the reference separately; these counts are the backend's own Prepare calls.
  EXPECT_EQ(backend->cache_stats().misses, 5);
  EXPECT_EQ(backend->cache_stats().hits, 1);
}

TEST(OneDnnCacheTest, IsBoundedAndEvictsTheLeastRecentlyUsed) {
  auto backend = MakeBackend({.cache_capacity = 2});
  ASSERT_NE(backend, nullptr);
  auto prepare = [&](std::int64_t n) {
    ASSERT_TRUE(backend->Prepare(PlanMatMul({DType::kFloat, {3, 4}, {4, n}}).value()).ok());
  };
  prepare(1);
  prepare(2);
  prepare(1);  // Hit: 1 is now the most recent.
  prepare(3);  // Evicts 2.
  EXPECT_EQ(backend->cache_stats().size, 2u);
  prepare(1);  // Still cached.
  prepare(2);  // Compiled again.
  EXPECT_EQ(backend->cache_stats().hits, 2);
  EXPECT_EQ(backend->cache_stats().misses, 4);

  auto uncached = MakeBackend({.cache_capacity = 0});
  ASSERT_NE(uncached, nullptr);
  MatMulTester().a_dims({3, 4}).b_dims({4, 5}).iterations(2).Test(*uncached);
  EXPECT_EQ(uncached->cache_stats().size, 0u);
}

TEST(OneDnnCacheTest, APrimitiveOutlivesItsBackend) {
  const MatMulPlan plan = PlanMatMul({DType::kFloat16, {2, 3}, {3, 2}}).value();
  std::unique_ptr<MatMulPrimitive> primitive;
  {
    auto backend = MakeBackend();
    ASSERT_NE(backend, nullptr);
    auto prepared = backend->Prepare(plan);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    primitive = std::move(prepared).value();
  }
  const float16 ones[] = {float16(1.0f), float16(1.0f), float16(1.0f),
                          float16(1.0f), float16(1.0f), float16(1.0f)};
  Tensor a = Tensor::FromValues<float16>({2, 3}, ones).value();
  Tensor b = Tensor::FromValues<float16>({3, 2}, ones).value();
  Tensor y = Tensor::Create(DType::kFloat16, {2, 2}).value();
  ASSERT_TRUE(primitive->Execute(a.view(), b.view(), y.mutable_view()).ok());
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(static_cast<float>(y.Data<float16>()[i]), 3.0f);
}

template <class T>
void CheckNanAndInfinityPropagate(OneDnnBackend& backend) {
  SCOPED_TRACE(std::string(DTypeName(DTypeOf<T>())));
  const T a_values[] = {T(INFINITY), T(1.0f), T(NAN), T(1.0f), T(2.0f), T(1.0f)};
  const T b_values[] = {T(1.0f), T(0.0f)};
  Tensor a = Tensor::FromValues<T>({3, 2}, a_values).value();
  Tensor b = Tensor::FromValues<T>({2, 1}, b_values).value();
  auto y = MatMul(backend, a.view(), b.view());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(static_cast<float>(y->template Data<T>()[0]), INFINITY);      // inf*1 + 1*0
  EXPECT_TRUE(std::isnan(static_cast<float>(y->template Data<T>()[1])));  // NaN poisons the sum
  EXPECT_EQ(static_cast<float>(y->template Data<T>()[2]), 2.0f);
  // inf * 0 is NaN.
  const T b2_values[] = {T(0.0f), T(1.0f)};
  Tensor b2 = Tensor::FromValues<T>({2, 1}, b2_values).value();
  y = MatMul(backend, a.view(), b2.view());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(std::isnan(static_cast<float>(y->template Data<T>()[0])));
  EXPECT_TRUE(std::isnan(static_cast<float>(y->template Data<T>()[1])));
  EXPECT_EQ(static_cast<float>(y->template Data<T>()[2]), 1.0f);
}

TEST(OneDnnBackendTest, NanAndInfinityPropagate) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  CheckNanAndInfinityPropagate<float>(*backend);
  CheckNanAndInfinityPropagate<bfloat16>(*backend);
  CheckNanAndInfinityPropagate<float16>(*backend);
}

TEST(OneDnnBackendTest, WorkedExamplesOfTheOnnxPageAtOnnxTolerance) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  testing::ExpectWorkedExamplesPass(*backend);
}

TEST(OneDnnBackendTest, IsRegisteredAsOnednn) {
  auto backend = BuiltinBackends().Create("onednn");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "onednn");
  MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).Test(**backend);
}

}  // namespace
}  // namespace mm
