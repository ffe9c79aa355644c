// A built family problem planned, answered exactly and judged against a backend's values, in one
// call: what the exact-judgement tests check.
#ifndef MM_FAMILY_TESTS_JUDGE_VALUES_H_
#define MM_FAMILY_TESTS_JUDGE_VALUES_H_

#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "mm/engine/arithmetic.h"
#include "mm/engine/tensor.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::family::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The elements of `t` (of type T) as a vector, for matchers.
template <class T>
std::vector<T> Values(const Tensor& t) {
  const auto v = t.Values<T>();
  return {v.begin(), v.end()};
}

// The plan, exact answer and judgement of a backend's Y for a built problem.
struct Judged {
  Plan plan;
  FamilyOracle oracle;
  FamilyJudgement judgement;
};

// Plans `p`, computes its exact answer with bounds for `arithmetic` (Y's own type when unset) and
// judges `got` (Y's values, row-major, of Y's C++ type T). The problem must be valid.
template <class T>
Judged JudgeValues(const ProblemBuilder& p, std::vector<T> got,
                   std::optional<Arithmetic> arithmetic = std::nullopt) {
  Judged out{PlanProblem(p.problem()).value(), {}, {}};
  out.oracle =
      ExactFamily(out.plan, arithmetic.value_or(Arithmetic::OwnType(out.plan.y_dtype))).value();
  const Tensor y = Tensor::FromValues<T>(out.plan.y_dims(), std::span<const T>(got)).value();
  out.judgement = JudgeFamily(out.plan, out.oracle, y.view());
  return out;
}

}  // namespace mm::family::testing

#endif  // MM_FAMILY_TESTS_JUDGE_VALUES_H_
