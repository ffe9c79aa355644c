// The BLAS backends' own internals: how a library is found and refused (with a fake lib dir laid
// out as Debian's), the row-major mapping onto the column-major GEMM with batches and broadcasting,
// the thread count set through the library's API, bfloat16 through sbgemm_, the 32-bit integer
// limit, and what a backend says it runs on. The fake OpenBLAS (tests/fake_blas.c) is always built;
// the real libraries are tested where they are installed. (Every form and dtype against the
// reference, on every registered backend, is the cross-backend suite's, backends/tests.)
#include "mm/backends/blas/blas_backend.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "fake_blas.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/testing/test_names.h"

namespace mm::blas {
namespace {

using fake::Describe;
using fake::FakeCalls;
using fake::FakeOpenBlas;
using fake::kFakeDir;
using ::testing::HasSubstr;
using testing::MatMulTester;
using ::testing::StartsWith;

// Each way a library is unusable is listed with the path looked for and why, and the run goes on.
TEST(BlasLoadingTest, EachUnusableLibraryIsListedWithThePathAndWhy) {
  const std::filesystem::path not_elf =
      std::filesystem::path(::testing::TempDir()) / "mm_blas_not_a_library.so.3";
  std::ofstream(not_elf) << "not a shared object\n";
  ASSERT_EQ(setenv("MM_BLAS_ATLAS_LIB", not_elf.c_str(), 1), 0);
  BackendRegistry registry;
  ASSERT_TRUE(RegisterBlasBackends(registry, kFakeDir).ok());
  unsetenv("MM_BLAS_ATLAS_LIB");

  EXPECT_EQ(registry.Names(), std::vector<std::string>{"openblas"});
  EXPECT_EQ(registry.UnavailableNames(), (std::vector<std::string>{"blis", "atlas", "netlib"}));
  // Missing: the path it looked for and the package that installs it.
  EXPECT_EQ(registry.UnavailableReason("blis"), (kFakeDir / "blis-openmp/libblis.so.4").string() +
                                                    " not found (Debian package libblis4-openmp)");
  // Not loadable: dlopen's own message, for the file the override named.
  EXPECT_THAT(registry.UnavailableReason("atlas"),
              StartsWith(not_elf.string() + " fails to load: "));
  // Loadable but without a GEMM mm needs.
  EXPECT_EQ(registry.UnavailableReason("netlib"),
            (kFakeDir / "blas/libblas.so.3").string() + " lacks dgemm_");
  // Naming one is an error that says why, never a silent skip.
  EXPECT_THAT(registry.CheckSelectable("netlib").message(),
              HasSubstr("backend 'netlib' is not available on this machine: "));
  EXPECT_FALSE(registry.Description("netlib").empty());
}

TEST(BlasLoadingTest, TheLibDirFollowsMmBlasLibdir) {
  ASSERT_EQ(setenv("MM_BLAS_LIBDIR", "/somewhere/else", 1), 0);
  EXPECT_EQ(BlasLibDir(), "/somewhere/else");
  EXPECT_EQ(BlasLibraryPath(Describe("blis"), BlasLibDir()),
            "/somewhere/else/blis-openmp/libblis.so.4");
  unsetenv("MM_BLAS_LIBDIR");
  EXPECT_EQ(BlasLibDir(), MM_BLAS_DEFAULT_LIBDIR_FOR_TEST);
}

struct Shape {
  const char* why;
  Dims a;
  Dims b;
  int gemms;  // GEMM calls one MatMul takes.
};

// Shapes that reach each path of the row-major mapping.
const Shape kShapes[] = {
    {"non-square single product: M, N and K all differ", {3, 5}, {5, 7}, 1},
    {"B shared by a stack of A: one GEMM of batch*M rows", {4, 3, 5}, {5, 2}, 1},
    {"A broadcast over B's batch: one GEMM per entry, A reused", {3, 5}, {4, 5, 2}, 4},
    {"both operands broadcast: [3,1] x [1,2] batch", {3, 1, 2, 4}, {1, 2, 4, 3}, 6},
    {"B batched, A shared through a batch dim of 1", {1, 2, 3}, {5, 3, 4}, 5},
    {"1-D A (a row vector)", {5}, {2, 5, 3}, 2},
    {"1-D B (a column vector)", {2, 3, 5}, {5}, 1},
    {"1-D x 1-D: a dot product", {6}, {6}, 1},
};

class FakeBlasShapeTest : public ::testing::TestWithParam<Shape> {};

TEST_P(FakeBlasShapeTest, MapsRowMajorOntoColumnMajorGemm) {
  const Shape& shape = GetParam();
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kBFloat16}) {
    const int before = FakeCalls();
    MatMulTester().a_dims(shape.a).b_dims(shape.b).dtype(dtype).Test(*backend);
    // MatMulTester executes once: one primitive, one MatMul.
    EXPECT_EQ(FakeCalls() - before, shape.gemms) << DTypeName(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, FakeBlasShapeTest, ::testing::ValuesIn(kShapes),
                         testing::NameFromWhy());

// The same shapes on every real library installed here.
class RealBlasShapeTest : public ::testing::TestWithParam<std::tuple<std::string, Shape>> {};

TEST_P(RealBlasShapeTest, MatchesTheReference) {
  const auto& [name, shape] = GetParam();
  const BlasLibraryDescription& d = Describe(name);
  auto library = BlasLibrary::Load(d, BlasLibraryPath(d, BlasLibDir()));
  if (!library.ok()) GTEST_SKIP() << name << " is not installed here: " << library.status();
  BlasBackend backend(*library);
  for (DType dtype : {DType::kFloat, DType::kDouble}) {
    MatMulTester().a_dims(shape.a).b_dims(shape.b).dtype(dtype).iterations(2).Test(backend);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, RealBlasShapeTest,
                         ::testing::Combine(::testing::Values("openblas", "blis", "atlas",
                                                              "netlib"),
                                            ::testing::ValuesIn(kShapes)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  testing::TestNameFromWhy(std::get<1>(info.param).why);
                         });

// mm's thread count is OpenMP's at each Execute; the library is told through its own API, and the
// process environment is left alone.
TEST(BlasThreadsTest, EachExecuteSetsTheLibrarysThreadCountFromOpenMp) {
  const int saved = omp_get_max_threads();
  const char* env_before = std::getenv("OPENBLAS_NUM_THREADS");
  std::vector<std::unique_ptr<BlasBackend>> backends;
  backends.push_back(FakeOpenBlas());
  for (const std::string name : {"openblas", "blis"}) {
    const BlasLibraryDescription& d = Describe(name);
    auto library = BlasLibrary::Load(d, BlasLibraryPath(d, BlasLibDir()));
    if (library.ok()) backends.push_back(std::make_unique<BlasBackend>(*library));
  }
  for (auto& backend : backends) {
    ASSERT_NE(backend, nullptr);
    for (int threads : {1, 2, 1}) {
      omp_set_num_threads(threads);
      auto primitive = backend->Prepare(PlanMatMul({DType::kFloat, {64, 64}, {64, 64}}).value());
      ASSERT_TRUE(primitive.ok()) << primitive.status();
      Tensor a =
          MatMulTester::RandomTensor(DType::kFloat, {64, 64}, 1, MatMulTester::Values::kSmall);
      Tensor y = Tensor::Create(DType::kFloat, {64, 64}).value();
      ASSERT_TRUE((*primitive)->Execute(a.view(), a.view(), y.mutable_view()).ok());
      EXPECT_EQ(backend->library().Threads(), threads) << backend->RunsOn();
      EXPECT_THAT((*primitive)->implementation(),
                  HasSubstr(std::to_string(threads) + (threads == 1 ? " thread)" : " threads)")));
    }
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(std::getenv("OPENBLAS_NUM_THREADS"), env_before);
}

TEST(BlasThreadsTest, SerialLibrariesRunOnOneThreadWhateverOpenMpSays) {
  for (const std::string name : {"atlas", "netlib"}) {
    const BlasLibraryDescription& d = Describe(name);
    auto library = BlasLibrary::Load(d, BlasLibraryPath(d, BlasLibDir()));
    if (!library.ok()) continue;
    BlasBackend backend(*library);
    EXPECT_EQ(backend.RequestedThreads(), 1);
    EXPECT_THAT(backend.RunsOn(), HasSubstr("serial"));
  }
}

TEST(BlasSupportTest, FloatAndDoubleNativeOtherDtypesNoWithTheReason) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Supports({DType::kFloat, {2, 3}, {3, 4}}).level, Support::Level::kNative);
  EXPECT_EQ(backend->Supports({DType::kDouble, {2, 3}, {3, 4}}).level, Support::Level::kNative);
  // The fake has sbgemm_: bfloat16 by conversion, its float32 Y rounded once.
  EXPECT_EQ(backend->Supports({DType::kBFloat16, {2, 3}, {3, 4}}).level,
            Support::Level::kByConversion);
  for (DType dtype :
       {DType::kFloat16, DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64}) {
    const Support s = backend->Supports({dtype, {2, 3}, {3, 4}});
    EXPECT_EQ(s.level, Support::Level::kNo) << DTypeName(dtype);
    EXPECT_EQ(s.note, "BLAS has no " + std::string(DTypeName(dtype)) + " GEMM");
  }
}

// A real OpenBLAS says bfloat16 yes exactly when it exports sbgemm_ (Debian's 0.3.21 does not).
TEST(BlasSupportTest, BFloat16FollowsWhetherTheLibraryHasSbgemm) {
  for (const BlasLibraryDescription& d : DebianBlasLibraries()) {
    auto library = BlasLibrary::Load(d, BlasLibraryPath(d, BlasLibDir()));
    if (!library.ok()) continue;
    BlasBackend backend(*library);
    const Support s = backend.Supports({DType::kBFloat16, {2, 3}, {3, 4}});
    EXPECT_EQ(s.supported(), (*library)->sbgemm() != nullptr) << d.name << ": " << s.ToString();
    if (!s.supported()) {
      EXPECT_THAT(s.note, HasSubstr("has no sbgemm_")) << d.name;
    }
  }
}

// Dimensions beyond the 32-bit Fortran integer are refused, never truncated into a wrong answer.
// (Only Supports and Prepare run: nothing of that size is allocated.)
TEST(BlasSupportTest, DimensionsBeyondTheFortranIntegerAreANo) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  const std::int64_t big = std::int64_t{1} << 31;
  for (const MatMulDesc& desc :
       {MatMulDesc{DType::kFloat, {1, big}, {big, 1}}, MatMulDesc{DType::kFloat, {big, 1}, {1, 1}},
        MatMulDesc{DType::kDouble, {1, 1}, {1, big}}}) {
    const Support s = backend->Supports(desc);
    EXPECT_EQ(s.level, Support::Level::kNo) << desc.ToString();
    EXPECT_THAT(s.note, HasSubstr("exceeds the 32-bit Fortran integer")) << desc.ToString();
    EXPECT_EQ(backend->Prepare(PlanMatMul(desc).value()).status().code(),
              StatusCode::kUnimplemented);
  }
  // An empty Y or K = 0 is the engine's answer, never a GEMM: no limit applies.
  EXPECT_TRUE(backend->Supports({DType::kFloat, {0, 1}, {1, big}}).supported());
  EXPECT_TRUE(backend->Supports({DType::kFloat, {1, 0}, {0, big}}).supported());
  // 2^31 - 1 itself fits.
  EXPECT_TRUE(backend->Supports({DType::kFloat, {1, big - 1}, {big - 1, 1}}).supported());
}

TEST(BlasDescriptionTest, SaysWhatRanAndDeclaresItsArithmetic) {
  auto backend = FakeOpenBlas();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name(), "openblas");
  EXPECT_THAT(backend->RunsOn(), StartsWith("OpenBLAS 9.8.7 (OpenBLAS 9.8.7 FAKE), core FakeCore, "
                                            "pthreads, up to "));
  omp_set_num_threads(2);
  auto primitive = backend->Prepare(PlanMatMul({DType::kFloat, {4, 2, 3}, {3, 5}}).value());
  ASSERT_TRUE(primitive.ok());
  EXPECT_EQ((*primitive)->implementation(),
            "OpenBLAS sgemm_ (FakeCore kernel, 2 threads), batch folded into M");
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kFloat), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kDouble), (Arithmetic{DType::kDouble, false}));
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kBFloat16), (Arithmetic{DType::kFloat, true}));
  // A library that cannot name its version is known by its file (libblas.so.3 -> .so.3.11.0).
  const BlasLibraryDescription& netlib = Describe("netlib");
  auto real = BlasLibrary::Load(netlib, BlasLibraryPath(netlib, BlasLibDir()));
  if (real.ok() && (*real)->real_path() != (*real)->path()) {
    EXPECT_FALSE((*real)->version().empty()) << (*real)->real_path();
    EXPECT_THAT((*real)->real_path().filename().string(), HasSubstr((*real)->version()));
  }
}

}  // namespace
}  // namespace mm::blas
