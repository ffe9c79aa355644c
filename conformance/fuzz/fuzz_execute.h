// Internal to mm_fuzz (not published): running one problem on a backend and judging it, for the
// campaign (fuzzer.cc).
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_EXECUTE_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_EXECUTE_H_

#include <string>

#include "mm/conformance/fuzz/fuzzer.h"

namespace mm::fuzz {

// Prepares `plan` on `backend`, executes it (over poisoned outputs, as RunOne) and judges the
// result against `oracle` and `bounds` (computed already). Never throws: an exception of the
// backend is an ERROR outcome.
Outcome RunPrepared(Backend& backend, const MatMulPlan& plan, const Tensor& a, const Tensor& b,
                    const OracleResult& oracle, const OracleBounds& bounds,
                    const conformance::Tolerance& tolerance);

// Runs `a` x `b` with 1 thread and with every core on fresh instances of backend `name` and
// compares the results bit for bit. Returns a description of the first difference, or "".
std::string ThreadDifference(const BackendRegistry& registry, const std::string& name,
                             const MatMulPlan& plan, const Tensor& a, const Tensor& b);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_EXECUTE_H_
