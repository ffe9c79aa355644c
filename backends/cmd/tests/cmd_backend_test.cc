// Backends that are driver programs: a driver that works is judged like any backend; each way a
// driver can misbehave is an error of that call (a refusal of a supported dtype's shape, a
// conformance gap), and the next call works on a driver started anew.
#include "mm/backends/cmd/cmd_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::runtime {
namespace {

using ::mm::testing::MatMulTester;
using ::testing::HasSubstr;

std::string FaultCommand(const std::string& fault) {
  return std::string("/usr/bin/python3 ") + MM_FAULT_DRIVER + " " + fault;
}

std::unique_ptr<Backend> Start(const std::string& fault, DriverLimits limits = {}) {
  SetDriverLimits(limits);
  auto command = ParseBackendCmd("fault=" + FaultCommand(fault));
  EXPECT_TRUE(command.ok()) << command.status();
  auto backend = StartCommandBackend(*command);
  SetDriverLimits({});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

// A float [2,K] x [K,3] product through `backend`: OK (and Y right) or the call's error.
Status Product(Backend& backend, std::int64_t k) {
  std::vector<float> a(2 * k), b(k * 3);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 5) - 2;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 3) + 1;
  const Tensor ta = Tensor::FromValues<float>({2, k}, a).value();
  const Tensor tb = Tensor::FromValues<float>({k, 3}, b).value();
  StatusOr<Tensor> y = MatMul(backend, ta.view(), tb.view());
  if (!y.ok()) return y.status();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      float sum = 0;
      for (int p = 0; p < k; ++p) sum += a[i * k + p] * b[p * 3 + j];
      if (y->Data<float>()[i * 3 + j] != sum) return InternalError("wrong Y");
    }
  }
  return OkStatus();
}

TEST(SplitCommandTest, SplitsAsAShellWithoutExpansions) {
  EXPECT_EQ(SplitCommand("python3  d.py --x").value(),
            (std::vector<std::string>{"python3", "d.py", "--x"}));
  EXPECT_EQ(SplitCommand(R"(a 'b c' "d \"e\" $f" g\ h 'i\j')").value(),
            (std::vector<std::string>{"a", "b c", "d \"e\" $f", "g h", "i\\j"}));
  EXPECT_EQ(SplitCommand(R"("a\b")").value(), (std::vector<std::string>{"a\\b"}));
  EXPECT_THAT(SplitCommand("a 'b").status().message(), HasSubstr("unclosed '"));
  EXPECT_THAT(SplitCommand("a \"b").status().message(), HasSubstr("unclosed \""));
  EXPECT_THAT(SplitCommand("  ").status().message(), HasSubstr("empty"));
}

TEST(ParseBackendCmdTest, NameEqualsCommand) {
  auto command = ParseBackendCmd("my_rt=python3 -u d.py");
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->name, "my_rt");
  EXPECT_EQ(command->command, "python3 -u d.py");
  EXPECT_EQ(command->argv, (std::vector<std::string>{"python3", "-u", "d.py"}));
  EXPECT_THAT(ParseBackendCmd("python3 d.py").status().message(), HasSubstr("NAME=COMMAND"));
  EXPECT_THAT(ParseBackendCmd("a b=python3").status().message(),
              HasSubstr("--backend-cmd a b: the backend name"));
  EXPECT_THAT(ParseBackendCmd("x=").status().message(), HasSubstr("--backend-cmd x: the command"));
}

// Changes the working directory for one test.
class ScopedWorkingDirectory {
 public:
  explicit ScopedWorkingDirectory(const std::filesystem::path& dir)
      : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~ScopedWorkingDirectory() { std::filesystem::current_path(previous_); }

 private:
  std::filesystem::path previous_;
};

// A replay line runs from any directory: the relative paths of the command become absolute (a
// program named by a path, files that exist), PATH's programs, options and other words stay.
TEST(AbsoluteCommandTest, MakesRelativePathsAbsoluteAndKeepsTheRest) {
  const testing::TempDir dir("mm_absolute_command");
  std::filesystem::create_directories(dir.path() / "run/env/bin");
  std::filesystem::create_directories(dir.path() / "drivers");
  std::ofstream(dir.path() / "drivers/my driver.py") << "\n";
  std::filesystem::create_symlink("/usr/bin/python3", dir.path() / "run/env/bin/python3");
  const ScopedWorkingDirectory cd(dir.path() / "run");
  const std::string run = (dir.path() / "run").string(),
                    drivers = (dir.path() / "drivers").string();
  auto given = ParseBackendCmd("x=env/bin/python3 -u '../drivers/my driver.py' --fast not_a_file");
  ASSERT_TRUE(given.ok()) << given.status();
  // The link is kept (a virtual environment's python), "run/.." shortened, the space quoted.
  EXPECT_EQ(given->absolute,
            run + "/env/bin/python3 -u '" + drivers + "/my driver.py' --fast not_a_file");
  EXPECT_EQ(SplitCommand(given->absolute).value(),
            (std::vector<std::string>{run + "/env/bin/python3", "-u", drivers + "/my driver.py",
                                      "--fast", "not_a_file"}));
  EXPECT_EQ(AbsoluteCommand({"python3", "/abs/d.py", "it's"}), R"(python3 /abs/d.py 'it'\''s')");
}

TEST(CmdBackendTest, AWorkingDriverIsJudgedLikeAnyBackend) {
  auto backend = Start("none");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name(), "fault");
  EXPECT_THAT(backend->RunsOn(), HasSubstr("fault 1; driver: /usr/bin/python3"));
  EXPECT_EQ(DriverCommandOf(*backend), FaultCommand("none"));
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kFloat), (Arithmetic{DType::kDouble, false}));
  const Support no = backend->Supports({DType::kInt64, {2, 3}, {3, 4}});
  EXPECT_FALSE(no.supported());
  EXPECT_THAT(no.note, HasSubstr("this test driver computes float only"));
  MatMulTester().a_dims({4, 5}).b_dims({5, 3}).dtype(DType::kFloat).iterations(3).Test(*backend);
  MatMulTester().a_dims({1, 1}).b_dims({1, 9}).dtype(DType::kFloat).Test(*backend);
  EXPECT_TRUE(Product(*backend, 3).ok());
}

struct Fault {
  const char* name;
  const char* message;  // What the failed call's error says.
  // Only the hang waits for it; the others end the call sooner, a loaded machine's memory hog
  // included (it must be seen over the memory limit, not timed out).
  int timeout_seconds = 60;
};

class FaultTest : public ::testing::TestWithParam<Fault> {};

TEST_P(FaultTest, IsAnErrorOfThatCallAndTheNextCallWorks) {
  DriverLimits limits;
  limits.timeout_seconds = GetParam().timeout_seconds;
  limits.memory_limit_bytes = std::int64_t{300} << 20;
  auto backend = Start(GetParam().name, limits);
  ASSERT_NE(backend, nullptr);
  ASSERT_TRUE(Product(*backend, 3).ok());
  const Status failed = Product(*backend, 7);
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr(GetParam().message));
  EXPECT_FALSE(IsConformanceGap(failed));
  const Status next = Product(*backend, 3);
  EXPECT_TRUE(next.ok()) << next;
}

INSTANTIATE_TEST_SUITE_P(
    EveryFault, FaultTest,
    ::testing::Values(
        Fault{"crash", "the driver ended before its answer was complete: crashed: SIGSEGV"},
        Fault{"exit", "exited with status 3"},
        Fault{"hang", "did not answer within 3 s (--timeout); it was killed", 3},
        // Closes its stdin and stdout and lives on: ended after the grace, never waited for.
        Fault{"closes_stdout",
              "the driver ended before its answer was complete: it did not exit within 2 s "
              "after closing its stdout, and was killed"},
        Fault{"truncated", "ended before its answer was complete"},
        Fault{"huge_header", "malformed frame: header length 2147483647"},
        Fault{"huge_data", "malformed frame: data length 4294967280 where at most 24 is awaited"},
        Fault{"wrong_shape", "Y of shape [6] where [2,3] is awaited"},
        Fault{"wrong_dtype", "Y of dtype 'double' where float is awaited"},
        Fault{"wrong_id", "id 3 answers no request (awaited: 2)"},
        Fault{"error", "failed on float [2,7] x [7,3]: out of luck: K = 7"},
        Fault{"print", "the frame starts 'hello fr'"},
        Fault{"extra", "bytes to stdout after its answer, unrequested"},
        Fault{"memory", "went past the memory limit of 300 MiB"}),
    [](const ::testing::TestParamInfo<Fault>& info) { return std::string(info.param.name); });

TEST(CmdBackendTest, ErrorsQuoteTheEndOfTheDriversStderr) {
  auto backend = Start("crash");
  ASSERT_NE(backend, nullptr);
  ASSERT_TRUE(Product(*backend, 3).ok());
  EXPECT_THAT(Product(*backend, 7).message(), HasSubstr("its stderr ends: answered request 1"));
}

// mm-bench times a runtime by the seconds of its y answer; this test driver sends none, so the
// accessor says so (mm-bench then times the round trip) instead of inventing a time.
TEST(CmdBackendTest, LastRuntimeSecondsIsEmptyWhenTheDriverSendsNone) {
  auto backend = Start("none");
  ASSERT_NE(backend, nullptr);
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {2, 3}, {3, 4}}).value();
  auto primitive = backend->Prepare(plan);
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  Tensor a = Tensor::Create(DType::kFloat, {2, 3}).value();
  Tensor b = Tensor::Create(DType::kFloat, {3, 4}).value();
  Tensor y = Tensor::Create(DType::kFloat, plan.y_dims).value();
  ASSERT_TRUE((*primitive)->Execute(a.view(), b.view(), y.mutable_view()).ok());
  EXPECT_FALSE(LastRuntimeSeconds(**primitive).has_value());
}

TEST(CmdBackendTest, ARefusedShapeOfASupportedDTypeIsAConformanceGap) {
  auto backend = Start("refuse_shape");
  ASSERT_NE(backend, nullptr);
  const Status refused = Product(*backend, 7);
  EXPECT_TRUE(IsConformanceGap(refused)) << refused;
  EXPECT_THAT(refused.message(),
              HasSubstr("refused the shape of float [2,7] x [7,3], a dtype its hello declares "
                        "supported: K = 7 is unlucky"));
  EXPECT_TRUE(Product(*backend, 3).ok());
}

TEST(CmdBackendTest, ADriverFillingItsStderrNeverBlocksACall) {
  auto backend = Start("stderr");
  ASSERT_NE(backend, nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Product(*backend, 7).ok());
}

TEST(CmdBackendTest, ADriverWithoutAValidHelloCannotStart) {
  auto command = ParseBackendCmd("fault=" + FaultCommand("bad_hello")).value();
  EXPECT_THAT(StartCommandBackend(command).status().message(),
              HasSubstr("no valid hello: the driver's hello: protocol version 99, but this mm "
                        "speaks 1 to 2"));
  command = ParseBackendCmd("fault=" + FaultCommand("hello_crash")).value();
  EXPECT_THAT(StartCommandBackend(command).status().message(), HasSubstr("crashed: SIGSEGV"));
  // A driver that closes its stdin and stdout at the hello and lives on is not waited for.
  command = ParseBackendCmd("fault=" + FaultCommand("hello_closes_stdout")).value();
  EXPECT_THAT(StartCommandBackend(command).status().message(),
              HasSubstr("it did not exit within 2 s after closing its stdout, and was killed"));
  command = ParseBackendCmd("nothing=/nonexistent/driver --x").value();
  const std::string message = StartCommandBackend(command).status().message();
  EXPECT_THAT(message, HasSubstr("exited with status 127"));
  EXPECT_THAT(message, HasSubstr("cannot execute '/nonexistent/driver'"));
}

TEST(RegisterCommandBackendsTest, RegistersEachDriverUnderItsNameWithItsRuntime) {
  BackendRegistry registry;
  const std::vector<std::string> specs = {"fault=" + FaultCommand("none")};
  ASSERT_TRUE(RegisterCommandBackends(registry, specs).ok());
  EXPECT_TRUE(registry.Contains("fault"));
  EXPECT_THAT(registry.Description("fault"), HasSubstr("fault 1"));
  auto backend = registry.Create("fault");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_TRUE(Product(**backend, 2).ok());
  EXPECT_THAT(RegisterCommandBackends(registry, specs).message(),
              HasSubstr("--backend-cmd fault: the backend name 'fault' is already taken"));
  const std::vector<std::string> broken = {"broken=" + FaultCommand("bad_hello")};
  EXPECT_THAT(RegisterCommandBackends(registry, broken).message(),
              HasSubstr("--backend-cmd broken: driver 'broken'"));
}

}  // namespace
}  // namespace mm::runtime
