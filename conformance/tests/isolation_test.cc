// Isolated runs: a backend that segfaults, divides by zero, aborts, exits or loops forever on one
// case costs exactly that result (an ERROR naming the signal, or the timeout); every other result
// is what an in-process run gives, in the same order whatever the number of workers; workers are
// reused, and replaced after a death.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "conformance/runner.h"
#include "conformance/tests/fake_backends.h"
#include "conformance/tests/onnx_fixtures.h"
#include "conformance/worker_pool.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string Key(const Result& r) { return r.case_name + "/" + r.data_set + "/" + r.backend; }

class IsolationTest : public ::testing::Test {
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
    return RunConformance(catalog_, registry_, options);
  }

  TempDir root_;
  Catalog catalog_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

TEST_F(IsolationTest, EachCrashIsAnErrorForExactlyThatResultAndEverythingElseIsIntact) {
  const std::vector<std::string> backends = {
      "reference", "segfault", "good", "divide_by_zero", "abort", "exit", "endless_loop"};
  const std::vector<Result> results = Run(backends, /*isolate=*/true, /*jobs=*/2, 0.5);
  ASSERT_EQ(results.size(), 3 * backends.size());

  const std::map<std::string, std::string> expected_errors = {
      {"segfault", testing::CrashedBy("SIGSEGV (signal 11)")},
      {"divide_by_zero", testing::CrashedBy("SIGFPE (signal 8)")},
      {"abort", "crashed: SIGABRT (signal 6) in backend abort"},
      {"exit", "crashed: the worker exited with status 3 in backend exit"},
      {"endless_loop", "timed out after 0.5 s in backend endless_loop"}};
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

TEST_F(IsolationTest, ResultsAreInCatalogOrderWhateverTheNumberOfWorkers) {
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

TEST_F(IsolationTest, WorkersAreReusedAcrossCasesAndReplacedAfterACrash) {
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

TEST_F(IsolationTest, InProcessRunsInThisProcess) {
  const std::vector<Result> results = Run({"process"}, false, 1);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].message, "runs in process " + std::to_string(getpid()));
}

TEST_F(IsolationTest, CrashOfTheReferenceLeavesTheOthersWithoutAThreeWayComparison) {
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register("reference", "crashes on the trigger",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(
                                  std::make_unique<testing::FakeBackend>(testing::Fault::kAbort));
                            })
                  .ok());
  ASSERT_TRUE(registry
                  .Register("good", "correct",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(
                                  std::make_unique<testing::FakeBackend>(testing::Fault::kNone));
                            })
                  .ok());
  RunOptions options;
  options.backends = {"good", "reference"};
  const std::vector<Result> results = RunConformance(catalog_, registry, options);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[2].verdict, Verdict::kPass);  // test_trigger on good: judged on expected Y.
  EXPECT_EQ(results[2].vs_reference, "n/a (reference crashed: SIGABRT (signal 6))");
  EXPECT_EQ(results[3].verdict, Verdict::kError);
  EXPECT_THAT(results[3].message, HasSubstr("crashed: SIGABRT (signal 6) in backend reference"));
  EXPECT_EQ(results[4].vs_reference, "bit-identical");
}

TEST_F(IsolationTest, ShardsSplitTheCasesWithoutOverlapAndTogetherCoverAll) {
  std::multiset<std::string> all;
  for (int i = 1; i <= 3; ++i) {
    RunOptions options;
    options.backends = {"good"};
    options.shard = {i, 3};
    for (const Result& r : RunConformance(catalog_, registry_, options)) all.insert(Key(r));
  }
  std::multiset<std::string> unsharded;
  for (const Result& r : Run({"good"}, true, 1)) unsharded.insert(Key(r));
  EXPECT_EQ(all, unsharded);
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
