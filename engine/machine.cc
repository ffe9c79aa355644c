#include "mm/engine/machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
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

// What MM_MAX_CPU_ISA says, read once: the cap, or why the value is not one.
const StatusOr<std::optional<CpuIsa>>& MaxCpuIsa() {
  static const auto* const cap =
      new StatusOr<std::optional<CpuIsa>>(ParseMaxCpuIsa(EnvOr(kMaxCpuIsaVariable, "")));
  return *cap;
}

}  // namespace

std::string_view CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
    default:
      return "baseline";
  }
}

std::string_view CpuIsaLevel(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return "x86-64-v3";
    case CpuIsa::kAvx512:
      return "x86-64-v4";
    default:
      return "x86-64";
  }
}

CpuIsa SupportedCpuIsa() {
#if defined(__x86_64__)
  // libgcc's checks include the operating system's support (XCR0) for the AVX and AVX-512 state.
#if defined(__clang__)
  // clang 14 knows no ISA-level names, nor "f16c" (every CPU with AVX2 and FMA has F16C).
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  const bool v3 = __builtin_cpu_supports("x86-64-v3");
  const bool v4 = v3 && __builtin_cpu_supports("x86-64-v4");
#endif
  if (v4) return CpuIsa::kAvx512;
  if (v3) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kBaseline;
}

StatusOr<std::optional<CpuIsa>> ParseMaxCpuIsa(std::string_view value) {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Unset or empty: no cap, as for oneDNN's variable.
  if (lower.empty() || lower == "all") return std::optional<CpuIsa>();
  for (CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (lower == CpuIsaName(isa)) return std::optional<CpuIsa>(isa);
  }
  return InvalidArgumentError(std::string(kMaxCpuIsaVariable) + "=" + std::string(value) +
                              " is not an instruction-set level; valid values: baseline, avx2, "
                              "avx512, all (any case)");
}

CpuIsa ChooseCpuIsa(CpuIsa supported, std::optional<CpuIsa> cap) {
  return cap.has_value() ? std::min(supported, *cap) : supported;
}

StatusOr<CpuIsa> ChosenCpuIsa() {
  const StatusOr<std::optional<CpuIsa>>& cap = MaxCpuIsa();
  if (!cap.ok()) return cap.status();
  // The kernels exist up to the highest level this build compiled (cmake/IsaKernels.cmake).
  static const CpuIsa chosen =
      ChooseCpuIsa(std::min(SupportedCpuIsa(), static_cast<CpuIsa>(MM_MAX_COMPILED_CPU_ISA)), *cap);
  return chosen;
}

std::string DescribeChosenCpuIsa() {
  const StatusOr<CpuIsa> chosen = ChosenCpuIsa();
  if (!chosen.ok()) return chosen.status().message();
  std::string text =
      std::string(CpuIsaName(*chosen)) + " (" + std::string(CpuIsaLevel(*chosen)) + ")";
  const CpuIsa supported = SupportedCpuIsa();
  if (*chosen != supported && EnvOr(kMaxCpuIsaVariable, "") != "") {
    text += ", capped by " + std::string(kMaxCpuIsaVariable) + "=" + EnvOr(kMaxCpuIsaVariable, "") +
            " from " + std::string(CpuIsaName(supported));
  }
  if (static_cast<int>(supported) > MM_MAX_COMPILED_CPU_ISA) {
    text += ", the highest level this build has kernels for (the CPU runs " +
            std::string(CpuIsaName(supported)) + ")";
  }
  return text;
}

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
  if (!mm_kernels.empty()) text += ", mm kernels " + mm_kernels;
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
  info.mm_kernels = DescribeChosenCpuIsa();
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
