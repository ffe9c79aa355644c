// A planted fault that must ERROR is caught only by an ERROR of its planted cause: a crash must be
// a crash, a stray write a stray write. An ERROR of another cause (a backend that failed to start,
// a timeout) proves nothing about the gate, so the self-check must report the fault as missed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/self_check/self_check.h"

namespace mm::self_check {
namespace {

using conformance::Result;
using conformance::Verdict;

// One ERROR result of `planted` saying `message`.
std::vector<Result> OneErrorSaying(const PlantedBackend& planted, const std::string& message) {
  Result r;
  r.case_name = "self_check_tiny";
  r.data_set = "test_data_set_0";
  r.backend = planted.name;
  r.verdict = Verdict::kError;
  r.message = message;
  return {r};
}

SelfCheckOptions WithoutDrivers() {
  SelfCheckOptions options;
  options.drivers = false;
  return options;
}

TEST(SelfCheckCauseTest, EveryFaultThatMustErrorNamesItsCause) {
  for (const PlantedBackend& planted : AllPlantedBackends()) {
    if (planted.needed != Verdict::kError) continue;
    EXPECT_FALSE(planted.needed_text.empty()) << planted.name;
  }
  EXPECT_FALSE(kWrongShapeText.empty());
}

TEST(SelfCheckCauseTest, AnErrorOfAnotherCauseIsAMissAndThePlantedCauseIsCaught) {
  struct Row {
    Fault fault;
    std::string planted_cause;
  };
  for (const Row& row : {Row{Fault::kCrash, "crashed: SIGSEGV (signal 11)"},
                         Row{Fault::kWritePastY, "wrote 4 bytes past the end of Y"}}) {
    const PlantedBackend& planted = PlantedBackendOf(row.fault);
    for (const std::string other :
         {"backend failed to start: no device", "timed out after 30 s (worker killed)",
          "the exact product could not be computed: out of memory"}) {
      const PlantedOutcome o =
          JudgePlanted(planted, OneErrorSaying(planted, other), WithoutDrivers());
      EXPECT_EQ(o.got, Verdict::kError);
      EXPECT_EQ(o.exit_code, o.needed_exit_code);
      EXPECT_FALSE(o.caught()) << planted.name << " caught by '" << other << "'";
    }
    const PlantedOutcome right =
        JudgePlanted(planted, OneErrorSaying(planted, row.planted_cause), WithoutDrivers());
    EXPECT_TRUE(right.caught()) << planted.name << ": " << right.evidence;
  }
}

TEST(SelfCheckCauseTest, TheSelfChecksErrorFaultsAreCaughtForTheirPlantedCause) {
  SelfCheckOptions options = WithoutDrivers();
  options.builtin = true;
  const SelfCheckResult result = RunSelfCheck(options);
  int errors = 0;
  for (const PlantedOutcome& o : result.outcomes) {
    if (o.needed != Verdict::kError) continue;
    ++errors;
    EXPECT_FALSE(o.needed_text.empty()) << o.name;
    EXPECT_TRUE(o.caught()) << o.name << ": " << o.evidence;
    EXPECT_NE(o.evidence.find(o.needed_text), std::string::npos) << o.name << ": " << o.evidence;
  }
  // crash, write_past_y, the wrong output shape and family_write_past_y.
  EXPECT_EQ(errors, 4);
}

TEST(SelfCheckCauseTest, TheSelfCheckReportsAFaultCaughtByAnotherCauseAsMissed) {
  // The outcome's own rule, as WriteSelfCheck prints it: an ERROR without the planted cause is a
  // MISSED line naming the fault and the text it needed.
  const PlantedBackend& crash = PlantedBackendOf(Fault::kCrash);
  SelfCheckResult result;
  result.outcomes.push_back(JudgePlanted(
      crash, OneErrorSaying(crash, "backend failed to start: no device"), WithoutDrivers()));
  EXPECT_EQ(result.Missed(), std::vector<std::string>{"crash"});
  std::ostringstream text;
  WriteSelfCheck(result, text);
  EXPECT_THAT(text.str(), ::testing::HasSubstr("MISSED  crash: ERROR, exit 1 (needed ERROR, exit 1 "
                                               "saying 'crashed: '"));
}

}  // namespace
}  // namespace mm::self_check
