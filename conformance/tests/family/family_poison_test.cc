// A family backend that writes nothing into Y cannot pass: Y reaches it poisoned, never
// zero-filled, and an integer Y whose answer is the first poison pattern is computed again over the
// second (as MatMul's Y is, conformance/running/poison.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mm/backends/reference/reference_backend.h"
#include "mm/conformance/running/runner.h"
#include "mm/family/plan.h"
#include "mm/family/testing/fake_family_backend.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::conformance {
namespace {

using family::Op;
using family::testing::FakeFamilyBackend;
using family::testing::ProblemBuilder;

// The problems whose exact answer an unwritten Y would hold: 0 (a zero-filled Y), -1 in int32 and
// 255 in uint8 (the first poison pattern, 0xFF).
struct UnwrittenCase {
  const char* name;
  ProblemBuilder builder;
};

std::vector<UnwrittenCase> UnwrittenCases() {
  std::vector<UnwrittenCase> cases;
  // 0 x 3 + 0 x 4 = 0: what a zero-filled Y holds.
  cases.push_back({"gemm_zero", ProblemBuilder(Op::kGemm, 13)
                                    .Input("A", DType::kFloat, {1, 2}, {0, 0})
                                    .Input("B", DType::kFloat, {2, 1}, {3, 4})});
  // -1 x 1 = -1: every byte 0xFF.
  cases.push_back({"matmulinteger_minus_one", ProblemBuilder(Op::kMatMulInteger, 10)
                                                  .Input("A", DType::kInt8, {1, 1}, {-1})
                                                  .Input("B", DType::kInt8, {1, 1}, {1})});
  // 255 x 255 saturates to 255: every byte 0xFF.
  cases.push_back({"qlinearmatmul_255", ProblemBuilder(Op::kQLinearMatMul, 10)
                                            .Input("a", DType::kUInt8, {1, 1}, {255})
                                            .Filled("a_scale", DType::kFloat, {}, 1)
                                            .Filled("a_zero_point", DType::kUInt8, {}, 0)
                                            .Input("b", DType::kUInt8, {1, 1}, {255})
                                            .Filled("b_scale", DType::kFloat, {}, 1)
                                            .Filled("b_zero_point", DType::kUInt8, {}, 0)
                                            .Filled("y_scale", DType::kFloat, {}, 1)
                                            .Filled("y_zero_point", DType::kUInt8, {}, 0)});
  return cases;
}

TEST(FamilyPoisonTest, ABackendThatWritesNothingFails) {
  for (const UnwrittenCase& c : UnwrittenCases()) {
    const family::Plan plan = family::PlanProblem(c.builder.problem()).value();
    FakeFamilyBackend writes_nothing(
        "writes_nothing", plan.op,
        [](const family::Plan&, MutableTensorView) { return OkStatus(); });
    Result r;
    r.backend = "writes_nothing";
    ExecuteAndJudgeFamily(writes_nothing, plan, Tolerance{}, r);
    EXPECT_EQ(r.verdict, Verdict::kFail) << c.name << ": " << r.message;
    // Y still held the first pattern: asked again over the second, whose answer is judged.
    EXPECT_EQ(writes_nothing.computes(), 2) << c.name;
  }
}

// The same problems pass on a backend that writes its answer, also where that answer is the first
// poison pattern (it is asked again, and answers the same).
TEST(FamilyPoisonTest, ABackendThatWritesEveryElementPasses) {
  for (const UnwrittenCase& c : UnwrittenCases()) {
    const family::Plan plan = family::PlanProblem(c.builder.problem()).value();
    ReferenceBackend reference;
    Result r;
    r.backend = "reference";
    ExecuteAndJudgeFamily(reference, plan, Tolerance{}, r);
    EXPECT_EQ(r.verdict, Verdict::kPass) << c.name << ": " << r.message;
  }
}

}  // namespace
}  // namespace mm::conformance
