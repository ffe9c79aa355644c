#include "backends/testing/matmul_tester.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "backends/reference/reference_backend.h"
#include "engine/matmul_plan.h"
#include "engine/testdata/onnx_matmul_examples.h"

namespace mm::testing {
namespace {

// Unit in the last place of the output type near |value| (its smallest subnormal step near zero).
double OutputUlp(DType dtype, double value) {
  int mantissa_bits = 0;
  int min_exponent = 0;
  switch (dtype) {
    case DType::kFloat:
      mantissa_bits = 24;
      min_exponent = -125;
      break;
    case DType::kDouble:
      mantissa_bits = 53;
      min_exponent = -1021;
      break;
    case DType::kFloat16:
      mantissa_bits = 11;
      min_exponent = -13;
      break;
    case DType::kBFloat16:
      mantissa_bits = 8;
      min_exponent = -125;
      break;
    default:
      return 0.0;
  }
  int exponent = 0;
  std::frexp(value, &exponent);
  exponent = std::max(exponent, min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

double DefaultAccumulationEpsilon(DType dtype) {
  return dtype == DType::kDouble ? std::numeric_limits<double>::epsilon() / 2
                                 : std::numeric_limits<float>::epsilon() / 2;
}

// Y_abs[i, j] = sum_p |a_ip| * |b_pj| in double, via the reference backend on |A| and |B|.
Tensor AbsoluteProductSums(const Tensor& a, const Tensor& b) {
  auto to_abs_double = [](const Tensor& t) {
    Tensor out = Tensor::Create(DType::kDouble, t.dims()).value();
    VisitDType(t.dtype(), [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if constexpr (!std::is_integral_v<T>) {
        for (std::int64_t i = 0; i < t.NumElements(); ++i) {
          out.Data<double>()[i] = std::fabs(ToDouble(t.Data<T>()[i]));
        }
      }
    });
    return out;
  };
  Tensor abs_a = to_abs_double(a);
  Tensor abs_b = to_abs_double(b);
  ReferenceBackend reference;
  return MatMul(reference, abs_a.view(), abs_b.view()).value();
}

}  // namespace

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
  ReferenceBackend reference;
  auto expected = MatMul(reference, a.view(), b.view());
  ASSERT_TRUE(expected.ok()) << expected.status();

  auto primitive = backend.Prepare(*plan);
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  const bool is_float = IsFloat(dtype_);
  const Tensor abs_sums = is_float ? AbsoluteProductSums(a, b) : Tensor();
  const double eps_acc = accumulation_epsilon_.value_or(DefaultAccumulationEpsilon(dtype_));

  for (int iteration = 0; iteration < iterations_; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    auto y = Tensor::Create(dtype_, plan->y_dims);
    ASSERT_TRUE(y.ok()) << y.status();
    // Poison Y so a backend that skips writing an element is caught (unless empty).
    if (y->NumBytes() > 0) std::memset(y->raw_data(), 0x7b, y->NumBytes());
    Status status = (*primitive)->Execute(a.view(), b.view(), y->mutable_view());
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(y->dims(), expected->dims());

    VisitDType(dtype_, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      const T* got = y->Data<T>();
      const T* want = expected->Data<T>();
      std::int64_t bad = 0;
      std::int64_t worst = -1;
      double worst_excess = 0;
      for (std::int64_t i = 0; i < y->NumElements(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          if (got[i] != want[i]) {
            if (bad == 0) worst = i;
            ++bad;
          }
        } else {
          const double g = ToDouble(got[i]);
          const double w = ToDouble(want[i]);
          if (std::isnan(w) && std::isnan(g)) continue;
          // Infinities and NaN must match exactly; the bound below is only for finite values.
          const bool finite = std::isfinite(w) && std::isfinite(g);
          if (!finite && w == g) continue;
          const double bound = OutputUlp(dtype_, std::max(std::fabs(w), std::fabs(g))) +
                               static_cast<double>(plan->k) * eps_acc * abs_sums.Data<double>()[i];
          const double err = std::fabs(g - w);
          if (!finite || !(err <= bound)) {
            ++bad;
            const double excess = finite ? err / bound : INFINITY;
            if (worst < 0 || excess > worst_excess) {
              worst = i;
              worst_excess = excess;
            }
          }
        }
      }
      if (bad > 0) {
        std::ostringstream os;
        os << bad << " of " << y->NumElements() << " elements differ from the reference; worst at "
           << "flat index " << worst << ": got ";
        if constexpr (std::is_integral_v<T>) {
          os << +got[worst] << ", reference " << +want[worst];
        } else {
          os.precision(17);
          os << ToDouble(got[worst]) << ", reference " << ToDouble(want[worst]) << ", bound "
             << OutputUlp(dtype_, std::max(std::fabs(ToDouble(want[worst])),
                                           std::fabs(ToDouble(got[worst])))) +
                    static_cast<double>(plan->k) * eps_acc * abs_sums.Data<double>()[worst];
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
      EXPECT_LE(std::fabs(got - want), atol + rtol * std::fabs(want)) << "element " << i;
    }
  }
}

}  // namespace mm::testing
