// The oneDNN backend's own internals: its probes of the running CPU and the paths they choose, its
// honest refusals, its primitive cache, its shape collapsing and its error path. (Every form and
// dtype against the reference is the cross-backend suite's, backends/tests.) ctest runs this
// binary with OMP_NUM_THREADS=1 and =2 (suffixes .omp1 / .omp2), and again under
// ONEDNN_MAX_CPU_ISA=AVX2 and SSE41 (label isa).
#include "mm/backends/onednn/onednn_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/backends/onednn/onednn_internal.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/process/process.h"
#include "mm/engine/testing/test_names.h"

namespace mm {
namespace {

using ::testing::HasSubstr;
using testing::MatMulTester;
using ::testing::Not;

std::unique_ptr<OneDnnBackend> MakeBackend(OneDnnBackend::Options options = {}) {
  auto backend = OneDnnBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

// Batch dims of `extents` followed by the matrix dims `matrix`.
Dims With(Dims extents, std::initializer_list<std::int64_t> matrix) {
  extents.insert(extents.end(), matrix);
  return extents;
}

constexpr DType kComputedDTypes[] = {DType::kFloat, DType::kBFloat16, DType::kFloat16};

// Whether oneDNN itself, asked directly, creates a matmul of `type` here.
bool OneDnnHasMatmul(dnnl::memory::data_type type) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const dnnl::memory::desc md({4, 4}, type, dnnl::memory::format_tag::ab);
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

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

TEST(OneDnnBackendTest, ProbesAgreeWithOneDnnAskedDirectly) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  const std::pair<DType, dnnl::memory::data_type> kTypes[] = {
      {DType::kFloat, dnnl::memory::data_type::f32},
      {DType::kBFloat16, dnnl::memory::data_type::bf16},
      {DType::kFloat16, dnnl::memory::data_type::f16}};
  for (const auto& [dtype, type] : kTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const OneDnnBackend::Probe probe = backend->probe(dtype);
    EXPECT_EQ(probe.native, OneDnnHasMatmul(type));
    EXPECT_EQ(probe.implementation.empty(), !probe.native);
    EXPECT_THAT(backend->RunsOn(), HasSubstr(probe.native ? probe.implementation : "none"));
  }
  EXPECT_THAT(backend->RunsOn(), HasSubstr("effective ISA " + OneDnnBackend::EffectiveIsa()));
}

TEST(OneDnnBackendTest, SixteenBitTypesAreNativeWhereProbedElseViaFloat32WithTheReason) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Supports({DType::kFloat, {2, 3}, {3, 4}}).level, Support::Level::kNative);
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const std::string type = dtype == DType::kBFloat16 ? "bf16" : "f16";
    const Support support = backend->Supports({dtype, {2, 3}, {3, 4}});
    auto primitive = backend->Prepare(PlanMatMul({dtype, {2, 3}, {3, 4}}).value());
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    if (backend->probe(dtype).native) {
      EXPECT_EQ(support.level, Support::Level::kNative);
      EXPECT_TRUE(backend->native(dtype));
      EXPECT_THAT((*primitive)->implementation(), Not(HasSubstr("via f32")));
    } else {
      EXPECT_EQ(support.level, Support::Level::kByConversion);
      EXPECT_THAT(support.note, HasSubstr(type + " via f32: no " + type + " matmul on this CPU (" +
                                          OneDnnBackend::EffectiveIsa() + ")"));
      EXPECT_THAT((*primitive)->implementation(), HasSubstr(type + " via f32"));
      // The conversions are named, and never above the ISA oneDNN was allowed (the isa variants
      // cap it at AVX2 and SSE41).
      const std::string isa = OneDnnBackend::EffectiveIsa();
      const std::string kernel = isa.starts_with("avx512_core") ? "avx512"
                                 : isa.starts_with("avx2")      ? "avx2+f16c"
                                                                : "scalar";
      if (kernel == "scalar" || isa.starts_with("avx2")) {
        EXPECT_THAT((*primitive)->implementation(), Not(HasSubstr("avx512 conversions")));
      }
      if (kernel == "scalar") {
        EXPECT_THAT((*primitive)->implementation(), HasSubstr("scalar conversions"));
      } else {
        EXPECT_THAT((*primitive)->implementation(), HasSubstr(" conversions"));
      }
    }
    EXPECT_THAT((*primitive)->implementation(), HasSubstr("ISA " + OneDnnBackend::EffectiveIsa()));
  }
}

TEST(OneDnnBackendTest, CappedIsaIsHonoured) {
  // Under the isa test variants ONEDNN_MAX_CPU_ISA caps what oneDNN may use; without it this only
  // checks that the ISA has a name.
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string isa = OneDnnBackend::EffectiveIsa();
  EXPECT_THAT(isa, Not(HasSubstr("isa 0x")));
  if (cap == nullptr) return;
  if (std::string(cap) == "SSE41") {
    EXPECT_EQ(isa, "sse41");
  } else if (std::string(cap) == "AVX2") {
    EXPECT_THAT(isa, ::testing::AnyOf("avx2", "avx", "sse41"));
  }
  // No bf16 matmul below avx512_core in oneDNN 2.6: the backend must take the f32 path.
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  EXPECT_FALSE(backend->probe(DType::kBFloat16).native);
  EXPECT_EQ(backend->Supports({DType::kBFloat16, {2, 3}, {3, 4}}).level,
            Support::Level::kByConversion);
}

// oneDNN 2.6's AMX kernels fault on AMX CPUs: unless the user chose an ISA cap or allowed AMX, mm
// never lets oneDNN dispatch to them, and RunsOn() says when it capped.
TEST(OneDnnBackendTest, AmxIsNeverUsedUnlessTheUserAllowsIt) {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const char* allow = std::getenv("MM_ONEDNN_AMX");
  if (cap != nullptr || allow != nullptr) GTEST_SKIP() << "the user's ISA choice stands";
  EXPECT_THAT(OneDnnBackend::EffectiveIsa(), Not(HasSubstr("amx")));
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  const std::string& note = OneDnnBackend::ApplyIsaPolicy();
  if (!note.empty()) {
    EXPECT_THAT(backend->RunsOn(), HasSubstr(note));
    EXPECT_EQ(OneDnnBackend::EffectiveIsa(), "avx512_core_bf16");
  }
}

TEST(OneDnnBackendTest, ViaFloat32RoundsOnceForBothSixteenBitTypes) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    auto backend = MakeBackend({.float16_path = OneDnnBackend::Path::kViaFloat32,
                                .bfloat16_path = OneDnnBackend::Path::kViaFloat32});
    ASSERT_NE(backend, nullptr);
    EXPECT_FALSE(backend->native(dtype));
    EXPECT_EQ(backend->Supports({dtype, {2, 3}, {3, 4}}).level, Support::Level::kByConversion);
    MatMulTester().a_dims({3, 1, 9, 17}).b_dims({1, 2, 17, 5}).dtype(dtype).Test(*backend);
    MatMulTester().a_dims({33}).b_dims({33}).dtype(dtype).Test(*backend);
  }
  // 1 + 2^-11 + 2^-20 (exact in f32) lies just above the tie between 1 and 1 + 2^-10: one rounding
  // of the f32 sum gives 1 + 2^-10; an f16 accumulator would round 1 + 2^-11 to 1 first and stay.
  auto backend = MakeBackend({.float16_path = OneDnnBackend::Path::kViaFloat32});
  ASSERT_NE(backend, nullptr);
  const float16 a_values[] = {float16(1.0f), float16(std::ldexp(1.0f, -11)),
                              float16(std::ldexp(1.0f, -20))};
  const float16 b_values[] = {float16(1.0f), float16(1.0f), float16(1.0f)};
  Tensor a = Tensor::FromValues<float16>({3}, a_values).value();
  Tensor b = Tensor::FromValues<float16>({3}, b_values).value();
  auto y = MatMul(*backend, a.view(), b.view());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(static_cast<float>(y->Data<float16>()[0]), 1.0f + std::ldexp(1.0f, -10));
  // The same for bfloat16 one binade up: 1 + 2^-8 + 2^-16 rounds once to 1 + 2^-7.
  const bfloat16 a16[] = {bfloat16(1.0f), bfloat16(std::ldexp(1.0f, -8)),
                          bfloat16(std::ldexp(1.0f, -16))};
  const bfloat16 b16[] = {bfloat16(1.0f), bfloat16(1.0f), bfloat16(1.0f)};
  auto bf_backend = MakeBackend({.bfloat16_path = OneDnnBackend::Path::kViaFloat32});
  ASSERT_NE(bf_backend, nullptr);
  auto y16 = MatMul(*bf_backend, Tensor::FromValues<bfloat16>({3}, a16).value().view(),
                    Tensor::FromValues<bfloat16>({3}, b16).value().view());
  ASSERT_TRUE(y16.ok()) << y16.status();
  EXPECT_EQ(static_cast<float>(y16->Data<bfloat16>()[0]), 1.0f + std::ldexp(1.0f, -7));
}

// float32 accumulation for every float source (oneDNN's matmul); only the native bf16 kernels
// (VDPBF16PS on AVX512_BF16) flush subnormals, so only a native bf16 path declares it.
TEST(OneDnnBackendTest, DeclaresTheFlushOnlyWhereBfloat16RunsNatively) {
  auto automatic = MakeBackend();
  auto via_f32 = MakeBackend({.bfloat16_path = OneDnnBackend::Path::kViaFloat32});
  ASSERT_NE(automatic, nullptr);
  ASSERT_NE(via_f32, nullptr);
  for (DType dtype : {DType::kFloat, DType::kFloat16, DType::kBFloat16}) {
    EXPECT_EQ(automatic->DeclaredArithmetic(dtype).accumulation, DType::kFloat);
  }
  EXPECT_EQ(automatic->DeclaredArithmetic(DType::kBFloat16).flushes_subnormals,
            automatic->native(DType::kBFloat16));
  EXPECT_FALSE(via_f32->DeclaredArithmetic(DType::kBFloat16).flushes_subnormals);
  EXPECT_FALSE(automatic->DeclaredArithmetic(DType::kFloat16).flushes_subnormals);
}

TEST(OneDnnBackendTest, RequiredNativeWithoutOneIsRefusedNotFailed) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    auto forced = MakeBackend({.float16_path = OneDnnBackend::Path::kNative,
                               .bfloat16_path = OneDnnBackend::Path::kNative});
    ASSERT_NE(forced, nullptr);
    if (forced->probe(dtype).native) {
      EXPECT_EQ(forced->Supports({dtype, {2, 3, 4}, {4, 5}}).level, Support::Level::kNative);
      MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(dtype).Test(*forced);
    } else {
      // Supports says no with the reason, so Prepare is refused: never an error after a yes.
      MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(dtype).TestUnsupported(*forced);
      EXPECT_THAT(forced->Supports({dtype, {2, 3, 4}, {4, 5}}).note, HasSubstr("required"));
    }
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
  // The same rank with K = 0 never reaches oneDNN (the engine answers it), so it is computed.
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

// oneDNN runs a primitive on the threads it was created for: one prepared on fewer threads than a
// cached one (auto's "1 of 2 threads") must not be handed the cached one.
TEST(OneDnnCacheTest, AProductPreparedOnOtherThreadsIsCompiledForThem) {
  auto backend = MakeBackend();
  ASSERT_NE(backend, nullptr);
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {2, 3, 4}, {2, 4, 5}}).value();
  const int given = omp_get_max_threads();
  omp_set_num_threads(2);
  ASSERT_TRUE(backend->Prepare(plan).ok());
  omp_set_num_threads(1);
  ASSERT_TRUE(backend->Prepare(plan).ok());
  ASSERT_TRUE(backend->Prepare(plan).ok());
  omp_set_num_threads(given);
  EXPECT_EQ(backend->cache_stats().misses, 2);
  EXPECT_EQ(backend->cache_stats().hits, 1);
  EXPECT_EQ(backend->cache_stats().size, 2u);
  // Each computes the product, on the threads it was prepared for or any other count.
  omp_set_num_threads(1);
  MatMulTester().a_dims({2, 3, 4}).b_dims({2, 4, 5}).Test(*backend);
  omp_set_num_threads(given);
  MatMulTester().a_dims({2, 3, 4}).b_dims({2, 4, 5}).Test(*backend);
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

TEST(OneDnnBackendTest, IsRegisteredAsOnednn) {
  auto backend = BuiltinBackends().Create("onednn");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "onednn");
  MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).Test(**backend);
}

// The primitive cache capacity and ONEDNN_PRIMITIVE_CACHE_CAPACITY in a child of this process
// whose variable is `user_value` (nullptr: unset) and that ran the worker setup: "0 0".
std::string CacheAfterWorkerSetup(const char* user_value) {
  auto child = process::Child::Start([user_value](int fd) {
    if (user_value != nullptr) {
      setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", user_value, 1);
    } else {
      unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
    }
    LimitOneDnnPrimitiveCacheInWorker();
    int capacity = -1;
    dnnl_get_primitive_cache_capacity(&capacity);
    const char* variable = std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
    const std::string text = std::to_string(capacity) + " " + (variable ? variable : "unset");
    [[maybe_unused]] const ssize_t n = write(fd, text.data(), text.size());
  });
  if (!child.ok()) return child.status().ToString();
  std::string answer;
  const auto ended = child->Finish(60, answer);
  return ended.ok() && !ended->timed_out ? answer : "the child did not end";
}

TEST(OneDnnWorkerSetupTest, TurnsOffACacheThatAlreadyStartedAndOneThatStartsLater) {
  // Started here, before the fork, with oneDNN's default capacity: only the setter reaches it.
  int capacity = 0;
  ASSERT_EQ(dnnl_get_primitive_cache_capacity(&capacity), dnnl_success);
  ASSERT_GT(capacity, 0);
  EXPECT_EQ(CacheAfterWorkerSetup(nullptr), "0 0");
}

TEST(OneDnnWorkerSetupTest, LeavesTheCacheTheUserSetAlone) {
  const std::string after = CacheAfterWorkerSetup("7");
  EXPECT_THAT(after, ::testing::EndsWith(" 7"));
  EXPECT_NE(after.substr(0, 2), "0 ") << after;
}

TEST(OneDnnWorkerSetupTest, IsTheBuiltinRegistrysWorkerSetup) {
  auto child = process::Child::Start([](int fd) {
    unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
    BuiltinBackends().SetUpWorker();
    int capacity = -1;
    dnnl_get_primitive_cache_capacity(&capacity);
    const std::string text = std::to_string(capacity);
    [[maybe_unused]] const ssize_t n = write(fd, text.data(), text.size());
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  ASSERT_TRUE(child->Finish(60, answer).ok());
  EXPECT_EQ(answer, "0");
}

}  // namespace
}  // namespace mm
