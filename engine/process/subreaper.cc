// Subreaper: this process made the subreaper of what its children leave behind, and the strays
// ended (process.h).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "mm/engine/process/process.h"
#include "process_internal.h"

namespace mm::process {
namespace {

using Clock = std::chrono::steady_clock;

// The Subreaper's state: how many are alive, whether the outermost made this process a
// subreaper, and the children this process had then.
std::mutex g_subreaper_mutex;
int g_subreapers = 0;
bool g_subreaper_active = false;
int g_subreaper_previous = 0;
std::set<pid_t> g_children_before;

// This process's children: from /proc's children lists, else from every process's parent.
std::vector<pid_t> AllChildren() {
  if (std::optional<std::vector<pid_t>> listed = internal::ListedChildren()) return *listed;
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t end_of_name = line.rfind(')');
    if (end_of_name == std::string::npos || end_of_name + 2 >= line.size()) continue;
    std::istringstream fields(line.substr(end_of_name + 2));
    char state = 0;
    pid_t parent = 0;
    if (fields >> state >> parent && parent == getpid()) children.push_back(std::stoi(name));
  }
  return children;
}

// The children that are strays now (EndStrays), and the groups that must be spared.
std::vector<pid_t> Strays(std::set<pid_t>& spared_groups) {
  const std::set<pid_t> started = internal::StartedChildren();
  spared_groups = {getpgrp()};
  for (const pid_t pid : started) spared_groups.insert(getpgid(pid) > 0 ? getpgid(pid) : pid);
  for (const pid_t pid : g_children_before) {
    if (getpgid(pid) > 0) spared_groups.insert(getpgid(pid));
  }
  std::vector<pid_t> strays;
  for (const pid_t pid : AllChildren()) {
    if (started.count(pid) == 0 && g_children_before.count(pid) == 0) strays.push_back(pid);
  }
  return strays;
}

}  // namespace

Subreaper::Subreaper() {
  std::lock_guard lock(g_subreaper_mutex);
  if (g_subreapers++ > 0) return;  // Inside another: that one's setting and children hold.
  prctl(PR_GET_CHILD_SUBREAPER, &g_subreaper_previous);
  const std::vector<pid_t> children = AllChildren();
  g_children_before = {children.begin(), children.end()};
  g_subreaper_active = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
}

Subreaper::~Subreaper() {
  EndStrays();
  std::lock_guard lock(g_subreaper_mutex);
  if (--g_subreapers > 0) return;
  if (g_subreaper_active) prctl(PR_SET_CHILD_SUBREAPER, g_subreaper_previous);
  g_subreaper_active = false;
  g_children_before.clear();
}

int EndStrays(double timeout_seconds) {
  std::lock_guard lock(g_subreaper_mutex);
  if (!g_subreaper_active) return 0;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  int ended = 0;
  std::set<pid_t> spared;
  for (std::vector<pid_t> strays = Strays(spared); !strays.empty(); strays = Strays(spared)) {
    for (const pid_t pid : strays) {
      // Its group too: what it left there (a driver's helper) would be adopted next, or never.
      const pid_t group = getpgid(pid);
      if (group > 0 && spared.count(group) == 0) kill(-group, SIGKILL);
      kill(pid, SIGKILL);
    }
    // Reaped, their own children are adopted here in turn: the next round ends them.
    for (const pid_t pid : strays) {
      int status = 0;
      while (waitpid(pid, &status, WNOHANG) == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      ++ended;
    }
    if (Clock::now() >= deadline) break;
  }
  return ended;
}

}  // namespace mm::process
