// Internal to mm_fuzz (not published): the values of a generated problem (problem.h), after its
// shape.
#ifndef MM_CONFORMANCE_FUZZ_PROBLEM_VALUES_H_
#define MM_CONFORMANCE_FUZZ_PROBLEM_VALUES_H_

#include <cstdint>

#include "mm/conformance/fuzz/problem.h"

namespace mm::fuzz {

// A matrix size: mostly small, often a kernel edge (EdgeSizes()), sometimes 0.
std::int64_t Size(Rng& rng);

// The product of `dims` (1 for none); the dims are a generated problem's, small enough not to
// overflow.
std::int64_t Product(const Dims& dims);

// A random word from (seed, index, salt): what a problem's random stream starts from.
std::uint64_t Mix(std::uint64_t seed, std::uint64_t index, std::uint64_t salt);

// Fills p.a and p.b (created, of one dtype) with a value family drawn from `rng` and sets
// p.values to its name: for floats small integers, uniform, normal, a wide exponent range,
// cancellation (each A row's second half the negated mirror of its first over `k`, B's `cancel_n`
// columns alike) or extremes (with options.specials), NaN and infinities sometimes sprinkled in;
// for integers small values, uniform bits or values near the limits.
void FillValues(Rng& rng, const GeneratorOptions& options, std::int64_t k, std::int64_t cancel_n,
                Problem& p);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_PROBLEM_VALUES_H_
