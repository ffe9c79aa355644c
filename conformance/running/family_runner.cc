// Running a case of MatMul's family (Gemm, MatMulInteger, QLinearMatMul) in this process: the
// counterpart of runner.cc's MatMul data sets, judged by mm::family (docs/family.md).
#include <chrono>
#include <exception>
#include <limits>
#include <string>

#include "mm/conformance/running/poison.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/running/write_guard.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"

namespace mm::conformance {
namespace {

// Why the expected Y of `set` cannot be taken as a problem's answer: a type or shape other than
// the plan's (then no result is judged). Empty when it can.
std::string InvalidExpectedY(const family::Plan& plan, const FamilyDataSet& set) {
  if (set.y.dtype() == plan.y_dtype && SameShape(set.y.dims(), plan.y_dims())) return "";
  return "invalid case: " + std::string(family::OpName(plan.op)) + " of these inputs gives " +
         std::string(DTypeName(plan.y_dtype)) + " " + DimsToString(plan.y_dims()) +
         " but output_0.pb of " + set.name + " is " + std::string(DTypeName(set.y.dtype())) + " " +
         DimsToString(set.y.dims());
}

// ONNX's expected Y judged against mm's exact answer as a backend computing in Y's own type would
// be: empty when it passes; else why it does not, for the results' data_suspect (a disagreement
// is shown, never silently taken for either side).
std::string SuspectExpectedY(const family::Plan& plan, const FamilyDataSet& set,
                             const Tolerance& tolerance) {
  auto oracle = family::ExactFamily(plan, Arithmetic::OwnType(plan.y_dtype));
  if (!oracle.ok()) {
    return "the expected Y of " + set.name +
           " could not be checked: the exact answer failed: " + oracle.status().ToString();
  }
  const family::FamilyJudgement judgement =
      family::JudgeFamily(plan, *oracle, set.y.view(), tolerance);
  if (judgement.verdict() == family::ElementVerdict::kPass) return "";
  return "the expected Y of " + set.name + " is not mm's exact answer (" +
         std::string(family::ElementVerdictName(judgement.verdict())) +
         " as a result computed in " + std::string(DTypeName(plan.y_dtype)) +
         "): " + judgement.Describe() + "; the case's data is suspect, not the backend";
}

// The identity of the results of data set `d` before it is read.
Result BaseResult(const CaseEntry& entry, std::size_t case_index, std::size_t d) {
  Result base;
  base.case_name = entry.name;
  base.case_index = static_cast<std::int64_t>(case_index);
  base.source = entry.source();
  base.data_set = entry.data_sets.name(d);
  base.op = std::string(family::OpName(entry.op));
  if (entry.family && !entry.family->inputs.empty()) {
    base.dtype = entry.family->inputs.front().declared.dtype;
  }
  return base;
}

// Data set `d` of the family case `entry` from `at`: read, planned and checked, then each backend
// from at.backend; a data set that is not a valid problem gives an ERROR per backend.
void RunFamilyDataSet(const CaseEntry& entry, std::size_t d, Result base, CaseProgress at,
                      BackendInstances& instances, const RunOptions& options, CaseEvents& events) {
  auto for_each_backend = [&](auto&& fill) {
    for (std::size_t b = at.backend; b < options.backends.size(); ++b) {
      Result r = base;
      r.backend = options.backends[b];
      at.backend = b;
      fill(r);
    }
  };
  auto invalid = [&](const std::string& message) {
    for_each_backend([&](Result& r) {
      r.verdict = Verdict::kError;
      r.message = message;
      r.vs_reference = "n/a (invalid case)";
      events.OnResult(std::move(r));
    });
  };
  events.OnStage(CaseEvents::Stage::kLoad, base, at);
  const auto loaded = LoadFamilyCaseDataSet(entry, d);
  if (!loaded.ok()) return invalid("invalid case: " + loaded.status().message());
  const FamilyDataSet& set = *loaded;
  base.dtype = FamilyResultDType(set);
  std::tie(base.a_dims, base.b_dims) = FamilyResultDims(set);
  const family::Problem problem = set.problem();
  const auto plan = family::PlanProblem(problem);
  const std::string where = entry.dir().empty() ? entry.name : entry.dir() + "/" + set.name;
  if (!plan.ok()) return invalid("invalid case: " + where + ": " + plan.status().message());
  if (std::string error = InvalidExpectedY(*plan, set); !error.empty()) return invalid(error);
  base.data_suspect = SuspectExpectedY(*plan, set, options.tolerance);
  for_each_backend([&](Result& r) {
    RunOneBackend(at, instances, options, events, std::move(r), [&](Backend& backend, Result& out) {
      ExecuteAndJudgeFamily(backend, *plan, options.tolerance, out);
    });
  });
}

// Computes Y of `plan` on `backend` when it supports it: no tensor when it does not (`support`
// says why); exceptions become errors.
StatusOr<std::optional<Tensor>> ComputeFamily(Backend& backend, const family::Plan& plan,
                                              Support& support, std::string& implementation) {
  try {
    const family::OpDesc desc = family::DescOf(plan);
    support = family::SupportOf(backend, desc);
    if (!support.supported()) return std::optional<Tensor>();
    // As MatMul's (runner.cc's Execute): under the write guard (the backend must write only Y),
    // Y poisoned, and again over the second pattern when an element still holds the first, so
    // that an unwritten element cannot pass.
    MM_ASSIGN_OR_RETURN(Tensor y, ComputeOverPoison([&](int round) {
                          return ComputeWithWriteGuard(backend, plan, round);
                        }));
    // Asked after the computation, so that a backend choosing its kernel per problem names the
    // one that ran this problem, not the one before it (a shard would then differ from the run).
    implementation = backend.family()->Implementation(desc);
    return std::optional<Tensor>(std::move(y));
  } catch (const std::exception& e) {
    return InternalError(std::string("backend threw an exception: ") + e.what());
  } catch (...) {
    return InternalError("backend threw a non-standard exception");
  }
}

// The judgement's counts as the result's two rule checks, so that a result read back (--resume,
// merge) is checked like MatMul's (CheckResultConsistent: JudgedVerdictOf gives its verdict):
// vs_expected counts the elements outside ONNX's tolerance against the exact answer, vs_bound
// those outside the bound. No figures: the errors are the description's (NaN here).
void StoreCounts(const family::FamilyJudgement& j, Result& r) {
  const auto elements = static_cast<std::int64_t>(j.verdicts.size());
  Comparison tolerance;
  tolerance.mismatch = j.mismatch;
  tolerance.elements = elements;
  tolerance.differing = j.mismatch.empty() ? j.bound + j.fail : elements;
  tolerance.match = j.mismatch.empty() && tolerance.differing == 0;
  tolerance.max_abs_error = tolerance.max_rel_error = std::numeric_limits<double>::quiet_NaN();
  BoundCheck bound;
  bound.elements = elements;
  bound.outside = j.mismatch.empty() ? j.imprecise + j.fail : elements;
  r.vs_expected = std::move(tolerance);
  r.vs_bound = std::move(bound);
}

}  // namespace

void ExecuteAndJudgeFamily(Backend& backend, const family::Plan& plan, const Tolerance& tolerance,
                           Result& r) {
  Support support;
  const auto start = std::chrono::steady_clock::now();
  auto y = ComputeFamily(backend, plan, support, r.implementation);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!y.ok()) {
    r.verdict = Verdict::kError;
    r.message = BackendErrorMessage(y.status());
    r.vs_reference = "n/a (no result)";
    return;
  }
  if (!y->has_value()) {
    r.verdict = Verdict::kUnsupported;
    r.message = support.note.empty() ? "backend declared it unsupported" : support.note;
    r.vs_reference = "n/a (unsupported)";
    return;
  }
  if (support.level == Support::Level::kByConversion) r.support_note = support.note;
  const Arithmetic arithmetic = backend.family()->DeclaredArithmetic(family::DescOf(plan));
  auto oracle = family::ExactFamily(plan, arithmetic);
  if (!oracle.ok()) {
    r.verdict = Verdict::kError;
    r.message = "the exact answer could not be computed: " + oracle.status().ToString();
    r.vs_reference = "n/a (no exact answer)";
    return;
  }
  const family::FamilyJudgement judgement =
      family::JudgeFamily(plan, *oracle, (*y)->view(), tolerance);
  r.verdict = FromElementVerdict(judgement.verdict());
  r.message = judgement.Describe();
  StoreCounts(judgement, r);
  // The family's results are judged against the exact answer alone: the three-way comparison
  // with the reference backend is MatMul's.
  r.vs_reference = r.backend == kReferenceBackend ? "is reference" : "n/a (judged exactly)";
}

void RunFamilyCase(const CaseEntry& entry, std::size_t case_index, BackendInstances& instances,
                   const RunOptions& options, const CaseProgress& from, CaseEvents& events) {
  for (std::size_t d = from.data_set; d < entry.data_sets.size(); ++d) {
    const CaseProgress at{d, d == from.data_set ? from.backend : 0, ""};
    RunFamilyDataSet(entry, d, BaseResult(entry, case_index, d), at, instances, options, events);
  }
}

}  // namespace mm::conformance
