// Fair corpora: which generated problems every correct implementation passes under ONNX's rule,
// and the correctly rounded expected output written for them.
//
// A correct implementation here is one that forms the K products and sums them in float32 (double
// for double inputs; float16 and bfloat16 widened to float32) in any order, with or without
// subnormals flushed to zero, and rounds once to the output type. A problem is fair when, for
// every element, every value such an implementation may return (mm/oracle/error_bound.h: the
// K-aware bound gamma_K S + K eta, and the flush allowance) is within ONNX's tolerance of the
// correctly rounded expected value, and no NaN or infinity depends on the order of summation.
#ifndef MM_CONFORMANCE_FUZZ_FAIR_H_
#define MM_CONFORMANCE_FUZZ_FAIR_H_

#include <string>

#include "mm/conformance/judging/compare.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::fuzz {

// The tolerance is applied with this factor (1 - 2^-9): numpy's assert_allclose, which ONNX's
// runner uses, computes |got - expected| and atol + rtol |expected| in the output's own dtype
// (float16 included), so a result exactly at the edge may fail there; the margin covers that
// rounding while a one-ULP float16 difference (at most 2^-10 relative) still fits in rtol 1e-3.
inline constexpr double kFairMargin = 1.0 - 1.0 / 512;

// The arithmetic a fair corpus is fair to for `dtype`: float32 accumulation (double for double),
// subnormals possibly flushed. Integers: exact.
Arithmetic FairArithmetic(DType dtype);

// MatMul(a, b) for `plan`, each float element rounded correctly (nearest even) from the exact
// dot product, summed without error in a fixed-point accumulator covering double's whole range.
// Elements a NaN or infinite input reaches get `oracle`'s IEEE value; integers `oracle`'s y.
StatusOr<Tensor> CorrectlyRounded(const MatMulPlan& plan, TensorView a, TensorView b,
                                  const OracleResult& oracle);

// Whether the problem (a, b, its oracle and correctly rounded `expected`) is fair under
// `tolerance` (see above). Empty: fair; else why not, naming the first element that is not
// ("element 3: a float32 sum in another order may give 0.5001 where 0.5 is expected (tolerance
// 0.0005)").
std::string UnfairReason(const MatMulPlan& plan, TensorView a, TensorView b,
                         const OracleResult& oracle, TensorView expected,
                         const conformance::Tolerance& tolerance);

// Whether a problem of MatMul's family beyond MatMul (`plan`, its exact answer `oracle` computed
// for FairArithmetic(T): Gemm's bounds) is fair under `tolerance`: empty when every correct
// implementation gives oracle.y under ONNX's rule, else why not, naming the first element that
// may differ.
//  - MatMulInteger and QLinearMatMul: integers, compared exactly. Unfair where an exact
//    accumulation leaves int32 (outside the standard's range: it allows the wrapped value, not
//    requires it) and, for QLinearMatMul, where a float32 evaluation of the multiplier may round
//    to a neighbour of y (oracle.y_low < oracle.y_high: the one-unit rule, docs/family.md).
//  - Integer Gemm: exact modulo 2^bits, always fair.
//  - Float Gemm: as UnfairReason for MatMul, from the K-aware Gemm bound of float32 accumulation
//    (double for double) with subnormals flushed or not: unfair where an end of the accepted
//    range leaves the tolerance, the bound is infinite (an intermediate may overflow), a NaN or
//    infinite input reaches the element (its NaN or infinity may depend on the evaluation), or
//    the standard is ambiguous there (family/ambiguity.h: two answers).
std::string UnfairFamilyReason(const family::Plan& plan, const family::FamilyOracle& oracle,
                               const conformance::Tolerance& tolerance);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FAIR_H_
