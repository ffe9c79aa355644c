// A backend's answer to a family problem, judged against the exact oracle under the arithmetic
// the backend declares for it: what a backend's family test asserts on.
#ifndef MM_FAMILY_TESTING_JUDGE_ON_H_
#define MM_FAMILY_TESTING_JUDGE_ON_H_

#include <string>

#include "mm/engine/backend.h"
#include "mm/engine/status.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"
#include "mm/family/problem.h"

namespace mm::family::testing {

// Plans `problem`, computes it on `backend` (ComputeOp: UNIMPLEMENTED with the reason when the
// backend does not support it) and judges Y with ExactFamily under the backend's
// DeclaredArithmetic; the error of whichever step fails.
inline StatusOr<FamilyJudgement> JudgeOn(Backend& backend, const Problem& problem) {
  MM_ASSIGN_OR_RETURN(const Plan plan, PlanProblem(problem));
  MM_ASSIGN_OR_RETURN(const Tensor y, ComputeOp(backend, plan));
  const Arithmetic arithmetic = backend.family()->DeclaredArithmetic(DescOf(plan));
  MM_ASSIGN_OR_RETURN(const FamilyOracle oracle, ExactFamily(plan, arithmetic));
  return JudgeFamily(plan, oracle, y.view());
}

}  // namespace mm::family::testing

#endif  // MM_FAMILY_TESTING_JUDGE_ON_H_
