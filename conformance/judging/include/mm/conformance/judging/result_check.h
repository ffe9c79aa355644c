// Whether a result read back from a report (mm-conformance --resume, mm-conformance merge) may be
// taken as it is, without running it again: nothing that claims a verdict is taken on trust.
//
// A result is consistent with itself when its verdict follows from its own stored fields under the
// current run's tolerance, rule and expectations, derived again by the code that decided it
// (JudgedVerdictOf, conformance/judging/compare.h; ApplyExpectation, conformance/judging/result.h):
//   - With comparison fields (vs_expected, which needs vs_bound beside it) the result was judged.
//     The comparison must hold together: `match` exactly when no element differs and there is no
//     dtype or shape disagreement, 0 <= differing <= elements, the bound check over as many
//     elements with 0 <= outside <= elements, and (floats) its worst element matches under the
//     current tolerance exactly when no element differs. JudgedVerdictOf then gives the verdict
//     before expectations (PASS, BOUND, IMPRECISE or FAIL).
//   - Without them, the verdict before expectations cannot be derived: UNSUPPORTED is taken when
//     it carries the backend's reason (its message), anything else is taken as ERROR, which needs
//     its message (what went wrong). Neither passes a run by itself (UNSUPPORTED fails under
//     --strict, ERROR always).
//   - ApplyExpectation with the current expectations must then give the stored verdict and the
//     stored expectation text: XFAIL, XPASS and SKIP only where an entry of the current file
//     declares them, and no undeclared verdict where an entry does.
#ifndef MM_CONFORMANCE_JUDGING_RESULT_CHECK_H_
#define MM_CONFORMANCE_JUDGING_RESULT_CHECK_H_

#include <string>

#include "mm/conformance/judging/compare.h"
#include "mm/conformance/judging/expectations.h"
#include "mm/conformance/judging/result.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// The current run's rule a result read back is checked under.
struct ResultRules {
  Tolerance tolerance;
  ToleranceRule rule = ToleranceRule::kOnnx;
  const Expectations* expectations = nullptr;  // nullptr: none.
};

// OK when `result` is consistent with itself under `rules` (the header's rule); else
// INVALID_ARGUMENT saying what disagrees ("PASS, but its own comparison says 9 of 9 elements
// differ (FAIL)").
Status CheckResultConsistent(const Result& result, const ResultRules& rules);

// An upper bound on the bytes of the tensors `result`'s data set holds while it runs (A, B and Y,
// Y's elements bounded by (|A| / K) * (|B| / K)), saturated; 0 without a dtype.
std::int64_t TensorBytesBound(const Result& result);

// "case 'test_x', data set 'test_data_set_0', backend 'eigen'": a result's identity for messages.
std::string ResultIdentity(const Result& result);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_RESULT_CHECK_H_
