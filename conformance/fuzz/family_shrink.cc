// Shrinking a failing family problem (family_run.h, ShrinkFamily).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "family_run.h"
#include "family_values.h"
#include "mm/family/plan.h"

namespace mm::fuzz {
namespace {

using family::Op;

// What a cut runs over: Y's batch axis `batch_axis` (kBatch), or M, N or K.
enum class Role { kBatch, kM, kN, kK };

bool IsScale(std::string_view name) { return name.ends_with("_scale"); }

// The rank of the batch dims of an operand, zero point or scale of `rank` laid out as [D..., x, y]:
// none below rank 3.
std::size_t BatchRank(std::size_t rank) { return rank > 2 ? rank - 2 : 0; }

// The axis of Gemm's input `name` (dims `dims`) that runs over `role`, or -1.
int GemmAxis(const family::Plan& plan, std::string_view name, const Dims& dims, Role role) {
  if (name == "A" && role == Role::kM) return plan.gemm.trans_a ? 1 : 0;
  if (name == "A" && role == Role::kK) return plan.gemm.trans_a ? 0 : 1;
  if (name == "B" && role == Role::kK) return plan.gemm.trans_b ? 1 : 0;
  if (name == "B" && role == Role::kN) return plan.gemm.trans_b ? 0 : 1;
  if (name != "C" || dims.empty() || role == Role::kK || role == Role::kBatch) return -1;
  if (role == Role::kN) return dims.back() != 1 ? static_cast<int>(dims.size()) - 1 : -1;
  return dims.size() == 2 && dims[0] != 1 ? 0 : -1;  // M.
}

// The form of an integer operator's zero point or scale `name` in `plan`.
family::QuantForm QuantFormOf(const family::Plan& plan, std::string_view name) {
  if (name == "a_zero_point") return plan.a_zero_point.form;
  if (name == "b_zero_point") return plan.b_zero_point.form;
  if (name == "a_scale") return plan.a_scale.form;
  if (name == "b_scale") return plan.b_scale.form;
  return family::QuantForm::kPerTensor;
}

// The axis of an integer operator's input `name` that runs over `role` (for kBatch: Y's batch axis
// `batch_axis` of `y_batch_rank`), or -1.
int IntegerAxis(const family::Plan& plan, std::string_view name, const Dims& dims, Role role,
                std::size_t batch_axis, std::size_t y_batch_rank) {
  const auto rank = static_cast<int>(dims.size());
  const bool a_side = name[0] == 'a' || name[0] == 'A';
  const bool operand = name.size() == 1;
  const family::QuantForm form = operand ? family::QuantForm::kPerTensor : QuantFormOf(plan, name);
  if (!operand && form != family::QuantForm::kPerRow && form != family::QuantForm::kPerColumn) {
    return -1;  // Per tensor: no axis.
  }
  if (role == Role::kBatch) {
    const std::size_t own = BatchRank(dims.size());
    return own + batch_axis >= y_batch_rank ? static_cast<int>(own + batch_axis - y_batch_rank)
                                            : -1;
  }
  if (operand && rank == 1) return role == Role::kK ? 0 : -1;
  if (operand && a_side) return role == Role::kM ? rank - 2 : role == Role::kK ? rank - 1 : -1;
  if (operand) return role == Role::kK ? rank - 2 : role == Role::kN ? rank - 1 : -1;
  if (a_side) return role == Role::kM ? std::max(rank - 2, 0) : -1;  // [M], [M,1], [D...,M,1].
  return role == Role::kN ? rank - 1 : -1;                           // [N], [1,N], [D...,1,N].
}

// One ShrinkFamily: the smallest failing problem so far and the steps that try to make it smaller.
class FamilyShrinker {
 public:
  using Clock = std::chrono::steady_clock;

  FamilyShrinker(Backend& backend, const FamilyProblem& problem, const FamilyOutcome& failed,
                 const ShrinkOptions& options)
      : backend_(backend),
        options_(options),
        deadline_(Clock::now() +
                  std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(std::max(0.0, options.seconds)))),
        r_{problem.Clone(), failed, 0, false} {}

  FamilyShrinkResult Run() {
    if (options_.seconds <= 0 || !options_.keeps_failing(r_.outcome.verdict)) return Take();
    bool progress = true;
    while (progress && !r_.timed_out) {
      progress = false;
      for (Role role : {Role::kBatch, Role::kM, Role::kN, Role::kK}) progress |= Cut(role);
      if (progress) continue;
      progress |= DropScalings();
      for (std::size_t i = 0; i < r_.problem.inputs.size(); ++i) progress |= SimplifyValues(i);
    }
    return Take();
  }

 private:
  FamilyShrinkResult Take() { return std::move(r_); }

  bool Cancelled() const { return options_.cancel != nullptr && *options_.cancel; }

  // Keeps `candidate` when it plans and still fails in time.
  bool Attempt(FamilyProblem candidate) {
    if (Clock::now() >= deadline_ || Cancelled()) {
      r_.timed_out = true;
      return false;
    }
    StatusOr<FamilyOutcome> o =
        RunFamilyOne(backend_, candidate, options_.tolerance, options_.cancel);
    if (Cancelled()) {
      r_.timed_out = true;
      return false;
    }
    if (!o.ok() || !options_.keeps_failing(o->verdict)) return false;
    r_.problem = std::move(candidate);
    r_.outcome = std::move(*o);
    ++r_.steps;
    return true;
  }

  // The current problem with every input's axis over `role` (Y's batch axis `batch_axis`) cut to
  // [start, start + length).
  FamilyProblem Sliced(const family::Plan& plan, Role role, std::size_t batch_axis,
                       std::size_t y_batch_rank, std::int64_t start, std::int64_t length) const {
    FamilyProblem c = r_.problem.Clone();
    for (auto& [name, tensor] : c.inputs) {
      const Dims& dims = tensor.dims();
      const int axis = c.op == Op::kGemm
                           ? GemmAxis(plan, name, dims, role)
                           : IntegerAxis(plan, name, dims, role, batch_axis, y_batch_rank);
      if (axis < 0 || dims[static_cast<std::size_t>(axis)] <= 1) continue;
      tensor = SliceAxis(tensor, static_cast<std::size_t>(axis), start, length);
    }
    return c;
  }

  // Cuts `role` (each of Y's batch axes to its first entry; M, N, K by HalvingRanges) while the
  // problem still fails.
  bool Cut(Role role) {
    bool progress = false;
    for (bool again = true; again && !r_.timed_out;) {
      again = false;
      auto plan = family::PlanProblem(r_.problem.View());
      if (!plan.ok()) return progress;
      const Dims& y = plan->product.batch_dims;
      const std::size_t y_batch = r_.problem.op == Op::kGemm ? 0 : plan->product.batch_dims.size();
      if (role == Role::kBatch) {
        for (std::size_t axis = 0; axis < y_batch && !again; ++axis) {
          if (y[axis] > 1) again = Attempt(Sliced(*plan, role, axis, y_batch, 0, 1));
        }
      } else {
        const std::int64_t extent = role == Role::kM   ? plan->product.m
                                    : role == Role::kN ? plan->product.n
                                                       : plan->product.k;
        for (const auto& [start, length] : HalvingRanges(extent)) {
          if ((again = Attempt(Sliced(*plan, role, 0, y_batch, start, length)))) break;
        }
      }
      progress |= again;
    }
    return progress;
  }

  // Gemm's alpha and beta dropped (1), each in turn.
  bool DropScalings() {
    bool progress = false;
    for (const char* name : {"alpha", "beta"}) {
      if (r_.problem.View().FindAttribute(name) == nullptr) continue;
      FamilyProblem c = r_.problem.Clone();
      std::erase_if(c.attributes, [&](const family::Attribute& a) { return a.name == name; });
      progress |= Attempt(std::move(c));
    }
    return progress;
  }

  // Input `i`'s values toward 0 (a scale's toward 1): the whole tensor, then each element.
  bool SimplifyValues(std::size_t i) {
    const bool scale = IsScale(r_.problem.inputs[i].first);
    const double target = scale ? 1 : 0;
    FamilyProblem whole = r_.problem.Clone();
    Tensor& t = whole.inputs[i].second;
    if (t.NumElements() == 0 || AllEqual(t, target)) return false;
    FillEach(t, [&](std::int64_t) { return target; });
    if (Attempt(std::move(whole))) return true;
    bool progress = false;
    constexpr std::int64_t kElementwise = 256;  // Larger tensors: the whole at once only.
    const std::int64_t n = r_.problem.inputs[i].second.NumElements();
    for (std::int64_t e = 0; e < std::min(n, kElementwise) && !r_.timed_out; ++e) {
      if (ElementIs(r_.problem.inputs[i].second, e, target)) continue;
      FamilyProblem c = r_.problem.Clone();
      SetElement(c.inputs[i].second, e, target);
      progress |= Attempt(std::move(c));
    }
    return progress;
  }

  static double Element(const Tensor& t, std::int64_t e) {
    return VisitElementType(t.dtype(), [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      return ToDouble(t.Data<T>()[e]);
    });
  }
  static bool ElementIs(const Tensor& t, std::int64_t e, double v) { return Element(t, e) == v; }
  static bool AllEqual(const Tensor& t, double v) {
    for (std::int64_t e = 0; e < t.NumElements(); ++e) {
      if (!ElementIs(t, e, v)) return false;
    }
    return true;
  }
  static void SetElement(Tensor& t, std::int64_t e, double v) {
    VisitElementType(t.dtype(), [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      t.Data<T>()[e] = RoundFromDouble<T>(v);
    });
  }

  Backend& backend_;
  const ShrinkOptions& options_;
  const Clock::time_point deadline_;
  FamilyShrinkResult r_;
};

}  // namespace

FamilyShrinkResult ShrinkFamily(Backend& backend, const FamilyProblem& problem,
                                const FamilyOutcome& failed, const ShrinkOptions& options) {
  return FamilyShrinker(backend, problem, failed, options).Run();
}

}  // namespace mm::fuzz
