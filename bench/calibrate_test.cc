// The calibration behind the auto backend: the statistic that ranks the candidates of a cell, and
// `mm-bench --mm_calibrate` run as a user runs it. Its table is whole, made for this machine, has
// every cell of the set at 1 thread and at all cores, and auto follows it; interrupted, or with its
// parent killed, it leaves no file and no process behind.
#include "mm/bench/calibrate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/backend_list.h"
#include "mm/bench/bench_shapes.h"
#include "mm/engine/testing/temp_dir.h"

extern char** environ;

namespace mm::bench {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::TempDir;
using ::testing::UnorderedElementsAre;

// auto refuses a table of more than kMaxAutoTableCells cells: the full set's table (a cell per
// calibrated dtype and shape, at 1 thread and at all threads) stays within the count auto's cap
// was chosen from, and ten times it within the cap.
TEST(CalibrationSetTest, AFullCalibrationsTableFitsWellWithinAutosCellCap) {
  std::size_t cells = 0;
  for (DType dtype : CalibratedDTypes(ShapeSet::kFull)) {
    for (const BenchShape& shape : Shapes(ShapeSet::kFull)) cells += Benchmarked(shape, dtype);
  }
  cells *= 2;
  EXPECT_LE(cells, kMaxFullCalibrationCells);
  EXPECT_LE(10 * cells, kMaxAutoTableCells);
}

TEST(FastestBlockMedianTest, ABusyPhaseOverTheLastTwoBlocksDoesNotRankTheCandidate) {
  // Quiet for its first block, then a phase of other work over its last two: the median of all
  // nine samples is the phase's.
  const std::vector<double> samples = {1.36, 1.40, 1.35, 2.27, 2.31, 2.20, 2.25, 2.40, 2.29};
  EXPECT_DOUBLE_EQ(FastestBlockMedian(samples, 3), 1.36);
}

TEST(FastestBlockMedianTest, OneStalledSampleInEveryBlockDoesNotCount) {
  // Block medians 1.1, 1.2 and 1.3: no stall (9.0, 8.0, 7.0) is ever a block's median.
  const std::vector<double> samples = {1.0, 9.0, 1.1, 1.2, 1.05, 8.0, 7.0, 1.3, 1.02};
  EXPECT_DOUBLE_EQ(FastestBlockMedian(samples, 3), 1.1);
}

TEST(FastestBlockMedianTest, TheFastestSampleAloneNeverRanks) {
  // The minimum would rank a candidate on one lucky call; its block's median is 2.0.
  const std::vector<double> samples = {2.0, 0.5, 2.1, 3.0, 3.0, 3.0};
  EXPECT_DOUBLE_EQ(FastestBlockMedian(samples, 3), 2.0);
}

TEST(FastestBlockMedianTest, SamplesAfterTheLastWholeBlockDoNotCount) {
  const std::vector<double> samples = {2.0, 2.0, 2.0, 0.5};
  EXPECT_DOUBLE_EQ(FastestBlockMedian(samples, 3), 2.0);
}

TEST(FastestBlockMedianTest, FewerSamplesThanABlockGiveTheirMedian) {
  // A candidate pruned on its warm-up has one sample; of two, the slower (never a flattering
  // average).
  EXPECT_DOUBLE_EQ(FastestBlockMedian(std::vector<double>{5.0}, 3), 5.0);
  EXPECT_DOUBLE_EQ(FastestBlockMedian(std::vector<double>{3.0, 1.0}, 3), 3.0);
  EXPECT_EQ(FastestBlockMedian({}, 3), std::numeric_limits<double>::infinity());
}

constexpr double kInf = std::numeric_limits<double>::infinity();
using ::testing::ElementsAre;

TEST(OneCallPruneTest, OnlyALongCallFarAboveTheBestIsEnough) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(OneCallPruneThreshold(kInf), kInf) << "the first candidate has nothing to lose to";
  // Fast products: a stalled call of a few ms must not prune a library on its own.
  EXPECT_EQ(OneCallPruneThreshold(1e-5), 0.01);
  EXPECT_EQ(OneCallPruneThreshold(0.008), 0.08);
  // Never below what the two-call rule prunes at (2.25 times the best), so a candidate pruned on
  // one call is never one that rule would have kept.
  for (double best : {1e-7, 1e-3, 0.004, 0.05, 2.0}) {
    EXPECT_GE(OneCallPruneThreshold(best), 2.25 * best) << best;
  }
}

TEST(CloseContendersTest, ACandidateWithinTheMarginIsTimedAgainBesideTheFastest) {
  // A cell lost to a phase of other work: the second and third within the margin, the last
  // pruned.
  const std::vector<double> measures = {1038e-6, 812e-6, 815e-6, kInf};
  EXPECT_THAT(CloseContenders(measures, 0.25), ElementsAre(1, 2));
}

TEST(CloseContendersTest, EveryCandidateWithinTheMarginCountsAndTheBoundIsInclusive) {
  // 1.25 times the fastest is close; just over it is not.
  const std::vector<double> measures = {1.25, 2.0, 1.0, 1.2500001, 1.1};
  EXPECT_THAT(CloseContenders(measures, 0.25), ElementsAre(2, 0, 4));
}

TEST(CloseContendersTest, AClearWinnerIsNotTimedAgain) {
  EXPECT_THAT(CloseContenders(std::vector<double>{1.0, 1.3, 2.0}, 0.25), IsEmpty());
  EXPECT_THAT(CloseContenders(std::vector<double>{1.0}, 0.25), IsEmpty());
}

TEST(CloseContendersTest, PrunedCandidatesAndEmptyCellsHaveNoContenders) {
  // Pruned candidates are infinite: never close, even to each other.
  EXPECT_THAT(CloseContenders(std::vector<double>{kInf, kInf}, 0.25), IsEmpty());
  EXPECT_THAT(CloseContenders(std::vector<double>{}, 0.25), IsEmpty());
  EXPECT_THAT(CloseContenders(std::vector<double>{kInf, 3.0, kInf}, 0.25), IsEmpty());
}

std::vector<std::string> Files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) names.push_back(fs::relative(entry.path(), dir).string());
  }
  return names;
}

// The pids of the processes whose command line contains `text`.
std::vector<pid_t> ProcessesWith(const std::string& text) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(text) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// mm-bench --mm_calibrate=`table` --mm_set=quick, started with its stderr into a pipe.
class Calibration {
 public:
  explicit Calibration(const fs::path& table) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> args = {MM_BENCH_BIN, "--mm_calibrate=" + table.string(),
                                     "--mm_set=quick"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    stderr_ = fds[0];
  }
  // A run a failed test left behind is killed and reaped.
  ~Calibration() {
    if (!reaped_ && pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (stderr_ >= 0) close(stderr_);
  }
  Calibration(const Calibration&) = delete;
  Calibration& operator=(const Calibration&) = delete;

  pid_t pid() const { return pid_; }
  // Reads stderr up to and including the next line containing `text`; false at its end first.
  bool ReadUntil(const std::string& text) {
    std::string line;
    char c;
    while (read(stderr_, &c, 1) == 1) {
      err_ += c;
      if (c != '\n') {
        line += c;
      } else if (line.find(text) != std::string::npos) {
        return true;
      } else {
        line.clear();
      }
    }
    return false;
  }
  // Reads stderr to its end and waits for the process; returns waitpid's status.
  int Finish() {
    char buffer[4096];
    ssize_t n;
    while ((n = read(stderr_, buffer, sizeof buffer)) > 0) err_.append(buffer, n);
    return Wait();
  }
  // Waits for the process (not reading stderr); returns waitpid's status.
  int Wait() {
    int status = 0;
    EXPECT_EQ(waitpid(pid_, &status, 0), pid_);
    reaped_ = true;
    return status;
  }
  const std::string& err() const { return err_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int stderr_ = -1;
  std::string err_;
};

using CellKey = std::tuple<DType, int, Dims, Dims>;

// Samples of an eighth of the usual time: the table's cells are what this test checks, not how
// well the candidates were ranked.
constexpr char kShortSamples[] = "0.0005";

// The ranking of a cell: fastest first; within the tie margin the default ranking decides, and
// for one backend its all-threads entry wins, since auto pays two thread-count changes per call
// for an "@1" entry (a tiny product's whole cost).
TEST(RankEntriesTest, TiesGoToThePreferredBackendAndThenToAllThreads) {
  using Ranking = std::vector<std::pair<double, std::string>>;
  const std::vector<std::string> preference = {"eigen", "onednn", "openblas"};
  EXPECT_EQ(
      RankEntries({{41.0e-9, "eigen"}, {40.9e-9, "eigen@1"}, {72e-9, "netlib"}}, preference, 0.03),
      (Ranking{{41.0e-9, "eigen"}, {40.9e-9, "eigen@1"}, {72e-9, "netlib"}}));
  EXPECT_EQ(
      RankEntries({{10.0, "openblas"}, {10.2, "onednn@1"}, {10.25, "onednn"}}, preference, 0.03),
      (Ranking{{10.25, "onednn"}, {10.0, "openblas"}, {10.2, "onednn@1"}}));
  // Beyond the margin the fastest wins, whatever the preference or the thread count.
  EXPECT_EQ(RankEntries({{8.0, "eigen"}, {6.2, "onednn@1"}}, preference, 0.03),
            (Ranking{{6.2, "onednn@1"}, {8.0, "eigen"}}));
  // An entry the preference does not name loses every tie.
  EXPECT_EQ(RankEntries({{1.0, "blis"}, {1.01, "openblas"}}, preference, 0.03),
            (Ranking{{1.01, "openblas"}, {1.0, "blis"}}));
  EXPECT_TRUE(RankEntries({}, preference, 0.03).empty());
}

// Another process spinning on a core while a part measures is load the table records; this
// process's own CPU time and the part's are not.
TEST(LoadMeterTest, CountsAnotherProcesssWorkButNotThePartsOrItsOwn) {
  const LoadMeter meter;
  const pid_t spinner = fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
    volatile double sink = 0;
    while (std::chrono::steady_clock::now() < end) sink = sink + 1;
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  ASSERT_EQ(wait4(spinner, &status, 0, &usage), spinner);
  const double spun = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                      1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  const std::optional<CalibrationLoad> other = meter.Finish(1, 0.0);
  ASSERT_TRUE(other.has_value()) << "/proc/stat unreadable";
  EXPECT_EQ(other->threads, 1);
  EXPECT_GE(other->seconds, 0.6);
  EXPECT_GE(other->other_cores, 0.4) << "a process spun for the whole time";
  // The same spinner declared as the part: its CPU time is not load.
  const std::optional<CalibrationLoad> part = meter.Finish(1, spun);
  ASSERT_TRUE(part.has_value());
  EXPECT_NEAR(other->other_cores - part->other_cores, spun / part->seconds, 0.1);
}

TEST(CalibratedDTypesTest, TheQuickTableCoversEveryFloatDTypeAndTheFullOneEveryBenchmarked) {
  // Without float16 cells auto would run float16 on all the threads it is given at every size,
  // where a small product is fastest on one.
  EXPECT_THAT(CalibratedDTypes(ShapeSet::kQuick),
              UnorderedElementsAre(DType::kFloat, DType::kBFloat16, DType::kFloat16, DType::kDouble,
                                   DType::kInt32));
  const std::span<const DType> full = BenchDTypes(ShapeSet::kFull);
  EXPECT_THAT(CalibratedDTypes(ShapeSet::kFull), ElementsAreArray(full.begin(), full.end()));
}

TEST(CalibrationRunTest, WritesAWholeTableOfThisMachineWithEveryCellAndAutoFollowsIt) {
  TempDir dir("mm_calibrate_test");
  const fs::path table_path = dir.path() / "cache" / "mm" / "auto.json";  // Folders made for it.
  setenv("MM_CALIBRATE_SAMPLE_SECONDS", kShortSamples, 1);
  Calibration run(table_path);
  unsetenv("MM_CALIBRATE_SAMPLE_SECONDS");
  const int status = run.Finish();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << run.err();
  EXPECT_THAT(run.err(), HasSubstr("cells to " + table_path.string()));
  // No part file, no half-written copy beside it.
  EXPECT_EQ(Files(dir.path()), std::vector<std::string>{"cache/mm/auto.json"});

  std::ifstream in(table_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const BackendRegistry candidates = AutoCandidateBackends();
  auto table = ParseAutoTable(text, table_path.string(), CurrentAutoIdentity(candidates));
  ASSERT_TRUE(table.ok()) << table.status();

  // Every quick shape and dtype at 1 thread and at the threads auto is given (each thread count
  // measured by its own process: a part run at the wrong OMP_NUM_THREADS would label its cells
  // so), once each.
  const int all = std::max(1, omp_get_max_threads());
  std::set<CellKey> expected;
  for (int threads : std::set<int>{1, all}) {
    for (DType dtype : CalibratedDTypes(ShapeSet::kQuick)) {
      for (const BenchShape& shape : Shapes(ShapeSet::kQuick)) {
        if (Benchmarked(shape, dtype))
          expected.insert({dtype, threads, shape.a_dims, shape.b_dims});
      }
    }
  }
  // And the family's calibrated descriptions on every 2-D quick shape.
  std::set<std::tuple<std::string, int, Dims, Dims>> expected_family, measured_family;
  for (int threads : std::set<int>{1, all}) {
    for (const family::OpDesc& desc : CalibratedFamilyDescs()) {
      for (const BenchShape& shape : Shapes(ShapeSet::kQuick)) {
        if (shape.a_dims.size() == 2 && shape.b_dims.size() == 2) {
          expected_family.insert({desc.ToString(), threads, shape.a_dims, shape.b_dims});
        }
      }
    }
  }
  std::set<CellKey> measured;
  const std::vector<std::string> names = candidates.Names();
  for (const AutoCell& cell : table->cells) {
    if (cell.op) {
      EXPECT_TRUE(
          measured_family.insert({cell.op->ToString(), cell.threads, cell.a_dims, cell.b_dims})
              .second)
          << "twice: " << cell.op->ToString();
      continue;
    }
    const std::string where = std::string(DTypeName(cell.dtype)) + " at " +
                              std::to_string(cell.threads) + " threads, " +
                              std::to_string(cell.a_dims.size()) + "-d";
    EXPECT_TRUE(measured.insert({cell.dtype, cell.threads, cell.a_dims, cell.b_dims}).second)
        << "twice: " << where;
    ASSERT_FALSE(cell.ranking.empty()) << where;
    EXPECT_EQ(std::set<std::string>(cell.ranking.begin(), cell.ranking.end()).size(),
              cell.ranking.size())
        << where;
    for (const std::string& entry : cell.ranking) {
      // "name" or "name@N": a candidate, on N threads, fewer than the cell's.
      const std::string name = entry.substr(0, entry.find('@'));
      EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << entry << ", " << where;
      if (name != entry) {
        EXPECT_EQ(entry, name + "@1") << where;
        EXPECT_GT(cell.threads, 1) << where;
      }
    }
    if (cell.ranking.size() > 1) {
      ASSERT_EQ(cell.seconds.size(), cell.ranking.size()) << where;
      for (double s : cell.seconds) EXPECT_TRUE(s > 0 && s < 60) << s << ", " << where;
    }
  }
  EXPECT_EQ(measured, expected);
  EXPECT_EQ(measured_family, expected_family);

  // The load each part was measured under, in the order measured; said on stderr when it was high.
  const std::set<int> count_set = {1, all};
  const std::vector<int> counts(count_set.begin(), count_set.end());
  ASSERT_EQ(table->load.size(), counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    EXPECT_EQ(table->load[i].threads, counts[i]);
    EXPECT_GT(table->load[i].seconds, 0);
    EXPECT_GE(table->load[i].other_cores, 0);
    EXPECT_GE(table->load[i].steal_cores, 0);
  }
  EXPECT_EQ(run.err().find("measured under load") != std::string::npos,
            !table->LoadWarning().empty())
      << run.err();

  AutoOptions options;
  options.table_path = table_path.string();
  auto created = AutoBackend::Create(candidates, options);
  ASSERT_TRUE(created.ok()) << created.status();
  const auto& backend = static_cast<const AutoBackend&>(**created);
  ASSERT_TRUE(backend.UsesTable()) << backend.RunsOn();
  EXPECT_THAT(backend.RunsOn(), HasSubstr("calibration table " + table_path.string()));
  // At a measured shape and thread count, auto runs the cell's winner.
  for (const AutoCell& cell : table->cells) {
    // A family cell's winner is the choice of ComputeOp at its product's extents.
    auto choice = cell.op ? backend.ChooseOp(*cell.op,
                                             {1, static_cast<double>(cell.a_dims[0]),
                                              static_cast<double>(cell.a_dims[1]),
                                              static_cast<double>(cell.b_dims[1])},
                                             cell.threads)
                          : backend.Choose({cell.dtype, cell.a_dims, cell.b_dims}, cell.threads);
    ASSERT_TRUE(choice.ok()) << choice.status();
    const std::string& first = cell.ranking[0];
    EXPECT_EQ(choice->backend, first.substr(0, first.find('@'))) << choice->source;
    EXPECT_EQ(choice->threads, first.find('@') == std::string::npos ? 0 : 1) << choice->source;
    EXPECT_THAT(choice->source, HasSubstr("table cell"));
  }
}

TEST(CalibrationRunTest, ASampleTimeThatIsNotSecondsIsRefusedBeforeMeasuring) {
  TempDir dir("mm_calibrate_test");
  const fs::path table_path = dir.path() / "auto.json";
  for (const char* value : {"fast", "0", "-1", "2", "0.001s"}) {
    setenv("MM_CALIBRATE_SAMPLE_SECONDS", value, 1);
    Calibration run(table_path);
    unsetenv("MM_CALIBRATE_SAMPLE_SECONDS");
    const int status = run.Finish();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << value << ": " << status;
    EXPECT_THAT(run.err(), HasSubstr("MM_CALIBRATE_SAMPLE_SECONDS must be a number of seconds in "
                                     "(0, 1], got '" +
                                     std::string(value) + "'"));
    EXPECT_THAT(run.err(), Not(HasSubstr("calibrated"))) << value;
    EXPECT_THAT(Files(dir.path()), IsEmpty()) << value;
  }
}

// A calibration interrupted while its 1-thread part measures: a cell is done, and the child will
// write its part file next to the table.
class InterruptedCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(run_.ReadUntil("calibrated")) << run_.err();
    ASSERT_EQ(ProcessesWith(part_).size(), 1u);
  }
  TempDir dir_{"mm_calibrate_test"};
  const fs::path table_ = dir_.path() / "auto.json";
  const std::string part_ = "--mm_calibrate_part=" + table_.string() + ".part1";
  Calibration run_{table_};
};

TEST_F(InterruptedCalibrationTest, SigtermStopsTheMeasuringChildAndLeavesNoFile) {
  ASSERT_EQ(kill(run_.pid(), SIGTERM), 0);
  const int status = run_.Finish();
  ASSERT_TRUE(WIFEXITED(status)) << status << "\n" << run_.err();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << run_.err();
  EXPECT_THAT(run_.err(), HasSubstr("calibration interrupted by SIGTERM; no table written to " +
                                    table_.string()));
  // The parent waited for the child: it is gone now, not measuring on for nobody.
  EXPECT_THAT(ProcessesWith(part_), IsEmpty());
  EXPECT_THAT(Files(dir_.path()), IsEmpty());
}

TEST_F(InterruptedCalibrationTest, AMeasuringChildDiesWithItsKilledParent) {
  // SIGKILL cannot be passed on: the child must notice by itself. (The pipe stays open, so that
  // the child is not ended by writing into a closed one instead.)
  ASSERT_EQ(kill(run_.pid(), SIGKILL), 0);
  run_.Wait();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ProcessesWith(part_).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(ProcessesWith(part_), IsEmpty());
  EXPECT_THAT(Files(dir_.path()), IsEmpty());
}

}  // namespace
}  // namespace mm::bench
