// Test-only backends, each wrapping the correct reference backend with one bug a MatMul really
// has, so the fuzzer's tests can assert that it finds and shrinks each.
#ifndef MM_CONFORMANCE_FUZZ_TESTS_PLANTED_BACKENDS_H_
#define MM_CONFORMANCE_FUZZ_TESTS_PLANTED_BACKENDS_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/registry.h"

namespace mm::fuzz::testing {

enum class Bug {
  kTransposedB,           // B's memory read as if it were stored transposed ([N, K]).
  kWrongBroadcastOffset,  // Batch entry i reads A's and B's matrix i modulo their count.
  kDroppedTerm,           // The last term of K dropped when K > 16 and K % 16 != 0 (a tail bug).
  kSkipLastRowOddM,       // The last row of Y never written when M is odd and > 1.
  kTruncatedHalf,         // float16/bfloat16 Y rounded toward zero instead of to nearest even.
  kSaturatingInts,        // Integer sums clamp at the type's limits instead of wrapping.
  kInt64ViaDouble,        // int64/uint64 computed through double.
  kUninitialisedK0,       // Y left unwritten when K = 0.
  kHalfAccumulation,      // float16/bfloat16 accumulated in their own type.
  kDoubleInFloat,         // double computed in float.
  kWrongAbove64K,         // A chunked conversion's bug: above 65,536 elements, element 65,536 of
                          // A or B read as zero, and of Y never written (only there).
};

struct PlantedBug {
  Bug bug;
  std::string name;  // Backend name, e.g. "transposed_b".
  std::string why;   // For test names and messages.
};

// Test names and messages show the bug's name.
inline void PrintTo(const PlantedBug& bug, std::ostream* os) { *os << bug.name; }

// Every planted bug, in declaration order.
const std::vector<PlantedBug>& PlantedBugs();

// A backend named `bug.name` computing with the reference backend except for `bug`.
std::unique_ptr<Backend> MakePlantedBackend(const PlantedBug& bug);

// A registry holding only the planted backend of `bug`.
BackendRegistry PlantedRegistry(const PlantedBug& bug);

}  // namespace mm::fuzz::testing

#endif  // MM_CONFORMANCE_FUZZ_TESTS_PLANTED_BACKENDS_H_
