// What a backend call leaves behind in its process: resident memory, file descriptors and threads
// measured around each call (CallMonitor), and per backend, over a run's results, the growth per
// call and the threads found spinning after a call returned (ResourceTally), judged against the
// thresholds below. Worker recycling (--memory-limit) protects the machine; these figures keep a
// leak visible all the same, since every result carries its own call's figures.
#ifndef MM_CONFORMANCE_RESOURCES_H_
#define MM_CONFORMANCE_RESOURCES_H_

#include <dirent.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mm::conformance {

// The figures of one backend call (Supports, Prepare, Execute and the judgement of its Y, whose
// buffers are released by the time "after" is read), from /proc/self of the process that made it.
struct CallResources {
  std::int64_t process = 0;  // Id of the process that made the call (a worker, or the run's own).
  // 1 for that process's first call of the backend that computed something, 2 for the next, ...;
  // 0 for a call the backend declined (UNSUPPORTED), which no growth figure counts.
  std::int64_t call = 0;
  std::int64_t rss_bytes = 0;         // Resident memory after the call.
  std::int64_t rss_growth_bytes = 0;  // After minus before (negative: memory given back).
  std::int64_t fds = 0;               // Open file descriptors after the call.
  std::int64_t fd_growth = 0;         // After minus before.
  std::int64_t threads = 0;           // Threads of the process after the call.
  std::int64_t thread_growth = 0;     // After minus before.
  // How many threads this backend started (first seen after one of its calls) still burned CPU
  // in a look-out after this call returned (CallMonitor: some calls only); -1: not looked.
  std::int64_t spinning_threads = -1;
};

// The look-out for spinning threads: whether a thread a backend started still burns CPU once the
// call has returned. Idle OpenMP threads (OMP_WAIT_POLICY=passive, which mm's tools set when the
// user sets none) sleep at once; a pool that spins a while before sleeping (OpenBLAS's threads,
// about 0.1 s at its default timeout) has stopped by kLookOutDelay; a thread still at it then is
// spinning. A thread is looked at several times in a window: runnable (on a CPU or waiting in a
// run queue for one, as a spinning thread always is whatever the machine's load) in at least
// kSpinningShare of the looks, it was running, not asleep. A look-out costs kLookOutQuickWindow
// when the backend's threads are asleep just after the return (the usual case), else
// kLookOutDelay plus kLookOutWindow.
inline constexpr std::chrono::milliseconds kLookOutQuickWindow{5};
inline constexpr int kLookOutQuickLooks = 6;
inline constexpr std::chrono::milliseconds kLookOutDelay{250};
inline constexpr std::chrono::milliseconds kLookOutWindow{100};
inline constexpr int kLookOutLooks = 21;
inline constexpr double kSpinningShare = 0.5;
// Which calls of a backend in a process are followed by a look-out: the 3rd (its pools exist by
// then), then the 6th, 12th, 24th, ... (a spinner that stays is caught on a later one; a run of
// many tiny calls pays for a few look-outs only).
inline constexpr std::int64_t kFirstLookOutCall = 3;
bool IsLookOutCall(std::int64_t call);

// Measures the calls of one process. Not thread-safe: the process's calls are made one at a time.
class CallMonitor {
 public:
  CallMonitor() = default;
  ~CallMonitor();
  CallMonitor(const CallMonitor&) = delete;
  CallMonitor& operator=(const CallMonitor&) = delete;

  // Just before a backend is called.
  void Before();
  // Just after the call of `backend` returned (`computed`: it computed the product, as
  // BackendComputed says; other calls are measured but not counted toward the backend): the
  // call's figures; a look-out first when the call is one of IsLookOutCall's.
  CallResources After(const std::string& backend, bool computed);

 private:
  struct Snapshot {
    std::int64_t rss_bytes = 0;
    std::int64_t fds = 0;
    std::vector<pid_t> threads;  // Sorted.
  };
  bool Open();
  Snapshot Take();
  std::int64_t SpinningThreads(const std::string& backend,
                               std::chrono::steady_clock::time_point returned);

  pid_t pid_ = -1;  // The process the descriptors below are of (re-opened after a fork).
  int statm_ = -1;
  DIR* fd_dir_ = nullptr;
  DIR* task_dir_ = nullptr;
  Snapshot before_;
  std::map<std::string, std::int64_t> calls_;  // Per backend: its calls that computed.
  std::map<pid_t, std::string> started_by_;    // Thread -> the backend during whose call it came.
};

// The thresholds past which a backend's figures are a finding (ResourceTally). Each figure is
// taken over the calls after each process's first call of the backend (its warm-up: a pool
// started, kernels generated, an allocator's arena grown), so that what one set-up leaves is not
// counted as left by every call.
// Resident memory: at least kLeakBytesPerCall per call on average over at least kMinLeakCalls such
// calls. The node tests' tensors are a few kilobytes and their buffers are freed before "after"
// is read; a cache that grows once by a few MiB in a short run is not a leak per call.
inline constexpr std::int64_t kLeakBytesPerCall = std::int64_t{1} << 20;
inline constexpr std::int64_t kMinLeakCalls = 8;
// File descriptors and threads: at least kMinLeftOpen more in all, and at least one per
// kCallsPerLeftOpen calls. A descriptor or thread opened once, lazily, is not a leak; one left
// behind by every call, or every tenth, runs the process out of them in a long run.
inline constexpr std::int64_t kMinLeftOpen = 4;
inline constexpr std::int64_t kCallsPerLeftOpen = 20;
// Spinning: any look-out that found a thread of the backend spinning.

// One backend's figures over a run's results.
struct BackendResources {
  std::string backend;
  std::int64_t calls = 0;      // Results with figures of a call that computed.
  std::int64_t processes = 0;  // Processes that made them (workers, recycled ones included).
  std::int64_t calls_after_warm_up = 0;  // Those after each process's first.
  // Sums over the calls after warm-up.
  std::int64_t rss_growth_bytes = 0;
  std::int64_t fd_growth = 0;
  std::int64_t thread_growth = 0;
  std::int64_t peak_rss_bytes = 0;      // The most resident memory seen after a call.
  std::int64_t look_outs = 0;           // Calls followed by a look-out for spinning threads.
  std::int64_t spinning_look_outs = 0;  // Those that found a thread of the backend spinning.
  std::int64_t spinning_threads = 0;    // The most threads one look-out found spinning.
  // What is past a threshold, each with its figure ("resident memory grows by 64.0 MiB per call
  // (mean of 180 calls after warm-up, in 31 processes)"); empty when nothing is.
  std::vector<std::string> findings;

  double RssGrowthPerCall() const;  // Bytes; 0 without calls after warm-up.
  double FdGrowthPerCall() const;
  double ThreadGrowthPerCall() const;
};

// "64.0 MiB", "12 KiB", "-3.5 MiB": a byte count as a person reads it.
std::string ByteSize(double bytes);

// The figures of a run's results, per backend, as they arrive (in any order).
class ResourceTally {
 public:
  void Add(const std::string& backend, const CallResources& call);
  // Every backend of `backends` (in that order) that has figures, with its findings.
  std::vector<BackendResources> Finish(const std::vector<std::string>& backends) const;

 private:
  struct Sums {
    BackendResources figures;
    std::set<std::int64_t> processes;
  };
  std::map<std::string, Sums> sums_;
};

// How many backends of `resources` have a finding.
int BackendsWithFindings(const std::vector<BackendResources>& resources);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RESOURCES_H_
