// The eigen backend's per-ISA kernels: Eigen's products and vectorised casts, compiled once per
// instruction-set level (eigen_kernels.cc and eigen_int32_native.cc; cmake/IsaKernels.cmake), each
// copy's symbols private to it, reached through its table. Internal to the backend and its
// benchmark.
#ifndef MM_BACKENDS_EIGEN_EIGEN_KERNELS_H_
#define MM_BACKENDS_EIGEN_EIGEN_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mm/engine/dtype.h"
#include "mm/engine/machine.h"
#include "mm/engine/status.h"

namespace mm::eigen_internal {

// Y = A x B for row-major m x k and k x n matrices (every extent > 0), with Eigen's product in S
// (`y.noalias() = a * b` over Eigen::Map views); int32 and int64 wrap (eigen_int32_native.cc).
template <class S>
using ProductFn = void (*)(const S* a, const S* b, S* y, std::ptrdiff_t m, std::ptrdiff_t k,
                           std::ptrdiff_t n);
// One Gemm product, Y += alpha x op(A) x op(B) (accumulate) or Y = alpha x op(A) x op(B), for an
// m x k op(A) and a k x n op(B) (every extent > 0) and a row-major Y [m, n] (leading dimension
// n). op(A) is A itself, row-major with leading dimension lda, or (trans_a) the transpose of a
// row-major [k, m] A, that is A read column-major with leading dimension lda; op(B) likewise.
// Eigen's GEMM takes either storage order and alpha as they are: no operand is copied, and alpha
// scales each block's sum as it is added to Y (GeneralBlockPanelKernel.h: `pmadd(alpha, acc, r)`).
template <class S>
struct GemmCall {
  const S* a = nullptr;
  std::ptrdiff_t lda = 0;
  bool trans_a = false;
  const S* b = nullptr;
  std::ptrdiff_t ldb = 0;
  bool trans_b = false;
  S* y = nullptr;
  std::ptrdiff_t m = 0, k = 0, n = 0;
  S alpha = 1;
  bool accumulate = false;  // Y holds beta x C already.
};
template <class S>
using GemmFn = void (*)(const GemmCall<S>& call);

// to[i] = To(from[i]) for `count` elements, with Eigen's casts (vectorised between integer types;
// float to float16 and bfloat16 rounding to nearest even, on Eigen's own half types; integer casts
// modular).
template <class To, class From>
using CastFn = void (*)(const From* from, To* to, std::ptrdiff_t count);

// One copy's entry points.
struct EigenKernels {
  CpuIsa isa;        // The level this copy is compiled for.
  const char* simd;  // Eigen::SimdInstructionSetsInUse() in this copy: "AVX512, FMA, AVX2, ...".
  ProductFn<float> product_float;
  ProductFn<double> product_double;
  ProductFn<std::uint64_t> product_uint64;
  ProductFn<std::int32_t> product_int32;
  ProductFn<std::int64_t> product_int64;
  // Gemm's products: float, double, and uint64 for every integer type (wrapping modulo 2^64).
  GemmFn<float> gemm_float;
  GemmFn<double> gemm_double;
  GemmFn<std::uint64_t> gemm_uint64;
  CastFn<float, float16> float16_to_float;
  CastFn<float, bfloat16> bfloat16_to_float;
  CastFn<float16, float> float_to_float16;
  CastFn<bfloat16, float> float_to_bfloat16;
  CastFn<std::uint64_t, std::int32_t> int32_to_uint64;
  CastFn<std::uint64_t, std::uint32_t> uint32_to_uint64;
  CastFn<std::int32_t, std::uint64_t> uint64_to_int32;
  CastFn<std::uint32_t, std::uint64_t> uint64_to_uint32;

  // The product in S.
  template <class S>
  ProductFn<S> Product() const {
    if constexpr (std::is_same_v<S, float>) {
      return product_float;
    } else if constexpr (std::is_same_v<S, double>) {
      return product_double;
    } else if constexpr (std::is_same_v<S, std::uint64_t>) {
      return product_uint64;
    } else if constexpr (std::is_same_v<S, std::int32_t>) {
      return product_int32;
    } else {
      static_assert(std::is_same_v<S, std::int64_t>, "no product in this type");
      return product_int64;
    }
  }
  // The Gemm product in S (float, double, uint64).
  template <class S>
  GemmFn<S> Gemm() const {
    if constexpr (std::is_same_v<S, float>) {
      return gemm_float;
    } else if constexpr (std::is_same_v<S, double>) {
      return gemm_double;
    } else {
      static_assert(std::is_same_v<S, std::uint64_t>, "no Gemm in this type");
      return gemm_uint64;
    }
  }
  // The cast from From to To (the pairs above).
  template <class To, class From>
  CastFn<To, From> Cast() const {
    if constexpr (std::is_same_v<From, float16>) {
      return float16_to_float;
    } else if constexpr (std::is_same_v<From, bfloat16>) {
      return bfloat16_to_float;
    } else if constexpr (std::is_same_v<To, float16>) {
      return float_to_float16;
    } else if constexpr (std::is_same_v<To, bfloat16>) {
      return float_to_bfloat16;
    } else if constexpr (std::is_same_v<From, std::int32_t>) {
      return int32_to_uint64;
    } else if constexpr (std::is_same_v<From, std::uint32_t>) {
      return uint32_to_uint64;
    } else if constexpr (std::is_same_v<To, std::int32_t>) {
      return uint64_to_int32;
    } else {
      static_assert(std::is_same_v<To, std::uint32_t>, "no cast between these types");
      return uint64_to_uint32;
    }
  }
};

// The copy of the level ChosenCpuIsa() names (machine.h), or the error of an unknown
// MM_MAX_CPU_ISA.
StatusOr<const EigenKernels*> ChosenEigenKernels();

}  // namespace mm::eigen_internal

// Each copy's entry, the only symbol it exports (cmake/IsaKernels.cmake).
extern "C" {
const mm::eigen_internal::EigenKernels* mm_isa_baseline_eigen_kernels();
const mm::eigen_internal::EigenKernels* mm_isa_avx2_eigen_kernels();
const mm::eigen_internal::EigenKernels* mm_isa_avx512_eigen_kernels();
}

#endif  // MM_BACKENDS_EIGEN_EIGEN_KERNELS_H_
