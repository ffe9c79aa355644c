// Internal to mm_fuzz (not published): what the campaign (fuzzer.cc) measures of a float result
// beside its verdict; MeasureError and Percentile (fuzzer.h) are defined with it.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_ACCURACY_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_ACCURACY_H_

#include <cstdint>

#include "mm/conformance/fuzz/fuzzer.h"

namespace mm::fuzz {

// Whether every element of a float result that NaN/inf inputs reach holds IEEE's answer as the
// judgement accepts it (WithinBound): NaN where the exact value is NaN, the same infinity where it
// is one; any non-finite value where finite terms may overflow too; NaN also where the declared
// arithmetic flushes subnormals. Counts those elements into `elements`.
bool SpecialsCorrect(TensorView y, const OracleBounds& bounds, std::int64_t& elements);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_ACCURACY_H_
