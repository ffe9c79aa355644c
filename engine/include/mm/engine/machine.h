// What machine a run happened on, for reports: verdicts and speeds depend on the CPU (oneDNN picks
// its kernels from it), so every report records it.
#ifndef MM_ENGINE_MACHINE_H_
#define MM_ENGINE_MACHINE_H_

#include <string>

namespace mm {

struct MachineInfo {
  std::string cpu_model;     // /proc/cpuinfo "model name" ("AMD EPYC"); "unknown" if unreadable.
  int logical_cpus = 0;      // Online logical CPUs (std::thread::hardware_concurrency).
  std::string cpu_features;  // The SIMD features that decide kernels, as /proc/cpuinfo names them
                             // ("sse4_1 avx avx2 fma avx512f avx512bw avx512_bf16").
  std::string omp_num_threads;     // OMP_NUM_THREADS, or "unset".
  std::string onednn_max_cpu_isa;  // ONEDNN_MAX_CPU_ISA, or "unset".
  std::string os;                  // uname: "Linux 6.1.0-... x86_64".
  std::string compiler;            // "g++ 12.2.0" (what built mm).

  // "AMD EPYC, 2 logical CPUs (sse4_1 avx avx2 ...), OMP_NUM_THREADS=2".
  std::string ToString() const;
};

// Reads this machine's description (cheap: one read of /proc/cpuinfo).
MachineInfo DescribeMachine();

}  // namespace mm

#endif  // MM_ENGINE_MACHINE_H_
