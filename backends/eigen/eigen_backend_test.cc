// The Eigen backend's own internals: how it says each dtype is computed, its float32 accumulation
// and single rounding of 16-bit floats, integer wraparound through uint64, scratch-buffer reuse and
// its thread scheduling. (Every form and dtype against the reference is the cross-backend suite's,
// backends/tests.) ctest runs this binary with OMP_NUM_THREADS=1 and =2, so the batch-spreading and
// row-block paths are both exercised.
#include "mm/backends/eigen/eigen_backend.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "mm/backends/eigen/eigen_kernels.h"
#include "mm/backends/eigen/row_blocks.h"
#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/testing/test_names.h"

namespace mm {
namespace {

using testing::MatMulTester;

struct Shape {
  const char* why;
  Dims a;
  Dims b;
};

// Shapes that reach each of the backend's scheduling paths (the forms themselves are the suite's).
const Shape kShapes[] = {
    {"8 small entries: spread over the threads", {8, 16, 16}, {8, 16, 16}},
    {"1000 tiny entries: per-entry overhead and batch spreading", {1000, 2, 3}, {1000, 3, 2}},
    {"2 entries of Eigen-GEMM size: one entry per thread", {2, 65, 66}, {2, 66, 67}},
    {"folded batch split into row blocks per thread, ragged", {5, 101, 67}, {67, 33}},
    {"257 x 67 x 257: split into ragged row blocks with 2 threads", {257, 67}, {67, 257}},
};

using ShapeAndDType = std::tuple<Shape, DType>;

class EigenBackendShapeTest : public ::testing::TestWithParam<ShapeAndDType> {};

TEST_P(EigenBackendShapeTest, MatchesTheReference) {
  const auto& [shape, dtype] = GetParam();
  EigenBackend backend;
  MatMulTester tester;
  tester.a_dims(shape.a).b_dims(shape.b).dtype(dtype).iterations(3);
  tester.Test(backend);
  if (!IsFloat(dtype)) {
    // Whole-range integers: products and sums wrap, and must wrap exactly like the reference.
    tester.values(MatMulTester::Values::kFullRange).seed(99).iterations(1).Test(backend);
  }
}

INSTANTIATE_TEST_SUITE_P(SchedulingPaths, EigenBackendShapeTest,
                         ::testing::Combine(::testing::ValuesIn(kShapes),
                                            ::testing::ValuesIn(kAllDTypes)),
                         [](const ::testing::TestParamInfo<ShapeAndDType>& info) {
                           return testing::TestNameFromWhy(std::get<0>(info.param).why) + "_" +
                                  std::string(DTypeName(std::get<1>(info.param)));
                         });

// Both 32-bit integer paths, whichever this CPU picks: exact modulo 2^32 on whole-range values
// (every product and sum wraps) and on small ones, against the reference, at shapes with vector
// remainders (Eigen's scalar tails, where only -fwrapv makes a wrapping sum defined).
TEST(EigenBackendTest, BothInt32PathsWrapExactly) {
  for (auto path : {EigenBackend::Int32Path::kNative, EigenBackend::Int32Path::kViaUInt64}) {
    EigenBackend backend(path);
    for (DType dtype : {DType::kInt32, DType::kUInt32}) {
      for (const auto& [a, b] : {std::pair<Dims, Dims>{{67, 131}, {131, 19}},
                                 {{3, 33, 9}, {9, 5}},
                                 {{1, 257}, {257, 1}}}) {
        MatMulTester tester;
        tester.a_dims(a).b_dims(b).dtype(dtype).iterations(1);
        tester.values(MatMulTester::Values::kFullRange).seed(7).Test(backend);
        tester.values(MatMulTester::Values::kSmall).seed(8).Test(backend);
      }
    }
    auto plan = PlanMatMul({DType::kInt32, {8, 8}, {8, 8}}).value();
    const std::string how = backend.Prepare(plan).value()->implementation();
    EXPECT_NE(how.find(path == EigenBackend::Int32Path::kNative ? "in int32" : "in uint64"),
              std::string::npos)
        << how;
  }
}

// Products Eigen would compute coefficient by coefficient (M + K + N < 20, and too small to
// thread) run mm's coefficient loops; one step past either bound runs Eigen's product. Both sides
// of each bound, every dtype, whole-range integers (every sum wraps), against the reference.
TEST(EigenBackendTest, TinyProductsTakeTheCoefficientLoopsOnBothSidesOfTheBound) {
  struct Case {
    const char* why;
    Dims a, b;
    bool loops;
  };
  const Case cases[] = {
      {"3x4x3: the tiny benchmark shape", {3, 4}, {4, 3}, true},
      {"2 entries of 3x4x3, per entry", {2, 3, 4}, {2, 4, 3}, true},
      {"folded batch: B shared, 4 x 3 rows", {4, 3, 5}, {5, 2}, true},
      {"M + K + N = 19: the last size below Eigen's bound", {6, 7}, {7, 6}, true},
      {"M + K + N = 20: Eigen's own product", {7, 7}, {7, 6}, false},
      {"1-D dot product, K = 17 (M + K + N = 19)", {17}, {17}, true},
      {"broadcast batch of tiny entries", {2, 1, 3, 4}, {1, 3, 4, 2}, true},
  };
  EigenBackend backend;
  for (const Case& c : cases) {
    for (DType dtype : kAllDTypes) {
      SCOPED_TRACE(std::string(c.why) + " " + std::string(DTypeName(dtype)));
      MatMulTester tester;
      tester.a_dims(c.a).b_dims(c.b).dtype(dtype).iterations(2).Test(backend);
      if (!IsFloat(dtype)) {
        tester.values(MatMulTester::Values::kFullRange).seed(5).iterations(1).Test(backend);
      }
      auto plan = PlanMatMul({dtype, c.a, c.b});
      ASSERT_TRUE(plan.ok()) << plan.status();
      const std::string how = backend.Prepare(*plan).value()->implementation();
      EXPECT_EQ(how.find("coefficient loops") != std::string::npos, c.loops) << how;
    }
  }
}

// The products run the copy of the kernels compiled for the level chosen in this process (ctest
// runs this binary again under MM_MAX_CPU_ISA=baseline and avx2), and the backend says which.
TEST(EigenBackendTest, RunsAndNamesTheKernelsOfTheChosenLevel) {
  const StatusOr<CpuIsa> chosen = ChosenCpuIsa();
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  const StatusOr<const eigen_internal::EigenKernels*> kernels =
      eigen_internal::ChosenEigenKernels();
  ASSERT_TRUE(kernels.ok());
  EXPECT_EQ((*kernels)->isa, *chosen);
  // Eigen's list of the sets each level's copy was compiled for ("AVX SSE" is its AVX2 list).
  const char* const eigen_sets[] = {"SSE, SSE2", "AVX SSE", "AVX512, FMA, AVX2"};
  EXPECT_EQ(std::string((*kernels)->simd).find(eigen_sets[static_cast<int>(*chosen)]), 0u)
      << (*kernels)->simd;
  const char* const widest[] = {"SSE2", "AVX2", "AVX512"};
  EigenBackend backend;
  EXPECT_NE(backend.RunsOn().find(std::string(CpuIsaLevel(*chosen))), std::string::npos)
      << backend.RunsOn();
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {64, 64}, {64, 64}}).value();
  auto primitive = backend.Prepare(plan);
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  EXPECT_NE((*primitive)
                ->implementation()
                .find(std::string("Eigen GEMM (") + widest[static_cast<int>(*chosen)] + ")"),
            std::string::npos)
      << (*primitive)->implementation();
  EXPECT_EQ(EigenBackend::DefaultInt32Path() == EigenBackend::Int32Path::kViaUInt64,
            *chosen == CpuIsa::kAvx512);
}

TEST(EigenBackendTest, SaysHowEachDtypeIsComputed) {
  EigenBackend backend;
  for (DType dtype : kAllDTypes) {
    const Support support = backend.Supports({dtype, {2, 3}, {3, 4}});
    if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
      EXPECT_EQ(support.level, Support::Level::kByConversion) << DTypeName(dtype);
      EXPECT_NE(support.note.find("via float32 accumulation"), std::string::npos) << support.note;
    } else if ((dtype == DType::kInt32 || dtype == DType::kUInt32) &&
               EigenBackend::DefaultInt32Path() == EigenBackend::Int32Path::kViaUInt64) {
      EXPECT_EQ(support.level, Support::Level::kByConversion) << DTypeName(dtype);
      EXPECT_NE(support.note.find("via uint64"), std::string::npos) << support.note;
    } else {
      EXPECT_EQ(support.level, Support::Level::kNative) << DTypeName(dtype);
    }
  }
}

template <class T>
Tensor Filled(Dims dims, float value) {
  Tensor t = Tensor::Create(DTypeOf<T>(), std::move(dims)).value();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<T>()[i] = T(value);
  return t;
}

TEST(EigenBackendTest, SixteenBitFloatsAccumulateInFloat32) {
  EigenBackend backend;
  // A float16 accumulator stalls at 2048 (2048 + 1 rounds back to 2048); a bfloat16 one at 256.
  auto f16 =
      MatMul(backend, Filled<float16>({4096}, 1.0f).view(), Filled<float16>({4096}, 1.0f).view());
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ(static_cast<float>(f16->Data<float16>()[0]), 4096.0f);
  auto bf16 =
      MatMul(backend, Filled<bfloat16>({512}, 1.0f).view(), Filled<bfloat16>({512}, 1.0f).view());
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(static_cast<float>(bf16->Data<bfloat16>()[0]), 512.0f);
}

TEST(EigenBackendTest, SixteenBitFloatsRoundOnceToNearestEven) {
  EigenBackend backend;
  auto dot = [&](float second) {
    Tensor a = Tensor::Create(DType::kFloat16, {2}).value();
    a.Data<float16>()[0] = float16(1.0f);
    a.Data<float16>()[1] = float16(second);
    return static_cast<float>(
        MatMul(backend, a.view(), Filled<float16>({2}, 1.0f).view()).value().Data<float16>()[0]);
  };
  // 1 + 2^-11 is the tie between 1 and 1 + 2^-10: ties go to even, 1.
  EXPECT_EQ(dot(std::ldexp(1.0f, -11)), 1.0f);
  // 1 + 2^-11 + 2^-13 (in float32, exactly) is past the tie: 1 + 2^-10.
  EXPECT_EQ(dot(std::ldexp(1.0f, -11) + std::ldexp(1.0f, -13)), 1.0f + std::ldexp(1.0f, -10));
}

template <class T>
T Dot(std::initializer_list<T> a, std::initializer_list<T> b) {
  EigenBackend backend;
  const Dims dims{static_cast<std::int64_t>(a.size())};
  Tensor ta = Tensor::FromValues<T>(dims, std::span<const T>(a.begin(), a.size())).value();
  Tensor tb = Tensor::FromValues<T>(dims, std::span<const T>(b.begin(), b.size())).value();
  return MatMul(backend, ta.view(), tb.view()).value().template Data<T>()[0];
}

TEST(EigenBackendTest, IntegersWrapModulo2ToBits) {
  using I32 = std::numeric_limits<std::int32_t>;
  using I64 = std::numeric_limits<std::int64_t>;
  // (2^31 - 1) * 2 + 1 * 3 = 2^32 + 1, which is 1 modulo 2^32.
  EXPECT_EQ(Dot<std::int32_t>({I32::max(), 1}, {2, 3}), 1);
  // INT32_MIN * -1 wraps to INT32_MIN.
  EXPECT_EQ(Dot<std::int32_t>({I32::min()}, {-1}), I32::min());
  // INT64_MAX + INT64_MAX = 2^64 - 2, which is -2 as int64.
  EXPECT_EQ(Dot<std::int64_t>({I64::max(), I64::max()}, {1, 1}), -2);
  EXPECT_EQ(Dot<std::int64_t>({I64::min()}, {-1}), I64::min());
  // (2^32 - 1)^2 = 2^64 - 2^33 + 1, which is 1 modulo 2^32; (2^64 - 1) + 2 is 1 modulo 2^64.
  EXPECT_EQ(Dot<std::uint32_t>({0xFFFFFFFFu}, {0xFFFFFFFFu}), 1u);
  EXPECT_EQ(Dot<std::uint64_t>({~std::uint64_t{0}, 2}, {1, 1}), 1u);
}

// int64 runs Eigen's own int64 product (the kernel bare Eigen runs), not a uint64 one, and still
// wraps modulo 2^64 in a product large enough for Eigen's GEMM.
TEST(EigenBackendTest, Int64RunsEigensInt64ProductAndWraps) {
  EigenBackend backend;
  const std::int64_t k = 64;
  std::vector<std::int64_t> a(static_cast<std::size_t>(8 * k),
                              std::numeric_limits<std::int64_t>::max());
  std::vector<std::int64_t> b(static_cast<std::size_t>(k * 8), 1);
  Tensor ta = Tensor::FromValues<std::int64_t>({8, k}, a).value();
  Tensor tb = Tensor::FromValues<std::int64_t>({k, 8}, b).value();
  auto plan = PlanMatMul({DType::kInt64, {8, k}, {k, 8}}).value();
  EXPECT_NE(backend.Prepare(plan).value()->implementation().find("in int64 (wrapping)"),
            std::string::npos);
  // 64 * (2^63 - 1) = 2^69 - 64, which is -64 modulo 2^64.
  const Tensor y = MatMul(backend, ta.view(), tb.view()).value();
  for (std::int64_t i = 0; i < 64; ++i) EXPECT_EQ(y.Data<std::int64_t>()[i], -64) << i;
}

TEST(EigenBackendTest, InfinityNaNAndOverflowPropagateLikeTheReference) {
  EigenBackend backend;
  auto make = [](DType dtype, Dims dims, std::initializer_list<float> values) {
    Tensor t = Tensor::Create(dtype, std::move(dims)).value();
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      std::int64_t i = 0;
      for (float v : values) t.Data<T>()[i++] = T(v);
    });
    return t;
  };
  auto y = MatMul(backend, make(DType::kFloat, {2, 2}, {INFINITY, 1, 0, 1}).view(),
                  make(DType::kFloat, {2, 1}, {1, 0}).view());
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->Data<float>()[0], INFINITY);
  EXPECT_EQ(y->Data<float>()[1], 0.0f);
  // inf * 0 is NaN, and NaN poisons the sum.
  auto nan = MatMul(backend, make(DType::kDouble, {2}, {INFINITY, 1}).view(),
                    make(DType::kDouble, {2}, {0, 1}).view());
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan(nan->Data<double>()[0]));
  // 60000 + 60000 fits the float32 accumulator but overflows float16 when rounded: infinity.
  auto big = MatMul(backend, make(DType::kFloat16, {2}, {60000, 60000}).view(),
                    make(DType::kFloat16, {2}, {1, 1}).view());
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(static_cast<float>(big->Data<float16>()[0]), INFINITY);
}

// Small integers, exact in every float dtype and in float32 sums, so any backend must match the
// reference bit for bit.
Tensor ExactValues(DType dtype, const Dims& dims, int modulus) {
  Tensor t = Tensor::Create(dtype, dims).value();
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      t.Data<T>()[i] = T(static_cast<float>(i % modulus - modulus / 2));
    }
  });
  return t;
}

TEST(EigenBackendTest, OnePrimitiveComputesNewInputsEveryTime) {
  // The 16-bit float and 32-bit integer primitives reuse scratch buffers; nothing of a previous
  // call may leak into the next one.
  for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kFloat, DType::kInt32}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const Dims a_dims{4, 3, 9}, b_dims{9, 5};
    EigenBackend backend;
    ReferenceBackend reference;
    auto plan = PlanMatMul({dtype, a_dims, b_dims}).value();
    auto primitive = backend.Prepare(plan).value();
    for (int modulus : {7, 5, 3}) {
      const Tensor a = ExactValues(dtype, a_dims, modulus);
      const Tensor b = ExactValues(dtype, b_dims, modulus + 4);
      Tensor y = Tensor::Create(dtype, plan.y_dims).value();
      ASSERT_TRUE(primitive->Execute(a.view(), b.view(), y.mutable_view()).ok());
      const Tensor want = MatMul(reference, a.view(), b.view()).value();
      EXPECT_EQ(std::memcmp(y.raw_data(), want.raw_data(), y.NumBytes()), 0) << modulus;
    }
  }
}

TEST(EigenBackendTest, EverySchedulingMatchesTheReferenceWithThreeThreads) {
  // With 3 threads a batch of 2 large entries runs entry after entry, each split into 3 row blocks,
  // and a folded batch splits into 3 row blocks: schedules that 1 and 2 threads never reach.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  EigenBackend backend;
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    MatMulTester().a_dims({2, 97, 98}).b_dims({2, 98, 99}).dtype(dtype).Test(backend);
    MatMulTester().a_dims({5, 101, 67}).b_dims({67, 33}).dtype(dtype).Test(backend);
    MatMulTester().a_dims({7, 40, 41}).b_dims({7, 41, 42}).dtype(dtype).Test(backend);
  }
  omp_set_num_threads(saved);
}

TEST(EigenRowBlocksTest, SplitsRowsEvenlyAtMultiplesOfTheAlignment) {
  using eigen_internal::RowBlockBounds;
  // An odd row count splits next to the middle, not at the share rounded up (72 and 57).
  EXPECT_EQ(RowBlockBounds(129, 2, 8), (std::vector<std::int64_t>{0, 64, 129}));
  EXPECT_EQ(RowBlockBounds(257, 2, 8), (std::vector<std::int64_t>{0, 128, 257}));
  EXPECT_EQ(RowBlockBounds(100, 3, 8), (std::vector<std::int64_t>{0, 32, 64, 100}));
  // Too few rows for a second aligned block: one block, which runs outside a parallel region.
  EXPECT_EQ(RowBlockBounds(3, 2, 8), (std::vector<std::int64_t>{0, 3}));
  // Shares that round to the same bound leave no empty block.
  EXPECT_EQ(RowBlockBounds(20, 4, 8), (std::vector<std::int64_t>{0, 8, 16, 20}));
  for (std::int64_t rows = 1; rows <= 300; ++rows) {
    for (int threads = 1; threads <= 9; ++threads) {
      const std::vector<std::int64_t> bounds = RowBlockBounds(rows, threads, 8);
      SCOPED_TRACE(std::to_string(rows) + " rows, " + std::to_string(threads) + " threads");
      ASSERT_GE(bounds.size(), 2u);
      EXPECT_LE(bounds.size(), static_cast<std::size_t>(threads) + 1);
      EXPECT_EQ(bounds.front(), 0);
      EXPECT_EQ(bounds.back(), rows);
      for (std::size_t i = 1; i < bounds.size(); ++i) {
        EXPECT_LT(bounds[i - 1], bounds[i]);
        if (i + 1 < bounds.size()) EXPECT_EQ(bounds[i] % 8, 0);
        // No block over the even share by more than the alignment.
        EXPECT_LE((bounds[i] - bounds[i - 1]) * threads, rows + 8 * threads);
      }
    }
  }
}

TEST(EigenBackendTest, FollowsOmpNumThreads) {
  // ctest sets OMP_NUM_THREADS for this binary (1 and 2); run by hand without it, OpenMP uses
  // every core.
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env != nullptr) {
    EXPECT_EQ(EigenBackend::MaxThreads(), std::atoi(env));
  }
  // Whatever the environment, it follows the process's OpenMP setting (3: neither ctest's 1 or 2
  // nor this machine's core count).
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  EXPECT_EQ(EigenBackend::MaxThreads(), 3);
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace mm
