// Nothing lost: a run ended by SIGTERM writes every report with exactly the results it finished,
// --resume completes it into the reports of an uninterrupted run, a plugin that dies or hangs on
// the load-time probe is an ERROR backend among judged ones, and a leaking backend is stopped at
// --memory-limit while the run goes on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/backend.h"
#include "mm/engine/testing/sanitizers.h"
#include "onnx_fixtures.h"

extern char** environ;

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

using testing::CliRun;

// mm-conformance in-process over the built-in backends; `on_stage`: RunEnvironment::on_stage.
CliRun Cli(const std::vector<std::string>& args,
           std::function<void(const char*)> on_stage = nullptr) {
  const BackendRegistry builtin = BuiltinBackends();
  RunEnvironment env;
  env.builtin = &builtin;
  env.on_stage = std::move(on_stage);
  return ::mm::testing::RunCli(
      [&](const std::vector<std::string>& a, std::ostream& out, std::ostream& err) {
        return RunConformanceCli(a, env, out, err);
      },
      args);
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A JSON report without its results' timings and what their calls left behind (and the tally of
// that), which differ from run to run.
nlohmann::json Untimed(nlohmann::json report) {
  for (nlohmann::json& r : report["results"]) {
    r.erase("seconds");
    r.erase("resources");
  }
  report.erase("resources");
  return report;
}

// Runs `argv` with stdout into a pipe; returns the pid and the pipe's read end.
std::pair<pid_t, int> Spawn(const std::vector<std::string>& argv) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  return {pid, fds[0]};
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  return text;
}

class InterruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("MM_BACKEND_LIBS");
    // 150 small cases; the slow plugin takes 20 ms per float result, so the run lasts about a
    // second with 2 workers: long enough to be interrupted in the middle.
    const std::string generate = std::string(MM_FUZZ_BIN) + " generate --out " +
                                 (corpus_.path() / "c").string() +
                                 " --cases 150 --seed 7 > /dev/null";
    ASSERT_EQ(std::system(generate.c_str()), 0);
  }
  std::vector<std::string> RunArgs(const fs::path& json) {
    return {"--data-dir",
            (corpus_.path() / "c").string(),
            "--no-builtin",
            "--backend-lib",
            MM_WRONG_PLUGIN_SLOW,
            "--backend",
            "reference",
            "--backend",
            "wrong_slow",
            "--jobs",
            "2",
            "--json",
            json.string()};
  }
  TempDir corpus_, out_;
};

TEST_F(InterruptTest, SigtermWritesReportsOfExactlyTheFinishedResultsAndResumeCompletesThem) {
  const fs::path json = out_.path() / "r.json", junit = out_.path() / "r.xml";
  std::vector<std::string> argv = RunArgs(json);
  argv.insert(argv.begin(), MM_CONFORMANCE_BIN);
  argv.insert(argv.end(), {"--junit", junit.string()});
  auto [pid, fd] = Spawn(argv);
  // A console line through a pipe arrives while the run goes on, not at its end.
  const std::string first = ReadLine(fd);
  EXPECT_THAT(first, HasSubstr("test_mm_fuzz_s7_"));
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const std::string rest = ReadAll(fd);
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << rest;

  const nlohmann::json interrupted = ReadJson(json);
  const nlohmann::json& mark = interrupted["interrupted"];
  ASSERT_TRUE(mark.is_object()) << interrupted.dump();
  EXPECT_EQ(mark["signal"], "SIGTERM (signal 15)");
  const std::size_t finished = interrupted["results"].size();
  EXPECT_EQ(mark["results"], finished);
  EXPECT_GT(finished, 0u);
  EXPECT_LT(finished, mark["of"].get<std::size_t>());
  EXPECT_FALSE(mark["cases_not_run"].empty());
  EXPECT_EQ(interrupted["summary"]["total"], finished);
  // The JUnit report holds the same results, and says the run was interrupted.
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(junit.c_str()));
  std::size_t testcases = 0;
  for (pugi::xml_node suite : doc.child("testsuites").children("testsuite")) {
    if (std::string(suite.attribute("name").value()).rfind("conformance.", 0) == 0) {
      testcases +=
          std::distance(suite.children("testcase").begin(), suite.children("testcase").end());
    }
  }
  EXPECT_EQ(testcases, finished);
  EXPECT_TRUE(doc.select_node("//testsuite[@name='interrupted']/testcase/error"));

  // Every result kept is the one an uninterrupted run gives, and resuming gives that run's report.
  const fs::path full = out_.path() / "full.json", resumed = out_.path() / "resumed.json";
  const CliRun whole = Cli(RunArgs(full));
  std::vector<std::string> resume_args = RunArgs(resumed);
  resume_args.insert(resume_args.end(), {"--resume", json.string()});
  const CliRun again = Cli(resume_args);
  EXPECT_EQ(again.code, whole.code) << again.err;
  const nlohmann::json expected = Untimed(ReadJson(full));
  const nlohmann::json partial = Untimed(interrupted);
  std::size_t matched = 0;
  for (const nlohmann::json& r : partial["results"]) {
    for (const nlohmann::json& e : expected["results"]) {
      if (e == r) {
        ++matched;
        break;
      }
    }
  }
  EXPECT_EQ(matched, finished);
  // Besides saying what it took from the interrupted report.
  nlohmann::json completed = Untimed(ReadJson(resumed));
  EXPECT_EQ(completed["resumed"]["taken"], finished);
  EXPECT_EQ(completed["resumed"]["rerun_inconsistent"], 0);
  completed.erase("resumed");
  EXPECT_EQ(completed, expected);
}

// A signal that comes before the first result, at each point of the start where it used to end
// the tool with no report: while the plugins are loaded and probed, while the cases are found,
// while the backends are described. The start hook delivers it there, so the test does not race
// the program's own start.
class EarlySignalTest : public InterruptTest, public ::testing::WithParamInterface<const char*> {
 protected:
  static void SignalAtTheStage(const char* stage) {
    if (std::string_view(stage) == std::string_view(stage_)) raise(SIGTERM);
  }
  static inline const char* stage_ = "";
};

TEST_P(EarlySignalTest, LeavesEmptyReportsMarkedInterrupted) {
  stage_ = GetParam();
  const fs::path json = out_.path() / "r.json", junit = out_.path() / "r.xml";
  std::vector<std::string> args = RunArgs(json);
  args.insert(args.end(), {"--junit", junit.string()});
  const CliRun run = Cli(args, &EarlySignalTest::SignalAtTheStage);
  EXPECT_EQ(run.code, 128 + SIGTERM) << run.err;
  EXPECT_THAT(run.out, HasSubstr("interrupted by SIGTERM (signal 15) after 0 of 300 results"));

  const nlohmann::json report = ReadJson(json);
  const nlohmann::json& mark = report["interrupted"];
  ASSERT_TRUE(mark.is_object()) << report.dump();
  EXPECT_EQ(mark["signal"], "SIGTERM (signal 15)");
  EXPECT_EQ(mark["results"], 0);
  EXPECT_EQ(mark["of"], 300);  // 150 cases x 2 backends, one data set each.
  EXPECT_EQ(mark["cases_not_run"].size(), 150u);
  EXPECT_TRUE(report["results"].empty());
  EXPECT_EQ(report["summary"]["total"], 0);

  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(junit.c_str()));
  EXPECT_TRUE(doc.select_node("//testsuite[@name='interrupted']/testcase/error"));
  EXPECT_FALSE(doc.select_node("//testsuite[starts-with(@name, 'conformance.')]/testcase"));
}

INSTANTIATE_TEST_SUITE_P(Start, EarlySignalTest,
                         ::testing::Values("load-backends", "discover", "describe"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_F(InterruptTest, ASecondSignalEndsTheProcessAtOnce) {
  std::vector<std::string> argv = RunArgs(out_.path() / "r.json");
  argv.insert(argv.begin(), MM_CONFORMANCE_BIN);
  auto [pid, fd] = Spawn(argv);
  ReadLine(fd);
  // Two different signals, both delivered (in either order): the first stops the run, the second
  // ends the process by its default action.
  kill(pid, SIGINT);
  kill(pid, SIGTERM);
  ReadAll(fd);
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status);
  EXPECT_THAT(WTERMSIG(status), ::testing::AnyOf(SIGINT, SIGTERM));
}

TEST_F(InterruptTest, APluginsSigtermHandlerDoesNotDisableInterruption) {
  // In the run's own process (--no-isolate): the plugin's constructor installs its own SIGTERM
  // handler, which ignores the signal; mm reinstalls its handler.
  std::vector<std::string> argv = RunArgs(out_.path() / "r.json");
  argv.insert(argv.begin(), MM_CONFORMANCE_BIN);
  argv.insert(argv.end(), {"--no-isolate", "--backend-lib", MM_WRONG_PLUGIN_CTOR_SIGTERM,
                           "--backend", "wrong_ctor_sigterm"});
  auto [pid, fd] = Spawn(argv);
  ReadLine(fd);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const std::string rest = ReadAll(fd);
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << rest;
  EXPECT_THAT(rest, HasSubstr("interrupted by SIGTERM (signal 15)"));
}

// The processes this process adopted (it is their subreaper) or started, still running; zombies
// among them are reaped on the way.
std::vector<pid_t> LivingChildren() {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  std::vector<pid_t> children;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t end_of_name = line.rfind(')');
    if (end_of_name == std::string::npos) continue;
    std::istringstream fields(line.substr(end_of_name + 2));
    char state = 0;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent == getpid() && state != 'Z') children.push_back(std::stoi(name));
  }
  return children;
}

TEST(DieWithMmTest, SigkillWhileTheDescriberIsBlockedLeavesNoProcessBehind) {
  unsetenv("MM_BACKEND_LIBS");
  TempDir dir;
  const fs::path marker = dir.path() / "marker";
  const fs::path blocked = dir.path() / "marker.blocked";
  // The plugin loads fine in the load child, then hangs in its constructor in every later process:
  // the first is the child that describes the backends.
  ASSERT_EQ(setenv("MM_TEST_LOAD_MARKER", marker.c_str(), 1), 0);
  // Orphans of mm-conformance come to this process: what is left of them can be seen and reaped.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  auto [pid, fd] =
      Spawn({MM_CONFORMANCE_BIN, "--backend-lib", MM_WRONG_PLUGIN_CTOR_HANGS_WHEN_MARKED,
             "--backend", "wrong_ctor_hangs_when_marked", "--case", "test_cc_matmul_2d"});
  unsetenv("MM_TEST_LOAD_MARKER");
  for (int i = 0; i < 3000 && !fs::exists(blocked); ++i) usleep(10000);
  EXPECT_TRUE(fs::exists(blocked)) << "the describer never blocked";
  usleep(100000);  // The blocked process has written its id.
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(fd);
  std::vector<pid_t> left = LivingChildren();
  for (int i = 0; i < 500 && !left.empty(); ++i) {
    usleep(10000);
    left = LivingChildren();
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) outlived mm-conformance, the first "
                            << (left.empty() ? 0 : left.front());
  for (const pid_t child : left) kill(child, SIGKILL);
  while (waitpid(-1, nullptr, 0) > 0) {
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST_F(InterruptTest, ResumeRefusesAReportOfAnotherRun) {
  const fs::path json = out_.path() / "r.json";
  Cli(RunArgs(json));
  std::vector<std::string> other_backends = {"--data-dir",   (corpus_.path() / "c").string(),
                                             "--no-builtin", "--backend",
                                             "reference",    "--resume",
                                             json.string()};
  CliRun r = Cli(other_backends);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err,
              HasSubstr("ran the backends reference, wrong_slow, this run selects reference"));
  std::vector<std::string> other_rule = RunArgs(out_.path() / "x.json");
  other_rule.insert(other_rule.end(), {"--tolerance", "bound", "--resume", json.string()});
  r = Cli(other_rule);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("judged under --tolerance onnx, this run under bound"));
  std::vector<std::string> other_cases = RunArgs(out_.path() / "y.json");
  other_cases.insert(other_cases.end(), {"--filter", "float", "--resume", json.string()});
  r = Cli(other_cases);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("it selected other cases (150 cases"));
}

// A plugin that dies or hangs on the load-time probe: its results are ERRORs naming what
// happened, the other backends are judged, the reports are written, and the run fails.
struct ProbeFault {
  const char* path;
  const char* backend;
  const char* what;
  // The hang's is short, for a quick test; the others' long, since a probe under ASan that crashes
  // or exits symbolizes its report or checks for leaks first (over 2 s on a loaded machine).
  const char* timeout = "60";
};

class ProbeFaultTest : public ::testing::TestWithParam<ProbeFault> {};

TEST_P(ProbeFaultTest, IsAnErrorBackendAmongJudgedOnes) {
  unsetenv("MM_BACKEND_LIBS");
  TempDir out;
  const fs::path json = out.path() / "r.json", junit = out.path() / "r.xml";
  CliRun r = Cli({"--backend-lib", GetParam().path, "--backend", "reference", "--backend",
                  GetParam().backend, "--filter", "^test_cc_", "--timeout", GetParam().timeout,
                  "--json", json.string(), "--junit", junit.string()});
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  const nlohmann::json report = ReadJson(json);
  ASSERT_EQ(report["results"].size(), 18u);
  for (const nlohmann::json& result : report["results"]) {
    if (result["backend"] == "reference") {
      EXPECT_EQ(result["verdict"], "PASS") << result.dump();
    } else {
      EXPECT_EQ(result["verdict"], "ERROR");
      std::string what = GetParam().what;
#if MM_UNDER_ASAN
      // AddressSanitizer catches the plugin's SIGSEGV itself and ends the probe with its exit code.
      if (what.find("SIGSEGV") != std::string::npos) what = "during the load probe";
#endif
      EXPECT_THAT(result["message"].get<std::string>(), HasSubstr(what));
    }
  }
  pugi::xml_document doc;
  EXPECT_TRUE(doc.load_file(junit.c_str()));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ProbeFaultTest,
    ::testing::Values(ProbeFault{MM_WRONG_PLUGIN_PROBE_CRASH, "wrong_probe_crash",
                                 "crashed during the load probe: SIGSEGV (signal 11)"},
                      ProbeFault{MM_WRONG_PLUGIN_PROBE_ABORT, "wrong_probe_abort",
                                 "crashed during the load probe: SIGABRT (signal 6)"},
                      ProbeFault{MM_WRONG_PLUGIN_PROBE_EXIT, "wrong_probe_exit",
                                 "exited with status 3 during the load probe"},
                      ProbeFault{MM_WRONG_PLUGIN_PROBE_HANG, "wrong_probe_hang",
                                 "hung during the load probe (no answer within 2 s)", "2"}),
    [](const auto& info) { return std::string(info.param.backend); });

TEST(MemoryLimitTest, ALeakingBackendIsStoppedAtTheLimitAndTheRunGoesOn) {
  unsetenv("MM_BACKEND_LIBS");
  TempDir root, out;
  // Float cases: the leaking plugin (128 MiB per call, never freed) runs each of them.
  for (int i = 0; i < 6; ++i) {
    testing::WriteFloatCase(root.path(), "test_leak_" + std::to_string(i), {3, 4}, {4, 5});
  }
  const fs::path json = out.path() / "r.json";
  // A limit below the leak itself: every call of the plugin goes past it, whatever a fresh worker
  // holds before the call (a worker is a fork of mm-conformance, and what that holds depends on
  // the build: far more under the sanitizers). The reference, in the worker that replaces it,
  // stays far below the limit.
  auto [pid, fd] =
      Spawn({MM_CONFORMANCE_BIN, "--data-dir", root.path().string(), "--no-builtin",
             "--backend-lib", MM_WRONG_PLUGIN_LEAK, "--backend", "wrong_leak", "--backend",
             "reference", "--memory-limit", "128", "--jobs", "1", "--json", json.string()});
  const std::string out_text = ReadAll(fd);
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), kExitFailed) << out_text;
  const nlohmann::json report = ReadJson(json);
  ASSERT_EQ(report["results"].size(), 12u) << out_text;
  int stopped = 0;
  for (const nlohmann::json& result : report["results"]) {
    const std::string message = result["message"].get<std::string>();
    if (result["backend"] == "reference") {
      // The worker replaced after a leak goes on with the case.
      EXPECT_EQ(result["verdict"], "PASS") << message;
    } else {
      EXPECT_EQ(result["verdict"], "ERROR") << message;
      EXPECT_THAT(message, HasSubstr("went past the memory limit of 128 MiB"));
      ++stopped;
    }
  }
  EXPECT_EQ(stopped, 6);
}

// The case: a plugin that leaks 64 MiB on every call, at --memory-limit 512 (its workers
// recycled at 384 MiB, every 5 or 6 calls), passes every case. The leak is reported with its
// growth per call in every report, and fails the run under --strict; the reference, run beside
// it, has no finding. The mm-conformance process, as in the test above.
TEST(MemoryLimitTest, ALeakThatRecyclingAbsorbsIsReportedWithItsGrowthAndFailsUnderStrict) {
  unsetenv("MM_BACKEND_LIBS");
  TempDir root, out;
  for (int i = 0; i < 8; ++i) {
    testing::WriteFloatCase(root.path(), "test_leak_" + std::to_string(i), {3, 4}, {4, 5});
  }
  const fs::path json = out.path() / "r.json", junit = out.path() / "r.xml",
                 markdown = out.path() / "r.md";
  // Those 8, the 9 built-in cases and the shape-class catalogue's float cases: the plugin only has
  // float. The catalogue's K = 0 and empty products are answered by the engine above the plugin:
  // they must not count as calls, or they would dilute the growth per call.
  std::vector<std::string> args = {MM_CONFORMANCE_BIN,
                                   "--data-dir",
                                   root.path().string(),
                                   "--backend-lib",
                                   MM_WRONG_PLUGIN_LEAK_64,
                                   "--backend",
                                   "wrong_leak_64",
                                   "--backend",
                                   "reference",
                                   "--memory-limit",
                                   "512",
                                   "--jobs",
                                   "2",
                                   "--quiet",
                                   "--json",
                                   json.string(),
                                   "--junit",
                                   junit.string(),
                                   "--markdown",
                                   markdown.string()};
  auto run = [&args](bool strict) {
    std::vector<std::string> argv = args;
    if (strict) argv.push_back("--strict");
    auto [pid, fd] = Spawn(argv);
    std::string text = ReadAll(fd);
    close(fd);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    return std::pair<int, std::string>(WEXITSTATUS(status), text);
  };
  const auto [lenient_code, lenient_out] = run(false);
  EXPECT_EQ(lenient_code, kExitPassed) << lenient_out;  // Reported, not failed, without --strict.
  EXPECT_THAT(lenient_out, HasSubstr("resources: wrong_leak_64: resident memory grows by "));
  const auto [code, console] = run(true);
  EXPECT_EQ(code, kExitFailed) << console;
  EXPECT_THAT(console, HasSubstr(" PASS, 0 FAIL"));

  const nlohmann::json report = ReadJson(json);
  int plugin_calls = 0, engine_answers = 0;
  for (const nlohmann::json& r : report["results"]) {
    if (r["verdict"] == "UNSUPPORTED") continue;
    EXPECT_EQ(r["verdict"], "PASS") << r.dump();
    if (r["backend"] != "wrong_leak_64") continue;
    const nlohmann::json& implementation = r["implementation"];  // null when the plugin says none
    const bool engine =
        implementation.is_string() && IsEngineAnswer(implementation.get<std::string>());
    ++(engine ? engine_answers : plugin_calls);
  }
  EXPECT_GE(plugin_calls, 17);
  EXPECT_GE(engine_answers, 1);  // The catalogue's K = 0 and empty products are in the run.
  const nlohmann::json& leak = report["resources"]["backends"]["wrong_leak_64"];
  const double per_call = leak["rss_growth_per_call_bytes"].get<double>();
  EXPECT_GE(per_call, 48.0 * (1 << 20)) << leak.dump();
  EXPECT_LE(per_call, 80.0 * (1 << 20)) << leak.dump();
  EXPECT_EQ(leak["calls"], plugin_calls);
  EXPECT_GE(leak["processes"], 3);  // Recycled: every worker's growth counts.
  ASSERT_EQ(leak["findings"].size(), 1u) << leak.dump();
  const std::string finding = leak["findings"][0].get<std::string>();
  EXPECT_THAT(finding, HasSubstr("resident memory grows by "));
  EXPECT_THAT(finding, HasSubstr(" MiB per call (mean of "));
  EXPECT_THAT(console,
              HasSubstr("resources: wrong_leak_64: " + finding + " (fails under --strict)\n"));
  EXPECT_EQ(report["resources"]["backends"]["reference"]["findings"], nlohmann::json::array());
  EXPECT_EQ(report["resources"]["backends_with_findings"], 1);

  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(junit.c_str()));
  const pugi::xml_node failure =
      doc.select_node("//testsuite[@name='resources']/testcase[@name='wrong_leak_64']/failure")
          .node();
  EXPECT_STREQ(failure.attribute("type").value(), "RESOURCES");
  EXPECT_EQ(std::string(failure.text().get()), finding);
  EXPECT_FALSE(
      doc.select_node("//testsuite[@name='resources']/testcase[@name='reference']/failure"));

  std::ifstream md_file(markdown);
  const std::string md((std::istreambuf_iterator<char>(md_file)), {});
  EXPECT_THAT(md, HasSubstr("## Resources"));
  EXPECT_THAT(md, HasSubstr("| wrong\\_leak\\_64 | "));
}

}  // namespace
}  // namespace mm::conformance

namespace mm::conformance {
namespace {

// Whether process `pid` has a handler of its own for `signal` (the SigCgt mask of /proc).
bool CatchesSignal(pid_t pid, int signal) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) == 0) {
      return (std::stoull(line.substr(7), nullptr, 16) >> (signal - 1) & 1) != 0;
    }
  }
  return false;
}

TEST(FuzzInterruptTest, SigtermWritesTheJsonWithTheProblemsDone) {
  TempDir out;
  const fs::path json = out.path() / "fuzz.json";
  // Backends named: auto's first use on a machine without its table calibrates for up to a minute,
  // and a SIGTERM in that wait ends the run before any problem (backends/auto/first_use_test.cc).
  auto [pid, fd] = Spawn({MM_FUZZ_BIN, "--backend", "reference", "--backend", "eigen", "--cases",
                          "10000000", "--quiet", "--json", json.string()});
  // The run would take hours. It is stopped once its handler is in place (mm-fuzz first starts
  // itself again with OpenMP's passive wait, which under a sanitizer on a loaded machine took
  // more than a second and a half), and problems have had time to run.
  for (int i = 0; i < 600 && !CatchesSignal(pid, SIGTERM); ++i) usleep(100 * 1000);
  ASSERT_TRUE(CatchesSignal(pid, SIGTERM)) << "mm-fuzz set no SIGTERM handler within a minute";
  usleep(1500 * 1000);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  ReadAll(fd);
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  const nlohmann::json report = ReadJson(json);
  ASSERT_TRUE(report.contains("interrupted")) << report.dump().substr(0, 500);
  EXPECT_EQ(report["interrupted"]["signal_number"], SIGTERM);
  EXPECT_GT(report["interrupted"]["problems"].get<std::int64_t>(), 0);
  EXPECT_LT(report["interrupted"]["problems"].get<std::int64_t>(), 10000000);
}

}  // namespace
}  // namespace mm::conformance
