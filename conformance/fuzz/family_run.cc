#include "family_run.h"

#include <exception>
#include <utility>

#include "fuzz_replay.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"

namespace mm::fuzz {
namespace {

// family::ComputeOp, an exception of the backend an error (as MatMul's RunPrepared says it).
StatusOr<Tensor> ComputeCatching(Backend& backend, const family::Plan& plan) {
  try {
    return family::ComputeOp(backend, plan);
  } catch (const std::exception& e) {
    return InternalError(std::string(backend.name()) + ": exception: " + e.what());
  } catch (...) {
    return InternalError(std::string(backend.name()) + ": unknown exception");
  }
}

}  // namespace

StatusOr<FamilyOutcome> RunFamilyOne(Backend& backend, const FamilyProblem& problem,
                                     const conformance::Tolerance& tolerance,
                                     const std::atomic<bool>* cancel) {
  const family::Problem view = problem.View();
  MM_ASSIGN_OR_RETURN(const family::Plan plan, family::PlanProblem(view));
  const family::OpDesc desc = family::DescOf(plan);
  FamilyOutcome outcome;
  const Support support = family::SupportOf(backend, desc);
  if (!support.supported()) {
    outcome.verdict = Verdict::kUnsupported;
    outcome.message =
        std::string(backend.name()) + " does not compute " + desc.ToString() + ": " + support.note;
    return outcome;
  }
  OracleOptions oracle_options;
  oracle_options.cancel = cancel;
  MM_ASSIGN_OR_RETURN(
      const family::FamilyOracle oracle,
      family::ExactFamily(plan, backend.family()->DeclaredArithmetic(desc), oracle_options));
  StatusOr<Tensor> y = ComputeCatching(backend, plan);
  if (!y.ok()) {
    outcome.verdict = Verdict::kError;
    outcome.message = std::string(y.status().message());
    return outcome;
  }
  family::FamilyJudgement judgement = family::JudgeFamily(plan, oracle, y->view(), tolerance);
  outcome.verdict = conformance::FromElementVerdict(judgement.verdict());
  outcome.message = judgement.Describe();
  outcome.elements = static_cast<std::int64_t>(judgement.verdicts.size());
  outcome.outside_int32 = judgement.outside_int32;
  outcome.judgement = std::move(judgement);
  return outcome;
}

std::string FuzzCaseName(family::Op op, DType dtype, std::string_view values) {
  return "fuzz/" + std::string(family::OpName(op)) + "/" + std::string(DTypeName(dtype)) + "/" +
         std::string(values);
}

Finding FamilyFinding(const std::string& kind, const std::string& backend,
                      const FamilyProblem& original, FamilyShrinkResult shrunk) {
  Finding f;
  f.kind = kind;
  f.backend = backend;
  f.op = original.op;
  f.seed = original.seed;
  f.index = original.index;
  f.dtype = original.dtype();
  f.form = original.form;
  f.values = original.values;
  f.problem = original.ToString();
  f.minimal_problem = shrunk.problem.ToString();
  f.shrink_steps = shrunk.steps;
  f.shrink_timed_out = shrunk.timed_out;
  f.message = shrunk.outcome.message;
  f.outside_int32 = shrunk.outcome.outside_int32;
  const char* a_name = original.op == family::Op::kQLinearMatMul ? "a" : "A";
  const char* b_name = original.op == family::Op::kQLinearMatMul ? "b" : "B";
  f.original = {f.dtype, original.Find(a_name)->dims(), original.Find(b_name)->dims()};
  f.a = std::move(*shrunk.problem.Find(a_name));
  f.b = std::move(*shrunk.problem.Find(b_name));
  f.minimal = {f.dtype, f.a.dims(), f.b.dims()};
  return f;
}

Finding ShrunkFamilyFinding(const FuzzOptions& options, const std::string& kind,
                            const std::string& name, Backend& backend, const FamilyProblem& problem,
                            const FamilyOutcome& failed, const ShrinkOptions& shrink) {
  Finding f = FamilyFinding(kind, name, problem, ShrinkFamily(backend, problem, failed, shrink));
  f.replay = ReplayLine(options, f, PluginLibraryPath(backend), runtime::DriverCommandOf(backend));
  if (!options.export_dir.empty()) {
    f.exported =
        "(not written: mm-fuzz exports node tests of MatMul only; the replay line finds it again)";
  }
  return f;
}

}  // namespace mm::fuzz
