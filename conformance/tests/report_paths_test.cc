// Report paths, checked before a run and written without harm: a device, a FIFO or a descriptor
// is written in place (never replaced by a regular file), a link planted at a guessable name beside
// a report is never followed, two report options naming one file or a report path naming one of
// the run's inputs (by any spelling: relative, "..", symbolic or hard link) is a usage error before
// the run naming both, and so is a report whose directory cannot take a file.
#include "mm/conformance/report/report_paths.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/testing/files.h"
#include "mm/engine/testing/temp_dir.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::mm::testing::ReadFile;
using ::mm::testing::TempDir;
using ::mm::testing::WriteText;
using ::testing::AllOf;
using testing::CliRun;
using testing::ConformanceCli;
using ::testing::HasSubstr;
using ::testing::Not;

// A short run: the built-in cases of the ONNX MatMul page on the reference.
CliRun ShortRun(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--backend", "reference",    "--filter",
                                   "^test_cc_", "--no-isolate", "--data-dir"};
  static const TempDir empty;
  args.push_back(empty.path().string());
  args.insert(args.end(), extra.begin(), extra.end());
  return ConformanceCli(args);
}

// Everything a reader of the FIFO at `path` gets until the writer closes it (at most 60 s).
std::string ReadFifo(const fs::path& path) {
  // Non-blocking, so that a run that never opens the FIFO cannot hang the test.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) got.append(buffer, static_cast<std::size_t>(n));
    // Linux reports no hang-up before a writer came: an end after data is the writer's close.
    if (n == 0 && !got.empty()) break;
  }
  ::close(fd);
  return got;
}

TEST(ReportPathsTest, ADeviceNodeIsWrittenInPlaceAndStaysADevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a device node (mknod) needs root";
  TempDir dir;
  const fs::path null = dir.path() / "null";
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  const CliRun r = ShortRun({"--json", null.string()});
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  // No temporary file left beside it either.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(ReportPathsTest, AFifoIsWrittenInPlaceAndItsReaderGetsTheReport) {
  TempDir dir;
  const fs::path fifo = dir.path() / "report.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = ReadFifo(fifo); });
  const CliRun r = ShortRun({"--json", fifo.string()});
  reader.join();
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  const nlohmann::json report = nlohmann::json::parse(got, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << got;
  EXPECT_EQ(report["summary"]["PASS"], 9);
}

TEST(ReportPathsTest, ADescriptorIsWrittenInPlaceAfterWhatItHolds) {
  TempDir dir;
  const fs::path file = dir.path() / "stdout.txt";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "before\n", 7), 7);
  struct stat before {};
  ASSERT_EQ(::fstat(fd, &before), 0);
  const CliRun r = ShortRun({"--json", "/dev/fd/" + std::to_string(fd)});
  ::close(fd);
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  struct stat after {};
  ASSERT_EQ(::stat(file.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the descriptor's file was replaced";
  const std::string text = ReadFile(file);
  ASSERT_EQ(text.rfind("before\n", 0), 0u) << text.substr(0, 80);
  EXPECT_EQ(nlohmann::json::parse(text.substr(7))["summary"]["PASS"], 9);
}

// A run's input files, and the report options that would overwrite them.
class ReportOverAnInputTest : public ::testing::Test {
 protected:
  ReportOverAnInputTest() {
    case_dir_ = testing::WriteFloatCase(data_.path(), "test_one", {2, 3}, {3, 2});
    std::ofstream(expectations_) << R"({"expectations": []})";
    fs::create_directory(out_.path() / "sub");
  }
  CliRun Run(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--data-dir",          data_.path().string(), "--no-builtin",
                                     "--backend",           "reference",           "--expectations",
                                     expectations_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return ConformanceCli(args);
  }
  // Runs with `option` naming `spelling` of `input`: a usage error naming both before any result,
  // the input unchanged.
  void ExpectRefused(const std::string& option, const fs::path& spelling, const fs::path& input,
                     const std::string& what) {
    SCOPED_TRACE(option + " " + spelling.string());
    const std::string bytes = ReadFile(input);
    const CliRun r = Run({option, spelling.string()});
    EXPECT_EQ(r.code, kExitUsage) << r.out;
    EXPECT_THAT(r.err, AllOf(HasSubstr(option + " '" + spelling.string() + "' is "),
                             HasSubstr(what), HasSubstr("which this run reads")));
    EXPECT_THAT(r.out, Not(HasSubstr("PASS")));  // Before the run.
    EXPECT_EQ(ReadFile(input), bytes);
  }

  TempDir data_, out_;
  fs::path case_dir_;
  fs::path expectations_ = out_.path() / "known.json";
};

TEST_F(ReportOverAnInputTest, TheExpectationsFileByAnySpellingIsAUsageError) {
  const std::string what = "the --expectations file '" + expectations_.string() + "'";
  ExpectRefused("--json", expectations_, expectations_, what);
  ExpectRefused("--junit", out_.path() / "sub" / ".." / "known.json", expectations_, what);
  fs::create_symlink(expectations_, out_.path() / "link.json");
  ExpectRefused("--markdown", out_.path() / "link.json", expectations_, what);
  fs::create_hard_link(expectations_, out_.path() / "hard.json");
  ExpectRefused("--json", out_.path() / "hard.json", expectations_, what);
  // Relative to the working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(out_.path() / "sub");
  ExpectRefused("--json", "../known.json", expectations_, what);
  fs::current_path(cwd);
}

TEST_F(ReportOverAnInputTest, ACaseFileIsAUsageError) {
  const std::string what = "a file of case 'test_one'";
  ExpectRefused("--json", case_dir_ / "model.onnx", case_dir_ / "model.onnx", what);
  const fs::path data_set = case_dir_ / "test_data_set_0";
  ExpectRefused("--junit", data_set / "output_0.pb", data_set / "output_0.pb", what);
  fs::create_hard_link(data_set / "input_0.pb", out_.path() / "a.md");
  ExpectRefused("--markdown", out_.path() / "a.md", data_set / "input_0.pb", what);
}

TEST_F(ReportOverAnInputTest, AResumedReportMayBeTheNewJsonButNoOtherReport) {
  const fs::path report = out_.path() / "r.json";
  ASSERT_EQ(Run({"--json", report.string()}).code, kExitPassed);
  const std::string bytes = ReadFile(report);
  const CliRun junit = Run({"--resume", report.string(), "--junit", report.string()});
  EXPECT_EQ(junit.code, kExitUsage);
  EXPECT_THAT(junit.err, HasSubstr("--junit '" + report.string() + "' is the --resume report"));
  EXPECT_EQ(ReadFile(report), bytes);
  // The report continued where it stands.
  const CliRun json = Run({"--resume", report.string(), "--json", report.string()});
  EXPECT_EQ(json.code, kExitPassed) << json.err;
}

TEST(ReportPathsTest, AReportThatCannotBeWrittenIsAUsageErrorBeforeTheRun) {
  TempDir out;
  const fs::path missing = out.path() / "no" / "such" / "r.json";
  const CliRun r = ShortRun({"--junit", missing.string()});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--junit '" + missing.string() +
                               "' cannot be written: cannot "
                               "create a file in '" +
                               missing.parent_path().string() + "'"));
  EXPECT_THAT(r.out, Not(HasSubstr("PASS")));
  const CliRun directory = ShortRun({"--markdown", out.path().string()});
  EXPECT_EQ(directory.code, kExitUsage);
  EXPECT_THAT(directory.err, HasSubstr("is a directory"));
  // A directory that takes no file, whoever runs: root writes anywhere but in /proc.
  const fs::path locked = ::geteuid() == 0 ? fs::path("/proc/self") : out.path() / "locked";
  if (::geteuid() != 0) {
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  }
  const CliRun unwritable = ShortRun({"--json", (locked / "r.json").string()});
  EXPECT_EQ(unwritable.code, kExitUsage);
  EXPECT_THAT(unwritable.err, HasSubstr("cannot create a file in '" + locked.string() + "'"));
  EXPECT_THAT(unwritable.out, Not(HasSubstr("PASS")));
}

TEST(ReportPathsTest, MergeRefusesAReportOverOneOfItsShards) {
  TempDir out;
  const fs::path a = out.path() / "a.json", b = out.path() / "b.json";
  ASSERT_NE(ShortRun({"--shard", "1/2", "--json", a.string()}).code, kExitUsage);
  ASSERT_NE(ShortRun({"--shard", "2/2", "--json", b.string()}).code, kExitUsage);
  const std::string bytes = ReadFile(b);
  const CliRun m = ConformanceCli({"merge", a.string(), b.string(), "--markdown", b.string()});
  EXPECT_EQ(m.code, kExitUsage);
  EXPECT_THAT(m.err, HasSubstr("--markdown '" + b.string() + "' is the shard report '" +
                               b.string() + "', which this run reads"));
  EXPECT_EQ(ReadFile(b), bytes);
}

TEST(ReportPathsTest, MmFuzzRefusesAReportOverItsInputsOrWhereItCannotWrite) {
  TempDir out;
  const fs::path known = out.path() / "known.json";
  std::ofstream(known) << R"({"expectations": []})";
  const std::string bytes = ReadFile(known);
  const CliRun over = ::mm::testing::FuzzCli(
      {"--cases", "1", "--expectations", known.string(), "--json", known.string()});
  EXPECT_EQ(over.code, kExitUsage);
  EXPECT_THAT(over.err, HasSubstr("--json '" + known.string() + "' is the --expectations file"));
  EXPECT_EQ(ReadFile(known), bytes);
  const fs::path missing = out.path() / "no" / "r.json";
  const CliRun unwritable = ::mm::testing::FuzzCli({"--cases", "1", "--json", missing.string()});
  EXPECT_EQ(unwritable.code, kExitUsage);
  EXPECT_THAT(unwritable.err, HasSubstr("cannot create a file in"));
  const CliRun merge = ::mm::testing::FuzzCli({"merge", "--json", known.string(), known.string()});
  EXPECT_EQ(merge.code, kExitUsage);
  EXPECT_THAT(merge.err, HasSubstr("is the shard report"));
}

// The old writer opened REPORT.partial with O_TRUNC, following a link planted there: the report
// overwrote the link's target. Links at the old name and at other guessable names stay untouched.
TEST(ReportPathsTest, LinksPlantedAtGuessableTemporaryNamesAreNeverFollowed) {
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
  const CliRun r = ShortRun({"--json", json.string(), "--junit", junit.string(), "--markdown",
                             (dir.path() / "r.md").string()});
  ASSERT_EQ(r.code, kExitPassed) << r.err;
  EXPECT_EQ(ReadFile(victim), "precious");
  EXPECT_THAT(ReadFile(json), HasSubstr("\"test_cc_matmul_2d\""));
  EXPECT_THAT(ReadFile(junit), HasSubstr("<testsuite"));
  EXPECT_FALSE(fs::is_symlink(json));
}

TEST(ReportPathsTest, SameFileResolvesSpellingsLinksAndHardLinks) {
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
TEST(ReportPathsTest, TwoReportOptionsNamingOneFileAreAUsageError) {
  TempDir dir;
  fs::create_directory(dir.path() / "sub");
  const std::string r = (dir.path() / "r.out").string();
  const std::string also_r = (dir.path() / "sub" / ".." / "r.out").string();
  for (const std::vector<std::string>& reports :
       std::vector<std::vector<std::string>>{{"--json", r, "--junit", r},
                                             {"--json", r, "--markdown", also_r},
                                             {"--junit", also_r, "--markdown", r}}) {
    const CliRun run = ShortRun(reports);
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
  EXPECT_EQ(ShortRun({"--json", r, "--junit", (dir.path() / "r.xml").string()}).code, kExitPassed);
}

}  // namespace
}  // namespace mm::conformance
