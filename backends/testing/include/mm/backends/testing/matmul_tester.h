// MatMulTester: a fluent builder for backend tests, in the manner of XNNPACK's testers.
//
//   MatMulTester().a_dims({2, 3, 4}).b_dims({4, 5}).dtype(DType::kFloat).Test(backend);
//
// It fills A and B with seeded random values of the dtype, computes Y on `backend` and judges it
// against the exact product by the one error model the harness and the fuzzer use
// (mm/oracle/error_bound.h): integers exactly, floats within the K-aware bound of the arithmetic
// the backend declares (Backend::DeclaredArithmetic). Failures are GoogleTest failures that name
// the shapes, the worst element, its value, the exact one and the interval the bound accepts.
#ifndef MM_BACKENDS_TESTING_MATMUL_TESTER_H_
#define MM_BACKENDS_TESTING_MATMUL_TESTER_H_

#include <cstdint>
#include <string>

#include "mm/engine/backend.h"
#include "mm/engine/tensor.h"

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
  // Repeats Execute on one prepared primitive this many times, checking every result (catches
  // state kept between calls).
  MatMulTester& iterations(int n) {
    iterations_ = n;
    return *this;
  }

  // Runs the test on `backend`: Y's shape must be numpy.matmul's, integers must equal the exact
  // product modulo 2^bits, and every float element must be within the error bound of
  // backend.DeclaredArithmetic(dtype) around the exact product (WithinBound of OracleBounds: any
  // summation order in the declared accumulation type, rounded once to the output type).
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
  int iterations_ = 1;
};

// Runs `backend` on the 9 worked examples of the ONNX MatMul page (mm::BuiltinExamples()) and
// expects every element within |actual - expected| <= atol + rtol * |expected| (ONNX's rule,
// OnnxTolerance of mm/oracle/error_bound.h; its defaults) and the expected shape. Fails the test if
// the backend does not support them.
void ExpectWorkedExamplesPass(Backend& backend, double rtol = 1e-3, double atol = 1e-7);

}  // namespace mm::testing

#endif  // MM_BACKENDS_TESTING_MATMUL_TESTER_H_
