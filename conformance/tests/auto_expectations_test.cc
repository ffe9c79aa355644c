// auto honouring the deviations of mm-conformance's --expectations: each entry a deviation for the
// dtypes its case pattern names, and auto, run by mm-conformance, never choosing a backend declared
// deviating.
#include "mm/conformance/judging/auto_expectations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/testing/files.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::mm::testing::TempDir;
using ::mm::testing::WriteText;
using ::testing::HasSubstr;
using ::testing::Not;

using testing::CliRun;
using testing::ConformanceCli;

std::vector<std::string> With(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(AutoExpectationsTest, EveryEntryBecomesADeviationForTheDtypesItsCasePatternNames) {
  Expectations expectations;
  expectations.source = "e.json";
  expectations.entries = {
      {"test_*_float16_*", "eigen", Expectation::Kind::kXFail, "rounds twice", "l"},
      {"fuzz/bfloat16/*", "one*", Expectation::Kind::kSkip, "hangs", "l"},
      {"test_matmul_*", "blis", Expectation::Kind::kXFail, "all", "l"}};
  const std::vector<AutoDeviation> deviations = AutoDeviationsOf(expectations);
  ASSERT_EQ(deviations.size(), 3u);
  EXPECT_EQ(deviations[0].backend_pattern, "eigen");
  EXPECT_EQ(deviations[0].dtypes, std::vector<DType>{DType::kFloat16});
  EXPECT_EQ(deviations[0].declared, "declared XFAIL in e.json (rounds twice)");
  EXPECT_EQ(deviations[1].backend_pattern, "one*");
  EXPECT_EQ(deviations[1].dtypes, std::vector<DType>{DType::kBFloat16});
  EXPECT_EQ(deviations[1].declared, "declared SKIP in e.json (hangs)");
  EXPECT_TRUE(deviations[2].dtypes.empty()) << "a pattern naming no dtype concerns every dtype";
}

// auto, run by mm-conformance, never runs a backend --expectations declares deviating (before, only
// MM_EXPECTATIONS reached it): on the tiny built-in cases eigen is its first choice otherwise.
TEST(AutoExpectationsTest, AutoNeverRunsABackendTheExpectationsOptionDeclaresDeviating) {
  TempDir dir;
  const fs::path expectations = dir.path() / "e.json";
  WriteText(expectations,
            R"({"expectations": [{"case": "test_*", "backend": "eigen", "expect": "XFAIL",
                "reason": "declared for the test", "link": "docs/conformance.md"}]})");
  setenv("MM_AUTO_TABLE", "", 1);  // The built-in defaults, whatever this machine calibrated.
  const std::vector<std::string> run = {"--backend", "auto", "--filter", "test_cc_matmul_2d"};
  const CliRun plain = ConformanceCli(run);
  for (const std::vector<std::string>& isolation :
       std::vector<std::vector<std::string>>{{}, {"--no-isolate"}}) {
    const CliRun declared =
        ConformanceCli(With(With(run, isolation), {"--expectations", expectations.string()}));
    EXPECT_THAT(declared.out, HasSubstr("[ran: auto -> "));
    EXPECT_THAT(declared.out, Not(HasSubstr("auto -> eigen"))) << declared.out;
    EXPECT_THAT(declared.out, HasSubstr("eigen for every dtype: declared XFAIL in"));
  }
  unsetenv("MM_AUTO_TABLE");
  EXPECT_THAT(plain.out, HasSubstr("[ran: auto -> eigen")) << "the test would prove nothing";
}

}  // namespace
}  // namespace mm::conformance
