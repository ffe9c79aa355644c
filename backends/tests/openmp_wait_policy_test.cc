#include "mm/backends/openmp_wait_policy.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace mm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Where the probe (openmp_wait_policy_probe.cc) is: beside this test.
std::string ProbePath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
          "mm_openmp_wait_policy_probe")
      .string();
}

struct ProbeRun {
  pid_t spawned = -1;  // The pid posix_spawn gave.
  int status = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the probe with `args`, in this process's environment without OMP_WAIT_POLICY, plus
// `policy` when not empty.
ProbeRun RunProbe(const std::string& policy, const std::vector<std::string>& args) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("OMP_WAIT_POLICY=")) env.emplace_back(*e);
  }
  if (!policy.empty()) env.push_back("OMP_WAIT_POLICY=" + policy);
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {ProbePath()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  // Named per test and process: ctest runs the tests of this file in parallel processes that
  // share the temporary folder.
  const std::string base = ::testing::TempDir() + "/openmp_wait_policy_probe." +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "." +
                           std::to_string(getpid());
  const std::string out = base + ".out", err = base + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ProbeRun run;
  const int spawned =
      posix_spawn(&run.spawned, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return run;
  waitpid(run.spawned, &run.status, 0);
  run.out = Slurp(out);
  run.err = Slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return run;
}

// What the probe's OpenMP runtime prints (OMP_DISPLAY_ENV) once it took the policy. g++ links
// libgomp, which spins 300,000 times before it sleeps by default and not at all when passive;
// clang links LLVM's libomp, which then sleeps at once (a block time of 0).
#if defined(__clang__)
constexpr std::string_view kPassiveTaken = "KMP_BLOCKTIME='0'";
constexpr std::string_view kActiveTaken = "OMP_WAIT_POLICY='ACTIVE'";
#else
constexpr std::string_view kPassiveTaken = "GOMP_SPINCOUNT = '0'";
constexpr std::string_view kActiveTaken = "OMP_WAIT_POLICY = 'ACTIVE'";
#endif

// Unset, the tool runs as the same process again with the policy passive, and the OpenMP runtime
// took it.
TEST(OpenMpWaitPolicyTest, UnsetRunsTheSameProcessAgainWithThePolicyPassive) {
  const ProbeRun run = RunProbe("", {"--one", "two words", ""});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("pid=" + std::to_string(run.spawned) + "\n"));
  EXPECT_THAT(run.out, HasSubstr("OMP_WAIT_POLICY=passive\n"));
  EXPECT_THAT(run.out, HasSubstr("args=[--one][two words][]\n"));
  EXPECT_THAT(run.err, HasSubstr(std::string(kPassiveTaken)));
}

// A policy the user set is theirs, active included: the tool is not run again.
TEST(OpenMpWaitPolicyTest, APolicyTheUserSetIsKept) {
  const ProbeRun run = RunProbe("active", {"--one"});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("OMP_WAIT_POLICY=active\n"));
  EXPECT_THAT(run.err, HasSubstr(std::string(kActiveTaken)));
  EXPECT_THAT(run.err, Not(HasSubstr(std::string(kPassiveTaken))));
}

}  // namespace
}  // namespace mm
