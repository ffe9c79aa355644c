// Plugins through RegisterBackendLibraries: the example plugin computes every dtype and form like
// the reference; every deliberately wrong plugin (tests/wrong_plugin.c, one shared object per
// fault) is refused with a message naming the file and the problem.
#include "mm/backends/plugin/plugin_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/testing/sanitizers.h"
#include "mm/engine/testing/temp_dir.h"
#include "mm/engine/testing/test_names.h"

namespace mm {

// gtest prints parameters in test names (and ctest shows them): "float", not a byte dump.
void PrintTo(DType dtype, std::ostream* os) { *os << DTypeName(dtype); }

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::MatMulTester;

// A registry holding only `paths`' plugins, or the refusal.
Status LoadInto(BackendRegistry& registry, std::vector<std::string> paths) {
  return RegisterBackendLibraries(registry, paths);
}

std::unique_ptr<Backend> ExampleBackend() {
  BackendRegistry registry;
  const Status loaded = LoadInto(registry, {MM_EXAMPLE_PLUGIN});
  EXPECT_TRUE(loaded.ok()) << loaded;
  auto backend = registry.Create("example");
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::move(backend).value();
}

// ---- The example plugin is a correct backend ---------------------------------------------------

struct Shape {
  const char* why;
  Dims a;
  Dims b;
};

const Shape kShapes[] = {
    {"1-D x 1-D: a dot product, rank-0 Y (the plugin sees m = n = 1)", {7}, {7}},
    {"1-D A times a matrix: Y is [N]", {7}, {7, 5}},
    {"matrix times 1-D B: Y is [M]", {5, 7}, {7}},
    {"1-D A over a batched B: A's batch stride is 0", {7}, {3, 7, 5}},
    {"plain 2-D product", {3, 4}, {4, 5}},
    {"2-D B shared by a stack of A: B's batch stride is 0", {2, 3, 4}, {4, 5}},
    {"size-1 batch dim of A broadcasts against B's stack", {1, 3, 4}, {6, 4, 5}},
    {"broadcast on both operands, two batch axes", {3, 1, 2, 4}, {1, 5, 4, 6}},
    {"rank 5 with broadcast axes in each operand", {2, 1, 3, 2, 3}, {1, 2, 1, 3, 4}},
    {"K = 1: an outer product", {5, 1}, {1, 6}},
    {"K = 0: zeros, answered by mm without calling the plugin", {3, 0}, {0, 4}},
    {"K = 0 vectors: a rank-0 zero", {0}, {0}},
    {"M = 0: empty Y, the plugin is not called", {0, 4}, {4, 5}},
    {"batch = 0 from broadcasting a 0 against 1", {2, 0, 3, 4}, {1, 1, 4, 5}},
    {"17 x 33 x 9: odd sizes", {17, 33}, {33, 9}},
    {"K = 1024: long accumulation", {3, 1024}, {1024, 2}},
};

// Printed as the why, not the bytes.
void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.why; }

using ShapeAndDType = std::tuple<Shape, DType>;
class ExamplePluginShapeTest : public ::testing::TestWithParam<ShapeAndDType> {};

TEST_P(ExamplePluginShapeTest, MatchesTheReference) {
  const auto& [shape, dtype] = GetParam();
  auto backend = ExampleBackend();
  MatMulTester tester;
  // Several Executes on one prepared handle: state kept between calls would show.
  tester.a_dims(shape.a).b_dims(shape.b).dtype(dtype).iterations(2).Test(*backend);
  if (!IsFloat(dtype)) {
    // Whole-range integers: products and sums wrap, exactly like the reference (numpy).
    tester.values(MatMulTester::Values::kFullRange).seed(7).iterations(1).Test(*backend);
  }
}

INSTANTIATE_TEST_SUITE_P(AllShapes, ExamplePluginShapeTest,
                         ::testing::Combine(::testing::ValuesIn(kShapes),
                                            ::testing::ValuesIn(kAllDTypes)),
                         [](const ::testing::TestParamInfo<ShapeAndDType>& info) {
                           return testing::TestNameFromWhy(std::get<0>(info.param).why) + "_" +
                                  std::string(DTypeName(std::get<1>(info.param)));
                         });

TEST(ExamplePluginTest, WorkedExamplesOfTheOnnxPageAtOnnxTolerance) {
  auto backend = ExampleBackend();
  testing::ExpectWorkedExamplesPass(*backend);
}

TEST(ExamplePluginTest, SaysHowEachDtypeIsComputed) {
  auto backend = ExampleBackend();
  EXPECT_EQ(backend->name(), "example");
  for (DType dtype : kAllDTypes) {
    const Support support = backend->Supports({dtype, {2, 3}, {3, 4}});
    if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
      EXPECT_EQ(support.level, Support::Level::kByConversion) << DTypeName(dtype);
      EXPECT_THAT(support.note, HasSubstr("via double accumulation")) << DTypeName(dtype);
    } else {
      EXPECT_EQ(support.level, Support::Level::kNative) << DTypeName(dtype);
    }
  }
}

// Two products of 16-bit floats sum exactly in double, so the plugin and the reference round the
// same exact value once: the results must be bit-identical, ties to even included. Random bit
// patterns cover subnormals, overflow to infinity and NaN inputs.
template <class T>
void ExpectBitIdenticalToReferenceOnTwoTermSums(DType dtype) {
  auto plugin = ExampleBackend();
  ReferenceBackend reference;
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  Tensor a = Tensor::Create(dtype, {4096, 2}).value();
  Tensor b = Tensor::Create(dtype, {2}).value();
  for (int trial = 0; trial < 8; ++trial) {
    for (std::int64_t i = 0; i < a.NumElements(); ++i) {
      const std::uint16_t v = static_cast<std::uint16_t>(bits(rng));
      std::memcpy(static_cast<std::byte*>(a.raw_data()) + 2 * i, &v, 2);
    }
    for (std::int64_t i = 0; i < 2; ++i) {
      const std::uint16_t v = static_cast<std::uint16_t>(bits(rng) & 0x3fff);  // |b| < 2: finite
      std::memcpy(static_cast<std::byte*>(b.raw_data()) + 2 * i, &v, 2);
    }
    auto expected = MatMul(reference, a.view(), b.view());
    auto actual = MatMul(*plugin, a.view(), b.view());
    ASSERT_TRUE(expected.ok() && actual.ok()) << expected.status() << actual.status();
    for (std::int64_t i = 0; i < expected->NumElements(); ++i) {
      const float e = static_cast<float>(expected->Data<T>()[i]);
      const float g = static_cast<float>(actual->Data<T>()[i]);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(g)) << DTypeName(dtype) << " row " << i;
      } else {
        ASSERT_EQ(std::memcmp(expected->Data<T>() + i, actual->Data<T>() + i, 2), 0)
            << DTypeName(dtype) << " row " << i << ": reference " << e << ", plugin " << g;
      }
    }
  }
}

TEST(ExamplePluginTest, Float16RoundsOnceToNearestEvenLikeTheReference) {
  ExpectBitIdenticalToReferenceOnTwoTermSums<float16>(DType::kFloat16);
}

TEST(ExamplePluginTest, BFloat16RoundsOnceToNearestEvenLikeTheReference) {
  ExpectBitIdenticalToReferenceOnTwoTermSums<bfloat16>(DType::kBFloat16);
}

TEST(ExamplePluginTest, SaysWhatRunsThroughItsDescribeFunction) {
  auto backend = ExampleBackend();
  auto primitive = backend->Prepare(PlanMatMul({DType::kFloat, {2, 3, 4}, {4, 5}}).value());
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  EXPECT_EQ((*primitive)->implementation(), "naive i-j-p loops, 2 batch entries of 3x4x5");
  EXPECT_THAT(backend->RunsOn(), AllOf(HasSubstr(MM_EXAMPLE_PLUGIN), HasSubstr("ABI version 3")));
}

// ---- The arithmetic a plugin declares (ABI version 2) ------------------------------------------

TEST(ExamplePluginTest, DeclaresDoubleAccumulationForFloatsAndItsOwnTypeForIntegers) {
  // What its loops really do: every float dtype multiplied and summed in double, rounded once.
  auto backend = ExampleBackend();
  for (DType dtype : kAllDTypes) {
    const Arithmetic expected =
        IsFloat(dtype) ? Arithmetic{DType::kDouble, false} : Arithmetic::OwnType(dtype);
    EXPECT_EQ(backend->DeclaredArithmetic(dtype), expected) << DTypeName(dtype);
  }
}

TEST(PluginArithmeticTest, AVersionTwoPluginWithoutTheFunctionIsJudgedByItsOwnType) {
  BackendRegistry registry;
  ASSERT_TRUE(LoadInto(registry, {MM_HALF_SUM_PLUGIN_UNDECLARED}).ok());
  auto backend = registry.Create("half_sum_undeclared").value();
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(backend->DeclaredArithmetic(dtype), Arithmetic::OwnType(dtype)) << DTypeName(dtype);
  }
}

TEST(PluginArithmeticTest, TheDeclarationIsKeptPerDtypeTheOthersKeepTheDefault) {
  BackendRegistry registry;
  ASSERT_TRUE(LoadInto(registry, {MM_HALF_SUM_PLUGIN_DECLARES_FLOAT32}).ok());
  auto backend = registry.Create("half_sum_declares_float32").value();
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kBFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kFloat), Arithmetic::OwnType(DType::kFloat));
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kInt64), Arithmetic::OwnType(DType::kInt64));
}

// A plugin built against version 1's header: its table ends after describe, and the word after it
// is a trap (a non-NULL "arithmetic" pointer). It loads, runs, and keeps version 1's meaning.
TEST(PluginArithmeticTest, AVersionOnePluginLoadsRunsAndIsJudgedByItsOwnType) {
  BackendRegistry registry;
  const Status loaded = LoadInto(registry, {MM_V1_PLUGIN});
  ASSERT_TRUE(loaded.ok()) << loaded;
  auto backend = registry.Create("v1_plugin").value();
  EXPECT_THAT(backend->RunsOn(), HasSubstr("(ABI version 1)"));
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(backend->DeclaredArithmetic(dtype), Arithmetic::OwnType(dtype)) << DTypeName(dtype);
  }
  MatMulTester().a_dims({3, 2, 5}).b_dims({5, 4}).dtype(DType::kFloat).Test(*backend);
}

TEST(PluginLoadingTest, KZeroAndEmptyOutputsNeverReachThePlugin) {
  // This plugin's prepare always fails; the engine answers these products without it.
  BackendRegistry registry;
  ASSERT_TRUE(LoadInto(registry, {MM_WRONG_PLUGIN_PREPARE_FAILS}).ok());
  auto backend = registry.Create("wrong_prepare_fails").value();
  for (const MatMulDesc& desc :
       {MatMulDesc{DType::kFloat, {3, 0}, {0, 4}}, MatMulDesc{DType::kFloat, {0, 3}, {3, 4}}}) {
    auto primitive = backend->Prepare(PlanMatMul(desc).value());
    EXPECT_TRUE(primitive.ok()) << desc.ToString() << ": " << primitive.status();
  }
}

TEST(PluginLoadingTest, RegistersUnderThePluginsNameWithItsFileInTheDescription) {
  BackendRegistry registry = BuiltinBackends();
  ASSERT_TRUE(LoadInto(registry, {MM_EXAMPLE_PLUGIN}).ok());
  EXPECT_EQ(registry.Names().back(), "example");
  EXPECT_THAT(registry.Description("example"),
              AllOf(HasSubstr("example C99 plugin"),
                    HasSubstr("[plugin " + io::ReportedPath(MM_EXAMPLE_PLUGIN).string() + "]")));
}

TEST(PluginLoadingTest, TheSameFileNamedTwiceIsLoadedOnce) {
  BackendRegistry registry;
  const std::string path = MM_EXAMPLE_PLUGIN;
  // Another spelling of the same file: through its directory's "." entry.
  const std::string again = path.substr(0, path.rfind('/')) + "/." + path.substr(path.rfind('/'));
  const Status loaded = LoadInto(registry, {path, again});
  EXPECT_TRUE(loaded.ok()) << loaded;
  EXPECT_EQ(registry.Names(), std::vector<std::string>{"example"});
}

TEST(PluginLoadingTest, PluginsLoadedBeforeARefusalStayRegistered) {
  BackendRegistry registry;
  EXPECT_FALSE(LoadInto(registry, {MM_EXAMPLE_PLUGIN, MM_WRONG_PLUGIN_ABI_VERSION_4}).ok());
  EXPECT_TRUE(registry.Contains("example"));
}

TEST(PluginLoadingTest, AFailureWithAMessageIsThePluginsBusinessNotARefusal) {
  BackendRegistry registry;
  const Status loaded = LoadInto(registry, {MM_WRONG_PLUGIN_PREPARE_FAILS});
  ASSERT_TRUE(loaded.ok()) << loaded;
  auto backend = registry.Create("wrong_prepare_fails").value();
  auto plan = PlanMatMul({DType::kFloat, {2, 3}, {3, 4}}).value();
  auto primitive = backend->Prepare(plan);
  ASSERT_FALSE(primitive.ok());
  EXPECT_EQ(primitive.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(
      primitive.status().message(),
      AllOf(HasSubstr("plugin 'wrong_prepare_fails'"), HasSubstr(MM_WRONG_PLUGIN_PREPARE_FAILS),
            HasSubstr("prepare() failed with 8 (RESOURCE_EXHAUSTED): no device available")));
}

TEST(PluginLoadingTest, AnUnsupportedDtypeIsRefusedByPrepareWithThePluginsReason) {
  BackendRegistry registry;
  ASSERT_TRUE(LoadInto(registry, {MM_WRONG_PLUGIN_NONE}).ok());
  auto backend = registry.Create("wrong_none").value();
  EXPECT_EQ(backend->Supports({DType::kDouble, {2, 3}, {3, 4}}).ToString(), "no: float only");
  auto primitive = backend->Prepare(PlanMatMul({DType::kDouble, {2, 3}, {3, 4}}).value());
  ASSERT_FALSE(primitive.ok());
  EXPECT_EQ(primitive.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(primitive.status().message(), HasSubstr("float only"));
}

TEST(PluginLoadingTest, ControlCharactersAndInvalidUtf8InPluginTextBecomeQuestionMarks) {
  // Reports print and store plugin text (JSON writers reject invalid UTF-8); valid UTF-8 stays.
  BackendRegistry registry;
  ASSERT_TRUE(LoadInto(registry, {MM_WRONG_PLUGIN_MESSY_TEXT}).ok());
  auto backend = registry.Create("wrong_messy_text").value();
  EXPECT_EQ(backend->Supports({DType::kDouble, {2, 3}, {3, 4}}).note, "float only??[31m?\xc3\xa9?");
}

// ---- Refusals: each names the file and what is wrong --------------------------------------------

struct Refusal {
  const char* why;
  const char* path;
  StatusCode code;
  const char* message;  // Expected in the message, after "backend library '<path>': ".
};

const Refusal kRefusals[] = {
    {"missing file", "no_such_dir/libmissing_plugin.so", StatusCode::kNotFound, "no such file"},
    {"not a shared object (a C source file)", MM_NOT_A_PLUGIN, StatusCode::kInvalidArgument,
     "not a shared object (no ELF header"},
    {"no entry symbol (its name has a typo)", MM_WRONG_PLUGIN_NO_ENTRY,
     StatusCode::kInvalidArgument, "does not export the entry function 'mm_backend_plugin_entry'"},
    {"another ABI version: both versions said", MM_WRONG_PLUGIN_ABI_VERSION_4,
     StatusCode::kInvalidArgument,
     "speaks plugin ABI version 4, but this mm speaks versions 1 to 3"},
    {"an accumulation type that is no dtype", MM_WRONG_PLUGIN_ARITHMETIC_NOT_A_DTYPE,
     StatusCode::kInvalidArgument,
     "arithmetic() of plugin 'wrong_arithmetic_not_a_dtype' for float16 declared accumulation "
     "type 99, which is not an mm_dtype"},
    {"a float dtype declaring integer accumulation", MM_WRONG_PLUGIN_ARITHMETIC_INT_FOR_FLOAT,
     StatusCode::kInvalidArgument,
     "arithmetic() of plugin 'wrong_arithmetic_int_for_float' for float declared accumulation in "
     "int32; a float dtype accumulates in float, double, float16 or bfloat16"},
    {"an integer dtype declaring another integer", MM_WRONG_PLUGIN_ARITHMETIC_WIDER_INT,
     StatusCode::kInvalidArgument,
     "arithmetic() of plugin 'wrong_arithmetic_wider_int' for int32 declared accumulation in "
     "int64; an integer dtype is exact modulo 2^bits: declare the dtype itself"},
    {"a flush flag that is neither 0 nor 1", MM_WRONG_PLUGIN_ARITHMETIC_FLUSH_FLAG,
     StatusCode::kInvalidArgument,
     "arithmetic() of plugin 'wrong_arithmetic_flush_flag' for bfloat16 declared "
     "flushes_subnormals = 2; valid are 0 and 1"},
    {"an integer dtype that flushes subnormals", MM_WRONG_PLUGIN_ARITHMETIC_INT_FLUSHES,
     StatusCode::kInvalidArgument,
     "arithmetic() of plugin 'wrong_arithmetic_int_flushes' for uint64 declared "
     "flushes_subnormals = 1; integers have no subnormals"},
    {"NULL function pointers, every one named", MM_WRONG_PLUGIN_NULL_FUNCTIONS,
     StatusCode::kInvalidArgument,
     "required function pointer(s) NULL in the table of 'wrong_null_functions': prepare, execute"},
    {"empty name", MM_WRONG_PLUGIN_EMPTY_NAME, StatusCode::kInvalidArgument,
     "the backend name is empty"},
    {"a name that cannot be a test name", MM_WRONG_PLUGIN_BAD_NAME, StatusCode::kInvalidArgument,
     "the backend name 'my gemm' has a character outside [A-Za-z0-9_-]"},
    {"a name clashing with a built-in backend", MM_WRONG_PLUGIN_NAME_REFERENCE,
     StatusCode::kInvalidArgument,
     "the backend name 'reference' is already taken by naive i-k-j loops"},
    {"an out-of-range support answer", MM_WRONG_PLUGIN_SUPPORT_OUT_OF_RANGE, StatusCode::kInternal,
     "supports() answered 7 for float [2,3] x [3,4]; valid answers are 0 (native), 1 (by "
     "conversion), 2 (no)"},
    {"no with no reason", MM_WRONG_PLUGIN_NOTE_MISSING, StatusCode::kInternal,
     "supports() answered NO for double [2,3] x [3,4] without a note"},
    {"prepare fails with no message", MM_WRONG_PLUGIN_PREPARE_ERROR_NO_MESSAGE,
     StatusCode::kInternal,
     "prepare() returned status 13 (INTERNAL) with no message for float [2,3] x [3,4]; the plugin "
     "ABI requires one"},
    {"execute fails with no message", MM_WRONG_PLUGIN_EXECUTE_ERROR_NO_MESSAGE,
     StatusCode::kInternal, "execute() returned status 13 (INTERNAL) with no message"},
};

void PrintTo(const Refusal& refusal, std::ostream* os) { *os << refusal.why; }

class RefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusalTest, NamesTheFileAndTheProblem) {
  const Refusal& refusal = GetParam();
  BackendRegistry registry = BuiltinBackends();
  const std::vector<std::string> names_before = registry.Names();
  const Status status = LoadInto(registry, {refusal.path});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), refusal.code) << status;
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(std::string("backend library '") + refusal.path + "': "),
                    HasSubstr(refusal.message)));
  EXPECT_EQ(registry.Names(), names_before) << "a refused plugin must not be registered";
}

INSTANTIATE_TEST_SUITE_P(WrongPlugins, RefusalTest, ::testing::ValuesIn(kRefusals),
                         testing::NameFromWhy());

TEST(PluginLoadingTest, TwoPluginsWithOneNameAreRefusedNamingTheFirst) {
  BackendRegistry registry;
  const Status status = LoadInto(registry, {MM_WRONG_PLUGIN_NONE, MM_WRONG_PLUGIN_TWIN});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(std::string("backend library '") + MM_WRONG_PLUGIN_TWIN),
                    HasSubstr("the backend name 'wrong_none' is already taken by"),
                    // As reports name paths: relative where it is in the working directory.
                    HasSubstr("[plugin " + io::ReportedPath(MM_WRONG_PLUGIN_NONE).string() + "]")));
}

TEST(PluginLoadingTest, WritesOutsideYLoadFineTheHarnessJudgesThem) {
  // The probe executes with slack around Y; these are caught per result by the harness.
  for (const char* path : {MM_WRONG_PLUGIN_WRITE_PAST_END, MM_WRONG_PLUGIN_WRITE_BEFORE_START,
                           MM_WRONG_PLUGIN_MODIFY_A, MM_WRONG_PLUGIN_MODIFY_B}) {
    BackendRegistry registry;
    const Status status = LoadInto(registry, {path});
    EXPECT_TRUE(status.ok()) << status;
  }
}

// ---- Plugin code runs in a child process first
// ----------------------------------------------------

// Whether `path` is mapped into this process (dlopened here).
bool LoadedHere(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(path) != std::string::npos) return true;
  }
  return false;
}

TEST(PluginIsolationTest, TheLibraryIsLoadedHereOnlyWhenABackendOfItIsCreated) {
  // Another copy of the example plugin (this process may have loaded the example in other tests).
  testing::TempDir dir;
  const std::string copy = (dir.path() / "libexample_copy.so").string();
  std::filesystem::copy_file(MM_EXAMPLE_PLUGIN, copy);
  BackendRegistry registry;
  const Status loaded = LoadInto(registry, {copy});
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_FALSE(LoadedHere(copy)) << "loading, the entry, arithmetic() and the probe run in a child";
  EXPECT_THAT(registry.Description("example"), HasSubstr("example C99 plugin"));
  auto backend = registry.Create("example");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_TRUE(LoadedHere(copy));
  EXPECT_EQ((*backend)->DeclaredArithmetic(DType::kFloat), (Arithmetic{DType::kDouble, false}));
  MatMulTester().a_dims({3, 4}).b_dims({4, 5}).dtype(DType::kFloat).Test(**backend);
}

struct LoadTimeFault {
  const char* why;
  const char* path;
  const char* message;  // After "backend library '<path>' ".
};

void PrintTo(const LoadTimeFault& fault, std::ostream* os) { *os << fault.why; }

class LoadTimeFaultTest : public ::testing::TestWithParam<LoadTimeFault> {};

TEST_P(LoadTimeFaultTest, IsARefusalNamingThePluginAndWhatHappened) {
  const LoadTimeFault& fault = GetParam();
  BackendRegistry registry = BuiltinBackends();
  const std::vector<std::string> names_before = registry.Names();
  PluginLoadOptions options;
  options.probe_timeout_seconds = 1;
  const std::vector<std::string> paths = {fault.path};
  const Status status = RegisterBackendLibraries(registry, paths, options);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  std::string message = fault.message;
#if MM_UNDER_ASAN
  // AddressSanitizer catches the plugin's SIGSEGV itself and ends the child with its exit code.
  if (const std::size_t signal = message.find(": SIGSEGV"); signal != std::string::npos) {
    const std::size_t where = message.find(' ') + 1;  // After "crashed".
    message = message.substr(where, signal - where);
  }
#endif
  EXPECT_THAT(status.message(), HasSubstr(std::string("backend library '") + fault.path + "' "));
  EXPECT_THAT(status.message(), HasSubstr(message));
  EXPECT_EQ(registry.Names(), names_before);
  EXPECT_FALSE(LoadedHere(fault.path));
}

INSTANTIATE_TEST_SUITE_P(
    WrongPlugins, LoadTimeFaultTest,
    ::testing::Values(
        LoadTimeFault{"a constructor that crashes", MM_WRONG_PLUGIN_CTOR_CRASH,
                      "crashed while loading (constructor or entry function): SIGSEGV (signal 11)"},
        LoadTimeFault{"a constructor that calls exit", MM_WRONG_PLUGIN_CTOR_EXIT,
                      "exited with status 7 while loading (constructor or entry function)"},
        LoadTimeFault{"a constructor that hangs", MM_WRONG_PLUGIN_CTOR_HANG,
                      "hung while loading (constructor or entry function): no answer within 1 s"},
        LoadTimeFault{"an arithmetic function that crashes", MM_WRONG_PLUGIN_ARITHMETIC_CRASH,
                      "crashed in arithmetic() while loading: SIGSEGV (signal 11)"}),
    testing::NameFromWhy());

// A handler that is not the plugin's.
extern "C" void TestSigtermHandler(int) {}

TEST(PluginIsolationTest, ASignalHandlerTheConstructorReplacesIsReinstalledAndSaid) {
  struct sigaction mine {
  }, before{};
  mine.sa_handler = TestSigtermHandler;
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(sigaction(SIGTERM, &mine, &before), 0);
  BackendRegistry registry;
  ASSERT_TRUE(LoadInto(registry, {MM_WRONG_PLUGIN_CTOR_SIGTERM}).ok());
  ::testing::internal::CaptureStderr();
  auto backend = registry.Create("wrong_ctor_sigterm");
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(backend.ok()) << backend.status();
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, &TestSigtermHandler) << "the plugin's handler stayed";
  EXPECT_THAT(said, AllOf(HasSubstr(MM_WRONG_PLUGIN_CTOR_SIGTERM),
                          HasSubstr("replaced the handler of SIGTERM while loading; mm's handler "
                                    "is reinstalled")));
  sigaction(SIGTERM, &before, nullptr);
}

// ---- Where the paths come from ------------------------------------------------------------------

TEST(BackendLibrariesFromEnvTest, SplitsOnColonsAndIgnoresEmptyEntries) {
  EXPECT_TRUE(BackendLibrariesFromEnv(nullptr).empty());
  EXPECT_TRUE(BackendLibrariesFromEnv("").empty());
  EXPECT_EQ(BackendLibrariesFromEnv("a.so"), std::vector<std::string>{"a.so"});
  EXPECT_EQ(BackendLibrariesFromEnv(":lib/a.so::b.so:"),
            (std::vector<std::string>{"lib/a.so", "b.so"}));
}

TEST(BackendLibrariesToLoadTest, TheEnvironmentsLibrariesComeFirstThenTheFlags) {
  ASSERT_EQ(setenv(kBackendLibsEnv, "env1.so:env2.so", 1), 0);
  const std::vector<std::string> flags = {"flag.so"};
  EXPECT_EQ(BackendLibrariesToLoad(flags),
            (std::vector<std::string>{"env1.so", "env2.so", "flag.so"}));
  ASSERT_EQ(unsetenv(kBackendLibsEnv), 0);
  EXPECT_EQ(BackendLibrariesToLoad(flags), flags);
}

}  // namespace
}  // namespace mm
