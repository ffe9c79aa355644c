#include "mm/backends/backend_list.h"

#include <gtest/gtest.h>

#include <string>

namespace mm {
namespace {

TEST(BuiltinBackendsTest, ReferenceComesFirstAndEveryBackendCreatesUnderItsName) {
  BackendRegistry registry = BuiltinBackends();
  const auto names = registry.Names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "reference");
  for (const std::string& name : names) {
    auto backend = registry.Create(name);
    ASSERT_TRUE(backend.ok()) << name << ": " << backend.status();
    EXPECT_EQ((*backend)->name(), name);
    EXPECT_FALSE(registry.Description(name).empty()) << name;
  }
}

// What each built-in backend declares is what its kernels do on every CPU (docs/backends.md); the
// harness and the fuzzer judge every result of it by this.
TEST(BuiltinBackendsTest, EachBackendDeclaresItsOwnArithmetic) {
  BackendRegistry registry = BuiltinBackends();
  auto reference = registry.Create("reference").value();
  // The oracle backend sums every float dtype in double.
  for (DType dtype : {DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kDouble}) {
    EXPECT_EQ(reference->DeclaredArithmetic(dtype), (Arithmetic{DType::kDouble, false}))
        << DTypeName(dtype);
  }
#if MM_WITH_ONEDNN
  // oneDNN's f32 accumulator; its native bf16 kernel reads bf16 subnormals as zero on AVX512-BF16
  // CPUs, declared for all CPUs so that verdicts do not depend on the machine.
  auto onednn = registry.Create("onednn").value();
  EXPECT_EQ(onednn->DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(onednn->DeclaredArithmetic(DType::kBFloat16), (Arithmetic{DType::kFloat, true}));
#endif
#if MM_WITH_EIGEN_BACKEND
  // Eigen: float32 for the 16-bit types (widened), double in double.
  auto eigen = registry.Create("eigen").value();
  EXPECT_EQ(eigen->DeclaredArithmetic(DType::kBFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(eigen->DeclaredArithmetic(DType::kDouble), (Arithmetic{DType::kDouble, false}));
#endif
  // Integers are exact modulo 2^bits on every backend.
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name).value();
    for (DType dtype : {DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64}) {
      EXPECT_EQ(backend->DeclaredArithmetic(dtype), Arithmetic::OwnType(dtype))
          << name << " " << DTypeName(dtype);
    }
  }
}

// A backend configured out (MM_WITH_<X>=OFF) is still listed, unavailable, naming the option that
// left it out; a built one is never said to be left out.
TEST(BuiltinBackendsTest, ABackendLeftOutOfTheBuildIsListedWithItsOption) {
  BackendRegistry registry = BuiltinBackends();
  const struct {
    const char* name;
    bool built;
    std::string option;
  } backends[] = {{"onednn", MM_WITH_ONEDNN, "MM_WITH_ONEDNN"},
                  {"eigen", MM_WITH_EIGEN_BACKEND, "MM_WITH_EIGEN_BACKEND"},
                  {"netlib", MM_WITH_BLAS, "MM_WITH_BLAS"},
                  {"numpy", MM_WITH_RUNTIMES, "MM_WITH_RUNTIMES"},
                  {"onnxruntime", MM_WITH_RUNTIMES, "MM_WITH_RUNTIMES"}};
  for (const auto& backend : backends) {
    const std::string why = registry.UnavailableReason(backend.name);
    ASSERT_TRUE(registry.Contains(backend.name) || !why.empty()) << backend.name << " not listed";
    if (backend.built) {
      EXPECT_EQ(why.find(backend.option), std::string::npos) << backend.name << ": " << why;
    } else {
      EXPECT_NE(why.find(backend.option + "=OFF"), std::string::npos)
          << backend.name << ": " << why;
      EXPECT_FALSE(registry.Create(backend.name).ok()) << backend.name;
    }
  }
}

}  // namespace
}  // namespace mm
