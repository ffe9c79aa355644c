// mm-fuzz obeys SIGINT/SIGTERM inside a problem, not only between problems: the shrinker stops
// before its next step, a stop during the last problem still marks the report interrupted, and
// a backend's call that never returns does not hold the run: mm-fuzz writes the report of the
// finished results, marked interrupted, and exits 128 + the signal within 2 s.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/fuzz/shrink.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::fuzz {
namespace {

namespace fs = std::filesystem;
using mm::testing::FakeBackend;
using mm::testing::TempDir;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

Tensor Filled(Dims dims) {
  Tensor t = Tensor::Create(DType::kFloat, std::move(dims)).value();
  float* data = t.Data<float>();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) data[i] = static_cast<float>(i % 7) - 3;
  return t;
}

// A failing problem (the last element of Y one off) shrinks when nothing asks it to stop, and
// not a step further once a stop is requested.
TEST(FuzzStopTest, AStopRequestStopsShrinkingBeforeItsNextStep) {
  FakeBackend off = FakeBackend("off").Supporting({DType::kFloat}).OffByOneAt(-1);
  const Tensor a = Filled({16, 16});
  const Tensor b = Filled({16, 16});
  for (const bool stop : {false, true}) {
    SCOPED_TRACE(stop ? "stop requested" : "no stop");
    std::atomic<bool> cancel{stop};
    ShrinkOptions options;
    options.seconds = 60;
    options.arithmetic = Arithmetic::OwnType(DType::kFloat);
    options.keeps_failing = [](Verdict v) { return v == Verdict::kFail; };
    options.cancel = &cancel;
    const ShrinkResult shrunk = Shrink(off, a, b, options);
    EXPECT_EQ(shrunk.steps > 0, !stop);
    EXPECT_EQ(shrunk.timed_out, stop);
  }
}

// A signal that comes while the last problem runs (here, inside its backend's call) is seen when
// the run ends: the report says interrupted and the exit status is 128 + the signal.
TEST(FuzzStopTest, ASignalDuringTheLastProblemMarksTheRunInterrupted) {
  BackendRegistry registry = BuiltinBackends();
  const FakeBackend raiser = FakeBackend("raiser").Computing(
      [](const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) {
        std::raise(SIGTERM);
        return mm::testing::ExactKernel(plan, a, b, y);
      });
  ASSERT_TRUE(registry.Register("raiser", "raises SIGTERM", raiser.Factory()).ok());
  std::ostringstream out, err;
  const ParsedFuzzCli parsed =
      ParseFuzzCli({"--backend", "raiser", "--cases", "1", "--no-shrink"}, {"raiser"}, out, err);
  ASSERT_FALSE(parsed.exit_code) << err.str();
  auto run = BuildFuzzRun(parsed.options, registry);
  ASSERT_TRUE(run.ok()) << run.status();
  const FuzzReport report = RunFuzzCampaign(**run, nullptr);
  EXPECT_EQ(report.interrupted_by, SIGTERM);
  EXPECT_EQ(report.stats.problems, 1);
  EXPECT_FALSE(report.abandoned);
  EXPECT_EQ(FuzzExitCode(**run, report), 128 + SIGTERM);
}

// Starts `argv` with `env` added, stdout and stderr into files of `dir`; returns its pid.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const TempDir& dir) {
  const std::string out = (dir.path() / "stdout").string();
  const std::string err = (dir.path() / "stderr").string();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0) _exit(126);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// The wait status of `pid` once it ends within `seconds`; nullopt (and the process killed) when
// it does not.
std::optional<int> EndsWithin(pid_t pid, double seconds) {
  const Clock::time_point start = Clock::now();
  int status = 0;
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return std::nullopt;
}

// The backend's fourth Prepare never returns: SIGTERM then ends mm-fuzz within its grace (2 s; 10
// s asserted, a correctness test and not a timing one), exit 143, with the report of the problems
// finished (and the one cut short counted without a result), marked interrupted.
TEST(FuzzStopTest, SigtermDuringABackendCallThatNeverReturnsEndsTheRunWithItsReport) {
  TempDir dir;
  const std::string json = (dir.path() / "report.json").string();
  const fs::path marker = dir.path() / "blocked";
  const pid_t pid = Spawn({MM_FUZZ_HANGING, "--backend", "hangs_after", "--cases", "50", "--seed",
                           "1", "--no-shrink", "--json", json},
                          {"MM_TEST_CALLS=3", "MM_TEST_MARKER=" + marker.string()}, dir);
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 3000 && !fs::exists(marker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(marker)) << "the backend never reached its blocking call";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const std::optional<int> status = EndsWithin(pid, 10);
  ASSERT_TRUE(status.has_value()) << "mm-fuzz still ran 10 s after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGTERM);
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(report.is_discarded()) << "no JSON report written";
  EXPECT_EQ(report["interrupted"]["signal_number"], SIGTERM);
  const int problems = report["stats"]["problems"].get<int>();
  EXPECT_EQ(report["interrupted"]["problems"], problems);
  EXPECT_GE(report["stats"]["results"].get<int>(), 3);
  EXPECT_EQ(report["stats"]["results"], problems - 1) << "the problem cut short has no result";
  EXPECT_EQ(report["exit_code"], 128 + SIGTERM);
  std::ifstream err(dir.path() / "stderr");
  const std::string text(std::istreambuf_iterator<char>(err), {});
  EXPECT_THAT(text,
              HasSubstr("mm-fuzz: interrupted by signal 15 after " + std::to_string(problems) +
                        " of 50 problems (the last one cut short"));
}

}  // namespace
}  // namespace mm::fuzz
