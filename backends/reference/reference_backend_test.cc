// The reference backend is the oracle, so it is checked against values worked out independently:
// the ONNX page's examples, hand-computed wraparound and rounding cases, and an index-by-index
// numpy.matmul written out in the test itself.
#include "mm/backends/reference/reference_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "mm/backends/testing/matmul_tester.h"

namespace mm {
namespace {

using ::testing::HasSubstr;

template <class T>
Tensor Make(Dims dims, std::initializer_list<T> values) {
  return Tensor::FromValues<T>(std::move(dims), std::span<const T>(values.begin(), values.size()))
      .value();
}

Tensor RunReference(const Tensor& a, const Tensor& b) {
  ReferenceBackend backend;
  auto y = MatMul(backend, a.view(), b.view());
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? std::move(y).value() : Tensor();
}

TEST(ReferenceBackendTest, WorkedExamplesOfTheOnnxPageAtOnnxTolerance) {
  ReferenceBackend backend;
  testing::ExpectWorkedExamplesPass(backend);
  // The page prints 8 significant digits, so the oracle should be far closer than ONNX needs.
  testing::ExpectWorkedExamplesPass(backend, /*rtol=*/1e-5, /*atol=*/1e-6);
}

TEST(ReferenceBackendTest, Int32WrapsModulo2To32) {
  // (2^31 - 1) * 2 + 1 * 3 = 2^32 + 1, which is 1 modulo 2^32.
  Tensor y = RunReference(Make<std::int32_t>({2}, {std::numeric_limits<std::int32_t>::max(), 1}),
                          Make<std::int32_t>({2}, {2, 3}));
  EXPECT_EQ(y.Data<std::int32_t>()[0], 1);
  // INT32_MIN * -1 wraps to INT32_MIN.
  y = RunReference(Make<std::int32_t>({1, 1}, {std::numeric_limits<std::int32_t>::min()}),
                   Make<std::int32_t>({1, 1}, {-1}));
  EXPECT_EQ(y.Data<std::int32_t>()[0], std::numeric_limits<std::int32_t>::min());
}

TEST(ReferenceBackendTest, Int64WrapsModulo2To64) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  // kMax + kMax = 2^64 - 2, which is -2 as int64.
  Tensor y = RunReference(Make<std::int64_t>({2}, {kMax, kMax}), Make<std::int64_t>({2}, {1, 1}));
  EXPECT_EQ(y.Data<std::int64_t>()[0], -2);
  y = RunReference(Make<std::int64_t>({1}, {std::numeric_limits<std::int64_t>::min()}),
                   Make<std::int64_t>({1}, {-1}));
  EXPECT_EQ(y.Data<std::int64_t>()[0], std::numeric_limits<std::int64_t>::min());
}

TEST(ReferenceBackendTest, UInt32AndUInt64WrapModulo2ToBits) {
  // (2^32 - 1)^2 = 2^64 - 2^33 + 1, which is 1 modulo 2^32.
  Tensor y32 = RunReference(Make<std::uint32_t>({1}, {0xFFFFFFFFu}),
                            Make<std::uint32_t>({1}, {0xFFFFFFFFu}));
  EXPECT_EQ(y32.Data<std::uint32_t>()[0], 1u);
  // (2^64 - 1) + 2 = 1 modulo 2^64.
  Tensor y64 = RunReference(Make<std::uint64_t>({2}, {~std::uint64_t{0}, 2}),
                            Make<std::uint64_t>({2}, {1, 1}));
  EXPECT_EQ(y64.Data<std::uint64_t>()[0], 1u);
}

// numpy.matmul written the slow, obvious way: every Y index is decoded into batch indices, each
// operand's index is found by broadcasting, and the dot product is formed with 128-bit integers
// reduced modulo 2^bits at the end.
template <class T>
Tensor IndependentIntegerMatMul(const Tensor& a, const Tensor& b) {
  const Dims& ad = a.dims();
  const Dims& bd = b.dims();
  const Dims a2 = ad.size() == 1 ? Dims{1, ad[0]} : ad;
  const Dims b2 = bd.size() == 1 ? Dims{bd[0], 1} : bd;
  const std::int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  const std::size_t rank = std::max(a2.size(), b2.size()) - 2;
  Dims abatch(rank, 1), bbatch(rank, 1), ybatch(rank, 1);
  std::copy(a2.begin(), a2.end() - 2, abatch.end() - (a2.size() - 2));
  std::copy(b2.begin(), b2.end() - 2, bbatch.end() - (b2.size() - 2));
  for (std::size_t i = 0; i < rank; ++i) ybatch[i] = std::max(abatch[i], bbatch[i]);
  std::int64_t batch = 1;
  for (std::int64_t d : ybatch) batch *= d;
  Dims ydims = ybatch;
  if (ad.size() > 1) ydims.push_back(m);
  if (bd.size() > 1) ydims.push_back(n);
  Tensor y = Tensor::Create(DTypeOf<T>(), ydims).value();
  for (std::int64_t flat = 0; flat < batch; ++flat) {
    std::int64_t rest = flat, a_index = 0, b_index = 0, a_scale = 1, b_scale = 1;
    for (std::size_t axis = rank; axis-- > 0;) {
      const std::int64_t i = rest % ybatch[axis];
      rest /= ybatch[axis];
      a_index += (abatch[axis] == 1 ? 0 : i) * a_scale;
      b_index += (bbatch[axis] == 1 ? 0 : i) * b_scale;
      a_scale *= abatch[axis];
      b_scale *= bbatch[axis];
    }
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        unsigned __int128 sum = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const T av = a.Data<T>()[a_index * m * k + i * k + p];
          const T bv = b.Data<T>()[b_index * k * n + p * n + j];
          // Unsigned 128-bit arithmetic is modular, and 2^bits divides 2^128.
          sum += static_cast<unsigned __int128>(av) * static_cast<unsigned __int128>(bv);
        }
        y.Data<T>()[flat * m * n + i * n + j] = static_cast<T>(sum);
      }
    }
  }
  return y;
}

struct IntegerShape {
  const char* why;
  Dims a, b;
};

const IntegerShape kIntegerShapes[] = {
    {"plain matrix product", {3, 5}, {5, 4}},
    {"broadcast in both operands", {3, 1, 2, 4}, {1, 5, 4, 6}},
    {"1-D A over a batched B", {4}, {2, 3, 4, 2}},
    {"batched A times a 1-D B", {2, 3, 4, 5}, {5}},
    {"2-D B shared by every batch", {2, 3, 4}, {4, 5}},
    {"rank 5 with a broadcast middle axis", {2, 1, 2, 3, 4}, {2, 3, 1, 4, 2}},
};

template <class T>
void CheckFullRangeAgainstIndependent(const IntegerShape& shape) {
  SCOPED_TRACE(std::string(shape.why) + " " + std::string(DTypeName(DTypeOf<T>())));
  using testing::MatMulTester;
  Tensor a =
      MatMulTester::RandomTensor(DTypeOf<T>(), shape.a, 11, MatMulTester::Values::kFullRange);
  Tensor b =
      MatMulTester::RandomTensor(DTypeOf<T>(), shape.b, 12, MatMulTester::Values::kFullRange);
  Tensor want = IndependentIntegerMatMul<T>(a, b);
  Tensor got = RunReference(a, b);
  ASSERT_EQ(got.dims(), want.dims());
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.NumBytes()), 0);
}

TEST(ReferenceBackendTest, FullRangeIntegersMatchAnIndependentNumpyMatmul) {
  for (const IntegerShape& shape : kIntegerShapes) {
    CheckFullRangeAgainstIndependent<std::int32_t>(shape);
    CheckFullRangeAgainstIndependent<std::int64_t>(shape);
    CheckFullRangeAgainstIndependent<std::uint32_t>(shape);
    CheckFullRangeAgainstIndependent<std::uint64_t>(shape);
  }
}

TEST(ReferenceBackendTest, Float16AccumulatesWideAndRoundsOnce) {
  // 1 + 2^-11 + 2^-24 is just above the half-way point between 1 and 1 + 2^-10, so Y is 1 + 2^-10.
  // A float16 accumulator would round 1 + 2^-11 to 1 first and lose the 2^-24.
  Tensor a = Make<float16>(
      {3}, {float16(1.0f), float16(std::ldexp(1.0f, -11)), float16(std::ldexp(1.0f, -24))});
  Tensor b = Make<float16>({3}, {float16(1.0f), float16(1.0f), float16(1.0f)});
  Tensor y = RunReference(a, b);
  EXPECT_EQ(static_cast<float>(y.Data<float16>()[0]), 1.0f + std::ldexp(1.0f, -10));
  // Exactly on the tie: ties go to even, which is 1.
  Tensor tie = RunReference(Make<float16>({2}, {float16(1.0f), float16(std::ldexp(1.0f, -11))}),
                            Make<float16>({2}, {float16(1.0f), float16(1.0f)}));
  EXPECT_EQ(static_cast<float>(tie.Data<float16>()[0]), 1.0f);
}

TEST(ReferenceBackendTest, BFloat16AccumulatesWideAndRoundsOnce) {
  Tensor a = Make<bfloat16>(
      {3}, {bfloat16(1.0f), bfloat16(std::ldexp(1.0f, -8)), bfloat16(std::ldexp(1.0f, -30))});
  Tensor b = Make<bfloat16>({3}, {bfloat16(1.0f), bfloat16(1.0f), bfloat16(1.0f)});
  Tensor y = RunReference(a, b);
  EXPECT_EQ(static_cast<float>(y.Data<bfloat16>()[0]), 1.0f + std::ldexp(1.0f, -7));
}

TEST(ReferenceBackendTest, InfinityNaNAndOverflowPropagate) {
  Tensor y = RunReference(Make<float>({2, 2}, {INFINITY, 1, 0, 1}), Make<float>({2, 1}, {1, 0}));
  EXPECT_EQ(y.Data<float>()[0], INFINITY);
  EXPECT_EQ(y.Data<float>()[1], 0.0f);
  // inf * 0 is NaN, and NaN poisons the sum.
  Tensor nan = RunReference(Make<double>({2}, {INFINITY, 1}), Make<double>({2}, {0, 1}));
  EXPECT_TRUE(std::isnan(nan.Data<double>()[0]));
  // 60000 + 60000 overflows float16 to infinity.
  Tensor big = RunReference(Make<float16>({2}, {float16(60000.0f), float16(60000.0f)}),
                            Make<float16>({2}, {float16(1.0f), float16(1.0f)}));
  EXPECT_EQ(static_cast<float>(big.Data<float16>()[0]), INFINITY);
  // Overflow in float but not in the double accumulator: 3e38 + 3e38 - 3e38 = 3e38.
  Tensor wide = RunReference(Make<float>({3}, {3e38f, 3e38f, -3e38f}), Make<float>({3}, {1, 1, 1}));
  EXPECT_EQ(wide.Data<float>()[0], 3e38f);
}

TEST(ReferenceBackendTest, KZeroGivesZerosAndEmptyOutputsHaveTheirShape) {
  ReferenceBackend backend;
  auto plan = PlanMatMul({DType::kFloat, {2, 0}, {0, 3}}).value();
  auto primitive = backend.Prepare(plan).value();
  Tensor a = Tensor::Create(DType::kFloat, {2, 0}).value();
  Tensor b = Tensor::Create(DType::kFloat, {0, 3}).value();
  Tensor y = Tensor::Create(DType::kFloat, {2, 3}).value();
  for (float& v : std::span(y.Data<float>(), 6)) v = 42.0f;  // Must be overwritten with zeros.
  ASSERT_TRUE(primitive->Execute(a.view(), b.view(), y.mutable_view()).ok());
  for (float v : y.Values<float>()) EXPECT_EQ(v, 0.0f);

  Tensor empty = RunReference(Tensor::Create(DType::kInt64, {0, 2, 3}).value(),
                              Tensor::Create(DType::kInt64, {3, 4}).value());
  EXPECT_EQ(empty.dims(), (Dims{0, 2, 4}));
  EXPECT_EQ(empty.NumElements(), 0);
  Tensor k_zero_vectors = RunReference(Tensor::Create(DType::kDouble, {0}).value(),
                                       Tensor::Create(DType::kDouble, {0}).value());
  EXPECT_EQ(k_zero_vectors.dims(), Dims{});
  EXPECT_EQ(k_zero_vectors.Data<double>()[0], 0.0);
}

TEST(ReferenceBackendTest, ExecuteRefusesViewsThatDoNotMatchThePlan) {
  ReferenceBackend backend;
  auto primitive = backend.Prepare(PlanMatMul({DType::kFloat, {2, 3}, {3, 4}}).value()).value();
  Tensor a = Tensor::Create(DType::kFloat, {2, 3}).value();
  Tensor b = Tensor::Create(DType::kFloat, {3, 4}).value();
  Tensor y = Tensor::Create(DType::kFloat, {2, 4}).value();
  Tensor wrong_shape = Tensor::Create(DType::kFloat, {3, 3}).value();
  Tensor wrong_dtype = Tensor::Create(DType::kDouble, {3, 4}).value();
  EXPECT_THAT(primitive->Execute(a.view(), wrong_shape.view(), y.mutable_view()).message(),
              HasSubstr("B has shape [3,3] but the plan expects [3,4]"));
  EXPECT_THAT(primitive->Execute(a.view(), wrong_dtype.view(), y.mutable_view()).message(),
              HasSubstr("B has dtype double but the plan is for float"));
  EXPECT_THAT(primitive->Execute(a.view(), b.view(), wrong_shape.mutable_view()).message(),
              HasSubstr("Y has shape [3,3] but the plan expects [2,4]"));
  MutableTensorView null_y = y.mutable_view();
  null_y.data = nullptr;
  EXPECT_THAT(primitive->Execute(a.view(), b.view(), null_y).message(), HasSubstr("Y has no data"));
  EXPECT_TRUE(primitive->Execute(a.view(), b.view(), y.mutable_view()).ok());
}

TEST(ReferenceBackendTest, ExecuteRefusesAnOutputOverlappingAnInput) {
  ReferenceBackend backend;
  auto primitive = backend.Prepare(PlanMatMul({DType::kFloat, {2, 2}, {2, 2}}).value()).value();
  Tensor a = Tensor::Create(DType::kFloat, {2, 2}).value();
  Tensor b = Tensor::Create(DType::kFloat, {2, 2}).value();
  MutableTensorView y_over_a = a.mutable_view();
  EXPECT_THAT(primitive->Execute(a.view(), b.view(), y_over_a).message(), HasSubstr("overlaps"));
}

TEST(ReferenceBackendTest, SupportsEveryDtypeNatively) {
  ReferenceBackend backend;
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(backend.Supports({dtype, {2, 3}, {3, 4}}).level, Support::Level::kNative);
  }
}

}  // namespace
}  // namespace mm
