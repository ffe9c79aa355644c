// Resource figures read back from a report are verified, not taken on trust: a resumed report
// (--resume) or a merge shard whose figures were forged to hide a leak (zeroed or lowered growth,
// impossible values, call 0 beside a comparison, a look-out said not to have happened) is run
// again or refused, so that --strict gives the exit code of the uninterrupted run. The leak is a
// real one: a plugin that leaves a file descriptor open per call (backends/plugin/tests/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/testing/files.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::ConformanceCli;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr const char* kLeaky = "wrong_fd_per_call";

class ResumedFiguresTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("MM_BACKEND_LIBS"); }

  // The 9 built-in cases on the leaking plugin and the reference, in one worker, under --strict;
  // `extra` options after.
  static CliRun Run(const fs::path& json, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--backend-lib", MM_WRONG_PLUGIN_FD_PER_CALL,
                                     "--backend",     kLeaky,
                                     "--backend",     "reference",
                                     "--filter",      "^test_cc_",
                                     "--jobs",        "1",
                                     "--strict",      "--quiet",
                                     "--json",        json.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return ConformanceCli(args);
  }
  static Json Read(const fs::path& path) { return Json::parse(mm::testing::ReadFile(path)); }
  static void Write(const fs::path& path, const Json& report) {
    std::ofstream(path, std::ios::trunc) << report.dump(2);
  }
  // `report` with `forge` applied to the resources of every result of the leaking plugin.
  static Json Forged(Json report, const std::function<void(Json&)>& forge) {
    for (Json& r : report["results"]) {
      if (r["backend"] == kLeaky && r.contains("resources")) forge(r["resources"]);
    }
    return report;
  }

  ::mm::testing::TempDir out_;
};

// One way to forge the figures, and the field the refusal names.
struct Forgery {
  const char* name;
  std::function<void(Json&)> forge;
  const char* field;
};

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

std::vector<Forgery> Forgeries() {
  return {
      // Zeroed growth beside the honest count of open descriptors: the leak is in fds alone.
      {"zeroed_growth", [](Json& f) { f["fd_growth"] = 0; }, "fd_growth"},
      // Growth lowered below zero: the sum of the calls after warm-up is negative.
      {"negative_growth", [](Json& f) { f["fd_growth"] = -1; }, "fd_growth"},
      {"negative_count", [](Json& f) { f["fds"] = -3; }, "fds"},
      // Two of these overflow an int64 sum (and no process had that much before the call).
      {"overflowing_growth", [](Json& f) { f["rss_growth_bytes"] = kInt64Max; },
       "rss_growth_bytes"},
      {"call_0_with_a_comparison", [](Json& f) { f["call"] = 0; }, "call 0"},
      // The 3rd call is always followed by a look-out: -1 says it was not.
      {"look_out_said_not_done",
       [](Json& f) {
         if (f["call"] == 3) f["spinning_threads"] = -1;
       },
       "spinning_threads"},
  };
}

TEST_F(ResumedFiguresTest, AnHonestResumeKeepsEveryResultAndFailsUnderStrictLikeTheWholeRun) {
  const fs::path full = out_.path() / "full.json", partial = out_.path() / "partial.json";
  const CliRun whole = Run(full);
  ASSERT_EQ(whole.code, kExitFailed) << whole.out << whole.err;
  ASSERT_THAT(whole.out, HasSubstr("resources: wrong_fd_per_call: file descriptors left open"));
  Json report = Read(full);
  ASSERT_EQ(report["results"].size(), 18u);
  // As if interrupted after 12 results: the rest runs in a fresh worker.
  report["results"].erase(report["results"].begin() + 12, report["results"].end());
  Write(partial, report);
  const CliRun resumed = Run(out_.path() / "resumed.json", {"--resume", partial.string()});
  EXPECT_EQ(resumed.code, whole.code) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.err, Not(HasSubstr("not consistent")));
  const Json written = Read(out_.path() / "resumed.json");
  EXPECT_EQ(written["resumed"]["taken"], 12);
  EXPECT_EQ(written["resumed"]["rerun_inconsistent"], 0);
}

TEST_F(ResumedFiguresTest, ForgedFiguresInAResumedReportAreRunAgain) {
  const fs::path full = out_.path() / "full.json";
  const CliRun whole = Run(full);
  ASSERT_EQ(whole.code, kExitFailed) << whole.out << whole.err;
  for (const Forgery& forgery : Forgeries()) {
    SCOPED_TRACE(forgery.name);
    const fs::path forged = out_.path() / (std::string(forgery.name) + ".json");
    Write(forged, Forged(Read(full), forgery.forge));
    const fs::path again = out_.path() / (std::string(forgery.name) + "_resumed.json");
    const CliRun resumed = Run(again, {"--resume", forged.string()});
    EXPECT_EQ(resumed.code, whole.code) << resumed.out << resumed.err;
    EXPECT_THAT(resumed.err,
                HasSubstr("not consistent with their own comparison, resource figures"));
    EXPECT_THAT(resumed.err, HasSubstr(forgery.field));
    EXPECT_GT(Read(again)["resumed"]["rerun_inconsistent"].get<int>(), 0);
    EXPECT_THAT(resumed.out, HasSubstr("resources: wrong_fd_per_call: file descriptors left open"));
  }
}

TEST_F(ResumedFiguresTest, ForgedFiguresInAMergeShardRefuseTheMergeNamingTheField) {
  const fs::path a = out_.path() / "a.json", b = out_.path() / "b.json";
  const CliRun first = Run(a, {"--shard", "1/2"}), second = Run(b, {"--shard", "2/2"});
  ASSERT_NE(first.code, kExitUsage) << first.err;
  ASSERT_NE(second.code, kExitUsage) << second.err;
  // The shard with more of the plugin's calls: the one whose leak the forgery hides.
  const fs::path shard = Read(a)["results"].size() >= Read(b)["results"].size() ? a : b;
  const Json honest = Read(shard);
  const fs::path merged = out_.path() / "merged.json";
  const CliRun fair =
      ConformanceCli({"merge", "--quiet", "--json", merged.string(), a.string(), b.string()});
  EXPECT_NE(fair.code, kExitUsage) << fair.err;
  for (const Forgery& forgery : Forgeries()) {
    SCOPED_TRACE(forgery.name);
    Write(shard, Forged(honest, forgery.forge));
    fs::remove(merged);
    const CliRun m =
        ConformanceCli({"merge", "--quiet", "--json", merged.string(), a.string(), b.string()});
    EXPECT_EQ(m.code, kExitUsage) << m.out;
    EXPECT_THAT(m.err, HasSubstr("'" + shard.string() + "' (shard "));
    EXPECT_THAT(m.err, HasSubstr(forgery.field));
    EXPECT_FALSE(fs::exists(merged));
  }
}

}  // namespace
}  // namespace mm::conformance
