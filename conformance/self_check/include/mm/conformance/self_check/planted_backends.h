// The deliberately wrong backends, one set for the harness's self-check and the differential
// fuzzer's planted-bug tests: each wraps the correct reference backend with one fault a MatMul
// implementation really has, so the self-check can require the harness to catch each with the
// verdict it deserves, and the fuzzer's tests that mm-fuzz finds and shrinks each.
#ifndef MM_CONFORMANCE_SELF_CHECK_PLANTED_BACKENDS_H_
#define MM_CONFORMANCE_SELF_CHECK_PLANTED_BACKENDS_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "mm/conformance/running/runner.h"
#include "mm/engine/backend.h"
#include "mm/engine/registry.h"

namespace mm::self_check {

// The faults. kNone is the control: the reference's answer through the same wrapper.
enum class Fault {
  kNone,
  kTransposedB,         // B's memory read as if stored transposed ([N, K]).
  kDroppedTerm,         // The last term of K dropped when K > 16 and K % 16 != 0 (a tail bug).
  kTruncatedHalf,       // float16/bfloat16 partial sums rounded toward zero in the output type.
  kTruncatedFloat,      // float partial sums rounded toward zero in float.
  kNanLost,             // Terms with a zero factor skipped, so NaN (or inf) * 0 is lost.
  kNanForSmall,         // NaN written where |Y| < 1e-30 (a scale factor that overflows).
  kNanNearMax,          // NaN written where |Y| is above half the largest finite value.
  kUnwrittenZero,       // Rows of Y whose row of A is all zero never written (a sparse path).
  kUnwrittenNonzero,    // The last row of Y never written when M is odd and > 1.
  kWrongBatchOffset,    // Batch entry i reads A's and B's matrix i modulo their count.
  kFirstDataSetInputs,  // Inputs cached by shape: every later call gets the first call's inputs.
  kSaturatingInts,      // Integer sums clamp at the type's limits instead of wrapping.
  kInt64ViaDouble,      // int64/uint64 computed through double.
  kHalfAccumulation,    // float16/bfloat16 accumulated in their own type (nearest even).
  kDoubleInFloat,       // double computed in float.
  kCrash,               // SIGSEGV when M = N = 1 (a dot-product path).
  kWritePastY,          // One element written past the end of Y (an off-by-one loop bound).
  // Planted by the fuzzer's tests only (the self-check's small cases cannot show them):
  kTruncatedHalfResult,  // float16/bfloat16 summed wide, the result alone rounded toward zero.
  kUnwrittenK0,          // Y left unwritten when K = 0 (the engine answers K = 0 itself).
  kWrongAbove64K,        // A chunked conversion's bug: above 65,536 elements, element 65,536 of
                         // A or B read as zero, and of Y never written (only there).
};

// One planted backend and the verdict the harness must give it.
struct PlantedBackend {
  Fault fault = Fault::kNone;
  std::string name;  // Backend name and the name the self-check reports, e.g. "transposed_b".
  std::string why;   // The fault in words.
  // The worst verdict over the gate's cases that the fault deserves, and the rule under which
  // that verdict must fail the run (the control: PASS, and the run must pass).
  // (For a backend not in the self-check: the verdict it gets once found.)
  conformance::Verdict needed = conformance::Verdict::kFail;
  conformance::ToleranceRule rule = conformance::ToleranceRule::kOnnx;
  bool in_self_check = true;  // False: planted by the fuzzer's tests only.
  // Where `needed` is ERROR, which many causes give: text the worst result's message must hold,
  // so that the fault is caught for what it is ("crashed: "), not by another error.
  std::string needed_text;
};

// Test names and messages show the planted backend's name.
inline void PrintTo(const PlantedBackend& planted, std::ostream* os) { *os << planted.name; }

// Every planted backend: the control first, then in Fault order.
const std::vector<PlantedBackend>& AllPlantedBackends();

// The self-check's: the control first, then every planted backend in the self-check, in Fault
// order.
const std::vector<PlantedBackend>& PlantedBackends();

// The planted backend of `fault`.
const PlantedBackend& PlantedBackendOf(Fault fault);

// A backend named `planted.name` computing with the reference backend except for its fault. It
// declares the reference's arithmetic (it is held to it).
std::unique_ptr<Backend> MakePlantedBackend(const PlantedBackend& planted);

// A registry holding every backend of PlantedBackends(), under their names.
BackendRegistry PlantedRegistry();

// A registry holding only `planted`, under its name.
BackendRegistry PlantedRegistry(const PlantedBackend& planted);

}  // namespace mm::self_check

#endif  // MM_CONFORMANCE_SELF_CHECK_PLANTED_BACKENDS_H_
