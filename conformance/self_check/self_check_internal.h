// What the self-check's parts share: judging one backend's results as a gate run would.
#ifndef MM_CONFORMANCE_SELF_CHECK_SELF_CHECK_INTERNAL_H_
#define MM_CONFORMANCE_SELF_CHECK_SELF_CHECK_INTERNAL_H_

#include <functional>
#include <string>
#include <vector>

#include "mm/conformance/self_check/self_check.h"

namespace mm::self_check {

// Why results read back are not the verdicts their cases deserve; empty when they are.
using ResultsCheck = std::function<std::string(const std::vector<conformance::Result>&)>;

// The outcome of one backend's results, judged as a gate run would judge them: a report written
// to JSON and read back, its exit code by `options.exit_code` under `rule`, and `check` (when
// given) over the results read back, into PlantedOutcome::unmet.
PlantedOutcome Judge(std::string name, std::string why, conformance::Verdict needed,
                     conformance::ToleranceRule rule, std::vector<conformance::Result> results,
                     const SelfCheckOptions& options, std::string needed_text = "",
                     const ResultsCheck& check = nullptr);

// The planted family backends (planted_family.h) run as RunSelfCheck says, each judged into
// `out.outcomes`; their cases counted into `out.cases`.
void RunFamilyPlants(const SelfCheckOptions& options, SelfCheckResult& out);

}  // namespace mm::self_check

#endif  // MM_CONFORMANCE_SELF_CHECK_SELF_CHECK_INTERNAL_H_
