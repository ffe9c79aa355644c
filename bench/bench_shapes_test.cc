// What every mm-bench timing waits for first: the other threads of the process to stop running.
#include "mm/bench/bench_shapes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace mm::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A thread that spins (as OpenBLAS's do after a call) for `seconds` or until stopped, then sleeps
// until stopped.
class Spinner {
 public:
  explicit Spinner(double seconds)
      : thread_([this, seconds] {
          started_ = true;
          const auto until = Clock::now() + std::chrono::duration<double>(seconds);
          while (Clock::now() < until && !stop_) {
          }
          spun_ = !stop_;
          while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }) {
    while (!started_) std::this_thread::yield();  // Running before the wait starts.
  }
  ~Spinner() {
    stop_ = true;
    thread_.join();
  }
  // Whether it spun its whole time.
  bool spun() const { return spun_; }

 private:
  std::atomic<bool> started_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> spun_{false};
  std::thread thread_;
};

// The limits below are far from the waits asserted: a loaded machine (a sanitizer pass beside other
// work) delays a new thread's first run and the caller's polls by a tenth of a second or more.
TEST(SettleOtherThreadsTest, DoesNotWaitForASleepingThread) {
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
  std::thread sleeper([&] {
    std::unique_lock lock(mutex);
    wake.wait_for(lock, std::chrono::seconds(60), [&] { return done; });
  });
  EXPECT_LT(SettleOtherThreads(10.0), 5.0) << "waited for a thread that sleeps";
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  wake.notify_one();
  sleeper.join();
}

TEST(SettleOtherThreadsTest, WaitsForASpinningThreadToStop) {
  Spinner spinner(0.15);
  const double waited = SettleOtherThreads(10.0);
  EXPECT_TRUE(spinner.spun()) << "returned after " << waited << " s, the thread still spinning";
  EXPECT_GT(waited, 0.05);
  EXPECT_LT(waited, 5.0);
}

TEST(SettleOtherThreadsTest, WaitsNoLongerThanItsLimit) {
  Spinner spinner(10.0);  // Spins past the limit, as a library set to spin without end would.
  const double waited = SettleOtherThreads(0.1);
  EXPECT_GE(waited, 0.1);
  EXPECT_LT(waited, 5.0);
  EXPECT_FALSE(spinner.spun());
}

}  // namespace
}  // namespace mm::bench
