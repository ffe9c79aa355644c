// Judging a backend's output of a family problem against the exact answer (exact.h), element by
// element, with the two rules and the verdict names of the MatMul judgement
// (conformance/judging/verdict.h: PASS, BOUND, IMPRECISE, FAIL; conformance/judging/compare.h
// applies them to MatMul's tensors):
//  - ONNX's tolerance (mm/oracle/error_bound.h's OnnxTolerance) against the exact answer, for float
//    Gemm; integer outputs must equal it exactly;
//  - the bound: float Gemm within the Gemm bound of the declared arithmetic; integer Gemm and
//    MatMulInteger equal to the exact (wrapped) answer; QLinearMatMul equal, or one unit away
//    inside the range a float32 evaluation of the multiplier gives (the one-unit rule).
// PASS: within both; BOUND: outside the tolerance, within the bound; IMPRECISE: within the
// tolerance, outside the bound; FAIL: outside both (and a wrong type or shape).
#ifndef MM_FAMILY_JUDGE_H_
#define MM_FAMILY_JUDGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/tensor.h"
#include "mm/family/ambiguity.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::family {

// One element's standing, named as conformance/judging/verdict.h names a result's.
enum class ElementVerdict : std::uint8_t { kPass, kBound, kImprecise, kFail };
// "PASS", "BOUND", "IMPRECISE", "FAIL".
std::string_view ElementVerdictName(ElementVerdict verdict);
// The verdict of an element within (or not) each rule: verdict.h's table.
ElementVerdict VerdictOf(bool within_tolerance, bool within_bound);

// A judged output.
struct FamilyJudgement {
  std::string mismatch;  // A wrong type or shape (then every element FAILs); else empty.
  std::vector<ElementVerdict> verdicts;  // One per element of Y.
  std::int64_t pass = 0, bound = 0, imprecise = 0, fail = 0;
  // Elements whose exact accumulation leaves int32 (judged against the wrapped value): the problem
  // is outside the standard's range when there is any.
  std::int64_t outside_int32 = 0;
  // The ambiguities of the standard the problem reaches, and the reading the output followed.
  std::vector<AmbiguityOutcome> ambiguities;
  // Float elements that are NaN where the exact answer is an infinity, within the bound: an
  // evaluation in the declared arithmetic may give that NaN (finite terms overflowing to the
  // opposite infinity, or a flushed subnormal times the infinity: docs/conformance.md, "Overflow
  // beside an infinite input"). BOUND (outside ONNX's tolerance), named in Describe.
  std::int64_t nan_beside_infinity = 0;
  // The first element of the worst verdict; -1 when Y is empty.
  std::int64_t worst_index = -1;
  std::string worst_expected, worst_actual;

  bool outside_standard_range() const { return outside_int32 > 0; }
  // The result's verdict by verdict.h's table over its elements: FAIL on a mismatch, else PASS,
  // BOUND, IMPRECISE or FAIL as (every element within the tolerance, every element within the
  // bound).
  ElementVerdict verdict() const;
  // "2 of 6 elements FAIL, 1 BOUND; worst at 4: exact 64770, got 32767; outside the standard's
  // range: 0; gemm-beta-zero-non-finite-c: ...".
  std::string Describe() const;
};

// Judges `actual` (a backend's Y for `plan`) against `oracle` (ExactFamily's answer for the plan).
// `tolerance` is ONNX's rule, used for float Gemm.
FamilyJudgement JudgeFamily(const Plan& plan, const FamilyOracle& oracle, TensorView actual,
                            const OnnxTolerance& tolerance = {});

}  // namespace mm::family

#endif  // MM_FAMILY_JUDGE_H_
