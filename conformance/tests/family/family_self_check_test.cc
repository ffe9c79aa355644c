// The self-check plants the family's faults (planted_family.h) through the same run, judgement and
// reports as a gate run, on the built-in family cases aimed at them: each gets the verdict it
// deserves, the control passes, and a plant that is not caught is named as missed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "mm/conformance/self_check/planted_family.h"
#include "mm/conformance/self_check/self_check.h"

namespace mm::self_check {
namespace {

using conformance::Verdict;
using ::testing::HasSubstr;

// In-process faults over the self-check's own cases only (no built-in MatMul case, no data root,
// no driver): the family's plants do not depend on them.
SelfCheckOptions FamilyOptions() {
  SelfCheckOptions options;
  options.builtin = false;
  options.drivers = false;
  return options;
}

const PlantedOutcome* FamilyOutcome(const SelfCheckResult& result, std::string_view name) {
  for (const PlantedOutcome& o : result.outcomes) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string SelfCheckText(const SelfCheckResult& result) {
  std::ostringstream text;
  WriteSelfCheck(result, text);
  return text.str();
}

TEST(FamilySelfCheckTest, EveryPlantGetsTheVerdictItDeservesAndTheControlPasses) {
  const SelfCheckResult result = RunSelfCheck(FamilyOptions());
  const std::string text = SelfCheckText(result);
  EXPECT_THAT(result.Missed(), ::testing::IsEmpty()) << text;
  for (const PlantedFamilyBackend& planted : PlantedFamilyBackends()) {
    const PlantedOutcome* o = FamilyOutcome(result, planted.name);
    ASSERT_NE(o, nullptr) << planted.name;
    const bool control = planted.fault == FamilyFault::kNone;
    EXPECT_EQ(o->got, planted.needed) << planted.name;
    EXPECT_EQ(o->got, control                                     ? Verdict::kPass
                      : planted.fault == FamilyFault::kWritePastY ? Verdict::kError
                                                                  : Verdict::kFail)
        << planted.name;
    EXPECT_EQ(o->exit_code, control ? conformance::kExitPassed : conformance::kExitFailed);
    EXPECT_EQ(o->unmet, "") << planted.name;
    const std::string verdict(conformance::VerdictName(planted.needed));
    const std::string exit = control ? "exit 0" : "exit 1";
    EXPECT_THAT(text, HasSubstr("caught  " + planted.name + ": " + verdict + ", " + exit +
                                " (needed " + verdict + ", " + exit))
        << text;
  }
}

// The plant of `kPlant` computing with fault `kComputes` instead (kNone: the reference's answer).
template <FamilyFault kPlant, FamilyFault kComputes>
std::unique_ptr<Backend> Swapped(const PlantedFamilyBackend& planted) {
  PlantedFamilyBackend computed = planted;
  if (planted.fault == kPlant) computed.fault = kComputes;
  return MakePlantedFamilyBackend(computed);
}

// The ignored-beta plant computing the reference's answer: a fault the gate would not catch.
TEST(FamilySelfCheckTest, APlantThatComputesCorrectlyIsNamedAsMissed) {
  SelfCheckOptions options = FamilyOptions();
  options.make_family_backend = Swapped<FamilyFault::kIgnoredBeta, FamilyFault::kNone>;
  const SelfCheckResult result = RunSelfCheck(options);
  const std::string text = SelfCheckText(result);
  EXPECT_EQ(result.Missed(), std::vector<std::string>{"family_ignored_beta"}) << text;
  EXPECT_THAT(text, HasSubstr("MISSED  family_ignored_beta: PASS, exit 0 (needed FAIL, exit 1"));
  EXPECT_THAT(text, HasSubstr("not as deserved: no FAIL in class gemm/"));
  EXPECT_THAT(text, HasSubstr("; MISSED: family_ignored_beta\n"));
}

// The stray-write plant computing the reference's answer and writing nothing outside Y: the
// guard has nothing to catch, so the self-check names it as missed (it proves the family's guard
// can fail only while the plant really writes past Y).
TEST(FamilySelfCheckTest, AStrayWritePlantThatWritesOnlyYIsNamedAsMissed) {
  SelfCheckOptions options = FamilyOptions();
  options.make_family_backend = Swapped<FamilyFault::kWritePastY, FamilyFault::kNone>;
  const SelfCheckResult result = RunSelfCheck(options);
  const std::string text = SelfCheckText(result);
  EXPECT_EQ(result.Missed(), std::vector<std::string>{"family_write_past_y"}) << text;
  EXPECT_THAT(text, HasSubstr("MISSED  family_write_past_y: PASS, exit 0 (needed ERROR, exit 1"));
  EXPECT_THAT(text, HasSubstr("no ERROR in class gemm/"));
}

// The requantization plant computing with another fault (saturating pairs): it fails, but also
// on MatMulInteger cases where a requantization fault cannot show, which is not its verdict.
TEST(FamilySelfCheckTest, APlantFailingWhereItsFaultCannotShowIsNamedAsMissed) {
  SelfCheckOptions options = FamilyOptions();
  options.make_family_backend =
      Swapped<FamilyFault::kHalfAwayFromZero, FamilyFault::kSaturatingPairs>;
  const SelfCheckResult result = RunSelfCheck(options);
  const std::string text = SelfCheckText(result);
  EXPECT_EQ(result.Missed(), std::vector<std::string>{"family_half_away_from_zero"}) << text;
  const PlantedOutcome* o = FamilyOutcome(result, "family_half_away_from_zero");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->got, Verdict::kFail);
  EXPECT_THAT(o->unmet, HasSubstr("mm_family_matmulinteger10_"));
  EXPECT_THAT(o->unmet, HasSubstr(" FAIL where the fault cannot show"));
}

}  // namespace
}  // namespace mm::self_check
