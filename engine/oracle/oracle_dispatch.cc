// The oracle's entry points of oracle_internal.h: the copy of its kernels chosen for this CPU
// (oracle_kernels.h), and the advice on huge pages that the kernels' buffers take.
#include "oracle_internal.h"
#include "oracle_kernels.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mm::oracle_internal {

StatusOr<const OracleKernels*> ChosenOracleKernels() {
  MM_ASSIGN_OR_RETURN(const CpuIsa isa, ChosenCpuIsa());
  // ChosenCpuIsa never exceeds the highest level compiled (MM_MAX_COMPILED_CPU_ISA).
#if MM_MAX_COMPILED_CPU_ISA >= 2
  if (isa >= CpuIsa::kAvx512) return mm_isa_avx512_oracle_kernels();
#endif
#if MM_MAX_COMPILED_CPU_ISA >= 1
  if (isa >= CpuIsa::kAvx2) return mm_isa_avx2_oracle_kernels();
#endif
  (void)isa;
  return mm_isa_baseline_oracle_kernels();
}

namespace {

// The chosen copy; a caller that reaches these functions has already checked ChosenCpuIsa (or gets
// the baseline copy's answer, equal by construction, when MM_MAX_CPU_ISA is unknown).
const OracleKernels& Kernels() {
  const StatusOr<const OracleKernels*> kernels = ChosenOracleKernels();
  return kernels.ok() ? **kernels : *mm_isa_baseline_oracle_kernels();
}

}  // namespace

void AdviseHugePages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{1} << 21;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (start + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t last = (start + bytes) & ~(kHugePage - 1);
  // Advice only: a kernel without transparent huge pages refuses it, and the buffer works as is.
  if (data != nullptr && last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

template <class T>
bool DecideRounding(double v, double r, T* y) {
  return Kernels().Decide<T>()(v, r, y);
}

bool DecideDouble(double p11, double pc, double rr, double r, double* y) {
  return Kernels().decide_double(p11, pc, rr, r, y);
}

template <class T>
StatusOr<std::int64_t> FastFloatMatMul(const MatMulPlan& plan, const T* a, const T* b,
                                       OracleResult& out, const std::atomic<bool>* cancel) {
  return Kernels().Fast<T>()(plan, a, b, out, cancel);
}

StatusOr<std::int64_t> FastDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                                        OracleResult& out, const std::atomic<bool>* cancel) {
  return Kernels().fast_double(plan, a, b, out, cancel);
}

template <class T>
Status FastIntegerMatMul(const MatMulPlan& plan, const T* a, const T* b, T* y,
                         const std::atomic<bool>* cancel) {
  return Kernels().Integer<T>()(plan, a, b, y, cancel);
}

template <class T>
Status ExactFloatMatMul(const MatMulPlan& plan, const T* a, const T* b, OracleResult& out,
                        const std::atomic<bool>* cancel) {
  return Kernels().Exact<T>()(plan, a, b, out, cancel);
}

Status ExactDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                         OracleResult& out, const std::atomic<bool>* cancel) {
  return Kernels().exact_double(plan, a, b, out, cancel);
}

#define MM_ORACLE_FLOAT(T)                                                                     \
  template bool DecideRounding<T>(double, double, T*);                                         \
  template StatusOr<std::int64_t> FastFloatMatMul<T>(const MatMulPlan&, const T*, const T*,    \
                                                     OracleResult&, const std::atomic<bool>*); \
  template Status ExactFloatMatMul<T>(const MatMulPlan&, const T*, const T*, OracleResult&,    \
                                      const std::atomic<bool>*);
MM_ORACLE_FLOAT(float)
MM_ORACLE_FLOAT(float16)
MM_ORACLE_FLOAT(bfloat16)
#undef MM_ORACLE_FLOAT
template Status ExactFloatMatMul<double>(const MatMulPlan&, const double*, const double*,
                                         OracleResult&, const std::atomic<bool>*);
#define MM_ORACLE_INTEGER(T)                                                      \
  template Status FastIntegerMatMul<T>(const MatMulPlan&, const T*, const T*, T*, \
                                       const std::atomic<bool>*);
MM_ORACLE_INTEGER(std::int32_t)
MM_ORACLE_INTEGER(std::int64_t)
MM_ORACLE_INTEGER(std::uint32_t)
MM_ORACLE_INTEGER(std::uint64_t)
#undef MM_ORACLE_INTEGER

}  // namespace mm::oracle_internal
