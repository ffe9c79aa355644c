// Internal to mm_fuzz (not published): a campaign's known deviations (FuzzOptions::expectations)
// matched against its results, and what the run saw of each XFAIL entry.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_EXPECTATIONS_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_EXPECTATIONS_H_

#include <string>
#include <vector>

#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/judging/expectations.h"

namespace mm::fuzz {

class ExpectationTracker {
 public:
  // Adds an outcome to `outcomes` per XFAIL entry of `expectations` (none when null), in file
  // order. `outcomes` must outlive the tracker's use.
  ExpectationTracker(const conformance::Expectations* expectations,
                     std::vector<ExpectationOutcome>& outcomes);

  // The entry matching case `case_name` on `backend` (`expected`, null when none) and its outcome
  // (`outcome`, null when none), counted as matched. False when a SKIP entry keeps the case from
  // the backend.
  bool Find(const std::string& case_name, const std::string& backend,
            const conformance::Expectation*& expected, ExpectationOutcome*& outcome);

 private:
  const conformance::Expectations* expectations_;
  std::vector<ExpectationOutcome>& outcomes_;
  std::vector<int> xfail_index_;  // Per entry: its outcome's index, -1 for a SKIP entry.
};

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_EXPECTATIONS_H_
