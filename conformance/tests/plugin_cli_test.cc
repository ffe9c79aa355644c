// Plugins through the mm-conformance command line, in-process: --backend-lib and MM_BACKEND_LIBS
// load them, a plugin is a backend like any other in results and --list, and every refusal is a
// usage error (exit 2) naming the file and the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/report/escape.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/testing/sanitizers.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using testing::CliRun;
using testing::ConformanceCli;

// The environment variable is read by the CLI itself; each test leaves it unset.
class PluginCliTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("MM_BACKEND_LIBS"); }
  void TearDown() override { unsetenv("MM_BACKEND_LIBS"); }
};

TEST_F(PluginCliTest, TheExamplePluginPassesEveryBuiltInCaseAsABackendLikeAnyOther) {
  // Only the built-in cases: the data on this machine does not matter here.
  CliRun r = ConformanceCli({"--backend-lib", MM_EXAMPLE_PLUGIN, "--backend", "example",
                             "--backend", "reference", "--strict", "--filter", "^test_cc_"});
  EXPECT_EQ(r.code, kExitPassed) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("summary: 18 results (18 case x backend): 18 PASS, 0 FAIL"));
  EXPECT_THAT(r.out, HasSubstr("test_cc_matmul_bcast"));
}

// --backend-lib without --backend judges the plugin alone: the built-in backends run only when
// --backend names them (the reference still computes the three-way comparison).
TEST_F(PluginCliTest, ABackendLibWithoutBackendRunsOnlyThePlugin) {
  CliRun alone =
      ConformanceCli({"--backend-lib", MM_EXAMPLE_PLUGIN, "--filter", "^test_cc_matmul_2d$"});
  EXPECT_EQ(alone.code, kExitPassed) << alone.out << alone.err;
  EXPECT_THAT(alone.out, HasSubstr("summary: 1 results (1 case x backend): 1 PASS"));
  EXPECT_THAT(ConformanceCli({"--backend-lib", MM_EXAMPLE_PLUGIN, "--list-tests", "--filter",
                              "^test_cc_matmul_2d$"})
                  .out,
              ::testing::StrEq("test_cc_matmul_2d\texample\n"));
  CliRun asked =
      ConformanceCli({"--backend-lib", MM_EXAMPLE_PLUGIN, "--backend", "reference", "--backend",
                      "example", "--list-tests", "--filter", "^test_cc_matmul_2d$"});
  EXPECT_EQ(asked.out, "test_cc_matmul_2d\treference\ntest_cc_matmul_2d\texample\n");
  // MM_BACKEND_LIBS's plugins are the machine's backends: they run beside the built-in ones.
  ASSERT_EQ(setenv("MM_BACKEND_LIBS", MM_EXAMPLE_PLUGIN, 1), 0);
  CliRun from_env = ConformanceCli({"--list-tests", "--filter", "^test_cc_matmul_2d$"});
  EXPECT_THAT(from_env.out, AllOf(HasSubstr("test_cc_matmul_2d\treference\n"),
                                  HasSubstr("test_cc_matmul_2d\texample\n")));
}

// A plugin that sums bfloat16 in bfloat16: 1 + 128 x 2^-8 is 1.5 exactly, and each 1 + 2^-8 is a
// tie its sums round back to 1. Declaring float32 accumulation, it is FAIL under both rules against
// the exact expected Y, as through every other path; declaring nothing (bfloat16 accumulation, its
// bound 129 x 2^-8 x 1.5 wide) the same answer is BOUND: ONNX's tolerance missed, the bound met.
TEST_F(PluginCliTest, ABfloat16SumDeclaredAsFloat32FailsUnderBothRules) {
  testing::TempDir corpus;
  std::vector<bfloat16> a(129, bfloat16(1.0f)), b(129, bfloat16(0x1p-8f));
  b[0] = bfloat16(1.0f);
  ASSERT_TRUE(
      WriteMatMulNodeTest(corpus.path() / "test_plugin_k129",
                          Tensor::FromValues<bfloat16>({1, 129}, a).value(),
                          Tensor::FromValues<bfloat16>({129, 1}, b).value(),
                          Tensor::FromValues<bfloat16>({1, 1}, std::vector{bfloat16(1.5f)}).value())
          .ok());
  auto judged = [&](const char* plugin, const std::string& rule) {
    const std::filesystem::path json = corpus.path() / "report.json";
    CliRun r = ConformanceCli({"--backend-lib", plugin, "--data-dir", corpus.path().string(),
                               "--no-builtin", "--tolerance", rule, "--json", json.string()});
    std::ifstream in(json);
    const nlohmann::json result = nlohmann::json::parse(in)["results"].at(0);
    EXPECT_TRUE(result["data_suspect"].is_null()) << result.dump();
    return std::pair(r.code, result["verdict"].get<std::string>());
  };
  for (const std::string rule : {"onnx", "bound"}) {
    EXPECT_EQ(judged(MM_HALF_SUM_PLUGIN_DECLARES_FLOAT32, rule),
              std::pair(kExitFailed, std::string("FAIL")))
        << rule;
  }
  EXPECT_EQ(judged(MM_HALF_SUM_PLUGIN_UNDECLARED, "bound"),
            std::pair(kExitPassed, std::string("BOUND")));
}

TEST_F(PluginCliTest, BackendLibsFromTheEnvironmentAreLoadedToo) {
  ASSERT_EQ(setenv("MM_BACKEND_LIBS", MM_EXAMPLE_PLUGIN, 1), 0);
  CliRun r = ConformanceCli({"--list"});
  EXPECT_EQ(r.code, kExitPassed) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("example C99 plugin"), HasSubstr(MM_EXAMPLE_PLUGIN)));
  CliRun tests = ConformanceCli({"--list-tests", "--backend", "example"});
  EXPECT_THAT(tests.out, HasSubstr("test_cc_matmul_2d\texample\n"));
}

TEST_F(PluginCliTest, AWrongPluginIsAnErrorResultNotAPass) {
  CliRun r = ConformanceCli({"--backend-lib", MM_WRONG_PLUGIN_WRITE_PAST_END, "--backend",
                             "wrong_write_past_end", "--case", "test_cc_matmul_2d"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("ERROR"),
                    HasSubstr("backend failed: DATA_LOSS: wrote 4 bytes past the end of Y")));
}

struct Refusal {
  const char* why;
  const char* path;
  const char* message;
};

void PrintTo(const Refusal& refusal, std::ostream* os) { *os << refusal.why; }

class PluginCliRefusalTest : public PluginCliTest, public ::testing::WithParamInterface<Refusal> {};

TEST_P(PluginCliRefusalTest, IsAUsageErrorNamingTheFileAndTheProblem) {
  CliRun r = ConformanceCli({"--backend-lib", GetParam().path});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr(std::string("mm-conformance: backend library '") + GetParam().path +
                               "': " + GetParam().message));
  EXPECT_EQ(r.out, "") << "nothing runs";
}

INSTANTIATE_TEST_SUITE_P(
    WrongPlugins, PluginCliRefusalTest,
    ::testing::Values(
        Refusal{"missing_file", "no_such_dir/libmissing.so", "no such file"},
        Refusal{"not_a_shared_object", MM_NOT_A_PLUGIN, "not a shared object (no ELF header"},
        Refusal{"no_entry_symbol", MM_WRONG_PLUGIN_NO_ENTRY,
                "does not export the entry function 'mm_backend_plugin_entry'"},
        Refusal{"another_abi_version", MM_WRONG_PLUGIN_ABI_VERSION_4,
                "speaks plugin ABI version 4, but this mm speaks versions 1 to 3"},
        Refusal{"invalid_arithmetic_declaration", MM_WRONG_PLUGIN_ARITHMETIC_NOT_A_DTYPE,
                "arithmetic() of plugin 'wrong_arithmetic_not_a_dtype' for float16 declared "
                "accumulation type 99, which is not an mm_dtype"},
        Refusal{"null_function_pointers", MM_WRONG_PLUGIN_NULL_FUNCTIONS,
                "required function pointer(s) NULL in the table of 'wrong_null_functions': "
                "prepare, execute"},
        Refusal{"empty_name", MM_WRONG_PLUGIN_EMPTY_NAME, "the backend name is empty"},
        Refusal{"name_of_a_builtin_backend", MM_WRONG_PLUGIN_NAME_REFERENCE,
                "the backend name 'reference' is already taken by naive i-k-j loops"},
        Refusal{"out_of_range_support_answer", MM_WRONG_PLUGIN_SUPPORT_OUT_OF_RANGE,
                "supports() answered 7 for float [2,3] x [3,4]; valid answers are 0 (native), 1 "
                "(by conversion), 2 (no)"},
        Refusal{"error_status_with_no_message", MM_WRONG_PLUGIN_PREPARE_ERROR_NO_MESSAGE,
                "prepare() returned status 13 (INTERNAL) with no message"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.why); });

// A plugin whose code fails while it is loaded, in the child that loads it: a usage error naming
// the plugin and what happened, never the end of mm-conformance.
struct LoadTimeFault {
  const char* why;
  const char* path;
  const char* message;  // After "backend library '<path>' ".
  // The hang's is short, for a quick test; the others' long, since a child under ASan that crashes
  // or exits symbolizes its report or checks for leaks first (over 1 s on a loaded machine).
  const char* timeout = "60";
};

void PrintTo(const LoadTimeFault& fault, std::ostream* os) { *os << fault.why; }

class PluginCliLoadTimeFaultTest : public PluginCliTest,
                                   public ::testing::WithParamInterface<LoadTimeFault> {};

TEST_P(PluginCliLoadTimeFaultTest, IsAUsageErrorNamingThePluginAndWhatHappened) {
  CliRun r = ConformanceCli({"--backend-lib", GetParam().path, "--timeout", GetParam().timeout});
  EXPECT_EQ(r.code, kExitUsage) << r.out << r.err;
  std::string message = GetParam().message;
#if MM_UNDER_ASAN
  // AddressSanitizer catches the plugin's SIGSEGV itself and ends the child with its exit code.
  if (const std::size_t signal = message.find(": SIGSEGV"); signal != std::string::npos) {
    const std::size_t where = message.find(' ') + 1;  // After "crashed".
    message = message.substr(where, signal - where);
  }
#endif
  EXPECT_THAT(r.err,
              HasSubstr(std::string("mm-conformance: backend library '") + GetParam().path + "' "));
  EXPECT_THAT(r.err, HasSubstr(message));
  EXPECT_EQ(r.out, "") << "nothing runs";
}

INSTANTIATE_TEST_SUITE_P(
    WrongPlugins, PluginCliLoadTimeFaultTest,
    ::testing::Values(
        LoadTimeFault{"constructor_crashes", MM_WRONG_PLUGIN_CTOR_CRASH,
                      "crashed while loading (constructor or entry function): SIGSEGV (signal 11)"},
        LoadTimeFault{"constructor_calls_exit", MM_WRONG_PLUGIN_CTOR_EXIT,
                      "exited with status 7 while loading (constructor or entry function)"},
        LoadTimeFault{"constructor_hangs", MM_WRONG_PLUGIN_CTOR_HANG,
                      "hung while loading (constructor or entry function): no answer within 1 s",
                      "1"},
        LoadTimeFault{"arithmetic_crashes", MM_WRONG_PLUGIN_ARITHMETIC_CRASH,
                      "crashed in arithmetic() while loading: SIGSEGV (signal 11)"}),
    [](const ::testing::TestParamInfo<LoadTimeFault>& info) {
      return std::string(info.param.why);
    });

// Running, stopped or sleeping: not gone, and not a zombie (a process killed after its parent
// ended waits as a zombie until init reaps it).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t end_of_name = line.rfind(')');
  return end_of_name != std::string::npos && end_of_name + 2 < line.size() &&
         line[end_of_name + 2] != 'Z';
}

TEST_F(PluginCliTest, AnExecuteThatForksAnswersOnceAsAnErrorAndLeavesNoProcessBehind) {
  // Its execute leaves a sleeping process behind and forks a copy of the caller that answers too.
  testing::TempDir dir;
  const std::filesystem::path pids = dir.path() / "pids";
  ASSERT_EQ(setenv("MM_TEST_FORKED_PIDS", pids.c_str(), 1), 0);
  const std::filesystem::path json = dir.path() / "r.json";
  CliRun r = ConformanceCli({"--backend-lib", MM_WRONG_PLUGIN_EXECUTE_FORKS, "--backend",
                             "reference", "--backend", "wrong_execute_forks", "--filter",
                             "^test_cc_matmul_(2d|3d)$", "--json", json.string()});
  unsetenv("MM_TEST_FORKED_PIDS");
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report["results"].size(), 4u) << "one result per case and backend, no second one";
  for (const nlohmann::json& result : report["results"]) {
    if (result["backend"] == "reference") {
      EXPECT_EQ(result["verdict"], "PASS") << result.dump();
    } else {
      EXPECT_EQ(result["verdict"], "ERROR") << result.dump();
      EXPECT_THAT(result["message"].get<std::string>(),
                  HasSubstr("unrequested answer: backend wrong_execute_forks forked a process"));
    }
  }
  std::ifstream forked(pids);
  int count = 0;
  for (pid_t pid; forked >> pid; ++count) {
    for (int i = 0; i < 500 && Alive(pid); ++i) usleep(10000);
    EXPECT_FALSE(Alive(pid)) << "process " << pid << " that the plugin forked is still running";
    if (Alive(pid)) kill(pid, SIGKILL);
  }
  // The load probe's and one per case.
  EXPECT_GE(count, 3);
}

// A plugin whose calls leave something behind, and the finding it must get.
struct ResourceFault {
  const char* path;
  const char* backend;
  const char* finding;
  bool isolate;
};

void PrintTo(const ResourceFault& fault, std::ostream* os) { *os << fault.backend; }

class PluginResourceTest : public PluginCliTest,
                           public ::testing::WithParamInterface<ResourceFault> {};

// Over the 9 built-in cases in one process (one warm-up call), beside the reference: the finding
// with its figure in the console, JSON, JUnit and Markdown reports, a failure under --strict; the
// reference has none.
TEST_P(PluginResourceTest, IsAFindingWithItsFigureInEveryReportAndFailsUnderStrict) {
  const ResourceFault& fault = GetParam();
  testing::TempDir dir;
  const std::filesystem::path json = dir.path() / "r.json", junit = dir.path() / "r.xml",
                              markdown = dir.path() / "r.md";
  // The built-in cases alone: the data on this machine does not matter here.
  std::vector<std::string> args = {
      "--backend-lib", fault.path,   "--backend",      fault.backend, "--backend",
      "reference",     "--filter",   "^test_cc_",      "--jobs",      "1",
      "--strict",      "--quiet",    "--json",         json.string(), "--junit",
      junit.string(),  "--markdown", markdown.string()};
  if (!fault.isolate) args.push_back("--no-isolate");
  const CliRun r = ConformanceCli(args);
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("18 PASS, 0 FAIL"));
  EXPECT_THAT(r.out, HasSubstr(std::string("resources: ") + fault.backend + ": " + fault.finding +
                               " (fails under --strict)\n"));
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["resources"]["backends"][fault.backend]["findings"],
            nlohmann::json::array({fault.finding}));
  EXPECT_EQ(report["resources"]["backends"]["reference"]["findings"], nlohmann::json::array());
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(junit.c_str()));
  const pugi::xml_node suite =
      doc.child("testsuites").find_child_by_attribute("testsuite", "name", "resources");
  const pugi::xml_node failure =
      suite.find_child_by_attribute("testcase", "name", fault.backend).child("failure");
  EXPECT_STREQ(failure.attribute("type").value(), "RESOURCES");
  EXPECT_EQ(std::string(failure.text().get()), fault.finding);
  EXPECT_FALSE(suite.find_child_by_attribute("testcase", "name", "reference").child("failure"));
  std::ifstream md_file(markdown);
  const std::string md((std::istreambuf_iterator<char>(md_file)), {});
  EXPECT_THAT(md, HasSubstr(MarkdownEscape(fault.finding)));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, PluginResourceTest,
    ::testing::Values(
        ResourceFault{MM_WRONG_PLUGIN_FD_PER_CALL, "wrong_fd_per_call",
                      "file descriptors left open: 1.00 per call (mean of 8 calls after "
                      "warm-up, in 1 process)",
                      true},
        ResourceFault{MM_WRONG_PLUGIN_THREAD_PER_CALL, "wrong_thread_per_call",
                      "threads left running: 1.00 per call (mean of 8 calls after warm-up, in 1 "
                      "process)",
                      true},
        ResourceFault{MM_WRONG_PLUGIN_SPINNING_THREAD, "wrong_spinning_thread",
                      "1 thread it started still ran (not asleep) 250 ms after a call returned "
                      "(2 of 2 look-outs)",
                      true},
        // In the run's own process (--no-isolate) too.
        ResourceFault{MM_WRONG_PLUGIN_FD_PER_CALL, "wrong_fd_per_call",
                      "file descriptors left open: 1.00 per call (mean of 8 calls after "
                      "warm-up, in 1 process)",
                      false}),
    [](const auto& info) {
      return std::string(info.param.backend) + (info.param.isolate ? "" : "_in_process");
    });

TEST_F(PluginCliTest, TwoPluginsWithOneNameAreAUsageError) {
  CliRun r = ConformanceCli(
      {"--backend-lib", MM_WRONG_PLUGIN_NONE, "--backend-lib", MM_WRONG_PLUGIN_TWIN});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, AllOf(HasSubstr(std::string("backend library '") + MM_WRONG_PLUGIN_TWIN),
                           HasSubstr("the backend name 'wrong_none' is already taken")));
}

TEST_F(PluginCliTest, AMissingPathIsAUsageError) {
  CliRun r = ConformanceCli({"--backend-lib"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("mm-conformance: --backend-lib"));
}

}  // namespace
}  // namespace mm::conformance
