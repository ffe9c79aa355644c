// The deviations a deviations file declares, as the auto backend takes them (AutoDeviation), so
// that auto never chooses a backend the run itself expects to deviate.
#ifndef MM_BACKENDS_AUTO_AUTO_DEVIATIONS_H_
#define MM_BACKENDS_AUTO_AUTO_DEVIATIONS_H_

#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/deviations/deviations_file.h"

namespace mm {

// One AutoDeviation per entry that applies on the running CPU (XFAIL and SKIP alike; an
// "unless_cpu_has" entry of a CPU with those features is left out): its backend pattern, the dtypes
// its case pattern names (its alphanumeric words DTypeFromName accepts: "test_*_float16_*" and
// mm-fuzz's "fuzz/float16/*" name float16; a pattern naming none concerns every dtype) and
// "declared XFAIL in FILE (reason)".
std::vector<AutoDeviation> AutoDeviationsOf(const DeviationsFile& file);

}  // namespace mm

#endif  // MM_BACKENDS_AUTO_AUTO_DEVIATIONS_H_
