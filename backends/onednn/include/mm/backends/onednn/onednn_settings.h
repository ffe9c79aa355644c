// What of the environment changes oneDNN's kernels, for those who record it (machine descriptions,
// auto's table identity) without linking oneDNN.
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_SETTINGS_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_SETTINGS_H_

namespace mm {

// The variable that caps the instruction set oneDNN's kernels use ("AVX2", "SSE41").
inline constexpr char kOneDnnMaxCpuIsaVariable[] = "ONEDNN_MAX_CPU_ISA";

}  // namespace mm

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_SETTINGS_H_
