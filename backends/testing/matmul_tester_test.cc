// MatMulTester is what every backend test relies on, so it is tested against backends that are
// wrong on purpose: it must fail each, and pass a correct backend under the arithmetic it declares.
#include "mm/backends/testing/matmul_tester.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "mm/backends/reference/reference_backend.h"

namespace mm {
namespace {

using testing::MatMulTester;

// The reference's answer with its last element off by one, for every dtype.
class LastElementOffPrimitive final : public MatMulPrimitive {
 public:
  explicit LastElementOffPrimitive(MatMulPlan plan) : MatMulPrimitive(std::move(plan)) {}

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    ReferenceBackend reference;
    MM_ASSIGN_OR_RETURN(Tensor out, MatMul(reference, a, b));
    std::memcpy(y.data, out.raw_data(), out.NumBytes());
    VisitDType(y.dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      T& last = y.Data<T>()[plan().y_elements - 1];
      if constexpr (std::is_integral_v<T>) {
        last = static_cast<T>(last + 1);
      } else {
        last = RoundFromDouble<T>(ToDouble(last) + 1);
      }
    });
    return OkStatus();
  }
};

class LastElementOffBackend final : public Backend {
 public:
  std::string_view name() const override { return "last_element_off"; }
  Support Supports(const MatMulDesc& desc) const override { return reference_.Supports(desc); }
  Arithmetic DeclaredArithmetic(DType dtype) const override {
    return reference_.DeclaredArithmetic(dtype);
  }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return std::unique_ptr<MatMulPrimitive>(new LastElementOffPrimitive(plan));
  }

 private:
  ReferenceBackend reference_;
};

// It must notice one wrong element of 30 (a batch of 6 rows, K = 17 past any vector width) in
// every dtype.
TEST(MatMulTesterTest, FailsABackendOffInOneElement) {
  LastElementOffBackend wrong;
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    EXPECT_NONFATAL_FAILURE(
        MatMulTester().a_dims({2, 3, 17}).b_dims({17, 5}).dtype(dtype).Test(wrong),
        "1 of 30 elements outside the error bound");
  }
}

// 2-D products summed in the output type itself, one rounding per product and per sum; declares
// the arithmetic it is given, truthfully or not.
class NarrowSumPrimitive final : public MatMulPrimitive {
 public:
  explicit NarrowSumPrimitive(MatMulPlan plan) : MatMulPrimitive(std::move(plan)) {}

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    VisitDType(y.dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if constexpr (!std::is_integral_v<T>) {
        const MatMulPlan& p = plan();
        for (std::int64_t i = 0; i < p.m; ++i) {
          for (std::int64_t j = 0; j < p.n; ++j) {
            T sum = RoundFromDouble<T>(0.0);
            for (std::int64_t q = 0; q < p.k; ++q) {
              const T product = RoundFromDouble<T>(ToDouble(a.Data<T>()[i * p.k + q]) *
                                                   ToDouble(b.Data<T>()[q * p.n + j]));
              sum = RoundFromDouble<T>(ToDouble(sum) + ToDouble(product));
            }
            y.Data<T>()[i * p.n + j] = sum;
          }
        }
      }
    });
    return OkStatus();
  }
};

class NarrowSumBackend final : public Backend {
 public:
  explicit NarrowSumBackend(bool declares_float) : declares_float_(declares_float) {}
  std::string_view name() const override { return "narrow_sum"; }
  Support Supports(const MatMulDesc& desc) const override {
    if (desc.a_dims.size() != 2 || desc.b_dims.size() != 2 ||
        (desc.dtype != DType::kFloat16 && desc.dtype != DType::kBFloat16)) {
      return Support::No("2-D float16 and bfloat16 only");
    }
    return Support::Native();
  }
  Arithmetic DeclaredArithmetic(DType dtype) const override {
    return declares_float_ ? Arithmetic{DType::kFloat, false} : Arithmetic::OwnType(dtype);
  }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return std::unique_ptr<MatMulPrimitive>(new NarrowSumPrimitive(plan));
  }

 private:
  bool declares_float_;
};

// The bound is the declared arithmetic's: a 16-bit sum over K = 200 is far less exact than the
// float32 accumulation it claims (caught), and within the bound of the 16-bit sum it admits.
TEST(MatMulTesterTest, HoldsABackendToTheArithmeticItDeclares) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const MatMulTester tester = MatMulTester().a_dims({8, 200}).b_dims({200, 8}).dtype(dtype);
    NarrowSumBackend claims_float(/*declares_float=*/true);
    EXPECT_NONFATAL_FAILURE(tester.Test(claims_float),
                            "elements outside the error bound (accumulates in float)");
    NarrowSumBackend honest(/*declares_float=*/false);
    tester.Test(honest);
  }
}

TEST(MatMulTesterTest, PassesTheReferenceInEveryDtype) {
  ReferenceBackend reference;
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    MatMulTester().a_dims({2, 3, 17}).b_dims({17, 5}).dtype(dtype).iterations(2).Test(reference);
    MatMulTester()
        .a_dims({4, 9})
        .b_dims({9, 3})
        .dtype(dtype)
        .values(MatMulTester::Values::kFullRange)
        .Test(reference);
  }
}

}  // namespace
}  // namespace mm
