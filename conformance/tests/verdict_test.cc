// The table of conformance/judging/verdict.h, row by row: what fails a run under each rule and what
// an XFAIL entry makes of each verdict.
#include "mm/conformance/judging/verdict.h"

#include <gtest/gtest.h>

#include <string>

namespace mm::conformance {
namespace {

struct Row {
  Verdict verdict;
  bool fails_onnx, fails_bound;
  Verdict xfail_onnx, xfail_bound;  // What an XFAIL entry makes of it under each rule.
};

// The table in verdict.h, transcribed.
const Row kTable[] = {
    {Verdict::kPass, false, false, Verdict::kXPass, Verdict::kXPass},
    {Verdict::kBound, true, false, Verdict::kXFail, Verdict::kXPass},
    {Verdict::kImprecise, false, true, Verdict::kXPass, Verdict::kXFail},
    {Verdict::kFail, true, true, Verdict::kXFail, Verdict::kXFail},
    {Verdict::kUnsupported, false, false, Verdict::kUnsupported, Verdict::kUnsupported},
    {Verdict::kError, true, true, Verdict::kXFail, Verdict::kXFail},
    {Verdict::kXFail, false, false, Verdict::kXFail, Verdict::kXFail},
    {Verdict::kXPass, true, true, Verdict::kXPass, Verdict::kXPass},
    {Verdict::kSkip, false, false, Verdict::kSkip, Verdict::kSkip},
};

TEST(VerdictTableTest, EveryVerdictHasItsRow) {
  ASSERT_EQ(std::size(kTable), kAllVerdicts.size());
  for (std::size_t i = 0; i < kAllVerdicts.size(); ++i) {
    bool found = false;
    for (const Row& row : kTable) found |= row.verdict == kAllVerdicts[i];
    EXPECT_TRUE(found) << VerdictName(kAllVerdicts[i]);
    // The list is in declaration order (reports list verdicts in it).
    EXPECT_EQ(static_cast<std::size_t>(kAllVerdicts[i]), i);
  }
}

TEST(VerdictTableTest, FailsUnderEachRuleAsTheTableSays) {
  for (const Row& row : kTable) {
    SCOPED_TRACE(std::string(VerdictName(row.verdict)));
    EXPECT_EQ(FailsUnder(row.verdict, ToleranceRule::kOnnx), row.fails_onnx);
    EXPECT_EQ(FailsUnder(row.verdict, ToleranceRule::kBound), row.fails_bound);
  }
}

TEST(VerdictTableTest, AnXFailEntryGivesXFailExactlyForAFailureUnderTheRule) {
  for (const Row& row : kTable) {
    SCOPED_TRACE(std::string(VerdictName(row.verdict)));
    EXPECT_EQ(ApplyXFail(row.verdict, ToleranceRule::kOnnx), row.xfail_onnx);
    EXPECT_EQ(ApplyXFail(row.verdict, ToleranceRule::kBound), row.xfail_bound);
  }
}

TEST(VerdictTableTest, TheTwoRulesGiveTheFourJudgedVerdicts) {
  EXPECT_EQ(JudgedVerdict(/*within_tolerance=*/true, /*within_bound=*/true), Verdict::kPass);
  EXPECT_EQ(JudgedVerdict(false, true), Verdict::kBound);
  EXPECT_EQ(JudgedVerdict(true, false), Verdict::kImprecise);
  EXPECT_EQ(JudgedVerdict(false, false), Verdict::kFail);
}

TEST(VerdictTableTest, NamesReadBackAndUnknownNamesAreRefused) {
  for (Verdict v : kAllVerdicts) {
    auto back = VerdictFromName(VerdictName(v));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, v);
  }
  auto unknown = VerdictFromName("pass");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown verdict 'pass'"), std::string::npos);
}

TEST(VerdictTableTest, WorseVerdictFollowsTheDocumentedOrder) {
  // ERROR > XPASS > FAIL > BOUND > IMPRECISE > UNSUPPORTED > XFAIL > SKIP > PASS.
  const Verdict kBestToWorst[] = {Verdict::kPass,        Verdict::kSkip,      Verdict::kXFail,
                                  Verdict::kUnsupported, Verdict::kImprecise, Verdict::kBound,
                                  Verdict::kFail,        Verdict::kXPass,     Verdict::kError};
  for (std::size_t i = 0; i < std::size(kBestToWorst); ++i) {
    for (std::size_t j = 0; j < std::size(kBestToWorst); ++j) {
      EXPECT_EQ(WorseVerdict(kBestToWorst[i], kBestToWorst[j]), kBestToWorst[std::max(i, j)])
          << VerdictName(kBestToWorst[i]) << " vs " << VerdictName(kBestToWorst[j]);
    }
  }
}

// A run whose results were all `verdict` (one each), under `facts`.
int ExitCodeOfOne(Verdict verdict, const ExitFacts& facts) {
  VerdictCounts<int> counts;
  counts[verdict] = 1;
  return ExitCodeOf(counts, facts);
}

TEST(ExitCodeTest, AVerdictFailsTheRunExactlyWhenTheTableSaysItFailsUnderTheRule) {
  for (ToleranceRule rule : {ToleranceRule::kOnnx, ToleranceRule::kBound}) {
    ExitFacts facts;
    facts.rule = rule;
    for (Verdict v : kAllVerdicts) {
      EXPECT_EQ(ExitCodeOfOne(v, facts), FailsUnder(v, rule) ? kExitFailed : kExitPassed)
          << VerdictName(v);
    }
  }
  ExitFacts onnx;
  EXPECT_EQ(ExitCodeOfOne(Verdict::kBound, onnx), kExitFailed);
  EXPECT_EQ(ExitCodeOfOne(Verdict::kImprecise, onnx), kExitPassed);
}

TEST(ExitCodeTest, StrictFailsOnUnsupportedAndOnAResourceFinding) {
  ExitFacts strict;
  strict.strict = true;
  EXPECT_EQ(ExitCodeOfOne(Verdict::kUnsupported, strict), kExitFailed);
  EXPECT_EQ(ExitCodeOfOne(Verdict::kUnsupported, ExitFacts{}), kExitPassed);
  strict.resource_findings = 1;
  EXPECT_EQ(ExitCodeOfOne(Verdict::kPass, strict), kExitFailed);
}

TEST(ExitCodeTest, OfficialThenNoCaseComeBeforeTheVerdicts) {
  ExitFacts facts;
  facts.any_case = false;
  EXPECT_EQ(ExitCodeOfOne(Verdict::kFail, facts), kExitUsage);
  facts.official_failed = true;
  EXPECT_EQ(ExitCodeOfOne(Verdict::kFail, facts), kExitOfficial);
}

TEST(ExitCodeTest, SkipExitCodeOnlyWhenNothingRanAndNothingFailed) {
  ExitFacts facts;
  facts.skip_exit_code = 77;
  EXPECT_EQ(ExitCodeOfOne(Verdict::kUnsupported, facts), 77);
  EXPECT_EQ(ExitCodeOfOne(Verdict::kSkip, facts), 77);
  EXPECT_EQ(ExitCodeOfOne(Verdict::kPass, facts), kExitPassed);
  EXPECT_EQ(ExitCodeOf(VerdictCounts<int>{}, facts), kExitPassed);  // No result at all.
  VerdictCounts<int> mixed;
  mixed[Verdict::kSkip] = 2;
  mixed[Verdict::kPass] = 1;
  EXPECT_EQ(ExitCodeOf(mixed, facts), kExitPassed);
}

}  // namespace
}  // namespace mm::conformance
