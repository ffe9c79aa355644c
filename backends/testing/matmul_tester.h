// MatMulTester: a fluent builder for backend tests, in the manner of XNNPACK's testers.
//
//   MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(DType::kFloat).Test(backend);
//
// It fills A and B with seeded random values of the dtype, computes Y on `backend` and on the
// reference backend, and checks that the two agree: integers exactly, floats within a bound derived
// from the arithmetic (see Test()). Failures are GoogleTest failures that name the shapes, the
// worst element, both values and the bound.
#ifndef MM_BACKENDS_TESTING_MATMUL_TESTER_H_
#define MM_BACKENDS_TESTING_MATMUL_TESTER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "engine/backend.h"
#include "engine/tensor.h"

namespace mm::testing {

class MatMulTester {
 public:
  // How input values are drawn.
  enum class Values {
    kSmall,  // Floats uniform in [-1, 1] (rounded to the dtype); integers in [-8, 8] (or [0, 16]).
    kFullRange,  // Integers over their whole range, so products and sums wrap; floats as kSmall.
  };

  MatMulTester& a_dims(Dims dims) {
    a_dims_ = std::move(dims);
    return *this;
  }
  MatMulTester& b_dims(Dims dims) {
    b_dims_ = std::move(dims);
    return *this;
  }
  MatMulTester& dtype(DType dtype) {
    dtype_ = dtype;
    return *this;
  }
  MatMulTester& seed(std::uint64_t seed) {
    seed_ = seed;
    return *this;
  }
  MatMulTester& values(Values values) {
    values_ = values;
    return *this;
  }
  // Relative accumulation error per term allowed for float dtypes; by default the unit roundoff of
  // the accumulator the backend is expected to use: float32's for float/float16/bfloat16, double's
  // for double.
  MatMulTester& accumulation_epsilon(double eps) {
    accumulation_epsilon_ = eps;
    return *this;
  }
  // Repeats Execute on one prepared primitive this many times, checking every result (catches
  // state kept between calls).
  MatMulTester& iterations(int n) {
    iterations_ = n;
    return *this;
  }

  // Runs the test on `backend`. For float dtypes each element must satisfy
  //   |y - ref| <= ulp_out(ref) + K * eps_acc * sum_p |a_ip * b_pj|,
  // i.e. one rounding of the output plus the classic worst-case accumulation bound (Higham's
  // gamma_K); integers must match exactly. Also checks Y's shape against numpy.matmul's.
  void Test(Backend& backend) const;

  // Expects backend.Supports() to say kNo for this configuration and Prepare to fail with
  // UNIMPLEMENTED (never a wrong answer, never a silent fallback).
  void TestUnsupported(Backend& backend) const;

  // Seeded random tensor of `dims` following values(); exposed for benchmarks and other tests.
  static Tensor RandomTensor(DType dtype, const Dims& dims, std::uint64_t seed, Values values);

 private:
  std::string Describe() const;

  Dims a_dims_;
  Dims b_dims_;
  DType dtype_ = DType::kFloat;
  std::uint64_t seed_ = 1234;
  Values values_ = Values::kSmall;
  std::optional<double> accumulation_epsilon_;
  int iterations_ = 1;
};

// Runs `backend` on the 9 worked examples of the ONNX MatMul page (mm::BuiltinExamples()) and
// expects every element within |actual - expected| <= atol + rtol * |expected| (ONNX's rule; its
// defaults) and the expected shape. Fails the test if the backend does not support them.
void ExpectWorkedExamplesPass(Backend& backend, double rtol = 1e-3, double atol = 1e-7);

}  // namespace mm::testing

#endif  // MM_BACKENDS_TESTING_MATMUL_TESTER_H_
