#include "fuzz_expectations.h"

namespace mm::fuzz {

ExpectationTracker::ExpectationTracker(const conformance::Expectations* expectations,
                                       std::vector<ExpectationOutcome>& outcomes)
    : expectations_(expectations), outcomes_(outcomes) {
  if (expectations_ == nullptr) return;
  for (const conformance::Expectation& e : expectations_->entries) {
    if (e.kind != conformance::Expectation::Kind::kXFail) {
      xfail_index_.push_back(-1);
      continue;
    }
    xfail_index_.push_back(static_cast<int>(outcomes_.size()));
    outcomes_.push_back({e.case_pattern, e.backend_pattern, e.reason, e.link});
  }
}

bool ExpectationTracker::Find(const std::string& case_name, const std::string& backend,
                              const conformance::Expectation*& expected,
                              ExpectationOutcome*& outcome) {
  expected = expectations_ == nullptr ? nullptr : expectations_->Find(case_name, backend);
  outcome = nullptr;
  if (expected == nullptr) return true;
  const int entry = xfail_index_[expected - expectations_->entries.data()];
  if (entry < 0) return false;
  outcome = &outcomes_[entry];
  ++outcome->matched;
  return true;
}

}  // namespace mm::fuzz
