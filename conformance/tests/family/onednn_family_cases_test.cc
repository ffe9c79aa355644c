// The built-in family catalogue (BuiltinFamilyCases) on the oneDNN backend: every case it says it
// computes on this CPU is judged against the exact answer (integers exact, float Gemm within its
// declared arithmetic), every case it refuses carries a reason. ctest runs it capped at AVX2,
// SSE41 and AVX512_CORE too, where oneDNN's int8 matmul has no VNNI and the integer operators are
// refused (backends/onednn/onednn_family_test.cc checks that against oneDNN asked directly).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mm/backends/onednn/onednn_backend.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"

namespace mm::conformance {
namespace {

using family::ElementVerdict;
using family::Op;

TEST(OneDnnFamilyCasesTest, EveryCaseItComputesIsWithinItsDeclarationAndTheRestIsRefused) {
  auto backend = OneDnnBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  int computed = 0, gemm_float = 0;
  for (const FamilyCase& c : BuiltinFamilyCases()) {
    const family::Plan plan = family::PlanProblem(c.problem).value();
    const family::OpDesc desc = family::DescOf(plan);
    gemm_float += desc.op == Op::kGemm && desc.y_dtype == DType::kFloat;
    const Support support = family::SupportOf(**backend, desc);
    if (!support.supported()) {
      EXPECT_FALSE(support.note.empty()) << c.name;
      continue;
    }
    StatusOr<Tensor> y = family::ComputeOp(**backend, plan);
    ASSERT_TRUE(y.ok()) << c.name << ": " << y.status();
    const family::FamilyOracle oracle =
        family::ExactFamily(plan, (*backend)->family()->DeclaredArithmetic(desc)).value();
    const family::FamilyJudgement j = family::JudgeFamily(plan, oracle, y->view());
    // Integer results are exact; float Gemm may round outside ONNX's tolerance within the bound
    // of its declared f32 accumulation (BOUND), never beyond it.
    if (desc.op == Op::kGemm) {
      EXPECT_THAT(j.verdict(), ::testing::AnyOf(ElementVerdict::kPass, ElementVerdict::kBound))
          << c.name << ": " << j.Describe();
    } else {
      EXPECT_EQ(j.verdict(), ElementVerdict::kPass) << c.name << ": " << j.Describe();
    }
    ++computed;
  }
  // float Gemm runs on every x86-64 CPU oneDNN runs on.
  EXPECT_GE(computed, gemm_float);
  EXPECT_GT(gemm_float, 0);
}

}  // namespace
}  // namespace mm::conformance
