// A backend that changes its process's state during a call (its current directory, a resource
// limit, the umask, a signal's disposition): its result is an ERROR naming the change, its worker
// is replaced (isolated) or the state put back (--no-isolate), and every other result, later cases
// and the reference included, is as it would be without it.
#include "mm/conformance/running/process_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mm/conformance/testing/cli_runs.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::ConformanceCli;
using ::testing::HasSubstr;

// A wrong plugin (backends/plugin/tests/wrong_plugin.c, STATE_*) whose call on a problem of K = 7
// changes one kind of state, and what the ERROR must say of it.
struct StateFault {
  const char* path;
  const char* backend;
  std::vector<std::string> says;
  bool isolate;
};

void PrintTo(const StateFault& fault, std::ostream* os) { *os << fault.backend; }

class ProcessStateTest : public ::testing::TestWithParam<StateFault> {};

// Three cases, the first (K = 7) the one whose call changes the state, given by a data root
// relative to the directory the run starts in.
TEST_P(ProcessStateTest, TheChangingCallIsAnErrorNamingTheChangeAndNothingElseIsAffected) {
  const StateFault& fault = GetParam();
  testing::TempDir dir;
  testing::WriteFloatCase(dir.path() / "cases", "test_1_changes", {1, 7}, {7, 1});
  testing::WriteFloatCase(dir.path() / "cases", "test_2_after", {2, 5}, {5, 3});
  testing::WriteFloatCase(dir.path() / "cases", "test_3_after", {3, 4}, {4, 2});
  const fs::path json = dir.path() / "r.json";
  std::vector<std::string> args = {
      "--backend-lib", fault.path,   "--backend", "reference", "--backend", fault.backend,
      "--no-builtin",  "--data-dir", "cases",     "--jobs",    "1",         "--json",
      json.string()};
  if (!fault.isolate) args.push_back("--no-isolate");
  const fs::path started = fs::current_path();
  const ProcessState before = ProcessState::Capture();
  fs::current_path(dir.path());
  const CliRun r = ConformanceCli(args);
  fs::current_path(started);
  // In this process (--no-isolate) the state was put back; a worker's never reached it.
  EXPECT_THAT(before.ChangesTo(ProcessState::Capture()), ::testing::IsEmpty());
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report["results"].size(), 6u) << report.dump();
  for (const nlohmann::json& result : report["results"]) {
    if (result["backend"] != fault.backend || result["case"] != "test_1_changes") {
      EXPECT_EQ(result["verdict"], "PASS") << result.dump();
      continue;
    }
    EXPECT_EQ(result["verdict"], "ERROR") << result.dump();
    const std::string message = result["message"];
    EXPECT_THAT(message, HasSubstr(std::string("backend ") + fault.backend + " changed " +
                                   (fault.isolate ? "the worker's " : "this process's ")));
    for (const std::string& part : fault.says) EXPECT_THAT(message, HasSubstr(part));
    EXPECT_THAT(message, HasSubstr(fault.isolate ? "the worker was replaced" : "; restored)"));
    EXPECT_THAT(message, HasSubstr("The result itself was PASS"));
  }
}

std::vector<StateFault> Faults() {
  std::vector<StateFault> faults = {
      {MM_WRONG_PLUGIN_STATE_CHDIR,
       "wrong_state_chdir",
       {"current directory from '", "' to '/' during its call"},
       true},
      {MM_WRONG_PLUGIN_STATE_NOFILE,
       "wrong_state_nofile",
       {"RLIMIT_NOFILE (open files) from ", " to 16 (hard "},
       true},
      {MM_WRONG_PLUGIN_STATE_UMASK, "wrong_state_umask", {"umask from 0", " to 0077"}, true},
      {MM_WRONG_PLUGIN_STATE_SIGCHLD,
       "wrong_state_sigchld",
       {"SIGCHLD disposition from default to ignored"},
       true}};
  const std::size_t isolated = faults.size();
  for (std::size_t i = 0; i < isolated; ++i) {
    faults.push_back(faults[i]);
    faults.back().isolate = false;
  }
  return faults;
}

INSTANTIATE_TEST_SUITE_P(Faults, ProcessStateTest, ::testing::ValuesIn(Faults()),
                         [](const auto& info) {
                           return std::string(info.param.backend) +
                                  (info.param.isolate ? "" : "_in_process");
                         });

TEST(ProcessStateChangesTest, EachKindIsNamedWithItsValuesBeforeAndAfter) {
  const ProcessState before = ProcessState::Capture();
  EXPECT_THAT(before.ChangesTo(ProcessState::Capture()), ::testing::IsEmpty());
  const mode_t mask = umask(0);
  sigset_t blocked, previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  const std::vector<std::string> changes = before.ChangesTo(ProcessState::Capture());
  umask(mask);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  EXPECT_THAT(changes, ::testing::ElementsAre(::testing::StartsWith("umask from 0"),
                                              std::string("SIGHUP from unblocked to blocked")));
  EXPECT_EQ(ProcessStateChangeText("x", "the worker", {"a", "b", "c"}),
            "backend x changed the worker's a, its b and its c during its call");
}

}  // namespace
}  // namespace mm::conformance
