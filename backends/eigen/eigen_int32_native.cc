#include "mm/backends/eigen/eigen_int32_native.h"

#include <Eigen/Core>

namespace mm::eigen_internal {

void WrappingInt32Product(const std::int32_t* a, const std::int32_t* b, std::int32_t* y,
                          std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n) {
  using Matrix = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Matrix> a_mat(a, m, k);
  const Eigen::Map<const Matrix> b_mat(b, k, n);
  Eigen::Map<Matrix> y_mat(y, m, n);
  y_mat.noalias() = a_mat * b_mat;
}

void WrappingInt64Product(const std::int64_t* a, const std::int64_t* b, std::int64_t* y,
                          std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n) {
  using Matrix = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Matrix> a_mat(a, m, k);
  const Eigen::Map<const Matrix> b_mat(b, k, n);
  Eigen::Map<Matrix> y_mat(y, m, n);
  y_mat.noalias() = a_mat * b_mat;
}

}  // namespace mm::eigen_internal
