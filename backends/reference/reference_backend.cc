#include "mm/backends/reference/reference_backend.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "family_kernels.h"

namespace mm {
namespace {

// The accumulator of T: double for float types, the same-width unsigned type for integers.
template <class T>
using Accumulator =
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>, double>;

template <class T>
Accumulator<T> Widen(T value) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<Accumulator<T>>(value);  // Modular conversion to unsigned.
  } else {
    return ToDouble(value);
  }
}

template <class T>
T Narrow(Accumulator<T> value) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(value);  // Two's complement reinterpretation (C++20).
  } else {
    return RoundFromDouble<T>(value);
  }
}

template <class T>
void ReferenceMatMul(const MatMulPlan& plan, const T* a, const T* b, T* y) {
  using Acc = Accumulator<T>;
  const std::int64_t m = plan.m, k = plan.k, n = plan.n;
  std::vector<Acc> row(static_cast<std::size_t>(n));
  for (std::int64_t batch = 0; batch < plan.batch; ++batch) {
    const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
    const T* a_mat = a + a_offset;
    const T* b_mat = b + b_offset;
    T* y_mat = y + batch * m * n;
    for (std::int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), Acc{0});
      for (std::int64_t p = 0; p < k; ++p) {
        const Acc a_ip = Widen(a_mat[i * k + p]);
        const T* b_row = b_mat + p * n;
        for (std::int64_t j = 0; j < n; ++j) row[j] += a_ip * Widen(b_row[j]);
      }
      for (std::int64_t j = 0; j < n; ++j) y_mat[i * n + j] = Narrow<T>(row[j]);
    }
  }
}

// How the reference accumulates `dtype`, for implementation().
std::string AccumulationOf(DType dtype) {
  switch (dtype) {
    case DType::kInt32:
    case DType::kUInt32:
      return "uint32 accumulation (wraps modulo 2^32)";
    case DType::kInt64:
    case DType::kUInt64:
      return "uint64 accumulation (wraps modulo 2^64)";
    default:
      return "double accumulation, one rounding to " + std::string(DTypeName(dtype));
  }
}

class ReferencePrimitive final : public MatMulPrimitive {
 public:
  using MatMulPrimitive::MatMulPrimitive;

  std::string implementation() const override {
    return "reference i-k-j loops, " + AccumulationOf(plan().desc.dtype);
  }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    VisitDType(plan().desc.dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      ReferenceMatMul<T>(plan(), a.Data<T>(), b.Data<T>(), y.Data<T>());
    });
    return OkStatus();
  }
};

}  // namespace

Support ReferenceBackend::Supports(const MatMulDesc&) const { return Support::Native(); }

Arithmetic ReferenceBackend::DeclaredArithmetic(DType dtype) const {
  // Source: the loops above (double accumulator, one rounding; integers in their unsigned type).
  if (!IsFloat(dtype)) return Arithmetic::OwnType(dtype);
  return {DType::kDouble, false};
}

std::string ReferenceBackend::RunsOn() const {
  return "mm reference: scalar i-k-j loops (the same code on every CPU)";
}

StatusOr<std::unique_ptr<MatMulPrimitive>> ReferenceBackend::PrepareProduct(
    const MatMulPlan& plan) {
  return std::unique_ptr<MatMulPrimitive>(std::make_unique<ReferencePrimitive>(plan));
}

ReferenceBackend::ReferenceBackend() : family_(std::make_unique<reference::FamilyKernels>()) {}
ReferenceBackend::~ReferenceBackend() = default;

}  // namespace mm
