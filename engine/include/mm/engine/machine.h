// What machine a run happened on, for reports: verdicts and speeds depend on the CPU (libraries
// pick their kernels from it), so every report records it.
#ifndef MM_ENGINE_MACHINE_H_
#define MM_ENGINE_MACHINE_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mm {

struct MachineInfo {
  std::string cpu_model;     // /proc/cpuinfo "model name"; "unknown" if unreadable.
  int logical_cpus = 0;      // Online logical CPUs (std::thread::hardware_concurrency).
  std::string cpu_features;  // The SIMD features that decide kernels, as /proc/cpuinfo names them
                             // ("sse4_1 avx avx2 fma avx512f avx512bw avx512_bf16").
  std::string omp_num_threads;  // OMP_NUM_THREADS, or "unset".
  // Environment variables by which libraries choose their kernels, each with its value or
  // "unset", in the order DescribeMachine was given them (the backends name theirs).
  std::vector<std::pair<std::string, std::string>> kernel_variables;
  std::string os;        // uname: "Linux 6.1.0-... x86_64".
  std::string compiler;  // "g++ 12.2.0" (what built mm).

  // The value kernel_variables holds for `name`; empty when it holds none.
  std::string KernelVariable(std::string_view name) const;

  // "CPU MODEL, 2 logical CPUs (sse4_1 avx avx2 ...), OMP_NUM_THREADS=2", then ", NAME=value" for
  // each kernel variable that is not "unset".
  std::string ToString() const;
};

// Reads this machine's description (cheap: one read of /proc/cpuinfo), with the environment
// variables `kernel_variables` name.
MachineInfo DescribeMachine(const std::vector<std::string>& kernel_variables = {});

// The CPU time this machine has spent since it started, from /proc/stat's "cpu" line, in seconds
// summed over the CPUs: the difference of two readings over a wall time, divided by it, is how
// many cores were busy on average.
struct MachineCpuTimes {
  double busy = 0;   // Every state but idle, iowait and steal (guest time is within user).
  double steal = 0;  // Time the hypervisor ran something else while this machine wanted a CPU.
};
// Reads it; nullopt where /proc/stat cannot be read or parsed (not Linux).
std::optional<MachineCpuTimes> ReadMachineCpuTimes();

}  // namespace mm

#endif  // MM_ENGINE_MACHINE_H_
