// Isolated runs: a backend that segfaults, divides by zero, aborts, exits or loops forever on one
// case costs exactly that result (an ERROR naming the signal, or the timeout); every other result
// is what an in-process run gives, in the same order whatever the number of workers; workers are
// reused, and replaced after a death.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "fake_backends.h"
#include "mm/conformance/isolation/worker_pool.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/session/run.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string Key(const Result& r) { return r.case_name + "/" + r.data_set + "/" + r.backend; }

// Where the workers of an isolated run come from: forked from the run's process (which holds the
// catalog), or by a WorkerLauncher started before the run (each task then carries its case).
// Every isolation property holds for both.
enum class ForkedBy { kTheRun, kALauncher };

std::string ForkedByName(const ::testing::TestParamInfo<ForkedBy>& info) {
  return info.param == ForkedBy::kTheRun ? "ForkedByTheRun" : "ForkedByALauncher";
}

class IsolationTest : public ::testing::TestWithParam<ForkedBy> {
 protected:
  IsolationTest() {
    // Three cases; the middle one has the shape the broken backends crash on.
    testing::WriteFloatCase(root_.path(), "test_before", {2, 3}, {3, 4});
    testing::WriteFloatCase(root_.path(), "test_trigger", testing::kTriggerADims, {7, 2});
    testing::WriteFloatCase(root_.path(), "test_zafter", {4, 5}, {5, 1});
    catalog_ = Discover({{root_.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  }

  std::vector<Result> Run(std::vector<std::string> backends, bool isolate, int jobs,
                          double timeout_seconds = 60) {
    RunOptions options;
    options.backends = std::move(backends);
    options.isolate = isolate;
    options.jobs = jobs;
    options.timeout_seconds = timeout_seconds;
    return RunWith(registry_, options);
  }

  // RunConformance, its workers forked as the parameter says.
  std::vector<Result> RunWith(const BackendRegistry& registry, RunOptions options) {
    std::unique_ptr<WorkerLauncher> launcher;
    if (GetParam() == ForkedBy::kALauncher && options.isolate) {
      auto started = WorkerLauncher::Start(registry, options);
      EXPECT_TRUE(started.ok()) << started.status().message();
      if (started.ok()) launcher = std::move(started).value();
      options.launcher = launcher.get();
    }
    return RunConformance(catalog_, registry, options);
  }

  TempDir root_;
  Catalog catalog_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

TEST_P(IsolationTest, EachCrashIsAnErrorForExactlyThatResultAndEverythingElseIsIntact) {
  const std::vector<std::string> backends = {
      "reference", "segfault", "good", "divide_by_zero", "abort", "exit", "endless_loop"};
  // Under the sanitizers a crashing worker first writes the sanitizer's symbolized report, which
  // can take longer than the half second the endless loop is given elsewhere.
  const double timeout = testing::kSanitizedBuild ? 5 : 0.5;
  const std::vector<Result> results = Run(backends, /*isolate=*/true, /*jobs=*/2, timeout);
  ASSERT_EQ(results.size(), 3 * backends.size());

  const std::map<std::string, std::string> expected_errors = {
      {"segfault", testing::CrashedBy("SIGSEGV (signal 11)")},
      {"divide_by_zero", testing::CrashedBy("SIGFPE (signal 8)")},
      {"abort", "crashed: SIGABRT (signal 6) in backend abort"},
      {"exit", "crashed: the worker exited with status 3 in backend exit"},
      {"endless_loop", std::string("timed out after ") + (testing::kSanitizedBuild ? "5" : "0.5") +
                           " s in backend endless_loop"}};
  std::size_t i = 0;
  for (const std::string case_name : {"test_before", "test_trigger", "test_zafter"}) {
    for (const std::string& backend : backends) {
      const Result& r = results[i++];
      SCOPED_TRACE(Key(r));
      EXPECT_EQ(r.case_name, case_name);
      EXPECT_EQ(r.backend, backend);
      EXPECT_EQ(r.data_set, "test_data_set_0");
      if (case_name == "test_trigger" && expected_errors.count(backend)) {
        EXPECT_EQ(r.verdict, Verdict::kError);
        EXPECT_THAT(r.message, HasSubstr(expected_errors.at(backend)));
        EXPECT_THAT(r.message, HasSubstr("in backend " + backend));
        EXPECT_EQ(r.a_dims, testing::kTriggerADims);  // The crash result still says what ran.
      } else {
        EXPECT_EQ(r.verdict, Verdict::kPass) << r.message;
        EXPECT_EQ(r.vs_reference, backend == "reference" ? "is reference" : "bit-identical");
      }
    }
  }
}

TEST_P(IsolationTest, AnAnswerForAnotherTaskIsAnErrorForThatResultNeverAResult) {
  const std::vector<Result> results =
      Run({"reference", "forges_answer", "good"}, /*isolate=*/true, /*jobs=*/1);
  ASSERT_EQ(results.size(), 9u) << "one result per case and backend";
  for (const Result& r : results) {
    if (r.case_name == "test_trigger" && r.backend == "forges_answer") {
      EXPECT_EQ(r.verdict, Verdict::kError);
      EXPECT_THAT(r.message,
                  HasSubstr("unrequested answer: an answer for task 18446744073709551615 "
                            "while the worker is on task"));
    } else {
      EXPECT_EQ(r.verdict, Verdict::kPass) << Key(r) << ": " << r.message;
    }
  }
}

TEST_P(IsolationTest, ResultsAreInCatalogOrderWhateverTheNumberOfWorkers) {
  const std::vector<std::string> backends = {"reference", "good", "nudge", "segfault"};
  auto summary = [](const std::vector<Result>& results) {
    std::vector<std::string> lines;
    for (const Result& r : results) {
      lines.push_back(Key(r) + " " + std::string(VerdictName(r.verdict)) + " " + r.vs_reference);
    }
    return lines;
  };
  const auto one = summary(Run(backends, true, 1));
  EXPECT_EQ(summary(Run(backends, true, 2)), one);
  EXPECT_EQ(summary(Run(backends, true, 5)), one);
  // In one process nothing may crash, so leave the crashing backend out there.
  std::vector<std::string> without_crash = one;
  std::erase_if(without_crash, [](const std::string& line) {
    return line.find("/segfault ") != std::string::npos;
  });
  EXPECT_EQ(summary(Run({"reference", "good", "nudge"}, false, 1)), without_crash);
}

TEST_P(IsolationTest, WorkersAreReusedAcrossCasesAndReplacedAfterACrash) {
  // "process" answers UNSUPPORTED naming its process id: one worker for every case until the
  // segfault on the middle case, then a fresh one; never the test's own process.
  const std::vector<Result> results = Run({"process", "segfault"}, true, 1);
  ASSERT_EQ(results.size(), 6u);
  const std::string here = "runs in process " + std::to_string(getpid());
  EXPECT_NE(results[0].message, here);
  EXPECT_EQ(results[2].message, results[0].message);  // test_trigger: same worker as before.
  EXPECT_EQ(results[3].verdict, Verdict::kError);     // The segfault kills it...
  EXPECT_NE(results[4].message, results[0].message);  // ...and test_zafter gets a new one.
  EXPECT_THAT(results[4].message, HasSubstr("runs in process "));
}

// A worker holds cases beyond the one it is on only for a short while of work: long cases are
// shared among the workers to the end, not queued up behind one of them.
TEST_P(IsolationTest, LongCasesAreSharedAmongTheWorkers) {
  testing::TempDir root;
  for (int i = 0; i < 12; ++i) {
    testing::WriteFloatCase(root.path(), "test_long_" + std::to_string(10 + i), {2, 3}, {3, 4});
  }
  catalog_ = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  ASSERT_EQ(catalog_.cases.size(), 12u);
  std::map<std::string, int> cases_per_process;
  for (const Result& r : Run({"slow_process"}, true, 2)) ++cases_per_process[r.message];
  ASSERT_EQ(cases_per_process.size(), 2u);
  for (const auto& [process, cases] : cases_per_process) EXPECT_GE(cases, 4) << process;
}

TEST_P(IsolationTest, InProcessRunsInThisProcess) {
  const std::vector<Result> results = Run({"process"}, false, 1);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].message, "runs in process " + std::to_string(getpid()));
}

TEST_P(IsolationTest, CrashOfTheReferenceLeavesTheOthersWithoutAThreeWayComparison) {
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register("reference", "crashes on the trigger",
                            testing::FaultyBackend(testing::Fault::kAbort).Factory())
                  .ok());
  ASSERT_TRUE(
      registry.Register("good", "correct", testing::FaultyBackend(testing::Fault::kNone).Factory())
          .ok());
  RunOptions options;
  options.backends = {"good", "reference"};
  const std::vector<Result> results = RunWith(registry, options);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[2].verdict, Verdict::kPass);  // test_trigger on good: judged on expected Y.
  EXPECT_EQ(results[2].vs_reference, "n/a (reference crashed: SIGABRT (signal 6))");
  EXPECT_EQ(results[3].verdict, Verdict::kError);
  EXPECT_THAT(results[3].message, HasSubstr("crashed: SIGABRT (signal 6) in backend reference"));
  EXPECT_EQ(results[4].vs_reference, "bit-identical");
}

TEST_P(IsolationTest, ShardsSplitTheCasesWithoutOverlapAndTogetherCoverAll) {
  std::multiset<std::string> all;
  for (int i = 1; i <= 3; ++i) {
    RunOptions options;
    options.backends = {"good"};
    options.shard = {i, 3};
    for (const Result& r : RunWith(registry_, options)) all.insert(Key(r));
  }
  std::multiset<std::string> unsharded;
  for (const Result& r : Run({"good"}, true, 1)) unsharded.insert(Key(r));
  EXPECT_EQ(all, unsharded);
}

INSTANTIATE_TEST_SUITE_P(Workers, IsolationTest,
                         ::testing::Values(ForkedBy::kTheRun, ForkedBy::kALauncher), ForkedByName);

// A launcher's workers are forked from a process started before the catalog: what the run holds
// by then (here a catalog of 100,000 cases with long names, about 100 MB) is not in them, where
// workers forked by the run hold all of it. Memory measured in the workers themselves: "resident"
// answers with its own process's resident memory.
TEST(WorkerLauncherTest, ItsWorkersDoNotHoldTheCatalog) {
  testing::TempDir root;
  testing::WriteFloatCase(root.path(), "test_small", {2, 3}, {3, 4});
  const BackendRegistry registry = testing::FakeRegistry();
  RunOptions options;
  options.backends = {"resident"};
  auto started = WorkerLauncher::Start(registry, options);
  ASSERT_TRUE(started.ok()) << started.status().message();

  Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  ASSERT_EQ(catalog.cases.size(), 1u);
  constexpr std::size_t kBulk = 100'000;
  for (std::size_t i = 0; i < kBulk; ++i) {
    CaseEntry entry;
    entry.name = "test_bulk_" + std::string(1000, 'x') + std::to_string(i);
    catalog.cases.push_back(std::move(entry));
  }
  const std::vector<CaseStart> just_the_small_one = {{0, 0, 0}};
  auto resident_kib = [&](WorkerLauncher* launcher) {
    struct Collect final : ResultSink {
      void Add(Result r) override { results.push_back(std::move(r)); }
      std::vector<Result> results;
    } collect;
    RunOptions run = options;
    run.launcher = launcher;
    RunIsolated(catalog, just_the_small_one, registry, run, collect);
    EXPECT_EQ(collect.results.size(), 1u);
    if (collect.results.size() != 1) return 0LL;
    const std::string& message = collect.results[0].message;
    EXPECT_THAT(message, ::testing::MatchesRegex("resident [0-9]+ KiB")) << message;
    return std::atoll(message.c_str() + std::string("resident ").size());
  };
  const long long by_the_run = resident_kib(nullptr);
  const long long by_the_launcher = resident_kib(started->get());
  EXPECT_GT(by_the_run, 100'000) << "a worker forked by the run holds its catalog";
  EXPECT_LT(by_the_launcher, by_the_run - 80'000);
}

// A launcher that dies takes its workers with it; the run's results say they could not be
// started, or that their worker was killed, and the run ends.
TEST(WorkerLauncherTest, OneThatIsGoneGivesErrorsNotAHang) {
  testing::TempDir root;
  testing::WriteFloatCase(root.path(), "test_a", {2, 3}, {3, 4});
  testing::WriteFloatCase(root.path(), "test_b", {4, 5}, {5, 1});
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  const BackendRegistry registry = testing::FakeRegistry();
  RunOptions options;
  options.backends = {"good"};
  auto started = WorkerLauncher::Start(registry, options);
  ASSERT_TRUE(started.ok()) << started.status().message();
  ASSERT_EQ(kill((*started)->pid(), SIGKILL), 0);
  options.launcher = started->get();
  const std::vector<Result> results = RunConformance(catalog, registry, options);
  ASSERT_EQ(results.size(), 2u);
  for (const Result& r : results) {
    EXPECT_EQ(r.verdict, Verdict::kError);
    EXPECT_THAT(r.message, HasSubstr("worker could not be started"));
  }
}

// The backends are described by a child of the launcher when there is one, with the answers a
// child of the run gives.
TEST(WorkerLauncherTest, DescribesTheBackendsAsTheRunWould) {
  const BackendRegistry registry = testing::FakeRegistry();
  RunOptions options;
  options.backends = {"good", "cannot_start", "process"};
  auto started = WorkerLauncher::Start(registry, options);
  ASSERT_TRUE(started.ok()) << started.status().message();
  const std::vector<BackendInfo> here = DescribeBackendsInChild(registry, options.backends);
  const std::vector<BackendInfo> there =
      DescribeBackendsInChild(registry, options.backends, started->get());
  ASSERT_EQ(there.size(), 3u);
  for (std::size_t i = 0; i < there.size(); ++i) {
    EXPECT_EQ(there[i].name, here[i].name);
    EXPECT_EQ(there[i].runs_on, here[i].runs_on);
    EXPECT_THAT(there[i].runs_on, ::testing::Not(HasSubstr("not described")));
  }
  EXPECT_THAT(there[1].runs_on, HasSubstr("failed to start"));
  // It is the launcher that forks the describing child: without it, nothing is described.
  ASSERT_EQ(kill((*started)->pid(), SIGKILL), 0);
  for (const BackendInfo& info :
       DescribeBackendsInChild(registry, options.backends, started->get())) {
    EXPECT_THAT(info.runs_on, ::testing::StartsWith("failed to start: ")) << info.name;
  }
}

TEST(ShardTest, TheSplitDependsOnlyOnTheName) {
  // Fixed values: the assignment must not change between machines, runs or releases, or CI
  // matrices would silently run some cases twice and others never.
  EXPECT_TRUE(InShard("test_matmul_2d", {1, 1}));
  int counts[4] = {};
  for (int n = 0; n < 400; ++n) {
    const std::string name = "test_case_" + std::to_string(n);
    int owners = 0;
    for (int i = 1; i <= 4; ++i) {
      if (InShard(name, {i, 4})) {
        ++owners;
        ++counts[i - 1];
      }
    }
    EXPECT_EQ(owners, 1) << name;
  }
  for (int count : counts) EXPECT_GT(count, 60);  // Roughly even: 100 each expected.
}

TEST(WorkerDeathTest, NamesTheSignal) {
  EXPECT_EQ(DescribeWorkerDeath(SIGSEGV), "crashed: SIGSEGV (signal 11)");
  EXPECT_EQ(DescribeWorkerDeath(3 << 8), "crashed: the worker exited with status 3");
  EXPECT_EQ(FormatSeconds(60), "60");
  EXPECT_EQ(FormatSeconds(0.5), "0.5");
}

}  // namespace
}  // namespace mm::conformance
