// What the auto backend reads from its environment (AutoOptions), and what a tool hands it for
// the duration of a run (ScopedAutoDeviations, ScopedAutoStop).
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "auto_table.h"
#include "mm/backends/auto/auto_backend.h"
#include "mm/engine/io/names.h"

namespace mm {
namespace {

using auto_table::EnvOr;

std::vector<std::string> SplitNames(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : std::string(text) + ",") {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!current.empty()) out.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  return out;
}

// The deviations of the live ScopedAutoDeviations.
std::vector<AutoDeviation>& DeclaredDeviations() {
  static std::vector<AutoDeviation> deviations;
  return deviations;
}

// The stop request of the live ScopedAutoStop.
const volatile std::sig_atomic_t*& StopRequest() {
  static const volatile std::sig_atomic_t* stop = nullptr;
  return stop;
}

// mm-bench beside this executable (the build's bin folder, or an installed bin), else in PATH.
std::string DefaultCalibrator() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path beside = self.parent_path() / "mm-bench";
    if (access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return "mm-bench";
}

}  // namespace

ScopedAutoDeviations::ScopedAutoDeviations(std::vector<AutoDeviation> deviations)
    : previous_(std::exchange(DeclaredDeviations(), std::move(deviations))) {}

ScopedAutoDeviations::~ScopedAutoDeviations() { DeclaredDeviations() = std::move(previous_); }

ScopedAutoStop::ScopedAutoStop(const volatile std::sig_atomic_t* stop)
    : previous_(std::exchange(StopRequest(), stop)) {}

ScopedAutoStop::~ScopedAutoStop() { StopRequest() = previous_; }

std::string AutoOptions::DefaultTablePath() {
  const std::string name = "/auto-" + AutoTableKey() + ".json";
  const std::string xdg = EnvOr("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/mm" + name;
  const std::string home = EnvOr("HOME");
  if (!home.empty()) return home + "/.cache/mm" + name;
  return {};
}

AutoOptions AutoOptions::FromEnvironment() {
  AutoOptions options;
  options.exclude = SplitNames(EnvOr("MM_AUTO_EXCLUDE"));
  const bool table_given = std::getenv("MM_AUTO_TABLE") != nullptr;
  options.table_path = EnvOr("MM_AUTO_TABLE", DefaultTablePath());
  options.deviations = DeclaredDeviations();
  const std::string calibrate = EnvOr("MM_AUTO_CALIBRATE");
  if (calibrate == "1" || calibrate == "on") {
    options.calibrate = true;
  } else if (calibrate.empty()) {
    options.calibrate = !table_given && std::getenv("CTEST_INTERACTIVE_DEBUG_MODE") == nullptr;
  } else if (calibrate != "0" && calibrate != "off") {
    options.setting_error =
        "MM_AUTO_CALIBRATE is \"" + io::Printable(calibrate) + "\"; expected 0, 1, off or on";
  }
  options.calibrator = EnvOr("MM_AUTO_CALIBRATOR", DefaultCalibrator());
  options.stop = StopRequest();
  return options;
}

}  // namespace mm
