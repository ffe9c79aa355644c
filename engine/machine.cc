#include "mm/engine/machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace mm {
namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

std::string Trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  const auto end = text.find_last_not_of(" \t\r\n");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

}  // namespace

std::string MachineInfo::KernelVariable(std::string_view name) const {
  for (const auto& [variable, value] : kernel_variables) {
    if (variable == name) return value;
  }
  return "";
}

std::string MachineInfo::ToString() const {
  std::string text = cpu_model + ", " + std::to_string(logical_cpus) + " logical CPUs (" +
                     cpu_features + "), OMP_NUM_THREADS=" + omp_num_threads;
  for (const auto& [variable, value] : kernel_variables) {
    if (value != "unset") text += ", " + variable + "=" + value;
  }
  return text;
}

MachineInfo DescribeMachine(const std::vector<std::string>& kernel_variables) {
  MachineInfo info;
  info.cpu_model = "unknown";
  info.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  // The features that decide which kernels the libraries run, in order of capability.
  static const char* const kFeatures[] = {"sse4_1",      "avx",         "avx2",        "fma",
                                          "f16c",        "avx512f",     "avx512bw",    "avx512vl",
                                          "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile"};
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  bool have_model = false, have_flags = false;
  while ((!have_model || !have_flags) && std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, colon));
    if (key == "model name" && !have_model) {
      info.cpu_model = Trim(line.substr(colon + 1));
      have_model = true;
    } else if (key == "flags" && !have_flags) {
      std::istringstream words(line.substr(colon + 1));
      for (std::string word; words >> word;) flags.insert(word);
      have_flags = true;
    }
  }
  for (const char* feature : kFeatures) {
    if (!flags.count(feature)) continue;
    if (!info.cpu_features.empty()) info.cpu_features += ' ';
    info.cpu_features += feature;
  }
  if (info.cpu_features.empty()) info.cpu_features = "none of sse4_1..avx512 reported";
  info.omp_num_threads = EnvOr("OMP_NUM_THREADS", "unset");
  for (const std::string& variable : kernel_variables) {
    info.kernel_variables.emplace_back(variable, EnvOr(variable.c_str(), "unset"));
  }
  utsname name{};
  if (uname(&name) == 0) {
    info.os = std::string(name.sysname) + " " + name.release + " " + name.machine;
  }
#if defined(__clang__)
  info.compiler = "clang++ " __clang_version__;
#elif defined(__GNUC__)
  info.compiler = "g++ " __VERSION__;
#endif
  return info;
}

std::optional<MachineCpuTimes> ReadMachineCpuTimes() {
  std::ifstream stat("/proc/stat");
  std::string label;
  // user nice system idle iowait irq softirq steal (guest and guest_nice are counted in user).
  long long user, nice, system, idle, iowait, irq, softirq, steal;
  if (!(stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu") {
    return std::nullopt;
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (!(tick > 0)) return std::nullopt;
  return MachineCpuTimes{static_cast<double>(user + nice + system + irq + softirq) / tick,
                         static_cast<double>(steal) / tick};
}

}  // namespace mm
