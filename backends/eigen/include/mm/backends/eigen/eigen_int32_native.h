// The eigen backend's native 32- and 64-bit integer products, in a file of their own compiled with
// -fwrapv.
#ifndef MM_BACKENDS_EIGEN_EIGEN_INT32_NATIVE_H_
#define MM_BACKENDS_EIGEN_EIGEN_INT32_NATIVE_H_

#include <cstdint>

namespace mm::eigen_internal {

// Y = A x B for row-major m x k and k x n int32 matrices (every extent > 0), with Eigen's int32
// product; every sum wraps modulo 2^32 (defined behaviour: this file is compiled with -fwrapv).
void WrappingInt32Product(const std::int32_t* a, const std::int32_t* b, std::int32_t* y,
                          std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n);

// The same for int64, modulo 2^64: the kernel bare Eigen runs for int64 (its uint64 product, the
// same bits, compiled without -fwrapv, was slower).
void WrappingInt64Product(const std::int64_t* a, const std::int64_t* b, std::int64_t* y,
                          std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n);

}  // namespace mm::eigen_internal

#endif  // MM_BACKENDS_EIGEN_EIGEN_INT32_NATIVE_H_
