// The deviations a deviations file declares, as the auto backend takes them (AutoDeviation), so
// that auto never chooses a backend the run itself expects to deviate.
#ifndef MM_BACKENDS_AUTO_AUTO_DEVIATIONS_H_
#define MM_BACKENDS_AUTO_AUTO_DEVIATIONS_H_

#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/deviations/deviations_file.h"

namespace mm {

// One AutoDeviation per entry that applies on the running CPU (XFAIL and SKIP alike; an
// "unless_cpu_has" entry of a CPU with those features is left out): its backend pattern, the
// element types its case pattern names (its alphanumeric words ElementTypeFromName accepts:
// "test_*_float16_*" and mm-fuzz's "fuzz/float16/*" name float16; a pattern naming none concerns
// every type), the operators it names (the words matmul, gemm, matmulinteger, qlinearmatmul in any
// case, a version after them allowed, as in "mm_family_gemm13_*" and "fuzz/Gemm/*"; "family" names
// the three of MatMul's family when no operator is named; a pattern naming none concerns every
// operator) and "declared XFAIL in FILE (reason)".
std::vector<AutoDeviation> AutoDeviationsOf(const DeviationsFile& file);

}  // namespace mm

#endif  // MM_BACKENDS_AUTO_AUTO_DEVIATIONS_H_
