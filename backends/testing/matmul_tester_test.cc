// MatMulTester is what every backend test relies on, so it is tested against backends that are
// wrong on purpose: it must fail each, and pass a correct backend under the arithmetic it declares.
#include "mm/backends/testing/matmul_tester.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/reference_kernel.h"
#include "mm/engine/testing/fake_backend.h"

namespace mm {
namespace {

using testing::MatMulTester;

// The reference's answer with its last element off by one, for every dtype, under the
// reference's declared arithmetic.
testing::FakeBackend LastElementOffBackend() {
  auto reference = std::make_shared<ReferenceBackend>();
  return testing::FakeBackend("last_element_off")
      .SupportsBy([reference](const MatMulDesc& desc) { return reference->Supports(desc); })
      .DeclaringBy([reference](DType dtype) { return reference->DeclaredArithmetic(dtype); })
      .Computing(testing::ReferenceKernel())
      .OffByOneAt(-1);
}

// It must notice one wrong element of 30 (a batch of 6 rows, K = 17 past any vector width) in
// every dtype.
TEST(MatMulTesterTest, FailsABackendOffInOneElement) {
  testing::FakeBackend wrong = LastElementOffBackend();
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    EXPECT_NONFATAL_FAILURE(
        MatMulTester().a_dims({2, 3, 17}).b_dims({17, 5}).dtype(dtype).Test(wrong),
        "1 of 30 elements outside the error bound");
  }
}

// 2-D products summed in the output type itself, one rounding per product and per sum.
Status NarrowSum(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  VisitDType(y.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
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

// NarrowSum on 2-D float16 and bfloat16; declares the arithmetic it is given, truthfully or not.
testing::FakeBackend NarrowSumBackend(bool declares_float) {
  testing::FakeBackend backend("narrow_sum");
  backend.Supporting({DType::kFloat16, DType::kBFloat16})
      .SupportsBy([](const MatMulDesc& desc) {
        return desc.a_dims.size() == 2 && desc.b_dims.size() == 2
                   ? Support::Native()
                   : Support::No("2-D float16 and bfloat16 only");
      })
      .Computing(NarrowSum);
  if (declares_float) backend.Declaring({DType::kFloat, false});
  return backend;
}

// The bound is the declared arithmetic's: a 16-bit sum over K = 200 is far less exact than the
// float32 accumulation it claims (caught), and within the bound of the 16-bit sum it admits.
TEST(MatMulTesterTest, HoldsABackendToTheArithmeticItDeclares) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const MatMulTester tester = MatMulTester().a_dims({8, 200}).b_dims({200, 8}).dtype(dtype);
    testing::FakeBackend claims_float = NarrowSumBackend(/*declares_float=*/true);
    EXPECT_NONFATAL_FAILURE(tester.Test(claims_float),
                            "elements outside the error bound (accumulates in float)");
    testing::FakeBackend honest = NarrowSumBackend(/*declares_float=*/false);
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
