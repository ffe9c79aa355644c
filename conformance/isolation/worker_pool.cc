#include "mm/conformance/isolation/worker_pool.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "mm/conformance/isolation/worker.h"
#include "mm/conformance/judging/compare.h"
#include "mm/engine/process/process.h"
#include "pool.h"

namespace mm::conformance {
namespace pool_internal {

bool Pool::Run(const std::vector<CaseStart>& cases) {
  Enqueue(cases);
  workers_.resize(static_cast<std::size_t>(std::max(1, options_.jobs)));
  while (true) {
    if (Stopped()) {
      Stop();
      return false;
    }
    for (Worker& w : workers_) Feed(w);
    std::vector<Worker*> busy;
    for (Worker& w : workers_) {
      if (w.task) busy.push_back(&w);
    }
    if (busy.empty()) break;
    Wait(busy);
  }
  return true;
}

void Pool::Enqueue(const std::vector<CaseStart>& cases) {
  for (std::size_t slot = 0; slot < cases.size(); ++slot) {
    const CaseStart& c = cases[slot];
    const CaseEntry& entry = catalog_.cases[c.case_index];
    if (!entry.valid()) {
      results_[slot] = InvalidCaseResults(entry, c.case_index, options_);
      Complete(slot);
    } else if (spawner_.launched() && (entry.make_data_set || (entry.make_family_data_set &&
                                                               !FoundByNameInWorkers(entry)))) {
      FailTask({slot, c.case_index, {c.data_set, c.backend, ""}},
               "an in-memory case cannot be sent to a worker of a launcher (internal error)");
      Complete(slot);
    } else {
      pending_.push_back({slot, c.case_index, {c.data_set, c.backend, ""}});
    }
  }
}

void Pool::Feed(Worker& w) {
  while (!pending_.empty() && (!w.task || w.queued.size() < QueueDepth())) {
    if (w.pid < 0 && !Spawn(w)) {
      FailTask(pending_.front(),
               "worker could not be started: " + std::string(std::strerror(errno)));
      Complete(pending_.front().slot);
      pending_.pop_front();
      continue;
    }
    const Task task = pending_.front();
    pending_.pop_front();
    Assign(w, task);
  }
}

void Pool::Stop() {
  for (Worker& w : workers_) Retire(w, /*kill_it=*/true);
  for (std::size_t slot = next_emit_; slot < results_.size(); ++slot) {
    for (Result& r : results_[slot]) Emit(std::move(r));
    std::vector<Result>().swap(results_[slot]);
  }
  next_emit_ = results_.size();
}

void Pool::Wait(const std::vector<Worker*>& busy) {
  const auto limit = std::chrono::duration<double>(options_.timeout_seconds);
  auto now = Clock::now();
  double wait_ms = 1e9;
  for (Worker* w : busy) {
    const double left = std::chrono::duration<double, std::milli>(w->since + limit - now).count();
    wait_ms = std::min(wait_ms, std::max(0.0, left));
  }
  // Memory is sampled, and a stop without a descriptor noticed, at least every 100 ms.
  if (options_.memory_limit_bytes > 0 || (options_.stop != nullptr && options_.stop_fd < 0)) {
    wait_ms = std::min(wait_ms, 100.0);
  }
  std::vector<pollfd> fds;
  for (Worker* w : busy) fds.push_back({w->fd, POLLIN, 0});
  if (options_.stop_fd >= 0) fds.push_back({options_.stop_fd, POLLIN, 0});
  const int ready = poll(fds.data(), fds.size(), static_cast<int>(std::ceil(wait_ms)));
  if (ready < 0 && errno != EINTR) {
    for (Worker* w : busy) Died(*w, "crashed: poll failed: " + std::string(std::strerror(errno)));
    return;
  }
  if (ready < 0 || Stopped()) return;
  for (std::size_t i = 0; i < busy.size(); ++i) {
    Worker& w = *busy[i];
    if (fds[i].revents != 0) Read(w);
  }
  now = Clock::now();
  for (Worker* w : busy) {
    if (w->task && now - w->since > limit) {
      Died(*w, "timed out after " + FormatSeconds(options_.timeout_seconds) + " s");
    }
  }
  if (options_.memory_limit_bytes > 0 && now - last_memory_check_ > kMemoryCheckInterval) {
    last_memory_check_ = now;
    CheckMemory(busy);
  }
}

void Pool::CheckMemory(const std::vector<Worker*>& busy) {
  for (Worker* w : busy) {
    if (!w->task || w->pid <= 0) continue;
    const std::int64_t rss = process::ResidentBytes(w->pid);
    if (rss > options_.memory_limit_bytes) {
      Died(*w, "went past the memory limit of " + Mib(options_.memory_limit_bytes) +
                   " (--memory-limit; resident memory " + Mib(rss) + ", the worker was killed)");
    }
  }
}

void Pool::Complete(std::size_t slot) {
  complete_[slot] = true;
  while (next_emit_ < complete_.size() && complete_[next_emit_]) {
    for (Result& r : results_[next_emit_]) Emit(std::move(r));
    std::vector<Result>().swap(results_[next_emit_]);
    ++next_emit_;
  }
}

// A worker then goes from case to case without waiting for the parent, which may be busy with
// the reports or waiting for a core (docs/notes/2026-12-03-measurements-behind-the-code.md).
// The bound on the work held keeps the end of a run of long cases even: no worker is
// left with many cases while another has none.
std::size_t Pool::QueueDepth() const {
  if (mean_case_seconds_ < 0) return 1;
  const double depth = kQueuedSeconds / std::max(mean_case_seconds_, 1e-9);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::min(depth, 1e6)), 1,
                                 kMaxQueuedPerWorker);
}

}  // namespace pool_internal

using pool_internal::Pool;

std::string FormatSeconds(double seconds) { return FormatDouble(seconds); }

bool RunIsolated(const Catalog& catalog, const std::vector<CaseStart>& cases,
                 const BackendRegistry& registry, const RunOptions& options, ResultSink& sink) {
  if (options.launcher != nullptr &&
      (options.launcher->options().backends != options.backends ||
       options.launcher->options().failed_to_start != options.failed_to_start)) {
    // Its workers would run other backends than those the results are counted for, or create one
    // that could not be described.
    RunOptions here = options;
    here.launcher = nullptr;
    Pool pool(catalog, registry, here, cases.size(), sink);
    return pool.Run(cases);
  }
  Pool pool(catalog, registry, options, cases.size(), sink);
  return pool.Run(cases);
}

}  // namespace mm::conformance
