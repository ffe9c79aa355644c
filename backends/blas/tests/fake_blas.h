// The BLAS backends' tests' access to the fake lib dir (fake_blas.c built as a fake OpenBLAS
// and a reference BLAS without dgemm_) and to the libraries installed here.
#ifndef MM_BACKENDS_BLAS_TESTS_FAKE_BLAS_H_
#define MM_BACKENDS_BLAS_TESTS_FAKE_BLAS_H_

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "mm/backends/blas/blas_backend.h"

namespace mm::blas::fake {

inline const std::filesystem::path kFakeDir = MM_FAKE_BLAS_DIR;

// DebianBlasLibraries()'s description named `name` ("openblas", "blis", "atlas", "netlib").
inline const BlasLibraryDescription& Describe(const std::string& name) {
  for (const BlasLibraryDescription& d : DebianBlasLibraries()) {
    if (d.name == name) return d;
  }
  ADD_FAILURE() << "no description " << name;
  return DebianBlasLibraries().front();
}

// The fake OpenBLAS of the fake lib dir, as the "openblas" backend.
inline std::unique_ptr<BlasBackend> FakeOpenBlas() {
  auto library =
      BlasLibrary::Load(Describe("openblas"), kFakeDir / "openblas-pthread/libopenblas.so.0");
  EXPECT_TRUE(library.ok()) << library.status();
  return library.ok() ? std::make_unique<BlasBackend>(*library) : nullptr;
}

// GEMM calls the fake library has taken so far.
inline int FakeCalls() {
  void* handle = dlopen((kFakeDir / "openblas-pthread/libopenblas.so.0").c_str(),
                        RTLD_NOLOAD | RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr);
  auto calls = reinterpret_cast<int (*)()>(dlsym(handle, "fake_blas_calls"));
  EXPECT_NE(calls, nullptr);
  dlclose(handle);  // Drops only the reference taken here.
  return calls == nullptr ? -1 : calls();
}

}  // namespace mm::blas::fake

#endif  // MM_BACKENDS_BLAS_TESTS_FAKE_BLAS_H_
