// The Eigen backend: Eigen 3.4's optimised matrix products for every MatMul-13 dtype.
#ifndef MM_BACKENDS_EIGEN_EIGEN_BACKEND_H_
#define MM_BACKENDS_EIGEN_EIGEN_BACKEND_H_

#include <memory>

#include "mm/engine/backend.h"
#include "mm/family/backend.h"

namespace mm {

// Computes MatMul with Eigen's matrix product (`Y.noalias() = A * B` over row-major Eigen::Map
// views of the tensors), one product per batch entry of the engine's plan; broadcast batch entries
// map the same operand memory, nothing is copied.
//  - float and double: native; Eigen accumulates in the dtype itself (float32 / float64, FMA).
//  - float16 and bfloat16: by conversion. Eigen's own half/bfloat16 products round after every
//    multiply and add (a float16 sum of ones stalls at 2048), so A and B are widened to float32
//    into scratch buffers owned by the primitive, multiplied by Eigen's float product (float32
//    accumulation), and each Y element is rounded once to the output type, to nearest even.
//  - int64, uint64: native, wrapping modulo 2^64 exactly like the reference backend (numpy): int64
//    tensors are multiplied as uint64 (same bits; C++ defines unsigned wraparound, signed overflow
//    would be undefined) and read back as two's complement.
//  - int32, uint32: exact modulo 2^32, by the path DefaultInt32Path() picks for the running CPU:
//    with AVX-512DQ, by conversion: widened to uint64 into scratch buffers, Eigen's uint64
//    product, each Y element truncated to 32 bits (sums modulo 2^64 reduce to the same sums
//    modulo 2^32); otherwise native: Eigen's int32 product on the tensors (uint32 as int32 bits),
//    wrapping (compiled with -fwrapv, eigen_int32_native.cc).
// Every numpy.matmul form is supported (K = 0 and empty outputs are answered by the engine).
// Threads: OpenMP, following OMP_NUM_THREADS (omp_get_max_threads() at each Execute), at most one
// thread per 50000 multiply-adds (Eigen's own grain). Work is split into independent Eigen
// products, one per thread, each single-threaded: a batch is spread over the threads (one entry per
// task) when every thread gets an entry or an entry is small; a single product, or a batch folded
// into M (B one matrix shared by a plain stack of A matrices: one product of batch*M rows), is
// split into blocks of rows. This beats Eigen's own parallel GEMM at every mm-bench
// shape (its threads wait for each other inside every product), so Eigen's threading is
// not used. A primitive is not safe to Execute from several threads at once (it owns scratch
// buffers).
class EigenBackend final : public Backend {
 public:
  // How int32 and uint32 are multiplied: Eigen's int32 product on the tensors themselves
  // (wrapping modulo 2^32; uint32 as the same bits), or widened to uint64.
  enum class Int32Path { kNative, kViaUInt64 };
  // The faster path on the running CPU: kViaUInt64 where the chosen copy of the kernels is the
  // AVX-512 one (AVX-512DQ's 64-bit vector multiplies; eigen_kernels.h), kNative otherwise.
  static Int32Path DefaultInt32Path();

  explicit EigenBackend(Int32Path int32_path = DefaultInt32Path());
  ~EigenBackend() override;
  // Its family holds a reference to it.
  EigenBackend(const EigenBackend&) = delete;
  EigenBackend& operator=(const EigenBackend&) = delete;

  std::string_view name() const override { return "eigen"; }
  Support Supports(const MatMulDesc& desc) const override;
  // "Eigen 3.4.0, SIMD AVX512, FMA, ... (kernels for x86-64-v4, chosen for this CPU: avx512
  // (x86-64-v4)), OpenMP up to N threads": the instruction sets of the copy of Eigen's kernels
  // chosen at run time (Eigen::SimdInstructionSetsInUse() there; eigen_kernels.h) and why.
  std::string RunsOn() const override;
  // float, float16, bfloat16 accumulate in float32; double in double; integers exact modulo
  // 2^bits.
  Arithmetic DeclaredArithmetic(DType dtype) const override;
  // MatMul's family in every version and type (eigen_family.h): Gemm in Eigen's GEMM (float,
  // double; float16 and bfloat16 via float32; integers via uint64, wrapping), MatMulInteger and
  // QLinearMatMul through this backend's int32 MatMul of the zero-point-corrected operands, the
  // requantization exact.
  family::FamilyBackend* family() override { return family_.get(); }

  // The number of threads an Execute started now may use: OpenMP's omp_get_max_threads(), which
  // follows OMP_NUM_THREADS and omp_set_num_threads().
  static int MaxThreads();

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  Int32Path int32_path_;
  std::unique_ptr<family::FamilyBackend> family_;
};

}  // namespace mm

#endif  // MM_BACKENDS_EIGEN_EIGEN_BACKEND_H_
