// The drivers mm ships (numpy, torch): registered on request with their runtime's version, or
// unavailable saying why; numpy judged like any backend, K = 0 and empty products included (the
// runtime answers them, not the engine).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/testing/scoped_env.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::runtime {
namespace {

using ::mm::testing::MatMulTester;
using ::mm::testing::ScopedEnv;
using ::testing::HasSubstr;

BackendRegistry Shipped() {
  BackendRegistry registry;
  EXPECT_TRUE(RegisterShippedDrivers(registry).ok());
  return registry;
}

std::unique_ptr<Backend> Create(const std::string& name) {
  BackendRegistry registry = Shipped();
  if (!registry.Contains(name)) return nullptr;
  auto backend = registry.Create(name);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

TEST(ShippedDriversTest, AreRunWhenNamedAndListedWithTheirVersionOrWhyNot) {
  const BackendRegistry registry = Shipped();
  for (const char* name : {"numpy", "torch"}) {
    if (registry.Contains(name)) {
      EXPECT_THAT(registry.Description(name), HasSubstr(std::string(name) + " "));
      EXPECT_THAT(registry.Description(name), HasSubstr("--backend " + std::string(name)));
    } else {
      EXPECT_THAT(registry.UnavailableReason(name), HasSubstr("python3-" + std::string(name)));
    }
  }
  EXPECT_TRUE(registry.DefaultNames().empty());
}

TEST(ShippedDriversTest, AMissingPythonOrDriverIsUnavailableWithTheReason) {
  {
    ScopedEnv python("MM_PYTHON", "/nonexistent/python3");
    const BackendRegistry registry = Shipped();
    EXPECT_THAT(registry.UnavailableReason("numpy"),
                HasSubstr("/nonexistent/python3 not found (set MM_PYTHON)"));
    EXPECT_EQ(registry.CheckSelectable("torch").code(), StatusCode::kFailedPrecondition);
  }
  mm::testing::TempDir empty;
  ScopedEnv dir("MM_RUNTIMES_DIR", empty.path().string());
  const BackendRegistry registry = Shipped();
  if (registry.UnavailableReason("numpy").find("not installed") != std::string::npos) {
    GTEST_SKIP() << "numpy is not installed";
  }
  EXPECT_THAT(registry.UnavailableReason("numpy"), HasSubstr("numpy_driver.py is not there"));
}

TEST(NumpyDriverTest, IsJudgedLikeAnyBackend) {
  auto numpy = Create("numpy");
  if (numpy == nullptr) GTEST_SKIP() << Shipped().UnavailableReason("numpy");
  EXPECT_THAT(numpy->RunsOn(), HasSubstr("BLAS "));
  EXPECT_EQ(DriverCommandOf(*numpy), "");  // Its name finds it: no --backend-cmd in a replay.
  const Support bf16 = numpy->Supports({DType::kBFloat16, {2, 3}, {3, 4}});
  EXPECT_FALSE(bf16.supported());
  EXPECT_THAT(bf16.note, HasSubstr("has no bfloat16 dtype"));
  EXPECT_EQ(numpy->DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  for (DType dtype : kAllDTypes) {
    if (!numpy->Supports({dtype, {2, 3}, {3, 4}}).supported()) continue;
    SCOPED_TRACE(DTypeName(dtype));
    MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(dtype).iterations(2).Test(*numpy);
    MatMulTester().a_dims({3, 1, 2, 5}).b_dims({4, 5, 1}).dtype(dtype).Test(*numpy);
    MatMulTester().a_dims({7}).b_dims({7}).dtype(dtype).Test(*numpy);        // A 0-d Y.
    MatMulTester().a_dims({2, 0}).b_dims({0, 3}).dtype(dtype).Test(*numpy);  // K = 0.
    MatMulTester().a_dims({0, 4}).b_dims({4, 3}).dtype(dtype).Test(*numpy);  // An empty Y.
  }
}

TEST(TorchDriverTest, IsJudgedLikeAnyBackendAtMmsThreadCount) {
  auto torch = Create("torch");
  if (torch == nullptr) GTEST_SKIP() << Shipped().UnavailableReason("torch");
  EXPECT_THAT(torch->RunsOn(), HasSubstr("CPU, "));
  EXPECT_THAT(torch->Supports({DType::kUInt32, {2}, {2}}).note, HasSubstr("has no uint32"));
  for (DType dtype : {DType::kFloat, DType::kInt64}) {
    SCOPED_TRACE(DTypeName(dtype));
    MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(dtype).Test(*torch);
    MatMulTester().a_dims({6}).b_dims({6, 2}).dtype(dtype).Test(*torch);
  }
  // bfloat16 is declared as PyTorch promises it (float32 accumulation); torch 1.13 sums small
  // products in bfloat16, a declared deviation (conformance/tests/declared_deviations_test.cc).
  EXPECT_TRUE(torch->Supports({DType::kBFloat16, {2, 3}, {3, 4}}).supported());
  EXPECT_EQ(torch->DeclaredArithmetic(DType::kBFloat16).accumulation, DType::kFloat);
}

constexpr const char* kNodeDrivers[] = {"onnxruntime", "onnxruntime-web", "tfjs", "tfjs-wasm"};

TEST(NodeDriversTest, AreListedWithTheirNpmVersionOrWhyNot) {
  const BackendRegistry registry = Shipped();
  for (const char* name : kNodeDrivers) {
    SCOPED_TRACE(name);
    if (registry.Contains(name)) {
      EXPECT_THAT(registry.Description(name), HasSubstr("--backend " + std::string(name)));
      EXPECT_THAT(registry.Description(name), HasSubstr("through the Node.js driver"));
    } else {
      EXPECT_THAT(registry.UnavailableReason(name), HasSubstr("scripts/setup.sh"));
    }
  }
  EXPECT_TRUE(registry.DefaultNames().empty());
}

TEST(NodeDriversTest, AMissingNodeOrPackageIsUnavailableWithTheReason) {
  {
    ScopedEnv node("MM_NODE", "/nonexistent/node");
    const BackendRegistry registry = Shipped();
    EXPECT_THAT(registry.UnavailableReason("tfjs"), HasSubstr("/nonexistent/node not found"));
  }
  mm::testing::TempDir empty;
  ScopedEnv modules("MM_NPM_DIR", empty.path().string());
  const BackendRegistry registry = Shipped();
  EXPECT_THAT(
      registry.UnavailableReason("onnxruntime"),
      HasSubstr("the npm package onnxruntime-node is not installed in " + empty.path().string()));
  EXPECT_EQ(registry.CheckSelectable("tfjs-wasm").code(), StatusCode::kFailedPrecondition);
}

TEST(NodeDriversTest, OnnxRuntimeIsJudgedLikeAnyBackend) {
  auto ort = Create("onnxruntime");
  if (ort == nullptr) GTEST_SKIP() << Shipped().UnavailableReason("onnxruntime");
  EXPECT_THAT(ort->RunsOn(), HasSubstr("onnxruntime-node "));
  EXPECT_FALSE(ort->Supports({DType::kBFloat16, {2, 3}, {3, 4}}).supported());
  EXPECT_EQ(ort->DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kInt64}) {
    SCOPED_TRACE(DTypeName(dtype));
    MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(dtype).iterations(2).Test(*ort);
    MatMulTester().a_dims({7}).b_dims({7}).dtype(dtype).Test(*ort);  // A 0-d Y.
  }
}

}  // namespace
}  // namespace mm::runtime
