// The harness checks that every backend wrote only Y: A and B unchanged, the bytes right before and
// after Y intact. Shown with built-in-style C++ backends and with deliberately wrong plugins.
#include "mm/conformance/running/write_guard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "mm/backends/plugin/plugin_loader.h"
#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/reference_kernel.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/session/run.h"
#include "mm/engine/testing/fake_backend.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;

// What a backend does to its arguments after computing like the reference.
using Scribble = std::function<void(TensorView a, TensorView b, MutableTensorView y)>;

class WriteGuardTest : public ::testing::Test {
 protected:
  StatusOr<Tensor> Run(Scribble scribble) {
    mm::testing::FakeBackend backend("scribbling");
    backend.Computing([scribble = std::move(scribble)](const MatMulPlan& plan, TensorView a,
                                                       TensorView b, MutableTensorView y) {
      MM_RETURN_IF_ERROR(mm::testing::ReferenceKernel()(plan, a, b, y));
      scribble(a, b, y);
      return OkStatus();
    });
    // Below the engine's Prepare, which would answer an empty Y itself.
    const std::unique_ptr<MatMulPrimitive> primitive = backend.PrimitiveFor(plan_);
    return ExecuteWithWriteGuard(*primitive, a_.view(), b_.view());
  }
  // float [2,3] x [3,4]: Y is 8 floats, 32 bytes (so the guard after Y starts in Y's padding).
  MatMulPlan plan_ = PlanMatMul({DType::kFloat, {2, 3}, {3, 4}}).value();
  Tensor a_ = Tensor::FromValues<float>({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}).value();
  Tensor b_ = Tensor::FromValues<float>({3, 4}, std::vector<float>(12, 0.5f)).value();
};

TEST_F(WriteGuardTest, ABackendWritingOnlyYGivesItsY) {
  auto y = Run([](TensorView, TensorView, MutableTensorView) {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dims(), (Dims{2, 4}));
  EXPECT_EQ(y->Data<float>()[0], 3.0f);  // (1 + 2 + 3) * 0.5
  EXPECT_EQ(y->Data<float>()[7], 7.5f);  // (4 + 5 + 6) * 0.5
}

TEST_F(WriteGuardTest, OneFloatPastTheEndIsFourBytesPastTheEnd) {
  auto y = Run([](TensorView, TensorView, MutableTensorView y) { y.Data<float>()[8] = 0.0f; });
  EXPECT_EQ(y.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(y.status().message(), "wrote 4 bytes past the end of Y");
}

TEST_F(WriteGuardTest, TheReachIsTheFarthestChangedByteNotTheCount) {
  // One byte changed 10 bytes after Y's end: a stray write 10 bytes out.
  auto y = Run([](TensorView, TensorView, MutableTensorView y) {
    static_cast<unsigned char*>(y.data)[32 + 9] ^= 0xFF;
  });
  EXPECT_EQ(y.status().message(), "wrote 10 bytes past the end of Y");
}

TEST_F(WriteGuardTest, WritesBeforeYAreCountedFromYsStart) {
  auto y = Run([](TensorView, TensorView, MutableTensorView y) { y.Data<double>()[-1] = 1.0; });
  EXPECT_EQ(y.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(y.status().message(), "wrote 8 bytes before the start of Y");
}

TEST_F(WriteGuardTest, ModifiedInputsAreNamedWithTheFirstChangedByte) {
  auto modified_a = Run([](TensorView a, TensorView, MutableTensorView) {
    const_cast<float*>(a.Data<float>())[1] = 2.1f;  // 2.0f differs from it in every byte.
  });
  EXPECT_EQ(modified_a.status().message(), "modified input A (first changed byte 4 of 24)");
  auto modified_b = Run([](TensorView, TensorView b, MutableTensorView) {
    const_cast<float*>(b.Data<float>())[11] = 0.6f;  // So does 0.5f.
  });
  EXPECT_EQ(modified_b.status().message(), "modified input B (first changed byte 44 of 48)");
  // The caller's tensors are never touched: the backend only saw copies.
  EXPECT_EQ(a_.Data<float>()[1], 2.0f);
  EXPECT_EQ(b_.Data<float>()[11], 0.5f);
}

TEST_F(WriteGuardTest, AnEmptyYHasGuardsToo) {
  plan_ = PlanMatMul({DType::kFloat, {0, 3}, {3, 4}}).value();
  a_ = Tensor::Create(DType::kFloat, {0, 3}).value();
  auto y = Run([](TensorView, TensorView, MutableTensorView y) {
    static_cast<unsigned char*>(y.data)[0] = 0;
  });
  EXPECT_EQ(y.status().message(), "wrote 1 byte past the end of Y");
}

// ---- The same checks in a conformance run, on deliberately wrong plugins ------------------------

struct WrongWrite {
  const char* why;
  const char* path;
  const char* message;
};

void PrintTo(const WrongWrite& write, std::ostream* os) { *os << write.why; }

class WrongWritePluginTest : public ::testing::TestWithParam<WrongWrite> {};

TEST_P(WrongWritePluginTest, IsAnErrorNamingTheWrite) {
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register("reference", "oracle",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
                            })
                  .ok());
  const std::vector<std::string> paths = {MM_WRONG_PLUGIN_NONE, GetParam().path};
  ASSERT_TRUE(RegisterBackendLibraries(registry, paths).ok());
  const std::string name = registry.Names().back();
  // The worked example [2,3] x [3,4] of the ONNX page, built in.
  const Catalog catalog = Discover({}, {.builtin = true, .select = [](const std::string& n) {
                                          return n == "test_cc_matmul_2d";
                                        }});
  RunOptions options;
  options.backends = {"wrong_none", name};
  auto results = RunConformance(catalog, registry, options);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].verdict, Verdict::kPass)
      << "the same plugin without the fault passes: " << results[0].message;
  EXPECT_EQ(results[1].verdict, Verdict::kError);
  EXPECT_EQ(results[1].message, std::string("backend failed: DATA_LOSS: ") + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, WrongWritePluginTest,
    ::testing::Values(WrongWrite{"past_end", MM_WRONG_PLUGIN_WRITE_PAST_END,
                                 "wrote 4 bytes past the end of Y"},
                      WrongWrite{"before_start", MM_WRONG_PLUGIN_WRITE_BEFORE_START,
                                 "wrote 8 bytes before the start of Y"},
                      WrongWrite{"modify_a", MM_WRONG_PLUGIN_MODIFY_A,
                                 "modified input A (first changed byte 0 of 24)"},
                      WrongWrite{"modify_b", MM_WRONG_PLUGIN_MODIFY_B,
                                 "modified input B (first changed byte 4 of 48)"}),
    [](const ::testing::TestParamInfo<WrongWrite>& info) { return std::string(info.param.why); });

}  // namespace
}  // namespace mm::conformance
