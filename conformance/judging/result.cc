#include "mm/conformance/judging/result.h"

namespace mm::conformance {

void ApplyExpectation(const Expectations* expectations, ToleranceRule rule, Result& r) {
  if (expectations == nullptr) return;
  const Expectation* e = expectations->Find(r.case_name, r.backend, r.data_set);
  if (e == nullptr) return;
  r.expectation = e->reason + " (" + e->link + ")";
  if (e->kind == Expectation::Kind::kSkip) {
    // Whatever else was found (an invalid case, say) is not looked at: the entry says so.
    r.verdict = Verdict::kSkip;
    r.support_note.clear();
    r.seconds = 0;
    r.vs_expected.reset();
    r.vs_reference_comparison.reset();
    r.message = "skipped as declared: " + r.expectation;
    r.vs_reference = "n/a (skipped)";
    return;
  }
  // UNSUPPORTED neither failed nor passed, and a verdict already decided by an entry stays; whether
  // it failed is decided by the run's rule (verdict.h's table).
  const Verdict judged = r.verdict;
  r.verdict = ApplyXFail(judged, rule);
  if (r.verdict == judged) return;
  if (r.verdict == Verdict::kXFail) {
    r.message = "expected failure (" + r.expectation + "): " + r.message;
  } else {
    r.message = "passed (" + std::string(VerdictName(judged)) +
                "), but declared an expected failure (" + r.expectation +
                "); remove the entry: " + r.message;
  }
}

}  // namespace mm::conformance
