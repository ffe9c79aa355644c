// Comparing a computed tensor with an expected one by ONNX's rule for node tests.
#ifndef MM_CONFORMANCE_COMPARE_H_
#define MM_CONFORMANCE_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "engine/tensor.h"

namespace mm::conformance {

// ONNX's node-test tolerance (onnx/backend/test/runner: numpy.testing.assert_allclose with
// rtol=1e-3, atol=1e-7): an element passes iff |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// The element that decided a comparison: the worst mismatch, or the largest error when all match.
struct WorstElement {
  std::int64_t flat_index = 0;
  Dims index;            // Multi-index into the shape.
  std::string expected;  // Exact decimal text ("1.5", "-3", "nan", "inf").
  std::string actual;
  double expected_value = 0;
  double actual_value = 0;
  double abs_error = 0;  // |actual - expected| (inf when only one side is NaN or inf).
  double rel_error = 0;  // abs_error / |expected| (inf when expected is 0 and abs_error > 0).
  double allowed = 0;    // atol + rtol * |expected| for floats; 0 for integers.
};

// The outcome of comparing `actual` with `expected`.
struct Comparison {
  bool match = false;
  std::string mismatch;  // Why not, for dtype or shape disagreements; else empty.
  std::int64_t elements = 0;
  std::int64_t differing = 0;  // Elements outside tolerance.
  bool bitwise_equal = false;  // Every element has the same bits (NaNs compared as NaN).
  double max_abs_error = 0;    // Over all elements; inf when a NaN/inf disagrees.
  double max_rel_error = 0;
  std::optional<WorstElement> worst;  // Empty for empty tensors or dtype/shape mismatches.

  // One line: "3 of 12 elements differ; worst at [1,2]: expected 1.5, got 1.52 (abs 0.02,
  // rel 0.0133 > allowed 0.0015)".
  std::string Describe() const;
};

// Compares element-wise by the rule above: dtype and shape must be equal, NaN equals NaN, an
// infinity must be matched by the same infinity, integers must be equal exactly.
Comparison Compare(TensorView actual, TensorView expected, const Tolerance& tolerance);

// Shortest text that reads back to `value` ("0.1", "1e-07", "nan", "-inf").
std::string FormatDouble(double value);
// Three significant digits, for error sizes in human-readable lines ("2.38e-07", "0.0133").
std::string FormatShort(double value);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_COMPARE_H_
