// What machine a run happened on, for reports: verdicts and speeds depend on the CPU (libraries
// pick their kernels from it), so every report records it.
#ifndef MM_ENGINE_MACHINE_H_
#define MM_ENGINE_MACHINE_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/engine/status.h"

namespace mm {

// The instruction-set levels mm's own kernels (the oracle's fast path, the eigen backend's
// products) are compiled for, each in its own translation units, one chosen at run time from the
// CPU (as oneDNN, OpenBLAS's DYNAMIC_ARCH and XNNPACK choose theirs): everything else is compiled
// for plain x86-64. In increasing order.
enum class CpuIsa : int {
  kBaseline = 0,  // x86-64 (SSE2): every x86-64 CPU.
  kAvx2 = 1,      // x86-64-v3: AVX2, FMA, BMI1/2, F16C, MOVBE.
  kAvx512 = 2,    // x86-64-v4: x86-64-v3 and AVX-512 F, BW, DQ, VL.
};

// The environment variable that caps the level (read once per process, like oneDNN's
// ONEDNN_MAX_CPU_ISA): baseline, avx2 or avx512 (any case), or all (no cap).
inline constexpr char kMaxCpuIsaVariable[] = "MM_MAX_CPU_ISA";

// "baseline", "avx2", "avx512": the names MM_MAX_CPU_ISA takes.
std::string_view CpuIsaName(CpuIsa isa);
// The x86-64 level the kernels of `isa` are compiled for: "x86-64", "x86-64-v3", "x86-64-v4".
std::string_view CpuIsaLevel(CpuIsa isa);
// The highest level this CPU (and its operating system) runs; kBaseline off x86-64.
CpuIsa SupportedCpuIsa();
// The level a value of MM_MAX_CPU_ISA caps at (nullopt: "all", no cap), or kInvalidArgument naming
// the valid values.
StatusOr<std::optional<CpuIsa>> ParseMaxCpuIsa(std::string_view value);
// The level chosen for a CPU supporting `supported` under `cap`: the lower of the two.
CpuIsa ChooseCpuIsa(CpuIsa supported, std::optional<CpuIsa> cap);
// The level mm's kernels run at in this process: ChooseCpuIsa of this CPU and MM_MAX_CPU_ISA,
// decided on the first call, and no higher than the build compiled (one level without
// MM_ISA_DISPATCH, cmake/IsaKernels.cmake). An unknown MM_MAX_CPU_ISA is kInvalidArgument (on every
// call): a cap that was asked for is never silently ignored.
StatusOr<CpuIsa> ChosenCpuIsa();
// "avx512 (x86-64-v4)", with ", capped by MM_MAX_CPU_ISA=avx2 from avx512" when the cap lowered
// it, or the error ChosenCpuIsa gives.
std::string DescribeChosenCpuIsa();

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
  // The level mm's own kernels run at (DescribeChosenCpuIsa); empty when not recorded.
  std::string mm_kernels;

  // The value kernel_variables holds for `name`; empty when it holds none.
  std::string KernelVariable(std::string_view name) const;

  // "CPU MODEL, 2 logical CPUs (sse4_1 avx avx2 ...), OMP_NUM_THREADS=2", then ", NAME=value" for
  // each kernel variable that is not "unset", then ", mm kernels avx512 (x86-64-v4)" when recorded.
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
