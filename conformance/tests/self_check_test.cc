// The self-check catches every planted fault with the verdict it deserves, and, when the
// harness's judgement or exit-code logic is broken on purpose, reports the faults it then misses
// by name: the proof that the self-check itself can fail.
#include "mm/conformance/self_check/self_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "mm/conformance/judging/compare.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/tools/cli.h"

namespace mm::self_check {
namespace {

using conformance::JudgementFault;
using conformance::Verdict;
using ::testing::HasSubstr;
using ::testing::Not;

// The built-in cases and the in-memory ones: no data root, so the result does not depend on which
// node tests this machine has. In-process faults only: the runtime-protocol ones have tests of
// their own (DriverFaultsTest).
SelfCheckOptions BuiltinOnly() {
  SelfCheckOptions options;
  options.builtin = true;
  options.drivers = false;
  return options;
}

// The faults planted through the Python driver, with the verdict each must get.
const std::vector<std::pair<std::string, Verdict>>& DriverFaults() {
  static const std::vector<std::pair<std::string, Verdict>> faults = {
      {"driver_correct", Verdict::kPass},      {"driver_off_by_one", Verdict::kFail},
      {"driver_unwritten", Verdict::kFail},    {"driver_half_sum", Verdict::kFail},
      {"driver_wrong_shape", Verdict::kError}, {"driver_crash", Verdict::kError},
      {"driver_hang", Verdict::kError},        {"driver_gap", Verdict::kError}};
  return faults;
}

// Breaks the judgement for one test.
class ScopedFault {
 public:
  explicit ScopedFault(JudgementFault fault)
      : previous_(conformance::SetJudgementFaultForTesting(fault)) {}
  ~ScopedFault() { conformance::SetJudgementFaultForTesting(previous_); }

 private:
  JudgementFault previous_;
};

const PlantedOutcome* Find(const SelfCheckResult& result, std::string_view name) {
  for (const PlantedOutcome& o : result.outcomes) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

// The in-process self-check under the real judgement, run once for the tests that only read it.
const SelfCheckResult& BuiltinResult() {
  static const SelfCheckResult result = RunSelfCheck(BuiltinOnly());
  return result;
}

TEST(SelfCheckTest, CatchesEveryPlantedFaultWithTheVerdictItDeserves) {
  const SelfCheckResult& result = BuiltinResult();
  std::ostringstream text;
  WriteSelfCheck(result, text);
  EXPECT_THAT(result.Missed(), ::testing::IsEmpty()) << text.str();
  // Every planted backend, the control, the wrong shape and every planted family backend (its
  // control included) each have their outcome.
  ASSERT_EQ(result.outcomes.size(), PlantedBackends().size() + 1 + PlantedFamilyBackends().size());
  for (const PlantedBackend& planted : PlantedBackends()) {
    const PlantedOutcome* o = Find(result, planted.name);
    ASSERT_NE(o, nullptr) << planted.name;
    EXPECT_EQ(o->got, planted.needed) << planted.name << ": " << o->evidence;
  }
  const PlantedOutcome* shape = Find(result, kWrongShapeFault);
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->got, Verdict::kError);
  EXPECT_THAT(shape->evidence, HasSubstr("output_0.pb has shape [3,2]"));
  EXPECT_THAT(text.str(), HasSubstr("caught  transposed_b: FAIL, exit 1 (needed FAIL, exit 1"));
  EXPECT_THAT(text.str(), HasSubstr("the gate can fail"));
}

TEST(SelfCheckTest, TheControlPassesAndTheFaultsFailTheRun) {
  const SelfCheckResult& result = BuiltinResult();
  const PlantedOutcome* control = Find(result, "correct");
  ASSERT_NE(control, nullptr);
  EXPECT_EQ(control->got, Verdict::kPass) << control->evidence;
  EXPECT_EQ(control->exit_code, conformance::kExitPassed);
  // IMPRECISE fails only under the bound rule, and the self-check judges it there.
  const PlantedOutcome* truncated = Find(result, "truncated_float");
  ASSERT_NE(truncated, nullptr);
  EXPECT_EQ(truncated->rule, conformance::ToleranceRule::kBound);
  EXPECT_EQ(truncated->exit_code, conformance::kExitFailed);
  // Within ONNX's tolerance and outside the bound around the exact product: the ONNX page's own
  // examples show it too, since their expected Y is not always the correctly rounded one.
  EXPECT_THAT(truncated->evidence, HasSubstr("elements outside the bound"));
}

// The gate can fail on the runtime-protocol path too: each fault planted in a Python driver built
// on the SDK (conformance/self_check/planted_driver.py) gets its verdict, and an ERROR for the
// right reason (the hang by the timeout, the refused shape as a conformance gap).
TEST(DriverFaultsTest, CatchesEveryFaultPlantedThroughThePythonDriver) {
  SelfCheckOptions options = BuiltinOnly();
  options.drivers = true;
  options.jobs = 2;
  const SelfCheckResult result = RunSelfCheck(options);
  std::ostringstream text;
  WriteSelfCheck(result, text);
  if (!result.drivers_not_run.empty()) GTEST_SKIP() << result.drivers_not_run;
  EXPECT_THAT(result.Missed(), ::testing::IsEmpty()) << text.str();
  ASSERT_EQ(result.outcomes.size(),
            PlantedBackends().size() + 1 + PlantedFamilyBackends().size() + DriverFaults().size());
  for (const auto& [name, verdict] : DriverFaults()) {
    const PlantedOutcome* o = Find(result, name);
    ASSERT_NE(o, nullptr) << name;
    EXPECT_EQ(o->got, verdict) << name << ": " << o->evidence;
  }
  EXPECT_THAT(Find(result, "driver_gap")->evidence, HasSubstr("conformance gap: "));
  EXPECT_THAT(Find(result, "driver_hang")->evidence, HasSubstr("did not answer within"));
  EXPECT_THAT(Find(result, "driver_crash")->evidence, HasSubstr("SIGSEGV"));
  EXPECT_THAT(Find(result, "driver_wrong_shape")->evidence, HasSubstr(" is awaited"));
  EXPECT_THAT(text.str(), HasSubstr("caught  driver_gap: ERROR, exit 1 (needed ERROR, exit 1 "
                                    "saying 'conformance gap: '"));
}

// A judgement that looks at element 0 only misses the element the driver left unwritten (its
// last), on the runtime-protocol path as in process.
TEST(DriverFaultsTest, ABrokenJudgementMissesTheUnwrittenElementOfTheDriver) {
  SelfCheckOptions options = BuiltinOnly();
  options.drivers = true;
  options.jobs = 2;
  SelfCheckResult result;
  {
    ScopedFault fault(JudgementFault::kFirstElementOnly);
    result = RunSelfCheck(options);
  }
  if (!result.drivers_not_run.empty()) GTEST_SKIP() << result.drivers_not_run;
  EXPECT_THAT(result.Missed(), ::testing::Contains("driver_unwritten"));
  EXPECT_THAT(result.Missed(), Not(::testing::Contains("driver_off_by_one")));
}

// Without python3 the runtime-protocol faults are not run, and the summary says so.
TEST(DriverFaultsTest, WithoutPythonTheSummarySaysThePathIsNotProven) {
  SelfCheckOptions options = BuiltinOnly();
  options.drivers = true;
  setenv("MM_PYTHON", "/nonexistent/python3", 1);
  const SelfCheckResult result = RunSelfCheck(options);
  unsetenv("MM_PYTHON");
  EXPECT_THAT(result.drivers_not_run, HasSubstr("/nonexistent/python3 not found"));
  std::ostringstream text;
  WriteSelfCheck(result, text);
  EXPECT_THAT(text.str(), HasSubstr("NOT RUN the runtime-protocol faults"));
  EXPECT_THAT(text.str(), HasSubstr("(the runtime-protocol path not proven)"));
}

// Each broken judgement, and the planted faults it must make the self-check miss.
struct BrokenJudgement {
  JudgementFault fault;
  std::string name;
  std::vector<std::string> missed;
};
void PrintTo(const BrokenJudgement& b, std::ostream* os) { *os << b.name; }

class BrokenJudgementTest : public ::testing::TestWithParam<BrokenJudgement> {};

TEST_P(BrokenJudgementTest, TheSelfCheckNamesWhatItMisses) {
  const BrokenJudgement& broken = GetParam();
  SelfCheckResult result;
  {
    ScopedFault fault(broken.fault);
    result = RunSelfCheck(BuiltinOnly());
  }
  // Exactly these: every other fault is still caught by some other element or check.
  EXPECT_THAT(result.Missed(), ::testing::UnorderedElementsAreArray(broken.missed));
  std::ostringstream text;
  WriteSelfCheck(result, text);
  for (const std::string& name : broken.missed) {
    EXPECT_THAT(text.str(), HasSubstr("MISSED  " + name + ": ")) << text.str();
  }
  EXPECT_THAT(text.str(), HasSubstr("; MISSED:"));
  // The real judgement is back for the tests after this one.
  EXPECT_EQ(conformance::SetJudgementFaultForTesting(JudgementFault::kNone), JudgementFault::kNone)
      << "the fault must be gone once the test put the real judgement back";
}

INSTANTIATE_TEST_SUITE_P(Faults, BrokenJudgementTest,
                         ::testing::Values(
                             // The unwritten elements are in the last row and the wrong batch
                             // offset starts at batch entry 1: never at element 0.
                             BrokenJudgement{
                                 JudgementFault::kFirstElementOnly,
                                 "first_element_only",
                                 {"unwritten_zero", "unwritten_nonzero", "wrong_batch_offset"}},
                             BrokenJudgement{JudgementFault::kNanMatchesAnything,
                                             "nan_matches_anything",
                                             {"nan_lost", "nan_for_small", "nan_near_max"}},
                             BrokenJudgement{JudgementFault::kShapeByElementCount,
                                             "shape_by_element_count",
                                             {std::string(kWrongShapeFault)}}),
                         [](const auto& info) { return info.param.name; });

// An exit code that ignores ERROR, as a harness might compute it.
int ExitCodeIgnoringError(const conformance::Report& report, bool any_case,
                          std::optional<int> skip_exit_code) {
  conformance::Report without = report;
  std::erase_if(without.results,
                [](const conformance::Result& r) { return r.verdict == Verdict::kError; });
  return conformance::ExitCodeOf(without, any_case, skip_exit_code);
}

TEST(SelfCheckTest, AnExitCodeIgnoringErrorMissesTheCrashAndTheStrayWrite) {
  SelfCheckOptions options = BuiltinOnly();
  options.exit_code = ExitCodeIgnoringError;
  const SelfCheckResult result = RunSelfCheck(options);
  EXPECT_THAT(result.Missed(),
              ::testing::UnorderedElementsAre("crash", "write_past_y", "wrong_output_shape",
                                              "family_write_past_y"));
}

// A harness that fails everything "catches" every fault; the control shows it up.
int AlwaysFailed(const conformance::Report&, bool, std::optional<int>) {
  return conformance::kExitFailed;
}

TEST(SelfCheckTest, AHarnessThatFailsEverythingIsCaughtByTheControl) {
  SelfCheckOptions options = BuiltinOnly();
  options.exit_code = AlwaysFailed;
  const SelfCheckResult result = RunSelfCheck(options);
  EXPECT_EQ(result.Missed(), (std::vector<std::string>{"correct", "family_correct"}));
}

// mm-conformance's command line with the self-check given, as its main gives it.
int CliWithSelfCheck(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const BackendRegistry none;
  conformance::RunEnvironment env;
  env.builtin = &none;
  env.self_check = RunSelfCheckCommand;
  return conformance::RunConformanceCli(args, env, out, err);
}

// The runtime-protocol faults are DriverFaultsTest's (the same RunSelfCheck with drivers): here
// python3 is made missing, and the summary's NOT RUN line shows the command asked for them.
TEST(SelfCheckCliTest, SelfCheckRunsAloneAndExitsZeroWhenEveryFaultIsCaught) {
  std::ostringstream out, err;
  setenv("MM_PYTHON", "/nonexistent/python3", 1);
  const int code = CliWithSelfCheck({"--self-check", "--no-builtin", "-j", "1"}, out, err);
  unsetenv("MM_PYTHON");
  EXPECT_EQ(code, conformance::kExitPassed) << out.str() << err.str();
  for (const PlantedBackend& planted : PlantedBackends()) {
    EXPECT_THAT(out.str(), HasSubstr("caught  " + planted.name + ": ")) << out.str();
  }
  EXPECT_THAT(out.str(), HasSubstr("NOT RUN the runtime-protocol faults (driver_*): "
                                   "/nonexistent/python3 not found"));
  // It runs no backend of the build and writes no conformance summary.
  EXPECT_THAT(out.str(), Not(HasSubstr("summary")));
}

// In-process faults only (python3 made missing): the runtime-protocol ones would add their
// drivers' seconds and nothing to what --quiet prints of caught faults.
TEST(SelfCheckCliTest, QuietPrintsOnlyTheSummaryWhenEveryFaultIsCaught) {
  std::ostringstream out, err;
  setenv("MM_PYTHON", "/nonexistent/python3", 1);
  const int code = CliWithSelfCheck({"--self-check", "--quiet"}, out, err);
  unsetenv("MM_PYTHON");
  EXPECT_EQ(code, conformance::kExitPassed) << out.str() << err.str();
  EXPECT_THAT(out.str(), Not(HasSubstr("caught")));
  EXPECT_THAT(out.str(), HasSubstr("planted faults (the control included) judged as needed"));
}

// The missed fault is an in-process one: the runtime-protocol faults (python3 made missing) would
// add their drivers' seconds and nothing to what this test shows.
TEST(SelfCheckCliTest, SelfCheckExitsOneNamingTheMissedFault) {
  std::ostringstream out, err;
  int code;
  {
    ScopedFault fault(JudgementFault::kNanMatchesAnything);
    setenv("MM_PYTHON", "/nonexistent/python3", 1);
    code = CliWithSelfCheck({"--self-check", "--quiet"}, out, err);
    unsetenv("MM_PYTHON");
  }
  EXPECT_EQ(code, conformance::kExitFailed);
  EXPECT_THAT(out.str(), HasSubstr("MISSED  nan_lost: PASS, exit 0 (needed FAIL, exit 1"));
}

TEST(SelfCheckCliTest, WithoutAnInstalledSelfCheckItIsAUsageError) {
  std::ostringstream out, err;
  EXPECT_EQ(conformance::RunConformanceCli({"--self-check"}, BackendRegistry(), nullptr, out, err),
            conformance::kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("--self-check is not available"));
}

}  // namespace
}  // namespace mm::self_check
