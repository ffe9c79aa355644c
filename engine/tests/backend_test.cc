// The engine's side of the Backend interface: Prepare keeps Supports' word, and answers K = 0 and
// empty outputs itself, so no backend ever sees them.
#include "mm/engine/backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "mm/engine/testing/fake_backend.h"

namespace mm {
namespace {

using ::testing::HasSubstr;

// Supports float only; counts the products it is asked to prepare and never computes them.
testing::FakeBackend CountingBackend() {
  return testing::FakeBackend("counting")
      .Supporting({DType::kFloat})
      .FailingToPrepare(InternalError("not a real backend"));
}

TEST(BackendPrepareTest, KZeroIsExactZerosWithoutTheBackend) {
  testing::FakeBackend backend = CountingBackend();
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {2, 3, 0}, {0, 4}}).value();
  auto primitive = backend.Prepare(plan);
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  EXPECT_EQ(backend.calls().prepares, 0);
  Tensor a = Tensor::Create(DType::kFloat, {2, 3, 0}).value();
  Tensor b = Tensor::Create(DType::kFloat, {0, 4}).value();
  Tensor y = Tensor::Create(DType::kFloat, {2, 3, 4}).value();
  std::memset(y.raw_data(), 0xff, y.NumBytes());  // NaN everywhere: every element must be written.
  ASSERT_TRUE((*primitive)->Execute(a.view(), b.view(), y.mutable_view()).ok());
  for (float v : y.Values<float>()) {
    EXPECT_EQ(v, 0.0f);
    EXPECT_FALSE(std::signbit(v)) << "an empty sum is +0";
  }
  EXPECT_EQ((*primitive)->implementation(), "engine: K = 0, Y is exact zeros");
}

TEST(BackendPrepareTest, EmptyOutputsNeverReachTheBackend) {
  testing::FakeBackend backend = CountingBackend();
  for (const auto& [a, b] : std::vector<std::pair<Dims, Dims>>{
           {{0, 4}, {4, 3}},
           {{3, 4}, {4, 0}},
           {{0, 3, 4}, {4, 5}},
           // Huge dims around an empty Y: nothing may be sized by them.
           {{0, 0}, {0, std::int64_t{1} << 31}},
           {{std::int64_t{1} << 40, 0, 3}, {3, 4}}}) {
    SCOPED_TRACE(DimsToString(a) + " x " + DimsToString(b));
    const MatMulPlan plan = PlanMatMul({DType::kFloat, a, b}).value();
    auto primitive = backend.Prepare(plan);
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    Tensor ta = Tensor::Create(DType::kFloat, a).value();
    Tensor tb = Tensor::Create(DType::kFloat, b).value();
    Tensor y = Tensor::Create(DType::kFloat, plan.y_dims).value();
    EXPECT_TRUE((*primitive)->Execute(ta.view(), tb.view(), y.mutable_view()).ok());
    EXPECT_EQ((*primitive)->implementation(), "engine: empty Y, nothing to compute");
  }
  EXPECT_EQ(backend.calls().prepares, 0);
}

TEST(BackendPrepareTest, UnsupportedIsRefusedEvenWhenDegenerate) {
  testing::FakeBackend backend = CountingBackend();
  for (const auto& [a, b] :
       std::vector<std::pair<Dims, Dims>>{{{2, 3}, {3, 4}}, {{2, 0}, {0, 4}}, {{0, 3}, {3, 4}}}) {
    auto primitive = backend.Prepare(PlanMatMul({DType::kInt32, a, b}).value());
    ASSERT_FALSE(primitive.ok());
    EXPECT_EQ(primitive.status().code(), StatusCode::kUnimplemented);
    EXPECT_THAT(primitive.status().message(), HasSubstr("counting cannot compute int32"));
    EXPECT_THAT(primitive.status().message(), HasSubstr("float only"));
  }
  EXPECT_EQ(backend.calls().prepares, 0);
}

TEST(BackendPrepareTest, NonDegenerateProductsGoToTheBackend) {
  testing::FakeBackend backend = CountingBackend();
  auto primitive = backend.Prepare(PlanMatMul({DType::kFloat, {2, 3}, {3, 4}}).value());
  EXPECT_EQ(primitive.status().code(), StatusCode::kInternal);
  EXPECT_EQ(backend.calls().prepares, 1);
}

// A backend that declares nothing is held to its own type's arithmetic, the loosest bound a
// correct implementation still meets: a float16 kernel is then judged as if it summed in float16.
TEST(BackendArithmeticTest, ABackendThatDeclaresNothingIsHeldToItsOwnType) {
  testing::FakeBackend backend = CountingBackend();
  EXPECT_EQ(backend.DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat16, false}));
  EXPECT_EQ(backend.DeclaredArithmetic(DType::kInt32), (Arithmetic{DType::kInt32, false}));
}

TEST(BackendArithmeticTest, SaysWhatItAccumulatesIn) {
  EXPECT_EQ((Arithmetic{DType::kFloat, false}).ToString(), "accumulates in float");
  EXPECT_EQ((Arithmetic{DType::kFloat, true}).ToString(),
            "accumulates in float, flushes subnormals");
  EXPECT_EQ(Arithmetic::OwnType(DType::kUInt32).ToString(), "exact modulo 2^32");
}

}  // namespace
}  // namespace mm
