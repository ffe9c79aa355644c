// The planted family backends against the built-in family catalogue, computed under the harness's
// write guard and judged exactly (family::ExactFamily with the backend's declared arithmetic,
// family::JudgeFamily): each plant FAILs the cases that aim at its fault and PASSes every case
// where its fault cannot show; the stray write is an ERROR saying so on every case; the control
// PASSes everything.
#include "mm/conformance/self_check/planted_family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/running/write_guard.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"

namespace mm::self_check {
namespace {

using conformance::FamilyCase;
using family::ElementVerdict;

const std::vector<FamilyCase>& Cases() {
  static const std::vector<FamilyCase> cases = conformance::BuiltinFamilyCases();
  return cases;
}

// The verdict of `backend` on `c`.
ElementVerdict Judge(Backend& backend, const FamilyCase& c, std::string* describe = nullptr) {
  const family::Plan plan = family::PlanProblem(c.problem).value();
  const Arithmetic arithmetic = backend.family()->DeclaredArithmetic(family::DescOf(plan));
  const family::FamilyOracle oracle = family::ExactFamily(plan, arithmetic).value();
  const StatusOr<Tensor> y = conformance::ComputeWithWriteGuard(backend, plan);
  EXPECT_TRUE(y.ok()) << backend.name() << " on " << c.name << ": " << y.status();
  if (!y.ok()) return ElementVerdict::kFail;
  const family::FamilyJudgement judgement = family::JudgeFamily(plan, oracle, y->view());
  if (describe != nullptr) *describe = judgement.Describe();
  return judgement.verdict();
}

// Classes whose every case shows the fault whatever the types: the pairs saturate in each, every
// element of a tie case is a tie, and rows' zero points 0, 255, 128 against a B of +127 move
// whole rows.
bool Strict(const std::string& op_class) {
  return op_class.find("saturating-pairs") != std::string::npos ||
         op_class.find("ties/") != std::string::npos ||
         op_class.find("per-row-0,255,128") != std::string::npos;
}

// Each plant: PASS wherever FaultCanShow says its fault cannot show; of each class
// ClassesAimedAt names, at least one case FAILs (every one of a Strict class).
class PlantedFamilyTest : public ::testing::TestWithParam<PlantedFamilyBackend> {};

TEST_P(PlantedFamilyTest, FailsWhereItsFaultShowsAndPassesWhereItCannot) {
  const PlantedFamilyBackend& planted = GetParam();
  const std::unique_ptr<Backend> backend = MakePlantedFamilyBackend(planted);
  ASSERT_EQ(backend->name(), planted.name);
  std::map<std::string, int> target_cases, target_fails;
  int can_show = 0, failed = 0;
  for (const FamilyCase& c : Cases()) {
    std::string describe;
    const ElementVerdict verdict = Judge(*backend, c, &describe);
    const family::Plan plan = family::PlanProblem(c.problem).value();
    if (!FaultCanShow(planted.fault, plan)) {
      EXPECT_EQ(verdict, ElementVerdict::kPass) << c.name << ": " << describe;
      continue;
    }
    ++can_show;
    failed += verdict == ElementVerdict::kFail;
    if (planted.fault == FamilyFault::kNone) continue;
    for (const std::string& target : ClassesAimedAt(planted.fault)) {
      if (c.op_class != target) continue;
      ++target_cases[target];
      target_fails[target] += verdict == ElementVerdict::kFail;
      if (Strict(target)) {
        EXPECT_EQ(verdict, ElementVerdict::kFail) << c.name << " does not catch " << planted.why;
      }
    }
  }
  if (planted.fault == FamilyFault::kNone) {
    EXPECT_EQ(can_show, 0);
    return;
  }
  for (const std::string& target : ClassesAimedAt(planted.fault)) {
    EXPECT_GE(target_cases[target], 1) << "no case of class " << target;
    EXPECT_GE(target_fails[target], 1)
        << "no case of class " << target << " catches " << planted.why;
  }
  EXPECT_GE(failed, 1);
}

// The stray write: the guard's ERROR on every case, with the right Y before it (the write is all
// that is wrong).
TEST(PlantedFamilyWriteTest, WritesPastYOnEveryCaseAndNothingElse) {
  const PlantedFamilyBackend* planted = nullptr;
  for (const PlantedFamilyBackend& p : PlantedFamilyBackends()) {
    if (p.fault == FamilyFault::kWritePastY) planted = &p;
  }
  ASSERT_NE(planted, nullptr);
  EXPECT_EQ(planted->needed, conformance::Verdict::kError);
  const std::unique_ptr<Backend> backend = MakePlantedFamilyBackend(*planted);
  for (const FamilyCase& c : Cases()) {
    const family::Plan plan = family::PlanProblem(c.problem).value();
    ASSERT_TRUE(FaultCanShow(planted->fault, plan)) << c.name;
    const StatusOr<Tensor> y = conformance::ComputeWithWriteGuard(*backend, plan);
    EXPECT_EQ(y.status().code(), StatusCode::kDataLoss) << c.name;
    EXPECT_THAT(std::string(y.status().message()), ::testing::HasSubstr(planted->needed_text))
        << c.name;
  }
}

// The plants judged by their Y: all but the stray write (PlantedFamilyWriteTest).
std::vector<PlantedFamilyBackend> PlantsOfY() {
  std::vector<PlantedFamilyBackend> plants;
  for (const PlantedFamilyBackend& planted : PlantedFamilyBackends()) {
    if (planted.needed != conformance::Verdict::kError) plants.push_back(planted);
  }
  return plants;
}

INSTANTIATE_TEST_SUITE_P(Plants, PlantedFamilyTest, ::testing::ValuesIn(PlantsOfY()),
                         [](const auto& info) { return info.param.name; });

// The control is the reference: it PASSes every case.
TEST(PlantedFamilyControlTest, TheControlPassesEveryCase) {
  const std::unique_ptr<Backend> control = MakePlantedFamilyBackend(PlantedFamilyBackends()[0]);
  for (const FamilyCase& c : Cases()) {
    std::string describe;
    EXPECT_EQ(Judge(*control, c, &describe), ElementVerdict::kPass) << c.name << ": " << describe;
  }
}

// A fault that cannot show is exactly that: the vpmaddubsw plant on uint8 x uint8 and K = 1.
TEST(PlantedFamilyControlTest, FaultCanShowFollowsThePlan) {
  int pairs = 0, none = 0;
  for (const FamilyCase& c : Cases()) {
    const family::Plan plan = family::PlanProblem(c.problem).value();
    const bool shows = FaultCanShow(FamilyFault::kSaturatingPairs, plan);
    EXPECT_FALSE(shows && (plan.a_dtype != DType::kUInt8 || plan.b_dtype != DType::kInt8 ||
                           plan.product.k < 2))
        << c.name;
    pairs += shows;
    none += FaultCanShow(FamilyFault::kNone, plan);
  }
  EXPECT_GT(pairs, 10);
  EXPECT_EQ(none, 0);
}

}  // namespace
}  // namespace mm::self_check
