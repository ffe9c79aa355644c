// One test suite for every registered backend (the idea of ggml's test-backend-ops): every
// numpy.matmul form below, for every dtype, on every backend of BuiltinBackends(), with the
// expectation taken from the backend's own Supports() on this CPU:
//  - native or by conversion => Prepare succeeds and Y is within MatMulTester's error bound of the
//    exact product (mm/oracle/error_bound.h, under the backend's declared arithmetic; integers
//    exactly, also with full-range values that wrap);
//  - no => Prepare is refused with UNIMPLEMENTED and a reason, never a wrong answer.
// A new backend joins by being registered; it needs no test code here. Backend folders keep only
// tests of their own internals (caches, probes, threading). ctest runs this binary at 1 and 2
// OpenMP threads, and the onednn part again under ONEDNN_MAX_CPU_ISA=AVX2 and SSE41 (label isa).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/process/process.h"
#include "mm/engine/testing/test_names.h"

namespace mm {

// gtest prints parameters in test names (and ctest shows them): "float", not a byte dump.
void PrintTo(DType dtype, std::ostream* os) { *os << DTypeName(dtype); }

namespace {

using testing::MatMulTester;

// Batch dims of `extents` followed by the matrix dims `matrix`.
Dims With(Dims extents, std::initializer_list<std::int64_t> matrix) {
  extents.insert(extents.end(), matrix);
  return extents;
}

struct Form {
  const char* why;
  Dims a;
  Dims b;
};

const Form kForms[] = {
    // Every 1-D form: numpy promotes a 1-D operand and removes the promoted axis from Y.
    {"1-D x 1-D: dot product, rank-0 Y", {7}, {7}},
    {"1-D A x 2-D B: A promoted to a row", {5}, {5, 3}},
    {"2-D A x 1-D B: B promoted to a column (a GEMV)", {4, 5}, {5}},
    {"1-D A x batched B: the promoted row broadcasts over B's batch", {5}, {2, 3, 5, 4}},
    {"batched A x 1-D B: the column is shared by the batch", {2, 3, 4, 5}, {5}},
    // Plain and batched products.
    {"plain 2-D product", {3, 4}, {4, 5}},
    {"2-D B shared by a stack of A: the batch can fold into M", {2, 3, 4}, {4, 5}},
    {"batched without broadcast", {3, 4, 5}, {3, 5, 2}},
    // Batch broadcasting.
    {"broadcast on A: 2-D A against a batched B", {3, 5}, {2, 5, 4}},
    {"broadcast on A: A's batch axis is 1", {1, 3, 5}, {4, 5, 6}},
    {"broadcast on B: 2-D B shared by a rank-4 batch", {2, 3, 4, 5}, {5, 6}},
    {"broadcast on B: B is 1 in the middle batch axis", {2, 3, 4, 5}, {2, 1, 5, 6}},
    {"broadcast on both: 3x1 against 1x2", {3, 1, 3, 4}, {1, 2, 4, 2}},
    {"broadcast on both with different ranks", {2, 1, 3, 4}, {5, 4, 2}},
    {"rank 5 with broadcast in both operands", {2, 1, 3, 3, 4}, {1, 2, 3, 4, 5}},
    {"rank 5 without broadcast", {2, 3, 4, 5, 6}, {2, 3, 4, 6, 7}},
    // High ranks: oneDNN's limit is 12 dims; a backend may collapse axes or say no.
    {"rank 12 with no batch axis that can merge", With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {3, 4}),
     With({1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {4, 5})},
    {"rank 13 alternating broadcast: nothing merges",
     With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {3, 4}),
     With({1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {4, 5})},
    {"rank 14 that collapses to rank 4: A's 6 axes against B's 6 other axes",
     With({2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1}, {3, 4}),
     With({1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}, {4, 5})},
    {"rank 14 with no broadcast", With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {3, 4}),
     With({2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {4, 2})},
    // Degenerate extents: the engine answers K = 0 and empty outputs for every backend.
    {"K = 1: an outer product", {6, 1}, {1, 5}},
    {"K = 0: Y is all zeros", {3, 0}, {0, 4}},
    {"K = 0 with a broadcast batch", {2, 3, 0}, {0, 4}},
    {"K = 0 vectors: a rank-0 zero", {0}, {0}},
    {"M = 0: empty Y", {0, 4}, {4, 3}},
    {"N = 0: empty Y", {3, 4}, {4, 0}},
    {"batch = 0: empty Y", {0, 3, 4}, {4, 5}},
    {"batch = 0 broadcast against 1: empty Y", {2, 0, 3, 4}, {1, 1, 4, 5}},
    // Odd sizes, off every vector width, register block and panel.
    {"odd sizes 1x1x1", {1, 1}, {1, 1}},
    {"odd sizes 7x7x7", {7, 7}, {7, 7}},
    {"odd sizes 17x33x7", {17, 33}, {33, 7}},
    {"odd sizes 33x67x17", {33, 67}, {67, 17}},
    {"odd sizes 129x33x65: ragged row blocks over threads", {129, 33}, {33, 65}},
    {"many tiny batch entries", {300, 2, 3}, {300, 3, 2}},
    // Long accumulation: the error bound grows with K.
    {"K = 4096: long accumulation", {3, 4096}, {4096, 5}},
    {"K = 4096 dot product", {4096}, {4096}},
};

// gtest prints parameters in test names (and ctest shows them): the why, not the bytes.
void PrintTo(const Form& form, std::ostream* os) { *os << form.why; }

std::vector<std::string> RegisteredBackends() { return BuiltinBackends().DefaultNames(); }

std::unique_ptr<Backend> Create(const std::string& name) {
  auto backend = BuiltinBackends().Create(name);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

using Param = std::tuple<std::string, Form, DType>;

class BackendSuite : public ::testing::TestWithParam<Param> {};

TEST_P(BackendSuite, KeepsTheWordOfSupports) {
  const auto& [name, form, dtype] = GetParam();
  auto backend = Create(name);
  ASSERT_NE(backend, nullptr);
  MatMulTester tester;
  tester.a_dims(form.a).b_dims(form.b).dtype(dtype).iterations(2);
  const Support support = backend->Supports({dtype, form.a, form.b});
  if (!support.supported()) {
    tester.TestUnsupported(*backend);
    return;
  }
  tester.Test(*backend);
  if (!IsFloat(dtype)) {
    // Whole-range integers: products and sums wrap, and must wrap exactly like numpy.
    tester.values(MatMulTester::Values::kFullRange).seed(99).iterations(1).Test(*backend);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBackendFormAndDType, BackendSuite,
                         ::testing::Combine(::testing::ValuesIn(RegisteredBackends()),
                                            ::testing::ValuesIn(kForms),
                                            ::testing::ValuesIn(kAllDTypes)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param) + "_" +
                                  testing::TestNameFromWhy(std::get<1>(info.param).why) + "_" +
                                  std::string(DTypeName(std::get<2>(info.param)));
                         });

class EveryBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryBackend, PassesTheWorkedExamplesOfTheOnnxPageAtOnnxTolerance) {
  auto backend = Create(GetParam());
  ASSERT_NE(backend, nullptr);
  if (!backend->Supports({DType::kFloat, {2, 2}, {2, 2}}).supported()) {
    GTEST_SKIP() << "float is not supported here: "
                 << backend->Supports({DType::kFloat, {2, 2}, {2, 2}}).note;
  }
  testing::ExpectWorkedExamplesPass(*backend);
}

template <class T>
void ExpectNanAndInfinityAsIeeeSays(Backend& backend) {
  const DType dtype = DTypeOf<T>();
  SCOPED_TRACE(std::string(DTypeName(dtype)));
  if (!backend.Supports({dtype, {3, 2}, {2, 2}}).supported()) return;
  const T inf = T(std::numeric_limits<float>::infinity());
  const T nan = T(std::numeric_limits<float>::quiet_NaN());
  // Rows: inf * 1 + 1 * 0 = inf; NaN poisons the sum; plain 2; and inf * 0 = NaN in column 1.
  const T a_values[] = {inf, T(1.0f), nan, T(1.0f), T(2.0f), T(1.0f)};
  const T b_values[] = {T(1.0f), T(0.0f), T(0.0f), T(1.0f)};
  const Tensor a = Tensor::FromValues<T>({3, 2}, a_values).value();
  const Tensor b = Tensor::FromValues<T>({2, 2}, b_values).value();
  auto y = MatMul(backend, a.view(), b.view());
  ASSERT_TRUE(y.ok()) << y.status();
  // IEEE's answers, worked out by hand (not the reference's, which is one of the backends here).
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const double want[] = {std::numeric_limits<double>::infinity(), kNan, kNan, kNan, 2, 1};
  for (std::int64_t i = 0; i < 6; ++i) {
    const double got = ToDouble(y->template Data<T>()[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " is " << got << ", want NaN";
    } else {
      EXPECT_EQ(got, want[i]) << "element " << i;
    }
  }
}

TEST_P(EveryBackend, PropagatesNanAndInfinityAsIeeeSays) {
  auto backend = Create(GetParam());
  ASSERT_NE(backend, nullptr);
  ExpectNanAndInfinityAsIeeeSays<float>(*backend);
  ExpectNanAndInfinityAsIeeeSays<double>(*backend);
  ExpectNanAndInfinityAsIeeeSays<float16>(*backend);
  ExpectNanAndInfinityAsIeeeSays<bfloat16>(*backend);
}

TEST_P(EveryBackend, EmptyOutputsCostNothingThatGrowsWithTheirDims) {
  auto backend = Create(GetParam());
  ASSERT_NE(backend, nullptr);
  struct Empty {
    const char* why;
    Dims a, b;
  };
  const Empty kEmpty[] = {
      // A [0, 0] x B [0, 2^31]: Y [0, 2^31] has no element, but a backend sizing anything by N
      // (an accumulator row, a scratch copy) would allocate gigabytes.
      {"N = 2^31 with M = 0", {0, 0}, {0, std::int64_t{1} << 31}},
      // A batch of 2^40 empty matrices: a backend looping over the batch would never finish.
      {"batch 2^40 with M = 0", {std::int64_t{1} << 40, 0, 3}, {3, 4}},
      // K = 2^40 between empty operands: nothing to sum.
      {"K = 2^40 with M = N = 0", {0, std::int64_t{1} << 40}, {std::int64_t{1} << 40, 0}},
  };
  const std::int64_t before = process::PeakResidentBytes();
  for (const Empty& e : kEmpty) {
    SCOPED_TRACE(e.why);
    const MatMulDesc desc{DType::kFloat, e.a, e.b};
    auto plan = PlanMatMul(desc);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->y_elements, 0);
    if (!backend->Supports(desc).supported()) continue;
    auto primitive = backend->Prepare(*plan);
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    const Tensor a = Tensor::Create(DType::kFloat, e.a).value();
    const Tensor b = Tensor::Create(DType::kFloat, e.b).value();
    Tensor y = Tensor::Create(DType::kFloat, plan->y_dims).value();
    ASSERT_TRUE((*primitive)->Execute(a.view(), b.view(), y.mutable_view()).ok());
    EXPECT_EQ((*primitive)->implementation(), "engine: empty Y, nothing to compute");
  }
  // 64 MiB of slack for the allocator and oneDNN's own start-up; 8 * 2^31 bytes is 16 GiB.
  EXPECT_LT(process::PeakResidentBytes() - before, std::int64_t{64} << 20);
}

TEST_P(EveryBackend, SaysWhatRunsOnThisMachineAndWhatComputedEachPlan) {
  auto backend = Create(GetParam());
  ASSERT_NE(backend, nullptr);
  EXPECT_FALSE(backend->RunsOn().empty());
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const MatMulDesc desc{dtype, {2, 3}, {3, 4}};
    if (!backend->Supports(desc).supported()) continue;
    auto primitive = backend->Prepare(PlanMatMul(desc).value());
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    EXPECT_FALSE((*primitive)->implementation().empty());
    auto k_zero = backend->Prepare(PlanMatMul({dtype, {2, 0}, {0, 4}}).value());
    ASSERT_TRUE(k_zero.ok()) << k_zero.status();
    EXPECT_EQ((*k_zero)->implementation(), "engine: K = 0, Y is exact zeros");
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, EveryBackend, ::testing::ValuesIn(RegisteredBackends()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace mm
