// The eigen and BLAS backends' MatMul family on the whole built-in catalogue: every case a
// backend supports is judged PASS against the exact oracle under the arithmetic it declares, and
// every case it does not is refused with a reason. A BLAS library that is not installed is
// skipped, saying so.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"

namespace mm::conformance {
namespace {

using family::Op;

const std::vector<FamilyCase>& Cases() {
  static const std::vector<FamilyCase> cases = BuiltinFamilyCases();
  return cases;
}

// Whether `backend` is expected to compute `desc`: eigen every case, a BLAS library Gemm in
// float and double only.
bool Expected(const std::string& backend, const family::OpDesc& desc) {
  if (backend == "eigen") return true;
  return desc.op == Op::kGemm && (desc.y_dtype == DType::kFloat || desc.y_dtype == DType::kDouble);
}

class EigenBlasFamilyTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The backend under test, or a skip saying why it is absent.
  std::unique_ptr<Backend> Create() {
    const BackendRegistry registry = BuiltinBackends();
    const Status selectable = registry.CheckSelectable(GetParam());
    if (!selectable.ok()) {
      skipped_ = selectable.message();
      return nullptr;
    }
    return registry.Create(GetParam()).value();
  }
  std::string skipped_;
};

TEST_P(EigenBlasFamilyTest, EverySupportedCasePassesAndEveryOtherIsRefusedWithAReason) {
  std::unique_ptr<Backend> backend = Create();
  if (backend == nullptr) GTEST_SKIP() << GetParam() << " is not available here: " << skipped_;
  std::map<std::string, int> judged;
  for (const FamilyCase& c : Cases()) {
    const family::Plan plan = family::PlanProblem(c.problem).value();
    const family::OpDesc desc = family::DescOf(plan);
    const Support support = family::SupportOf(*backend, desc);
    ASSERT_EQ(support.supported(), Expected(GetParam(), desc)) << c.name << ": " << support.note;
    if (!support.supported()) {
      EXPECT_FALSE(support.note.empty()) << c.name;
      const StatusOr<Tensor> refused = family::ComputeOp(*backend, plan);
      EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented) << c.name;
      continue;
    }
    const Arithmetic arithmetic = backend->family()->DeclaredArithmetic(desc);
    const family::FamilyOracle oracle = family::ExactFamily(plan, arithmetic).value();
    const StatusOr<Tensor> y = family::ComputeOp(*backend, plan);
    ASSERT_TRUE(y.ok()) << c.name << ": " << y.status();
    const family::FamilyJudgement judgement = family::JudgeFamily(plan, oracle, y->view());
    EXPECT_EQ(judgement.verdict(), family::ElementVerdict::kPass)
        << c.name << " (" << c.op_class << "): " << judgement.Describe();
    ++judged[std::string(family::OpName(desc.op))];
  }
  // The catalogue's share each backend computes: all three operators on eigen, Gemm's float and
  // double cases on a BLAS library.
  EXPECT_GT(judged["Gemm"], 80);
  if (GetParam() == "eigen") {
    EXPECT_GT(judged["MatMulInteger"], 150);
    EXPECT_GT(judged["QLinearMatMul"], 150);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, EigenBlasFamilyTest,
                         ::testing::Values("eigen", "openblas", "blis", "atlas", "netlib"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mm::conformance
