#include "mm/conformance/judging/auto_expectations.h"

#include "mm/backends/auto/auto_deviations.h"
#include "mm/backends/deviations/deviations_file.h"

namespace mm::conformance {

std::vector<AutoDeviation> AutoDeviationsOf(const Expectations& expectations) {
  DeviationsFile file;
  file.source = expectations.source;
  for (const Expectation& e : expectations.entries) {
    file.entries.push_back({.case_pattern = e.case_pattern,
                            .backend_pattern = e.backend_pattern,
                            .data_set_pattern = e.data_set_pattern,
                            .kind = e.kind == Expectation::Kind::kXFail
                                        ? DeclaredDeviation::Kind::kXFail
                                        : DeclaredDeviation::Kind::kSkip,
                            .reason = e.reason,
                            .link = e.link,
                            .unless_cpu_has = e.unless_cpu_has});
  }
  return mm::AutoDeviationsOf(file);
}

}  // namespace mm::conformance
