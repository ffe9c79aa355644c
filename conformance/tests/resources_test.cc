// What a backend call leaves behind: the figures CallMonitor reads around a call, and the
// findings ResourceTally draws from them per backend, at the thresholds of resources.h.
#include "mm/conformance/judging/resources.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "mm/engine/testing/sanitizers.h"

namespace mm::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
// AddressSanitizer's shadow: a byte per 8 of memory touched, resident in the same process.
#if MM_UNDER_ASAN
constexpr double kShadowBytesPerByte = 1.0 / 8;
#else
constexpr double kShadowBytesPerByte = 0;
#endif

// Threads a test starts: spinning ones (until stopped) or sleeping ones; all joined at the end.
class TestThreads {
 public:
  ~TestThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    woken_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void StartSpinning() {
    threads_.emplace_back([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
      }
    });
  }
  void StartSleeping() {
    threads_.emplace_back([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      woken_.wait(lock, [this] { return stop_.load(); });
    });
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable woken_;
  std::vector<std::thread> threads_;
};

TEST(CallMonitorTest, MemoryKeptByACallIsItsGrowth) {
  CallMonitor monitor;
  monitor.Before();
  // Mapped, not allocated: an allocator may hand back pages already resident.
  constexpr std::size_t kKept = 16 * kMiB;
  void* kept = mmap(nullptr, kKept, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(kept, MAP_FAILED);
  std::memset(kept, 1, kKept);  // Resident only once touched.
  const CallResources call = monitor.After("leaky", /*computed=*/true);
  munmap(kept, kKept);
  EXPECT_EQ(call.process, getpid());
  EXPECT_EQ(call.call, 1);
  EXPECT_GE(call.rss_growth_bytes, 15 * kMiB);
  EXPECT_LE(call.rss_growth_bytes, 18 * kMiB + kShadowBytesPerByte * kKept);
  EXPECT_GE(call.rss_bytes, call.rss_growth_bytes);
  EXPECT_EQ(call.fd_growth, 0);
  EXPECT_EQ(call.thread_growth, 0);
}

TEST(CallMonitorTest, ADescriptorLeftOpenAndAThreadLeftRunningAreCounted) {
  CallMonitor monitor;
  TestThreads threads;
  monitor.Before();
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  threads.StartSleeping();
  const CallResources call = monitor.After("untidy", true);
  EXPECT_EQ(call.fd_growth, 1);
  EXPECT_EQ(call.thread_growth, 1);
  EXPECT_GE(call.fds, 4);  // 0, 1, 2 and this one at least.
  EXPECT_GE(call.threads, 2);
  monitor.Before();
  close(fd);
  const CallResources tidy = monitor.After("untidy", true);
  EXPECT_EQ(tidy.fd_growth, -1);
  EXPECT_EQ(tidy.thread_growth, 0);
}

TEST(CallMonitorTest, CallsAreNumberedPerBackendAndADeclinedCallIsNotOne) {
  CallMonitor monitor;
  std::vector<std::int64_t> numbers;
  for (const auto& [backend, computed] : std::vector<std::pair<std::string, bool>>{
           {"a", true}, {"b", true}, {"a", false}, {"a", true}, {"b", true}}) {
    monitor.Before();
    numbers.push_back(monitor.After(backend, computed).call);
  }
  EXPECT_THAT(numbers, ElementsAre(1, 1, 0, 2, 2));
}

TEST(CallMonitorTest, LooksOutOnThe3rd6th12thCallsAndSoOn) {
  std::vector<std::int64_t> look_outs;
  for (std::int64_t call = 0; call <= 100; ++call) {
    if (IsLookOutCall(call)) look_outs.push_back(call);
  }
  EXPECT_THAT(look_outs, ElementsAre(3, 6, 12, 24, 48, 96));
}

// Calls `backend` 3 times (the 3rd is looked out after); `during_first` runs in its first call.
CallResources ThirdCall(CallMonitor& monitor, const std::string& backend,
                        const std::function<void()>& during_first) {
  CallResources last;
  for (int i = 0; i < 3; ++i) {
    monitor.Before();
    if (i == 0) during_first();
    last = monitor.After(backend, true);
  }
  return last;
}

TEST(CallMonitorTest, AThreadABackendLeftSpinningIsFoundOnALookOut) {
  CallMonitor monitor;
  TestThreads threads;
  const auto start = std::chrono::steady_clock::now();
  const CallResources call = ThirdCall(monitor, "spinner", [&] { threads.StartSpinning(); });
  EXPECT_EQ(call.call, 3);
  EXPECT_EQ(call.spinning_threads, 1);
  // The look-out waited past the delay in which a pool may spin before it sleeps.
  EXPECT_GE(std::chrono::steady_clock::now() - start, kLookOutDelay + kLookOutWindow);
}

TEST(CallMonitorTest, ASleepingPoolIsNotSpinning) {
  CallMonitor monitor;
  TestThreads threads;
  const CallResources call = ThirdCall(monitor, "pool", [&] {
    threads.StartSleeping();
    threads.StartSleeping();
  });
  EXPECT_EQ(call.call, 3);
  EXPECT_EQ(call.spinning_threads, 0);
}

TEST(CallMonitorTest, AnotherBackendsSpinnerIsNotBlamedOnThisOne) {
  CallMonitor monitor;
  TestThreads threads;
  monitor.Before();
  threads.StartSpinning();
  monitor.After("spinner", true);
  EXPECT_EQ(ThirdCall(monitor, "innocent", [] {}).spinning_threads, 0);
}

TEST(CallMonitorTest, CallsOtherThanLookOutsAreNotLookedAt) {
  CallMonitor monitor;
  monitor.Before();
  EXPECT_EQ(monitor.After("a", true).spinning_threads, -1);
  monitor.Before();
  EXPECT_EQ(monitor.After("a", false).spinning_threads, -1);
}

// `calls` figures of one backend in process `process`, numbered 1, 2, ..., each growing by
// `growth` (the first by `first_growth`).
void AddCalls(ResourceTally& tally, const std::string& backend, std::int64_t process, int calls,
              std::int64_t growth, std::int64_t first_growth = 0, std::int64_t fds = 0,
              std::int64_t threads = 0) {
  for (int i = 1; i <= calls; ++i) {
    CallResources c;
    c.process = process;
    c.call = i;
    c.rss_growth_bytes = i == 1 ? first_growth : growth;
    c.rss_bytes = 100 * kMiB + i * growth;
    c.fd_growth = i == 1 ? 0 : fds;
    c.thread_growth = i == 1 ? 0 : threads;
    tally.Add(backend, c);
  }
}

TEST(ResourceTallyTest, ALeakIsItsGrowthPerCallOverEveryProcessRecycledOrNot) {
  ResourceTally tally;
  // Recycled every 6 calls, as at --memory-limit 512 with 64 MiB per call.
  for (std::int64_t process = 1; process <= 4; ++process) {
    AddCalls(tally, "leaky", process, 6, 64 * kMiB, 65 * kMiB);
  }
  const std::vector<BackendResources> out = tally.Finish({"leaky"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].calls, 24);
  EXPECT_EQ(out[0].processes, 4);
  EXPECT_EQ(out[0].calls_after_warm_up, 20);
  EXPECT_DOUBLE_EQ(out[0].RssGrowthPerCall(), 64.0 * kMiB);
  EXPECT_EQ(out[0].peak_rss_bytes, 100 * kMiB + 6 * 64 * kMiB);
  ASSERT_EQ(out[0].findings.size(), 1u);
  EXPECT_EQ(out[0].findings[0],
            "resident memory grows by 64.0 MiB per call (mean of 20 calls after warm-up, in 4 "
            "processes)");
}

TEST(ResourceTallyTest, WarmUpAndShortRunsAndSmallGrowthAreNoFinding) {
  ResourceTally tally;
  AddCalls(tally, "set_up", 1, 50, 0, 300 * kMiB);  // A big first call: a set-up.
  AddCalls(tally, "short", 1, 8, 8 * kMiB);         // 7 calls after warm-up: too few to say.
  AddCalls(tally, "cache", 1, 100, kMiB - 1);       // Just under the threshold.
  AddCalls(tally, "at_threshold", 1, 9, kMiB);
  const std::vector<BackendResources> out =
      tally.Finish({"set_up", "short", "cache", "at_threshold", "never_called"});
  ASSERT_EQ(out.size(), 4u);  // A backend without figures has no entry.
  EXPECT_THAT(out[0].findings, IsEmpty());
  EXPECT_THAT(out[1].findings, IsEmpty());
  EXPECT_THAT(out[2].findings, IsEmpty());
  EXPECT_THAT(out[3].findings, ElementsAre(HasSubstr("grows by 1.0 MiB per call")));
  EXPECT_EQ(BackendsWithFindings(out), 1);
}

TEST(ResourceTallyTest, DescriptorsAndThreadsLeftBehindAreFindingsPastTheirThresholds) {
  ResourceTally tally;
  AddCalls(tally, "fd_each_call", 1, 10, 0, 0, /*fds=*/1);
  AddCalls(tally, "thread_each_call", 1, 10, 0, 0, 0, /*threads=*/1);
  // 4 descriptors over 81 calls after warm-up: fewer than one per 20 calls.
  AddCalls(tally, "lazy", 1, 82, 0);
  for (int i = 0; i < 4; ++i) tally.Add("lazy", {.process = 1, .call = 83 + i, .fd_growth = 1});
  // 3 in 8 calls: fewer than kMinLeftOpen in all.
  AddCalls(tally, "few", 1, 4, 0, 0, 1);
  const std::vector<BackendResources> out =
      tally.Finish({"fd_each_call", "thread_each_call", "lazy", "few"});
  EXPECT_THAT(out[0].findings, ElementsAre("file descriptors left open: 1.00 per call (mean of 9 "
                                           "calls after warm-up, in 1 process)"));
  EXPECT_THAT(out[1].findings, ElementsAre(HasSubstr("threads left running: 1.00 per call")));
  EXPECT_THAT(out[2].findings, IsEmpty()) << out[2].FdGrowthPerCall();
  EXPECT_THAT(out[3].findings, IsEmpty());
}

TEST(ResourceTallyTest, ASpinningLookOutIsAFindingAndDeclinedCallsAreNotCounted) {
  ResourceTally tally;
  tally.Add("spinner", {.process = 1, .call = 3, .spinning_threads = 0});
  tally.Add("spinner", {.process = 1, .call = 6, .spinning_threads = 2});
  tally.Add("spinner", {.process = 1, .call = 0, .rss_growth_bytes = 500 * kMiB});
  const std::vector<BackendResources> out = tally.Finish({"spinner"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].calls, 2);
  EXPECT_EQ(out[0].look_outs, 2);
  EXPECT_EQ(out[0].spinning_look_outs, 1);
  EXPECT_EQ(out[0].rss_growth_bytes, 0);
  EXPECT_THAT(out[0].findings,
              ElementsAre("2 threads it started still ran (not asleep) 250 ms after a "
                          "call returned (1 of 2 look-outs)"));
}

// Figures a CallMonitor could have measured: process 7's 5th call of a backend.
CallResources Measured() {
  return {.process = 7,
          .call = 5,
          .rss_bytes = 100 * kMiB,
          .rss_growth_bytes = kMiB,
          .fds = 9,
          .fd_growth = 1,
          .threads = 4,
          .thread_growth = 0,
          .spinning_threads = -1};
}

TEST(CheckCallResourcesTest, FiguresNoProcessHasAreRefusedNamingTheField) {
  EXPECT_TRUE(CheckCallResources(Measured()).ok());
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  struct Forged {
    std::function<void(CallResources&)> forge;
    const char* says;
  };
  const Forged forgeries[] = {
      {[](CallResources& c) { c = {}; }, "process 0 is not a process id"},
      {[](CallResources& c) { c.call = -1; }, "call -1 is negative"},
      {[](CallResources& c) { c.rss_bytes = 0; }, "rss_bytes 0 is not"},
      {[](CallResources& c) { c.fds = -3; }, "fds -3 is not"},
      {[](CallResources& c) { c.threads = kMaxCount + 1; }, "threads 2147483649 is not"},
      {[](CallResources& c) { c.fd_growth = 9; }, "fd_growth 9 with fds 9 leaves fewer than 1"},
      {[](CallResources& c) { c.rss_growth_bytes = kMax; }, "rss_growth_bytes 9223372036854775807"},
      {[](CallResources& c) { c.rss_growth_bytes = -kMax; },
       "rss_growth_bytes -9223372036854775807 with rss_bytes 104857600 leaves more than"},
      {[](CallResources& c) { c.thread_growth = std::numeric_limits<std::int64_t>::min(); },
       "thread_growth -9223372036854775808"},
      {[](CallResources& c) { c.spinning_threads = 0; },
       "spinning_threads 0 says a look-out followed call 5"},
      {[](CallResources& c) {
         c.call = 6;
         c.spinning_threads = -1;
       },
       "spinning_threads -1 says no look-out followed call 6"},
      {[](CallResources& c) {
         c.call = 6;
         c.spinning_threads = 5;
       },
       "spinning_threads 5 is not -1 (not looked) nor a number of its 4 threads"},
  };
  for (const Forged& f : forgeries) {
    CallResources c = Measured();
    f.forge(c);
    const Status status = CheckCallResources(c);
    EXPECT_THAT(status.message(), HasSubstr(std::string("its resources' ") + f.says));
  }
}

TEST(ResourceTallyTest, SumsSaturateInsteadOfWrappingBelowTheThreshold) {
  ResourceTally tally;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  // Each growth possible on its own as a figure, their sum past int64: wrapped, it would be
  // negative and no finding.
  for (int call = 1; call <= 10; ++call) {
    tally.Add("huge", {.process = 1, .call = call, .rss_growth_bytes = kMax / 4, .fd_growth = 0});
  }
  const std::vector<BackendResources> out = tally.Finish({"huge"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rss_growth_bytes, kMax);
  EXPECT_THAT(out[0].findings, ElementsAre(HasSubstr("resident memory grows by")));
  EXPECT_EQ(SaturatingAdd(std::numeric_limits<std::int64_t>::min(), -1),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(SaturatingAdd(40, 2), 42);
}

// `calls` calls of `backend` in process `process`, one after the other, the process's descriptors
// rising by `fds_per_call` per call and each call saying it grew them by `said`.
void AddTrajectory(ResourceTrajectories& t, const std::string& backend, std::int64_t process,
                   int calls, std::int64_t fds_per_call, std::int64_t said,
                   std::int64_t first = 1) {
  for (int i = 0; i < calls; ++i) {
    CallResources c = Measured();
    c.process = process;
    c.call = first + i;
    c.spinning_threads = IsLookOutCall(c.call) ? 0 : -1;
    c.fds = 10 + i * fds_per_call;
    c.fd_growth = said;
    c.rss_growth_bytes = 0;
    t.Add(backend, c, backend + " call " + std::to_string(c.call), 0);
  }
}

TEST(ResourceTrajectoriesTest, GrowthLoweredBelowTheSuccessiveFiguresIsADisagreement) {
  ResourceTrajectories zeroed;
  AddTrajectory(zeroed, "leaky", 1, 9, 1, 0);  // One more descriptor per call, growth said 0.
  const auto out = zeroed.Finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].backend, "leaky");
  EXPECT_EQ(out[0].result, "leaky call 9");
  EXPECT_EQ(out[0].why,
            "its fd_growth leave 8 more open descriptors unexplained over its calls 1 to 9 in "
            "process 1");

  ResourceTrajectories memory;
  for (int call = 1; call <= 12; ++call) {
    CallResources c = Measured();
    c.call = call;
    c.spinning_threads = IsLookOutCall(call) ? 0 : -1;
    c.rss_bytes = 100 * kMiB + call * 64 * kMiB;
    c.rss_growth_bytes = 0;
    c.fd_growth = 0;
    memory.Add("leaky", c, "r", kMiB);
  }
  ASSERT_EQ(memory.Finish().size(), 1u);
  EXPECT_THAT(memory.Finish()[0].why,
              HasSubstr("its rss_growth_bytes leave 704.0 MiB of the growth of its rss_bytes"));
}

TEST(ResourceTrajectoriesTest, HonestFiguresAgreeWhoeverLeaksInTheProcess) {
  ResourceTrajectories t;
  // The leak said by its own calls; another backend of the same process sees the descriptors
  // rise between its calls, explained by the leaking backend's growth.
  AddTrajectory(t, "leaky", 1, 9, 1, 1);
  AddTrajectory(t, "tidy", 1, 9, 1, 0);
  // Two processes of one id (a resumed report's): call numbers repeat, nothing is judged.
  AddTrajectory(t, "other", 2, 9, 0, 0);
  AddTrajectory(t, "other", 2, 9, 3, 0);
  // Fewer than kMinLeftOpen unexplained.
  AddTrajectory(t, "lazy", 3, 4, 1, 0);
  // The last case's tensors (up to 64 MiB) held at its call's end: no leak of the backend's.
  for (int call = 1; call <= 10; ++call) {
    CallResources c = Measured();
    c.process = 4;
    c.call = call;
    c.spinning_threads = IsLookOutCall(call) ? 0 : -1;
    c.rss_bytes = 100 * kMiB + (call == 10 ? 200 * kMiB : 0);
    c.rss_growth_bytes = 0;
    c.fd_growth = 0;
    t.Add("big_data", c, "r", call == 10 ? 64 * kMiB : kMiB);
  }
  EXPECT_THAT(t.Finish(), IsEmpty());
}

TEST(ByteSizeTest, ReadsAsAPersonWritesIt) {
  EXPECT_EQ(ByteSize(64.0 * kMiB), "64.0 MiB");
  EXPECT_EQ(ByteSize(-3.5 * kMiB), "-3.5 MiB");
  EXPECT_EQ(ByteSize(12 * 1024), "12 KiB");
  EXPECT_EQ(ByteSize(292.6), "293 B");
}

}  // namespace
}  // namespace mm::conformance
