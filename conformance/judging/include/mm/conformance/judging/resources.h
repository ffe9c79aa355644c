// What a backend call leaves behind in its process: resident memory, file descriptors and threads
// measured around each call (CallMonitor), and per backend, over a run's results, the growth per
// call and the threads found spinning after a call returned (ResourceTally), judged against the
// thresholds below. Worker recycling (--memory-limit) protects the machine; these figures keep a
// leak visible all the same, since every result carries its own call's figures.
#ifndef MM_CONFORMANCE_JUDGING_RESOURCES_H_
#define MM_CONFORMANCE_JUDGING_RESOURCES_H_

#include <dirent.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mm/engine/status.h"

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

// What no real measurement reaches, so that a figure read back from a report (--resume, merge) is
// bounded and any sum of them is computed without overflow: resident memory within the 48-bit
// user address space of x86-64 and AArch64, descriptors and threads within an int (the kernel's
// fs.nr_open and pid_max are smaller).
inline constexpr std::int64_t kMaxRssBytes = std::int64_t{1} << 48;
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 31;

// OK when `call` could have been measured by a CallMonitor: a process id > 0, `call` >= 0, after
// the call at least 1 byte resident, 1 descriptor and 1 thread (the monitor itself holds 3
// descriptors while it counts), each "before" (after minus growth, computed without overflow)
// as possible as "after" and within the bounds above, and `spinning_threads` >= 0 exactly on the
// calls IsLookOutCall names (a look-out always follows them), at most the process's threads.
// Else INVALID_ARGUMENT naming the field and its value ("its resources' fd_growth 9 with fds 5
// leave -4 descriptors before the call").
Status CheckCallResources(const CallResources& call);

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

// Whether the growth figures of a report's results agree with their successive absolute figures.
// Over the calls of one backend in one process (its results with that process id and `call` >= 1;
// a group with a call number twice mixes two processes of one id, and is not judged), the change
// of `rss_bytes` (`fds`, `threads`) from its first call to its last is what its calls after the
// first grew, plus what happened between them: other calls of the process, each counted at its
// positive growth at most, and the harness, which holds no descriptor or thread between calls and
// no memory but a data set's tensors (and what the allocator keeps of them). A change that leaves
// more unexplained than the finding's threshold of ResourceTally (a leak of kLeakBytesPerCall per
// call over kMinLeakCalls calls, and at least kUnexplainedRssBytes plus kHeldTensorsSlack times
// the largest tensors a result of the process held; kMinLeftOpen descriptors or threads and one
// per kCallsPerLeftOpen calls) says the growth figures were lowered: zeroed growth hiding a leak.
// A process with a result whose figures are impossible (CheckCallResources) is not judged: what
// its other calls grew is unknown. Sums saturate.
inline constexpr std::int64_t kUnexplainedRssBytes = std::int64_t{64} << 20;
inline constexpr std::int64_t kHeldTensorsSlack = 4;
class ResourceTrajectories {
 public:
  // One result's figures; `result` names it in an error (ResultIdentity); `tensor_bytes` bounds
  // the tensors its data set held (TensorBytesBound).
  void Add(const std::string& backend, const CallResources& call, const std::string& result,
           std::int64_t tensor_bytes);
  // A group whose figures disagree.
  struct Disagreement {
    std::int64_t process = 0;
    std::string backend;
    std::string result;  // Its last call's result.
    std::string why;     // "its rss_growth_bytes ... ".
  };
  // Every group whose figures disagree, in (process, backend) order.
  std::vector<Disagreement> Finish() const;

 private:
  // One figure of a group: its value after the first and the last call, the first's growth, and
  // the growth and the positive growth of all its calls.
  struct Figure {
    std::int64_t first = 0, first_growth = 0, last = 0, growth = 0, positive = 0;
  };
  struct Group {
    std::set<std::int64_t> calls;
    bool mixed = false;
    std::int64_t first_call = 0, last_call = 0;
    std::string last_result;
    Figure rss, fds, threads;
  };
  struct Process {
    std::int64_t rss = 0, fds = 0, threads = 0;  // Positive growth of all its results.
    std::int64_t tensor_bytes = 0;               // The most any of its results held.
    bool unjudged = false;  // A result's figures are impossible (CheckCallResources).
  };
  std::map<std::pair<std::int64_t, std::string>, Group> groups_;
  std::map<std::int64_t, Process> processes_;
};

// a + b, saturated at the int64 limits: the sums of resource figures (ResourceTally,
// ResourceTrajectories) never overflow; a saturated sum is past every threshold.
std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b);

// How many backends of `resources` have a finding.
int BackendsWithFindings(const std::vector<BackendResources>& resources);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_RESOURCES_H_
