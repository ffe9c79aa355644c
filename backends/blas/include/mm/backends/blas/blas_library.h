// BLAS libraries found at run time: where Debian installs each one, how it is loaded (dlopen,
// RTLD_LOCAL, so several live side by side in one process) and what it exports. mm builds and runs
// without any of them; one that cannot be used is reported with the path looked for and why.
#ifndef MM_BACKENDS_BLAS_BLAS_LIBRARY_H_
#define MM_BACKENDS_BLAS_BLAS_LIBRARY_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mm/engine/status.h"

namespace mm::blas {

// The Fortran BLAS GEMMs (column-major), with gfortran's hidden string lengths (size_t, ignored by
// C implementations). Integers are the library's 32-bit blasint.
using SgemmFn = void (*)(const char* transa, const char* transb, const int* m, const int* n,
                         const int* k, const float* alpha, const float* a, const int* lda,
                         const float* b, const int* ldb, const float* beta, float* c,
                         const int* ldc, std::size_t, std::size_t);
using DgemmFn = void (*)(const char* transa, const char* transb, const int* m, const int* n,
                         const int* k, const double* alpha, const double* a, const int* lda,
                         const double* b, const int* ldb, const double* beta, double* c,
                         const int* ldc, std::size_t, std::size_t);
// OpenBLAS's bfloat16 GEMM: bf16 A and B (bit patterns), float32 alpha, beta and C.
using SbgemmFn = void (*)(const char* transa, const char* transb, const int* m, const int* n,
                          const int* k, const float* alpha, const std::uint16_t* a, const int* lda,
                          const std::uint16_t* b, const int* ldb, const float* beta, float* c,
                          const int* ldc, std::size_t, std::size_t);

// How a library is told its thread count, and how it is asked what it picked.
enum class ThreadControl {
  kOpenBlas,  // openblas_set_num_threads / openblas_get_num_threads; openblas_get_config,
              // _corename.
  kBlis,      // bli_thread_set_num_threads / bli_thread_get_num_threads; bli_info_get_version_str,
              // bli_arch_string(bli_arch_query_id()).
  kSerial,    // Single-threaded (ATLAS's serial build, netlib's Fortran): nothing to set.
};

// What mm knows about one BLAS library before loading it.
struct BlasLibraryDescription {
  std::string name;       // Backend name: "openblas", "blis", "atlas", "netlib".
  std::string label;      // "OpenBLAS", "BLIS", "ATLAS", "reference BLAS (netlib)".
  std::string package;    // The Debian package that installs it: "libopenblas0-pthread".
  std::string directory;  // Its directory under the multiarch lib dir: "openblas-pthread".
  std::string file;       // The shared object loaded there: "libopenblas.so.0".
  ThreadControl threads = ThreadControl::kSerial;
};

// The four libraries Debian bookworm ships, in the order they are registered: OpenBLAS (pthreads
// build), BLIS (OpenMP build), ATLAS (serial) and the reference BLAS.
const std::vector<BlasLibraryDescription>& DebianBlasLibraries();

// The directory holding the per-library directories: MM_BLAS_LIBDIR when set (other layouts),
// else the multiarch lib dir this build was configured for (/usr/lib/<CMAKE_LIBRARY_ARCHITECTURE>).
std::filesystem::path BlasLibDir();

// Where `description`'s library is looked for: MM_BLAS_<NAME>_LIB (e.g. MM_BLAS_OPENBLAS_LIB) when
// set, naming the file itself; else lib_dir / directory / file.
std::filesystem::path BlasLibraryPath(const BlasLibraryDescription& description,
                                      const std::filesystem::path& lib_dir);

// One loaded library: its entry points and what it says about itself. Never unloaded (a BLAS
// library's worker threads must not outlive its code), shared by every backend and primitive.
class BlasLibrary {
 public:
  const BlasLibraryDescription& description() const { return description_; }
  // The path loaded and its canonical form (symlinks resolved: "libblas.so.3.11.0").
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& real_path() const { return real_path_; }

  SgemmFn sgemm() const { return sgemm_; }
  DgemmFn dgemm() const { return dgemm_; }
  // Null when the library has no sbgemm_ (every library but an OpenBLAS built with BFLOAT16).
  SbgemmFn sbgemm() const { return sbgemm_; }

  // The library's version: from the library (OpenBLAS's config, BLIS's version string) or, when it
  // cannot say, from the canonical file name (libblas.so.3.11.0 -> "3.11.0"); "" when unknown.
  const std::string& version() const { return version_; }
  // Build configuration as the library reports it ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY
  // Haswell MAX_THREADS=64"; "BLIS 0.9.0, OpenMP"); "" when it cannot say.
  const std::string& config() const { return config_; }
  // The kernel family chosen for this CPU ("Haswell", "SkylakeX", "zen3"), asked each time (it
  // follows the library's own CPU detection); "" when the library cannot say.
  std::string Core() const;
  // "serial" or "pthreads" / "OpenMP".
  std::string ThreadingName() const;

  // Sets the library's thread count (at least 1) through its own API, only when it differs from
  // the current one; a no-op for a serial library.
  void SetThreads(int threads) const;
  // The library's current thread count (1 for a serial library).
  int Threads() const;

  // Loads the library at `path` with dlopen(RTLD_NOW | RTLD_LOCAL) and resolves sgemm_ and dgemm_
  // (required) and the description's thread and information functions (required for its
  // ThreadControl). NOT_FOUND when the file does not exist; FAILED_PRECONDITION with dlopen's
  // message when it fails to load, or naming the missing symbol. A path loaded before in this
  // process returns the same library.
  static StatusOr<std::shared_ptr<const BlasLibrary>> Load(
      const BlasLibraryDescription& description, const std::filesystem::path& path);

 private:
  BlasLibrary() = default;

  BlasLibraryDescription description_;
  std::filesystem::path path_, real_path_;
  std::string version_, config_;
  SgemmFn sgemm_ = nullptr;
  DgemmFn dgemm_ = nullptr;
  SbgemmFn sbgemm_ = nullptr;
  // OpenBLAS's (int) and BLIS's (dim_t, 64-bit) thread functions.
  void (*openblas_set_threads_)(int) = nullptr;
  int (*openblas_get_threads_)() = nullptr;
  char* (*openblas_corename_)() = nullptr;
  void (*blis_set_threads_)(std::int64_t) = nullptr;
  std::int64_t (*blis_get_threads_)() = nullptr;
  int (*blis_arch_id_)() = nullptr;
  const char* (*blis_arch_string_)(int) = nullptr;
};

}  // namespace mm::blas

#endif  // MM_BACKENDS_BLAS_BLAS_LIBRARY_H_
