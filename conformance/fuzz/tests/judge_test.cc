// The judgement itself, tested as hard as the backends: every element is examined (mismatches at
// the first, a middle and the last element of a large tensor), NaN against numbers and NaN, shapes
// with the same element count, the four grades, and poisoned outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>

#include "mm/backends/backend_list.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/judging/compare.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/oracle/error_bound.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor Floats(const Dims& dims, const std::vector<float>& values) {
  return Tensor::FromValues<float>(dims, values).value();
}

// Exact bounds (radius 0) centred on `expected`: the strictest judge.
std::vector<ElementBound> ExactBounds(const Tensor& expected) {
  std::vector<ElementBound> bounds;
  for (float v : expected.Values<float>()) {
    bounds.push_back({v, 0, std::isnan(v) || std::isinf(v)});
  }
  return bounds;
}

TEST(JudgeTest, EveryElementIsExaminedFirstMiddleAndLast) {
  constexpr std::int64_t kCount = 1 << 17;  // Far more than any prefix a lazy compare might use.
  std::vector<float> values(kCount);
  for (std::int64_t i = 0; i < kCount; ++i) values[i] = static_cast<float>(i % 97) - 48.0f;
  const Tensor expected = Floats({64, kCount / 64}, values);
  const std::vector<ElementBound> bounds = ExactBounds(expected);
  for (std::int64_t position : {std::int64_t{0}, kCount / 2 + 5, kCount - 1}) {
    std::vector<float> wrong = values;
    wrong[position] += 1.0f;
    const Judgement j = Judge(Floats({64, kCount / 64}, wrong).view(), expected.view(), bounds, {});
    EXPECT_EQ(j.verdict, Verdict::kFail) << position;
    EXPECT_EQ(j.tolerance.differing, 1) << position;
    EXPECT_EQ(j.bound.outside, 1) << position;
    ASSERT_TRUE(j.tolerance.worst && j.bound.worst);
    EXPECT_EQ(j.tolerance.worst->flat_index, position);
    EXPECT_EQ(j.bound.worst->flat_index, position);
  }
  EXPECT_EQ(Judge(expected.view(), expected.view(), bounds, {}).verdict, Verdict::kPass);
}

// The pass over the elements is split over the OpenMP threads; what it reports must not depend on
// how: the same counts and maxima, and among equally bad elements the first, at 1 to 4 threads.
TEST(JudgeTest, ThreadsDoNotChangeTheJudgementAndTiesKeepTheFirstElement) {
  constexpr std::int64_t kCount = 1 << 19;
  std::vector<float> values(kCount);
  for (std::int64_t i = 0; i < kCount; ++i) values[i] = static_cast<float>(i % 89) - 44.0f;
  const Tensor expected = Floats({kCount / 128, 128}, values);
  std::vector<ElementBound> bounds = ExactBounds(expected);
  for (ElementBound& bound : bounds) bound.radius = 0.5;
  // Two equal misses, one in the last quarter and one in the second; one smaller in the first.
  std::vector<float> wrong = values;
  for (const std::int64_t i : {kCount - 7, kCount / 4 + 3}) wrong[i] += 2.0f;
  wrong[5] += 1.0f;
  const Tensor actual = Floats({kCount / 128, 128}, wrong);
  const int saved = omp_get_max_threads();
  for (const int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    const Judgement j = Judge(actual.view(), expected.view(), bounds, {});
    EXPECT_EQ(j.tolerance.differing, 3) << threads;
    EXPECT_EQ(j.bound.outside, 3) << threads;
    EXPECT_FALSE(j.tolerance.bitwise_equal) << threads;
    EXPECT_EQ(j.tolerance.max_abs_error, 2.0) << threads;
    ASSERT_TRUE(j.tolerance.worst && j.bound.worst);
    EXPECT_EQ(j.bound.worst->flat_index, kCount / 4 + 3) << threads;
    // ONNX's allowance grows with |expected|: the worst is the miss furthest beyond it.
    const std::int64_t beyond = std::fabs(values[kCount - 7]) < std::fabs(values[kCount / 4 + 3])
                                    ? kCount - 7
                                    : kCount / 4 + 3;
    EXPECT_EQ(j.tolerance.worst->flat_index, beyond) << threads;
  }
  omp_set_num_threads(saved);
}

TEST(JudgeTest, NaNMatchesOnlyNaN) {
  const Tensor expected = Floats({3}, {1.0f, static_cast<float>(kNaN), 2.0f});
  const auto bounds = ExactBounds(expected);
  // NaN where NaN is expected passes both rules.
  EXPECT_EQ(Judge(expected.view(), expected.view(), bounds, {}).verdict, Verdict::kPass);
  // A number where NaN is expected fails both rules.
  const Tensor number = Floats({3}, {1.0f, 0.0f, 2.0f});
  EXPECT_EQ(Judge(number.view(), expected.view(), bounds, {}).verdict, Verdict::kFail);
  // NaN where a number is expected fails both rules.
  const Tensor nan = Floats({3}, {static_cast<float>(kNaN), static_cast<float>(kNaN), 2.0f});
  const Judgement j = Judge(nan.view(), expected.view(), bounds, {});
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(j.bound.worst->flat_index, 0);
}

TEST(JudgeTest, SameElementCountInAnotherShapeFails) {
  const Tensor expected = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor other = Floats({3, 2}, {1, 2, 3, 4, 5, 6});
  const Judgement j = Judge(other.view(), expected.view(), ExactBounds(expected), {});
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_THAT(j.tolerance.mismatch, HasSubstr("shape [3,2] != expected [2,3]"));
}

TEST(JudgeTest, IntegersAreExactUnderBothRules) {
  const Tensor expected =
      Tensor::FromValues<std::int64_t>(
          {2}, std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 7})
          .value();
  EXPECT_EQ(Judge(expected.view(), expected.view(), {}, {}).verdict, Verdict::kPass);
  const Tensor off =
      Tensor::FromValues<std::int64_t>(
          {2}, std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 8})
          .value();
  const Judgement j = Judge(off.view(), expected.view(), {}, {});
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(j.bound.outside, 1);
}

// Row [x_1..x_h, -x_1..-x_h] times column [y_1..y_h, y_1..y_h]: exactly 0, with sum|a||b| large.
struct Cancellation {
  Tensor a, b;
};
Cancellation CancellingProblem(DType dtype, std::int64_t k) {
  Cancellation c{Tensor::Create(dtype, {1, k}).value(), Tensor::Create(dtype, {k, 1}).value()};
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
      for (std::int64_t i = 0; i < k / 2; ++i) {
        const double x = 0.5 + static_cast<double>((i * 7919) % 1000) / 1000.0;
        const double y = 0.25 + static_cast<double>((i * 104729) % 1000) / 1500.0;
        c.a.Data<T>()[i] = RoundFromDouble<T>(x);
        c.a.Data<T>()[k / 2 + i] = RoundFromDouble<T>(-x);
        c.b.Data<T>()[i] = c.b.Data<T>()[k / 2 + i] = RoundFromDouble<T>(y);
      }
    }
  });
  return c;
}

// The acceptance case: a correct float32 result at K = 4096 with cancellation lies beyond
// ONNX's tolerance, and is BOUND, not FAIL.
TEST(JudgeTest, CorrectFloatAtK4096WithCancellationIsBoundNotFail) {
  const Cancellation c = CancellingProblem(DType::kFloat, 4096);
  auto plan = PlanMatMul({DType::kFloat, c.a.dims(), c.b.dims()}).value();
  const OracleResult oracle = ExactMatMul(plan, c.a.view(), c.b.view()).value();
  ASSERT_EQ(oracle.exact[0], 0.0) << "the pairs cancel exactly";
  // A correct float32 implementation: products and sums in float, in order.
  float sum = 0;
  for (std::int64_t i = 0; i < 4096; ++i) sum += c.a.Data<float>()[i] * c.b.Data<float>()[i];
  ASSERT_GT(std::fabs(sum), 1e-6f) << "float summation must leave a residue for this test";
  const Tensor got = Floats({1, 1}, {sum});
  const Judgement j =
      Judge(got.view(), oracle.y.view(), OracleBounds(oracle, {DType::kFloat, false}, plan.k), {});
  EXPECT_FALSE(j.tolerance.match) << "beyond ONNX's rtol 1e-3, atol 1e-7";
  EXPECT_EQ(j.verdict, Verdict::kBound) << j.bound.Describe();
  // Every real float32 backend lands in PASS or BOUND on it, never FAIL.
  const BackendRegistry registry = BuiltinBackends();
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name).value();
    const fuzz::Outcome o =
        fuzz::RunOne(*backend, c.a, c.b, backend->DeclaredArithmetic(DType::kFloat), {});
    EXPECT_THAT(fuzz::VerdictName(o.verdict), ::testing::AnyOf("PASS", "BOUND"))
        << name << ": " << o.message;
  }
}

// double computed in float stays within ONNX's rtol 1e-3 but far beyond double's bound.
TEST(JudgeTest, DoubleComputedInFloatIsImprecise) {
  const Tensor a =
      Tensor::FromValues<double>({1, 4}, std::vector<double>{0.1, 0.2, 0.3, 0.7}).value();
  const Tensor b =
      Tensor::FromValues<double>({4, 1}, std::vector<double>{1.3, 1.7, 1.9, 2.3}).value();
  auto plan = PlanMatMul({DType::kDouble, a.dims(), b.dims()}).value();
  const OracleResult oracle = ExactMatMul(plan, a.view(), b.view()).value();
  float sum = 0;
  for (int i = 0; i < 4; ++i) {
    sum += static_cast<float>(a.Data<double>()[i]) * static_cast<float>(b.Data<double>()[i]);
  }
  const Tensor got = Tensor::FromValues<double>({1, 1}, std::vector<double>{sum}).value();
  const Judgement j = Judge(got.view(), oracle.y.view(),
                            OracleBounds(oracle, Arithmetic{DType::kDouble, false}, 4), {});
  EXPECT_EQ(j.verdict, Verdict::kImprecise) << j.tolerance.Describe() << "; " << j.bound.Describe();
}

// float16 rounded toward zero instead of to nearest: ONNX's tolerance cannot see it, the bound can.
TEST(JudgeTest, Float16TruncationIsImprecise) {
  // 1 * 1 + 1 * (3 * 2^-12) = 1 + 0.75 * 2^-10: nearest float16 is 1 + 2^-10, truncation gives 1.
  const Tensor a =
      Tensor::FromValues<float16>({1, 2}, std::vector<float16>{float16(1.0f), float16(1.0f)})
          .value();
  const Tensor b = Tensor::FromValues<float16>(
                       {2, 1}, std::vector<float16>{float16(1.0f), float16(3.0f / 4096.0f)})
                       .value();
  auto plan = PlanMatMul({DType::kFloat16, a.dims(), b.dims()}).value();
  const OracleResult oracle = ExactMatMul(plan, a.view(), b.view()).value();
  const double exact = oracle.exact[0];
  float16 truncated = RoundToFloat16(exact);
  if (ToDouble(truncated) > exact) {
    truncated = float16::FromBits(static_cast<std::uint16_t>(truncated.bits() - 1));
  }
  ASSERT_NE(ToDouble(truncated), ToDouble(oracle.y.Data<float16>()[0]))
      << "the example must round up, so truncation differs";
  const Tensor got = Tensor::FromValues<float16>({1, 1}, std::vector<float16>{truncated}).value();
  const Judgement j = Judge(got.view(), oracle.y.view(),
                            OracleBounds(oracle, Arithmetic{DType::kFloat, false}, 2), {});
  EXPECT_EQ(j.verdict, Verdict::kImprecise) << j.tolerance.Describe() << "; " << j.bound.Describe();
}

// The case through the fuzzer's judgement: [1,129] x [129,1] bfloat16, 1 + 128 x 2^-8 = 1.5
// exactly, which a bfloat16 sum rounds to 1 (each 1 + 2^-8 is a tie lost to nearest-even). Summed
// so by a backend that declares float32 accumulation (the self-check's planted kernel, and the
// half-sum plugin), it is FAIL, as through node tests, outputs trees and plugins in mm-conformance.
TEST(JudgeTest, ABfloat16SumDeclaredAsFloat32FailsAsOnEveryOtherPath) {
  std::vector<bfloat16> av(129, bfloat16(1.0f)), bv(129, bfloat16(0x1p-8f));
  bv[0] = bfloat16(1.0f);
  const Tensor a = Tensor::FromValues<bfloat16>({1, 129}, av).value();
  const Tensor b = Tensor::FromValues<bfloat16>({129, 1}, bv).value();
  BackendRegistry plugins;
  ASSERT_TRUE(RegisterBackendLibraries(plugins, {{MM_HALF_SUM_PLUGIN_DECLARES_FLOAT32}}).ok());
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(self_check::MakePlantedBackend(
      self_check::PlantedBackendOf(self_check::Fault::kHalfAccumulation)));
  backends.push_back(plugins.Create("half_sum_declares_float32").value());
  for (auto& backend : backends) {
    const Arithmetic declared = backend->DeclaredArithmetic(DType::kBFloat16);
    ASSERT_EQ(declared, (Arithmetic{DType::kFloat, false})) << backend->name();
    const fuzz::Outcome o = fuzz::RunOne(*backend, a, b, declared, {});
    EXPECT_EQ(ToDouble(o.y.Data<bfloat16>()[0]), 1.0) << backend->name() << " sums in bfloat16";
    EXPECT_EQ(o.verdict, fuzz::Verdict::kFail) << backend->name() << ": " << o.message;
  }
}

// A kernel that never writes Y's last element, where the oracle itself says NaN: the first poison
// (NaN bytes) would match, so the fuzzer runs again over a finite poison, and the result fails.
Status LeaveLastElement(const MatMulPlan&, TensorView a, TensorView b, MutableTensorView y) {
  const std::int64_t n = y.NumElements();
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    y.Data<float>()[i] = a.Data<float>()[i] * b.Data<float>()[0];
  }
  return OkStatus();
}

TEST(JudgeTest, AnElementNeverWrittenCannotPassByLuck) {
  const Tensor a = Floats({3, 1}, {1.0f, 2.0f, static_cast<float>(kNaN)});
  const Tensor b = Floats({1, 1}, {3.0f});
  mm::testing::FakeBackend backend =
      mm::testing::FakeBackend("leaves_last").Computing(LeaveLastElement);
  const fuzz::Outcome o = fuzz::RunOne(backend, a, b, {DType::kFloat, false}, {});
  EXPECT_EQ(o.verdict, fuzz::Verdict::kFail) << o.message;
  ASSERT_TRUE(o.judgement && o.judgement->bound.worst);
  EXPECT_EQ(o.judgement->bound.worst->flat_index, 2);
}

// A kernel that computes Y right and then writes where it must not: each is an ERROR naming the
// write, as mm-conformance judges it, never a PASS on the right Y.
TEST(JudgeTest, AWriteOutsideYOrIntoAnInputIsAnErrorNamingIt) {
  struct Row {
    void (*scribble)(TensorView a, MutableTensorView y);
    const char* message;
  };
  const Row rows[] = {
      {[](TensorView, MutableTensorView y) { y.Data<float>()[y.NumElements()] = 1; },
       "wrote 4 bytes past the end of Y"},
      {[](TensorView, MutableTensorView y) { y.Data<float>()[-1] = 1; },
       "wrote 4 bytes before the start of Y"},
      {[](TensorView a, MutableTensorView) { const_cast<float*>(a.Data<float>())[0] = 9; },
       "modified input A"}};
  const Tensor a = Floats({2, 1}, {1.0f, 2.0f});
  const Tensor b = Floats({1, 1}, {3.0f});
  for (const Row& row : rows) {
    mm::testing::FakeBackend backend =
        mm::testing::FakeBackend("scribbling")
            .Computing([&row](const MatMulPlan&, TensorView a, TensorView b, MutableTensorView y) {
              for (std::int64_t i = 0; i < 2; ++i) y.Data<float>()[i] = a.Data<float>()[i] * 3.0f;
              (void)b;
              row.scribble(a, y);
              return OkStatus();
            });
    const fuzz::Outcome o = fuzz::RunOne(backend, a, b, {DType::kFloat, false}, {});
    EXPECT_EQ(o.verdict, fuzz::Verdict::kError) << row.message;
    EXPECT_THAT(o.message, HasSubstr(row.message));
  }
  EXPECT_EQ(a.Values<float>()[0], 1.0f) << "the backend was given a copy of A";
}

}  // namespace
}  // namespace mm::conformance
