// The deviations an expectations file declares, as the auto backend takes them (AutoDeviation), so
// that auto never chooses a backend the run itself expects to deviate.
#ifndef MM_CONFORMANCE_JUDGING_AUTO_EXPECTATIONS_H_
#define MM_CONFORMANCE_JUDGING_AUTO_EXPECTATIONS_H_

#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/conformance/judging/expectations.h"

namespace mm::conformance {

// One AutoDeviation per entry (XFAIL and SKIP alike): its backend pattern, the dtypes its case
// pattern names (its alphanumeric words DTypeFromName accepts: "test_*_float16_*" and mm-fuzz's
// "fuzz/float16/*" name float16; a pattern naming none concerns every dtype) and "declared XFAIL in
// FILE (reason)".
std::vector<AutoDeviation> AutoDeviationsOf(const Expectations& expectations);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_AUTO_EXPECTATIONS_H_
