// BLAS backends: the sgemm_/dgemm_ of a BLAS library found at run time (OpenBLAS, BLIS, ATLAS, the
// reference BLAS), one backend per library, one implementation parameterised by the library's
// description (blas_library.h).
#ifndef MM_BACKENDS_BLAS_BLAS_BACKEND_H_
#define MM_BACKENDS_BLAS_BLAS_BACKEND_H_

#include <filesystem>
#include <memory>
#include <string>

#include "mm/backends/blas/blas_library.h"
#include "mm/engine/backend.h"
#include "mm/engine/registry.h"
#include "mm/family/backend.h"

namespace mm::blas {

// MatMul through one BLAS library's Fortran GEMM, column-major: a row-major Y = A B is computed
// as Y^T = B^T A^T (no transposes, no copies of A or B).
//  - float and double: native, sgemm_ / dgemm_, accumulating in the dtype itself.
//  - bfloat16: where the library has OpenBLAS's sbgemm_ (bf16 in, float32 out), by conversion: one
//    sbgemm_ into a float32 buffer, each Y element rounded once to bfloat16, to nearest even.
//    Declared as float32 accumulation that may flush subnormals (OpenBLAS's AVX512-BF16 kernel
//    uses the dot-product instruction that does).
//  - every other dtype: no. A dimension or leading dimension above 2^31 - 1 (the 32-bit Fortran
//    integer) is a no, never a wrong answer.
// Batches: B shared by a plain stack of A folds into one GEMM of batch*M rows; otherwise one GEMM
// per batch entry at the plan's offsets (broadcast entries reuse the operand's memory).
// Threads: the library's own API sets the count to omp_get_max_threads() at each Execute (mm's
// convention: OMP_NUM_THREADS, omp_set_num_threads); ATLAS and netlib are serial.
class BlasBackend final : public Backend {
 public:
  explicit BlasBackend(std::shared_ptr<const BlasLibrary> library);
  ~BlasBackend() override;
  // Its family holds a reference to it.
  BlasBackend(const BlasBackend&) = delete;
  BlasBackend& operator=(const BlasBackend&) = delete;

  std::string_view name() const override { return library_->description().name; }
  Support Supports(const MatMulDesc& desc) const override;
  // "OpenBLAS 0.3.21 (OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64), core
  // Haswell, pthreads, up to 2 threads; /usr/lib/.../libopenblas.so.0 -> libopenblasp-r0.3.21.so".
  std::string RunsOn() const override;
  // float in float32, double in float64; bfloat16 in float32, flushing subnormals.
  Arithmetic DeclaredArithmetic(DType dtype) const override;

  // Gemm in float and double through sgemm_/dgemm_ (blas_family.h); every other type and operator
  // of the family refused with the reason.
  family::FamilyBackend* family() override { return family_.get(); }

  const BlasLibrary& library() const { return *library_; }

  // The thread count an Execute started now asks the library for: omp_get_max_threads() for a
  // threaded library, 1 for a serial one.
  int RequestedThreads() const;

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  std::shared_ptr<const BlasLibrary> library_;
  std::unique_ptr<family::FamilyBackend> family_;
};

// Registers one backend per description of DebianBlasLibraries() found under `lib_dir`
// (BlasLibraryPath), in that order: available when the library loads with its symbols, else
// RegisterUnavailable with the path looked for and why. Fails only on a name already taken.
Status RegisterBlasBackends(BackendRegistry& registry,
                            const std::filesystem::path& lib_dir = BlasLibDir());

// Registers the backend of one description (as RegisterBlasBackends does for each).
Status RegisterBlasBackend(BackendRegistry& registry, const BlasLibraryDescription& description,
                           const std::filesystem::path& path);

}  // namespace mm::blas

#endif  // MM_BACKENDS_BLAS_BLAS_BACKEND_H_
