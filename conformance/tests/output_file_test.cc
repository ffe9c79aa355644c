// Report files written safely: whole or not at all, through a new file of an unpredictable name
// (never a link planted beside the report), and two report options never naming one file; and
// auto honouring the deviations of mm-conformance's --expectations.
#include "mm/conformance/report/output_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

#include "mm/backends/backend_list.h"
#include "mm/conformance/judging/auto_expectations.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/testing/files.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using mm::testing::ReadFile;
using mm::testing::WriteText;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

using testing::CliRun;
using testing::ConformanceCli;

// The names in `dir`, links included.
std::set<std::string> Names(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

// The quick run whose reports the tests look at: one built-in case on the reference backend.
std::vector<std::string> QuickRun() {
  return {"--no-isolate", "--backend", "reference", "--case", "test_cc_matmul_2d", "--quiet"};
}

std::vector<std::string> With(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(OutputFileTest, WritesTheWholeContentThroughAFreshFileOfAnUnpredictableName) {
  TempDir dir;
  const fs::path path = dir.path() / "report.json";
  std::set<std::string> temporaries;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(WriteFileAtomically(path, [&](std::ostream& out) {
                  // While the content is written: PATH is not there yet, a new file beside it is.
                  EXPECT_FALSE(fs::exists(path) && i == 0);
                  for (const std::string& name : Names(dir.path())) {
                    if (name == "report.json") continue;
                    temporaries.insert(name);
                    EXPECT_FALSE(fs::is_symlink(dir.path() / name)) << name;
                  }
                  out << "content " << i;
                }).ok());
    EXPECT_EQ(ReadFile(path), "content " + std::to_string(i));
    EXPECT_EQ(Names(dir.path()), std::set<std::string>{"report.json"}) << "no temporary left";
  }
  // One temporary per write, each of a new random name, never the old predictable one.
  EXPECT_EQ(temporaries.size(), 2u);
  EXPECT_EQ(temporaries.count("report.json.partial"), 0u);
  for (const std::string& name : temporaries) EXPECT_THAT(name, HasSubstr(".report.json."));
  // The mode a file created by the tools always had: 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(OutputFileTest, AnErrorNamesTheFileAndLeavesItUnchanged) {
  TempDir dir;
  const Status missing_dir = WriteFileAtomically(dir.path() / "absent" / "r.json", "x");
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_THAT(missing_dir.message(), HasSubstr("absent/r.json"));
  // A directory in the report's place: the rename fails, the directory stays, no temporary left.
  fs::create_directory(dir.path() / "r.json");
  const Status over_dir = WriteFileAtomically(dir.path() / "r.json", "x");
  EXPECT_FALSE(over_dir.ok());
  EXPECT_THAT(over_dir.message(), HasSubstr("r.json"));
  EXPECT_TRUE(fs::is_directory(dir.path() / "r.json"));
  EXPECT_EQ(Names(dir.path()), std::set<std::string>{"r.json"});
}

// The old writer opened REPORT.partial with O_TRUNC, following a link planted there: the report
// overwrote the link's target. Links at the old name and at other guessable names stay untouched.
TEST(OutputFileTest, LinksPlantedAtGuessableTemporaryNamesAreNeverFollowed) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim.txt";
  WriteText(victim, "precious");
  const fs::path json = dir.path() / "r.json", junit = dir.path() / "r.xml";
  for (const fs::path& report : {json, junit}) {
    for (const char* suffix : {".partial", ".tmp", "~", ".XXXXXX"}) {
      fs::create_symlink(victim, report.string() + suffix);
      fs::create_symlink(victim, (dir.path() / ("." + report.filename().string() + suffix)));
    }
  }
  const CliRun r =
      ConformanceCli(With(QuickRun(), {"--json", json.string(), "--junit", junit.string(),
                                       "--markdown", (dir.path() / "r.md").string()}));
  ASSERT_EQ(r.code, kExitPassed) << r.err;
  EXPECT_EQ(ReadFile(victim), "precious");
  EXPECT_THAT(ReadFile(json), HasSubstr("\"test_cc_matmul_2d\""));
  EXPECT_THAT(ReadFile(junit), HasSubstr("<testsuite"));
  EXPECT_FALSE(fs::is_symlink(json));
}

TEST(OutputFileTest, SameFileResolvesSpellingsLinksAndHardLinks) {
  TempDir dir;
  fs::create_directory(dir.path() / "sub");
  const fs::path r = dir.path() / "r.json";
  EXPECT_TRUE(SameFile(r, dir.path() / "sub" / ".." / "." / "r.json"));  // Neither exists.
  EXPECT_FALSE(SameFile(r, dir.path() / "r.xml"));
  WriteText(r, "x");
  fs::create_hard_link(r, dir.path() / "hard.json");
  fs::create_directory_symlink(dir.path(), dir.path() / "sub" / "up");
  EXPECT_TRUE(SameFile(r, dir.path() / "hard.json"));
  EXPECT_TRUE(SameFile(r, dir.path() / "sub" / "up" / "r.json"));
  EXPECT_TRUE(SameFile(dir.path() / "sub" / "up" / "new.xml", dir.path() / "new.xml"));
  EXPECT_FALSE(SameFile(r, dir.path() / "new.xml"));
}

// Two report options naming one file: before, the report written last silently replaced the other.
TEST(OutputFileTest, TwoReportOptionsNamingOneFileAreAUsageError) {
  TempDir dir;
  fs::create_directory(dir.path() / "sub");
  const std::string r = (dir.path() / "r.out").string();
  const std::string also_r = (dir.path() / "sub" / ".." / "r.out").string();
  for (const std::vector<std::string>& reports :
       std::vector<std::vector<std::string>>{{"--json", r, "--junit", r},
                                             {"--json", r, "--markdown", also_r},
                                             {"--junit", also_r, "--markdown", r}}) {
    const CliRun run = ConformanceCli(With(QuickRun(), reports));
    EXPECT_EQ(run.code, kExitUsage) << ::testing::PrintToString(reports);
    EXPECT_THAT(run.err, HasSubstr(reports[0] + " and " + reports[2] + " name the same file"));
    EXPECT_FALSE(fs::exists(r)) << "nothing was run or written";
  }
  // The same for merge, whose input exists.
  WriteText(r, "{}");
  const CliRun merge = ConformanceCli({"merge", r, "--json", also_r, "--junit", r});
  EXPECT_EQ(merge.code, kExitUsage);
  EXPECT_THAT(merge.err, HasSubstr("--json and --junit name the same file"));
  EXPECT_EQ(ReadFile(r), "{}");
  // Distinct files are fine; --resume may be the --json it resumes (docs/conformance.md).
  EXPECT_EQ(
      ConformanceCli(With(QuickRun(), {"--json", r, "--junit", (dir.path() / "r.xml").string()}))
          .code,
      kExitPassed);
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
