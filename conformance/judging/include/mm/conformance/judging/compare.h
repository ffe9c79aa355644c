// Comparing a computed tensor with an expected one by ONNX's rule for node tests.
#ifndef MM_CONFORMANCE_JUDGING_COMPARE_H_
#define MM_CONFORMANCE_JUDGING_COMPARE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "mm/conformance/judging/verdict.h"
#include "mm/engine/tensor.h"
#include "mm/oracle/error_bound.h"

namespace mm::conformance {

// ONNX's node-test tolerance, the first of the two rules (mm/oracle/error_bound.h holds both).
using Tolerance = OnnxTolerance;

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

// True when two shapes are the same dims in the same order. The harness's one shape rule:
// Compare's, and the runner's check of a data set's expected Y against the product's shape.
bool SameShape(std::span<const std::int64_t> a, std::span<const std::int64_t> b);

// Compares element-wise by the rule above: dtype and shape must be equal, NaN equals NaN, an
// infinity must be matched by the same infinity, integers must be equal exactly.
Comparison Compare(TensorView actual, TensorView expected, const Tolerance& tolerance);

// The outcome of the bound rule over a whole tensor.
struct BoundCheck {
  std::int64_t elements = 0;
  std::int64_t outside = 0;    // Elements outside their bound.
  std::int64_t unbounded = 0;  // Elements whose bound is infinite (possible overflow): any value.
  // Elements within their bound that are NaN where the exact value is an infinity (finite terms
  // overflowing to the opposite infinity, or a flushed subnormal times it: docs/conformance.md).
  std::int64_t nan_beside_infinity = 0;
  // The element furthest outside its bound (or, when none is, the one nearest its edge):
  // `expected` is the bound's centre, `allowed` its radius before the output rounding.
  std::optional<WorstElement> worst;
  // "2 of 12 elements outside the bound; worst at [1,2]: exact 1.5, got 1.52 (abs 0.02 > bound
  // 0.0012)".
  std::string Describe() const;
};

// Both rules applied to one result. `verdict` is where the result stands against both (verdict.h's
// table): PASS (within both), BOUND (outside the tolerance only), IMPRECISE (outside the bound
// only) or FAIL (outside both).
struct Judgement {
  Verdict verdict = Verdict::kFail;
  Comparison tolerance;  // `actual` against the expected Y by ONNX's rule.
  BoundCheck bound;      // `actual` against `bounds` (integers: exactly against the expected Y).
};

// Judges `actual` against `expected` (ONNX's rule with `tolerance`) and against the exact product
// of the result's own A and B: `bounds` (one per element, centred on the exact value, for float
// dtypes) or, for integer dtypes, `exact` itself (equality; `bounds` is empty). The bound rule
// never looks at `expected`, so a wrong expected file cannot widen it. `exact` must have
// `expected`'s dtype and shape. Every element is examined; dtype or shape disagreements are FAIL.
Judgement Judge(TensorView actual, TensorView expected, TensorView exact,
                const OracleBounds& bounds, const Tolerance& tolerance);

// The same where `expected` is the exact product itself (the differential fuzzer's case: its
// expected Y is the oracle's).
Judgement Judge(TensorView actual, TensorView expected, const OracleBounds& bounds,
                const Tolerance& tolerance);

// The bound rule alone: `actual` against `bounds` (float dtypes) or equal to `exact` (integers).
// `actual` and `exact` must have one dtype and shape.
BoundCheck CheckBound(TensorView actual, TensorView exact, const OracleBounds& bounds);

// The verdict of a judged result from its two checks, as Judge decides it: FAIL when the
// tolerance check found a dtype or shape disagreement, else JudgedVerdict(tolerance.match,
// bound.outside == 0). Also what a result read back from a report is checked against
// (conformance/judging/result_check.h).
Verdict JudgedVerdictOf(const Comparison& tolerance, const BoundCheck& bound);

// Compare's rule for one float element: NaN matches NaN, an infinity only the same infinity,
// else |actual - expected| <= tolerance.Allowed(expected).
bool FloatElementMatches(double actual, double expected, const Tolerance& tolerance);

// Test seam, for the self-check's own tests only (conformance/self_check): a judgement broken on
// purpose, to prove that the self-check notices a broken harness. kNone, the real rule, everywhere
// else. kFirstElementOnly: Compare and the bound examine element 0 alone; kNanMatchesAnything: a
// NaN on either side matches; kShapeByElementCount: SameShape compares element counts only.
enum class JudgementFault { kNone, kFirstElementOnly, kNanMatchesAnything, kShapeByElementCount };
// Sets the fault of this process (and of worker processes forked after); returns the previous one.
JudgementFault SetJudgementFaultForTesting(JudgementFault fault);

// Shortest text that reads back to `value` ("0.1", "1e-07", "nan", "-inf").
std::string FormatDouble(double value);
// Three significant digits, for error sizes in human-readable lines ("2.38e-07", "0.0133").
std::string FormatShort(double value);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_COMPARE_H_
