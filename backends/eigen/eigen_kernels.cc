// The eigen backend's products and casts (eigen_kernels.h), compiled once per instruction-set
// level into the namespace MM_ISA_NAMESPACE (cmake/IsaKernels.cmake): Eigen picks its SIMD kernels
// at compile time from the target flags.
#include "mm/backends/eigen/eigen_kernels.h"

#include <Eigen/Core>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "mm/backends/eigen/eigen_int32_native.h"

namespace mm::eigen_internal {
namespace MM_ISA_NAMESPACE {
namespace {

template <class S>
using RowMajorMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using Vector = Eigen::Array<S, Eigen::Dynamic, 1>;

template <class S>
void Product(const S* a, const S* b, S* y, std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n) {
  const Eigen::Map<const RowMajorMatrix<S>> a_mat(a, m, k);
  const Eigen::Map<const RowMajorMatrix<S>> b_mat(b, k, n);
  Eigen::Map<RowMajorMatrix<S>> y_mat(y, m, n);
  y_mat.noalias() = a_mat * b_mat;
}

// op(X) of a row-major X with leading dimension ld: X itself, or (transposed) X read
// column-major, which is its transpose.
template <class S, int kOrder>
using OperandMap = Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, kOrder>, 0,
                              Eigen::OuterStride<>>;

template <class S, int kAOrder, int kBOrder>
void GemmProduct(const eigen_internal::GemmCall<S>& g) {
  const OperandMap<S, kAOrder> a(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda));
  const OperandMap<S, kBOrder> b(g.b, g.k, g.n, Eigen::OuterStride<>(g.ldb));
  Eigen::Map<RowMajorMatrix<S>> y(g.y, g.m, g.n);
  if (g.accumulate) {
    y.noalias() += g.alpha * a * b;
  } else {
    y.noalias() = g.alpha * a * b;
  }
}

template <class S>
void Gemm(const eigen_internal::GemmCall<S>& g) {
  constexpr int kRow = Eigen::RowMajor, kCol = Eigen::ColMajor;
  if (g.trans_a) {
    g.trans_b ? GemmProduct<S, kCol, kCol>(g) : GemmProduct<S, kCol, kRow>(g);
  } else {
    g.trans_b ? GemmProduct<S, kRow, kCol>(g) : GemmProduct<S, kRow, kRow>(g);
  }
}

template <class To, class From>
void Cast(const From* from, To* to, std::ptrdiff_t count) {
  Eigen::Map<Vector<To>>(to, count) =
      Eigen::Map<const Vector<From>>(from, count).template cast<To>();
}

// Eigen's type of the same bits as mm's float16 / bfloat16 (mm/engine/float16.h).
template <class T>
using EigenHalf = std::conditional_t<std::is_same_v<T, float16>, Eigen::half, Eigen::bfloat16>;

// Cast for mm's 16-bit types, through Eigen's conversions of its own types element by element,
// the bits handed over by std::bit_cast at the boundary.
template <class Half>
void Widen(const Half* from, float* to, std::ptrdiff_t count) {
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    to[i] = static_cast<float>(std::bit_cast<EigenHalf<Half>>(from[i]));
  }
}
template <class Half>
void Narrow(const float* from, Half* to, std::ptrdiff_t count) {
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    to[i] = std::bit_cast<Half>(EigenHalf<Half>(from[i]));
  }
}

constexpr CpuIsa kIsa = CpuIsa::MM_ISA_ENUM;

}  // namespace
}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::eigen_internal

// The only symbol of this copy that the rest of the program sees.
extern "C" __attribute__((visibility("default"))) const mm::eigen_internal::EigenKernels*
MM_ISA_ENTRY() {
  using namespace mm::eigen_internal::MM_ISA_NAMESPACE;
  using mm::bfloat16, mm::float16, mm::eigen_internal::WrappingInt32Product,
      mm::eigen_internal::WrappingInt64Product;
  // Eigen names the sets it was compiled for in a string literal.
  static const mm::eigen_internal::EigenKernels kKernels = {
      .isa = kIsa,
      .simd = Eigen::SimdInstructionSetsInUse(),
      .product_float = &Product<float>,
      .product_double = &Product<double>,
      .product_uint64 = &Product<std::uint64_t>,
      .product_int32 = &WrappingInt32Product,
      .product_int64 = &WrappingInt64Product,
      .gemm_float = &Gemm<float>,
      .gemm_double = &Gemm<double>,
      .gemm_uint64 = &Gemm<std::uint64_t>,
      .float16_to_float = &Widen<float16>,
      .bfloat16_to_float = &Widen<bfloat16>,
      .float_to_float16 = &Narrow<float16>,
      .float_to_bfloat16 = &Narrow<bfloat16>,
      .int32_to_uint64 = &Cast<std::uint64_t, std::int32_t>,
      .uint32_to_uint64 = &Cast<std::uint64_t, std::uint32_t>,
      .uint64_to_int32 = &Cast<std::int32_t, std::uint64_t>,
      .uint64_to_uint32 = &Cast<std::uint32_t, std::uint64_t>,
  };
  return &kKernels;
}
