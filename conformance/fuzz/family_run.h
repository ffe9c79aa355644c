// Internal to mm_fuzz (not published): a family problem (family_problem.h) run on one backend and
// judged against its exact answer (mm/family/exact.h, judge.h), and a failing one shrunk.
#ifndef MM_CONFORMANCE_FUZZ_FAMILY_RUN_H_
#define MM_CONFORMANCE_FUZZ_FAMILY_RUN_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "mm/conformance/fuzz/family_problem.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/fuzz/shrink.h"
#include "mm/engine/backend.h"
#include "mm/engine/status.h"
#include "mm/family/judge.h"

namespace mm::fuzz {

// One judged run of a family problem on a backend.
struct FamilyOutcome {
  Verdict verdict = Verdict::kError;
  // UNSUPPORTED: family::SupportOf's reason; ERROR: the backend's error; else the judgement in
  // words (FamilyJudgement::Describe).
  std::string message;
  std::int64_t elements = 0;       // Y's elements judged.
  std::int64_t outside_int32 = 0;  // Of which outside the standard's range (exact.h).
  std::optional<family::FamilyJudgement> judgement;
};

// Plans `problem`, asks `backend` (family::SupportOf: UNSUPPORTED with its reason when it does not
// compute the operator, version and types), computes the exact answer with the backend's declared
// arithmetic, computes Y as mm-conformance does (conformance::ComputeWithWriteGuard, again over
// the second poison when Y still holds the first: ERROR with the backend's message when it fails,
// with the guard's when it wrote outside Y or changed an input) and judges the output with
// family::JudgeFamily under ONNX's tolerance `tolerance`. An error status (never a verdict) when
// the problem does not plan or the oracle fails or is stopped by `cancel`: the problem is at fault
// then, not the backend.
StatusOr<FamilyOutcome> RunFamilyOne(Backend& backend, const FamilyProblem& problem,
                                     const conformance::Tolerance& tolerance,
                                     const std::atomic<bool>* cancel = nullptr);

struct FamilyShrinkResult {
  FamilyProblem problem;   // The smallest failing problem found.
  FamilyOutcome outcome;   // Its judged run.
  int steps = 0;           // Candidates accepted.
  bool timed_out = false;  // Stopped by the time limit or a stop request.
};

// Shrinks `problem`, which fails on `backend` as `failed` says, greedily within options.seconds
// (options.arithmetic is not used: each run asks the backend): batch axes cut to one entry; M, N
// and K halved (every input sliced alike: A, B, C, per-row and per-column zero points and
// scales); then each input's values toward 0 (scales toward 1), the whole tensor at once and then
// element by element, and alpha and beta dropped (1); each candidate kept while it plans and still
// fails per options.keeps_failing.
FamilyShrinkResult ShrinkFamily(Backend& backend, const FamilyProblem& problem,
                                const FamilyOutcome& failed, const ShrinkOptions& options);

// The finding of `original`, which failed as `kind` on `backend` and shrank to `shrunk`: the
// operator, seed, index, form and values, both problems in ONNX's words, the minimal one's A and
// B, its judgement and whether it is outside the standard's range. Its replay line and export
// are the campaign's.
Finding FamilyFinding(const std::string& kind, const std::string& backend,
                      const FamilyProblem& original, FamilyShrinkResult shrunk);

// The finding of `problem`, which failed as `kind` (`failed`) on backend `name` (`backend`),
// shrunk with `shrink`: FamilyFinding's, with its replay line (ReplayLine, with the plugin's
// library or the driver's command) and, under options.export_dir, the minimal problem written as
// an ONNX node test (CaseName(f): the node at its version's opset, the exact answer as its output)
// with a README.md holding the mm-conformance command that runs it and the replay line; not
// written when `shrink.cancel` was set (the run was stopped).
Finding ShrunkFamilyFinding(const FuzzOptions& options, const std::string& kind,
                            const std::string& name, Backend& backend, const FamilyProblem& problem,
                            const FamilyOutcome& failed, const ShrinkOptions& shrink);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FAMILY_RUN_H_
