#include "mm/backends/testing/matmul_tester.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "mm/engine/matmul_plan.h"
#include "mm/engine/testdata/onnx_matmul_examples.h"
#include "mm/oracle/error_bound.h"

namespace mm::testing {

Tensor MatMulTester::RandomTensor(DType dtype, const Dims& dims, std::uint64_t seed,
                                  Values values) {
  Tensor t = Tensor::Create(dtype, dims).value();
  std::mt19937_64 rng(seed);
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    T* data = t.Data<T>();
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        if (values == Values::kFullRange) {
          data[i] = static_cast<T>(rng());
        } else if constexpr (std::is_signed_v<T>) {
          data[i] = static_cast<T>(static_cast<std::int64_t>(rng() % 17) - 8);
        } else {
          data[i] = static_cast<T>(rng() % 17);
        }
      } else {
        std::uniform_real_distribution<double> dist(-1.0, 1.0);
        data[i] = RoundFromDouble<T>(dist(rng));
      }
    }
  });
  return t;
}

std::string MatMulTester::Describe() const {
  std::ostringstream os;
  os << DTypeName(dtype_) << " " << DimsToString(a_dims_) << " x " << DimsToString(b_dims_)
     << " (seed " << seed_ << ")";
  return os.str();
}

void MatMulTester::Test(Backend& backend) const {
  SCOPED_TRACE(std::string(backend.name()) + ": " + Describe());
  const MatMulDesc desc{dtype_, a_dims_, b_dims_};
  auto plan = PlanMatMul(desc);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(backend.Supports(desc).supported()) << backend.Supports(desc).ToString();

  const Tensor a = RandomTensor(dtype_, a_dims_, seed_, values_);
  const Tensor b = RandomTensor(dtype_, b_dims_, seed_ * 7919 + 1, values_);
  auto oracle = ExactMatMul(*plan, a.view(), b.view());
  ASSERT_TRUE(oracle.ok()) << oracle.status();
  const Arithmetic arithmetic = backend.DeclaredArithmetic(dtype_);
  // Empty for integers, which are judged exactly.
  const OracleBounds bounds(*oracle, arithmetic, plan->k);

  auto primitive = backend.Prepare(*plan);
  ASSERT_TRUE(primitive.ok()) << primitive.status();

  for (int iteration = 0; iteration < iterations_; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    auto y = Tensor::Create(dtype_, plan->y_dims);
    ASSERT_TRUE(y.ok()) << y.status();
    // Poison Y so a backend that skips writing an element is caught (unless empty).
    if (y->NumBytes() > 0) std::memset(y->raw_data(), 0x7b, y->NumBytes());
    Status status = (*primitive)->Execute(a.view(), b.view(), y->mutable_view());
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(y->dims(), oracle->y.dims());

    VisitDType(dtype_, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      const T* got = y->Data<T>();
      const T* exact_y = oracle->y.Data<T>();
      std::int64_t bad = 0;
      std::int64_t worst = -1;
      double worst_fraction = 0;
      for (std::int64_t i = 0; i < y->NumElements(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          if (got[i] != exact_y[i]) {
            if (bad == 0) worst = i;
            ++bad;
          }
        } else {
          const ElementBound bound = bounds[static_cast<std::size_t>(i)];
          const double g = ToDouble(got[i]);
          if (WithinBound(dtype_, bound, g)) continue;
          ++bad;
          // Specials (IEEE's NaN/inf from the inputs) are right or wrong, not near or far.
          const double fraction = bound.special ? INFINITY : BoundFraction(dtype_, bound, g);
          if (worst < 0 || fraction > worst_fraction) {
            worst = i;
            worst_fraction = fraction;
          }
        }
      }
      if (bad > 0) {
        std::ostringstream os;
        os << bad << " of " << y->NumElements() << " elements outside the error bound ("
           << arithmetic.ToString() << "); worst at flat index " << worst << ": got ";
        if constexpr (std::is_integral_v<T>) {
          os << +got[worst] << ", exact " << +exact_y[worst];
        } else {
          const ElementBound bound = bounds[static_cast<std::size_t>(worst)];
          os.precision(17);
          os << ToDouble(got[worst]) << ", exact " << bound.center;
          if (!bound.special && !std::isinf(bound.radius)) {
            const AcceptedValues range = AcceptedRange(dtype_, bound);
            os << ", accepted [" << range.lo << ", " << range.hi << "]";
          }
        }
        ADD_FAILURE() << os.str();
      }
    });
  }
}

void MatMulTester::TestUnsupported(Backend& backend) const {
  SCOPED_TRACE(std::string(backend.name()) + ": " + Describe());
  const MatMulDesc desc{dtype_, a_dims_, b_dims_};
  const Support support = backend.Supports(desc);
  EXPECT_EQ(support.level, Support::Level::kNo) << support.ToString();
  EXPECT_FALSE(support.note.empty()) << "a backend that says no must say why";
  auto plan = PlanMatMul(desc);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto primitive = backend.Prepare(*plan);
  ASSERT_FALSE(primitive.ok()) << "Prepare succeeded for a configuration Supports() refuses";
  EXPECT_EQ(primitive.status().code(), StatusCode::kUnimplemented) << primitive.status();
}

void ExpectWorkedExamplesPass(Backend& backend, double rtol, double atol) {
  auto examples = BuiltinExamples();
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 9u);
  for (const ExampleCase& example : *examples) {
    SCOPED_TRACE(std::string(backend.name()) + ": " + example.name);
    ASSERT_EQ(example.y.dtype(), DType::kFloat);
    ASSERT_TRUE(
        backend.Supports({example.a.dtype(), example.a.dims(), example.b.dims()}).supported());
    auto y = MatMul(backend, example.a.view(), example.b.view());
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->dims(), example.y.dims());
    for (std::int64_t i = 0; i < y->NumElements(); ++i) {
      const double got = y->Data<float>()[i];
      const double want = example.y.Data<float>()[i];
      EXPECT_LE(std::fabs(got - want), (OnnxTolerance{rtol, atol}.Allowed(want)))
          << "element " << i;
    }
  }
}

}  // namespace mm::testing
