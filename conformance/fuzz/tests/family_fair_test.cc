// Which family problems a fair corpus keeps (fair.h, UnfairFamilyReason): every reason it gives is
// one a correct implementation really meets, and each is reached by the generator's problems.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "mm/conformance/fuzz/fair.h"
#include "mm/conformance/fuzz/family_problem.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"

namespace mm::fuzz {
namespace {

using family::Op;
using ::testing::HasSubstr;

// UnfairFamilyReason of problem `index` of seed 1 ("" when fair).
std::string ReasonOf(Op op, std::int64_t index) {
  const FamilyProblem p = GenerateFamilyProblem(1, index, op, {});
  const family::Plan plan = family::PlanProblem(p.View()).value();
  const family::FamilyOracle oracle =
      family::ExactFamily(plan, FairArithmetic(plan.y_dtype)).value();
  return UnfairFamilyReason(plan, oracle, {});
}

TEST(FamilyFairTest, GemmProblemsAreReplacedForEachReasonAndMostAreKept) {
  std::map<std::string, int> reasons;
  int fair = 0;
  for (std::int64_t i = 0; i < 600; ++i) {
    const std::string reason = ReasonOf(Op::kGemm, i);
    if (reason.empty()) ++fair;
    for (const char* kind : {"in another order may give", "a NaN or infinite input reaches it",
                             "an intermediate may overflow", "the standard is ambiguous"}) {
      if (reason.find(kind) != std::string::npos) ++reasons[kind];
    }
  }
  EXPECT_EQ(reasons.size(), 4u);
  EXPECT_GT(fair, 400);
}

TEST(FamilyFairTest, IntegerProblemsOutsideInt32AreReplacedTheOthersKept) {
  int outside = 0, fair = 0;
  for (std::int64_t i = 0; i < 400; ++i) {
    const FamilyProblem p = GenerateFamilyProblem(1, i, Op::kMatMulInteger, {});
    const family::Plan plan = family::PlanProblem(p.View()).value();
    const family::FamilyOracle oracle = family::ExactFamily(plan, {}).value();
    const std::string reason = UnfairFamilyReason(plan, oracle, {});
    EXPECT_EQ(reason.empty(), !oracle.outside_standard_range()) << p.ToString();
    if (!reason.empty()) {
      EXPECT_THAT(reason, HasSubstr("outside the standard's range"));
      ++outside;
    } else {
      ++fair;
    }
  }
  EXPECT_GT(outside, 0);
  EXPECT_GT(fair, 300);
}

// A QLinearMatMul element that a float32 evaluation of the multiplier may round to a neighbour
// has two right answers: unfair under exact comparison, whatever the generator happened to draw.
TEST(FamilyFairTest, AQLinearMatMulElementWithTwoRightAnswersIsUnfair) {
  const FamilyProblem p = GenerateFamilyProblem(1, 0, Op::kQLinearMatMul, {});
  const family::Plan plan = family::PlanProblem(p.View()).value();
  family::FamilyOracle oracle = family::ExactFamily(plan, {}).value();
  ASSERT_FALSE(oracle.y_low.empty());
  EXPECT_EQ(UnfairFamilyReason(plan, oracle, {}), "") << p.ToString();
  oracle.y_high.back() = static_cast<std::int16_t>(oracle.y_low.back() + 1);
  EXPECT_THAT(UnfairFamilyReason(plan, oracle, {}), HasSubstr("(the one-unit rule)"));
}

}  // namespace
}  // namespace mm::fuzz
