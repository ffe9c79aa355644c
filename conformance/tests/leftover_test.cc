// Nothing of a run outlives it, and nothing makes it wait for ever: each kind of process a driver
// or a plugin leaves behind is ended with the run (mm-conformance run as a process, every process
// it starts carrying a mark in its environment, looked for in /proc afterwards), a backend that
// never finishes describing itself is an ERROR after --timeout, and SIGTERM ends a run within 2 s
// whatever it is waiting for.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/testing/run_processes.h"
#include "mm/engine/testing/temp_dir.h"
#include "onnx_fixtures.h"

namespace mm::conformance::leftover_test {
namespace {

namespace fs = std::filesystem;
using ::mm::testing::RunMark;
using ::mm::testing::Spawned;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Sends SIGTERM to `run` and expects it to end within 2 s, by exiting with 128 + SIGTERM.
void ExpectEndsWithin2sOfSigterm(const Spawned& run) {
  const auto signalled = Clock::now();
  ASSERT_EQ(kill(run.pid, SIGTERM), 0);
  const ::mm::testing::Finished finished = ::mm::testing::FinishSpawned(run, 10);
  const double took = std::chrono::duration<double>(Clock::now() - signalled).count();
  ASSERT_TRUE(finished.wait_status.has_value()) << "still running 10 s after SIGTERM";
  EXPECT_LT(took, 2.0);
  ASSERT_TRUE(WIFEXITED(*finished.wait_status)) << *finished.wait_status;
  EXPECT_EQ(WEXITSTATUS(*finished.wait_status), 128 + SIGTERM) << finished.err;
}

std::string DriverSpec(const std::string& fault, const std::string& extra = "") {
  return std::string("fault=/usr/bin/python3 ") + MM_FAULT_DRIVER + " " + fault +
         (extra.empty() ? "" : " " + extra);
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

class LeftoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("MM_BACKEND_LIBS");
    // K = 4 answers as asked; K = 7 strikes the fault driver's per-call faults.
    testing::WriteFloatCase(root_.path(), "test_leftover_k4", {3, 4}, {4, 5});
    testing::WriteFloatCase(root_.path(), "test_leftover_k7", {3, 7}, {7, 5});
  }

  // mm-conformance over the two cases with `args`, as a process of its own, to its end (at most
  // 120 s): its exit status and what it printed.
  std::pair<int, std::string> Run(std::vector<std::string> args) {
    args.insert(args.begin(), {MM_CONFORMANCE_BIN, "--data-dir", root_.path().string(),
                               "--no-builtin", "--json", json().string()});
    const Spawned run = ::mm::testing::SpawnProgram(args);
    EXPECT_GT(run.pid, 0);
    const ::mm::testing::Finished finished = ::mm::testing::FinishSpawned(run, 120);
    const std::optional<int>& status = finished.wait_status;
    EXPECT_TRUE(status && WIFEXITED(*status)) << finished.out << finished.err;
    return {status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, finished.out + finished.err};
  }

  // mm-conformance over the two cases with `args`, started as a process of its own.
  Spawned Start(std::vector<std::string> args) {
    args.insert(args.begin(), {MM_CONFORMANCE_BIN, "--data-dir", root_.path().string(),
                               "--no-builtin", "--json", json().string()});
    return ::mm::testing::SpawnProgram(args);
  }

  // Every process the run started has ended (none carries the mark).
  void ExpectNothingLeft() {
    const std::vector<pid_t> left = mark_.Remaining();
    EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the run still running, the first "
                              << (left.empty() ? 0 : left.front());
  }

  // The report holds the two cases' results of "reference" (PASS) and of a backend that did not
  // describe itself within `seconds` (ERROR, never created).
  void ExpectReferencePassesAndTheOtherUndescribed(const std::string& text,
                                                   const std::string& seconds) {
    const nlohmann::json report = ReadJson(json());
    ASSERT_EQ(report["results"].size(), 4u) << text;
    for (const nlohmann::json& result : report["results"]) {
      if (result["backend"] == "reference") {
        EXPECT_EQ(result["verdict"], "PASS") << result.dump();
      } else {
        EXPECT_EQ(result["verdict"], "ERROR") << result.dump();
        EXPECT_THAT(
            result["message"].get<std::string>(),
            HasSubstr("backend failed to start: did not describe itself within " + seconds + " s"));
      }
    }
  }

  fs::path json() const { return out_.path() / "r.json"; }

  RunMark mark_;
  ::mm::testing::TempDir root_, out_;
};

// A driver that starts a helper (a pool, a server) in its process group, in the workers and in the
// process that checks its hello.
TEST_F(LeftoverTest, ADriversHelperEndsWithTheRun) {
  const auto [code, text] =
      Run({"--backend-cmd", DriverSpec("hello_leaves_helper"), "--backend", "fault"});
  EXPECT_EQ(code, kExitPassed) << text;
  ExpectNothingLeft();
}

// A driver that starts a daemon (a session of its own, out of every group mm kills), isolated and
// in the run's own process.
class DaemonTest : public LeftoverTest, public ::testing::WithParamInterface<bool> {};

TEST_P(DaemonTest, ADriversDaemonEndsWithTheRun) {
  std::vector<std::string> args = {"--backend-cmd", DriverSpec("hello_leaves_daemon"), "--backend",
                                   "fault"};
  if (GetParam()) args.push_back("--no-isolate");
  const auto [code, text] = Run(args);
  EXPECT_EQ(code, kExitPassed) << text;
  ExpectNothingLeft();
}

INSTANTIATE_TEST_SUITE_P(Isolation, DaemonTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "NoIsolate" : "Isolated"; });

// A driver whose daemon holds its socket, then hangs: the timeout kills the driver's group, the
// daemon is not in it.
TEST_F(LeftoverTest, AChildHoldingTheSocketAfterATimeoutEndsWithTheRun) {
  const auto [code, text] = Run(
      {"--backend-cmd", DriverSpec("hang_holding_socket"), "--backend", "fault", "--timeout", "2"});
  EXPECT_EQ(code, kExitFailed) << text;
  const nlohmann::json report = ReadJson(json());
  ASSERT_EQ(report["results"].size(), 2u) << text;
  EXPECT_EQ(report["results"][0]["verdict"], "PASS") << report["results"][0].dump();
  EXPECT_EQ(report["results"][1]["verdict"], "ERROR");
  // The worker's deadline and the driver's are the same: either kills first.
  EXPECT_THAT(report["results"][1]["message"].get<std::string>(),
              ::testing::AnyOf(HasSubstr("did not answer within 2 s (--timeout)"),
                               HasSubstr("timed out after 2 s in backend fault")));
  ExpectNothingLeft();
}

// A plugin whose execute forks a process that leaves the worker's group and session (setsid).
TEST_F(LeftoverTest, APluginsSetsidChildEndsWithTheRun) {
  const auto [code, text] =
      Run({"--backend-lib", MM_WRONG_PLUGIN_EXECUTE_SETSID, "--backend", "wrong_execute_setsid"});
  EXPECT_EQ(code, kExitFailed) << text;
  const nlohmann::json report = ReadJson(json());
  ASSERT_EQ(report["results"].size(), 2u) << text;
  for (const nlohmann::json& result : report["results"]) {
    EXPECT_THAT(result["message"].get<std::string>(),
                HasSubstr("forked a process during the call"));
  }
  ExpectNothingLeft();
}

// A plugin whose execute forks in the run's own process (--no-isolate): a sleeping process, and a
// copy of the run that returns from execute (and leaves at once).
TEST_F(LeftoverTest, APluginThatForksInTheRunsOwnProcessLeavesNothing) {
  ::mm::testing::TempDir pids;
  ASSERT_EQ(setenv("MM_TEST_FORKED_PIDS", (pids.path() / "pids").c_str(), 1), 0);
  const auto [code, text] = Run({"--backend-lib", MM_WRONG_PLUGIN_EXECUTE_FORKS, "--backend",
                                 "wrong_execute_forks", "--no-isolate"});
  unsetenv("MM_TEST_FORKED_PIDS");
  EXPECT_NE(code, kExitUsage) << text;
  // One result per case, from the run itself: the copy never reported.
  EXPECT_EQ(ReadJson(json())["results"].size(), 2u) << text;
  ExpectNothingLeft();
}

// A plugin whose constructor hangs in every process after the load probe's: the child that
// describes the backends hangs on it.
class DescribeHangTest : public LeftoverTest {
 protected:
  void SetUp() override {
    LeftoverTest::SetUp();
    ASSERT_EQ(setenv("MM_TEST_LOAD_MARKER", marker_.c_str(), 1), 0);
  }
  void TearDown() override { unsetenv("MM_TEST_LOAD_MARKER"); }
  std::vector<std::string> Args() const {
    return {"--backend-lib", MM_WRONG_PLUGIN_CTOR_HANGS_WHEN_MARKED, "--backend", "reference",
            "--backend",     "wrong_ctor_hangs_when_marked"};
  }
  const fs::path marker_ = out_.path() / "marker";
};

TEST_F(DescribeHangTest, IsAnErrorOfThatBackendAfterTheTimeout) {
  std::vector<std::string> args = Args();
  args.insert(args.end(), {"--timeout", "2"});
  const auto [code, text] = Run(args);
  EXPECT_EQ(code, kExitFailed) << text;
  ExpectReferencePassesAndTheOtherUndescribed(text, "2");
  ExpectNothingLeft();
}

// SIGTERM while the run waits for the describing child: it ends within 2 s, reports written.
TEST_F(DescribeHangTest, SigtermEndsTheWaitWithin2s) {
  std::vector<std::string> args = Args();
  args.insert(args.begin(), {MM_CONFORMANCE_BIN, "--data-dir", root_.path().string(),
                             "--no-builtin", "--json", json().string()});
  const Spawned run = ::mm::testing::SpawnProgram(args);
  ASSERT_GT(run.pid, 0);
  const fs::path blocked = marker_.string() + ".blocked";
  for (int i = 0; i < 3000 && !fs::exists(blocked); ++i) usleep(10000);
  EXPECT_TRUE(fs::exists(blocked)) << "the describer never blocked";
  usleep(100000);
  ExpectEndsWithin2sOfSigterm(run);
  EXPECT_TRUE(ReadJson(json())["interrupted"].is_object());
  ExpectNothingLeft();
}

// A fault driver that hangs (MM_TEST_HANG_MARKER) says so through a file before it does.
class DriverHangTest : public LeftoverTest {
 protected:
  void SetUp() override {
    LeftoverTest::SetUp();
    ASSERT_EQ(setenv("MM_TEST_HANG_MARKER", hanging_.c_str(), 1), 0);
    ASSERT_EQ(setenv("MM_TEST_HELLO_MARKER", (out_.path() / "hello").c_str(), 1), 0);
  }
  void TearDown() override {
    unsetenv("MM_TEST_HANG_MARKER");
    unsetenv("MM_TEST_HELLO_MARKER");
  }
  // Waits (up to 30 s) until a driver of `run` hangs; then SIGTERM must end it within 2 s.
  void SigtermOnceADriverHangs(const Spawned& run) {
    for (int i = 0; i < 3000 && !fs::exists(hanging_); ++i) usleep(10000);
    ASSERT_TRUE(fs::exists(hanging_)) << "no driver hung";
    usleep(200000);
    ExpectEndsWithin2sOfSigterm(run);
  }
  // SIGTERM once a driver of the run of `args` (--timeout 60) hangs, before any result: the run
  // ends within 2 s, its report empty and marked interrupted, and nothing of it is left.
  void ExpectAStopBeforeAnyResult(std::vector<std::string> args) {
    args.insert(args.end(), {"--timeout", "60"});
    const Spawned run = Start(args);
    ASSERT_GT(run.pid, 0);
    SigtermOnceADriverHangs(run);
    const nlohmann::json report = ReadJson(json());
    ASSERT_TRUE(report["interrupted"].is_object()) << report.dump();
    EXPECT_TRUE(report["results"].empty()) << report.dump();
    ExpectNothingLeft();
  }
  const fs::path hanging_ = out_.path() / "hanging";
};

// --no-isolate: SIGTERM while the run waits on a driver's call (the fault driver sleeps in execute
// on K = 7) ends the wait at once, not at --timeout: the run ends within 2 s, marked interrupted,
// with the first case's result and not the cut call's, and the driver's group is killed.
TEST_F(DriverHangTest, SigtermEndsTheWaitOnADriversCallInTheRunsOwnProcess) {
  const Spawned run = Start({"--backend-cmd", DriverSpec("hang"), "--backend", "fault",
                             "--no-isolate", "--timeout", "60"});
  ASSERT_GT(run.pid, 0);
  SigtermOnceADriverHangs(run);
  const nlohmann::json report = ReadJson(json());
  ASSERT_TRUE(report["interrupted"].is_object()) << report.dump();
  ASSERT_EQ(report["results"].size(), 1u) << report.dump();
  EXPECT_EQ(report["results"][0]["case"], "test_leftover_k4");
  EXPECT_EQ(report["results"][0]["verdict"], "PASS");
  EXPECT_EQ(report["interrupted"]["results"], 1);
  ExpectNothingLeft();
}

// SIGTERM while --backend-cmd's driver is asked for its hello at registration (it never answers):
// the wait ends at once, the run goes on to its reports (no result, marked interrupted).
TEST_F(DriverHangTest, SigtermEndsTheWaitForADriversHelloAtRegistration) {
  ExpectAStopBeforeAnyResult({"--backend-cmd", DriverSpec("hello_hang"), "--backend", "fault"});
}

// --no-isolate: the backends describe themselves in a child that is killed after --timeout too.
// This driver answers the hellos of the run's own process and never one of another (it closes
// its stdout and lives on, which the driver's own wait allows 2 s): its results are ERRORs after
// the 1 s of --timeout, and it is never started again in the run.
TEST_F(DriverHangTest, NoIsolateDescribingIsAnErrorOfThatBackendAfterTheTimeout) {
  const auto [code, text] =
      Run({"--backend-cmd", DriverSpec("hello_closes_stdout_elsewhere"), "--backend", "reference",
           "--backend", "fault", "--no-isolate", "--timeout", "1"});
  EXPECT_EQ(code, kExitFailed) << text;
  ExpectReferencePassesAndTheOtherUndescribed(text, "1");
  ExpectNothingLeft();
}

// --no-isolate: SIGTERM while a backend describes itself (its driver's second hello hangs) ends
// the run within 2 s, marked interrupted, with nothing left.
TEST_F(DriverHangTest, NoIsolateSigtermEndsTheDescribingWithin2s) {
  ExpectAStopBeforeAnyResult({"--backend-cmd", DriverSpec("hello_hang_after_first"), "--backend",
                              "fault", "--no-isolate"});
}

// A second signal (SIGINT after SIGTERM, both pending at once) ends the run at once, and with it
// every process the run started: its workers, their drivers, and the helper each driver left in
// its group (which no parent's death kills: it was adopted by the run, a subreaper).
TEST_F(LeftoverTest, ASecondSignalEndsTheRunWithEveryProcessItStarted) {
  for (int i = 0; i < 40; ++i) {
    testing::WriteFloatCase(root_.path(), "test_second_" + std::to_string(i), {2, 3}, {3, 2});
  }
  const Spawned run = Start({"--backend-cmd", DriverSpec("hello_leaves_helper", "slow"),
                             "--backend", "fault", "--jobs", "2"});
  ASSERT_GT(run.pid, 0);
  EXPECT_THAT(::mm::testing::ReadFrom(run.out, /*line=*/true), HasSubstr("test_"));
  const auto signalled = Clock::now();
  ASSERT_EQ(kill(run.pid, SIGTERM), 0);
  ASSERT_EQ(kill(run.pid, SIGINT), 0);
  const ::mm::testing::Finished finished = ::mm::testing::FinishSpawned(run, 10);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - signalled).count(), 2.0);
  ASSERT_TRUE(finished.wait_status.has_value()) << "still running 10 s after the signals";
  EXPECT_TRUE(WIFSIGNALED(*finished.wait_status)) << *finished.wait_status << finished.err;
  usleep(200000);  // What init adopts it reaps in its own time.
  ExpectNothingLeft();
}

// The case: a run whose driver daemonises, ended by SIGTERM in its middle, ends within 2 s
// with the reports of the results it finished, and nothing of it runs afterwards.
TEST(SigtermTest, EndsARunWithADaemonisingDriverWithin2sLeavingNothing) {
  unsetenv("MM_BACKEND_LIBS");
  RunMark mark;
  ::mm::testing::TempDir root, out;
  for (int i = 0; i < 100; ++i) {
    testing::WriteFloatCase(root.path(), "test_daemon_" + std::to_string(i), {2, 3}, {3, 2});
  }
  const fs::path json = out.path() / "r.json";
  const Spawned run = ::mm::testing::SpawnProgram(
      {MM_CONFORMANCE_BIN, "--data-dir", root.path().string(), "--no-builtin", "--backend-cmd",
       DriverSpec("hello_leaves_daemon", "slow"), "--backend", "reference", "--backend", "fault",
       "--jobs", "2", "--json", json.string()});
  ASSERT_GT(run.pid, 0);
  EXPECT_THAT(::mm::testing::ReadFrom(run.out, /*line=*/true), HasSubstr("test_daemon_"));
  ExpectEndsWithin2sOfSigterm(run);
  const nlohmann::json report = ReadJson(json);
  ASSERT_TRUE(report["interrupted"].is_object()) << report.dump();
  EXPECT_EQ(report["interrupted"]["results"], report["results"].size());
  EXPECT_LT(report["results"].size(), 200u);
  const std::vector<pid_t> left = mark.Remaining();
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the run still running";
}

// mm-fuzz too: the daemons of the driver it probes at the start and of those it runs.
TEST(FuzzLeftoverTest, ADriversDaemonEndsWithTheFuzzRun) {
  RunMark mark;
  const Spawned run = ::mm::testing::SpawnProgram(
      {MM_FUZZ_BIN, "--backend-cmd", DriverSpec("hello_leaves_daemon"), "--backend", "fault",
       "--dtype", "float", "--cases", "4", "--seed", "1", "--quiet"});
  ASSERT_GT(run.pid, 0);
  const ::mm::testing::Finished finished = ::mm::testing::FinishSpawned(run, 120);
  ASSERT_TRUE(finished.wait_status.has_value()) << "mm-fuzz still running after 120 s";
  EXPECT_TRUE(WIFEXITED(*finished.wait_status)) << finished.out << finished.err;
  const std::vector<pid_t> left = mark.Remaining();
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the run still running";
}

}  // namespace
}  // namespace mm::conformance::leftover_test
