#include "family_run.h"

#include <exception>
#include <filesystem>
#include <utility>

#include "fuzz_replay.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/running/poison.h"
#include "mm/conformance/running/write_guard.h"
#include "mm/engine/io/output_file.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"

namespace mm::fuzz {
namespace {

// Y as mm-conformance computes it (family_runner.cc): under the write guard, so that a write
// outside Y or a changed input is an ERROR naming it, Y poisoned and again over the second
// pattern when an element still holds the first; an exception of the backend an error (as
// MatMul's RunPrepared says it).
StatusOr<Tensor> ComputeCatching(Backend& backend, const family::Plan& plan) {
  try {
    return conformance::ComputeOverPoison(
        [&](int round) { return conformance::ComputeWithWriteGuard(backend, plan, round); });
  } catch (const std::exception& e) {
    return InternalError(std::string(backend.name()) + ": exception: " + e.what());
  } catch (...) {
    return InternalError(std::string(backend.name()) + ": unknown exception");
  }
}

// Writes `minimal` into `dir` as an ONNX node test whose expected output is the exact answer
// (ExactFamily's Y: the wrapped value where the accumulation leaves int32), also kept as
// f.expected.
Status ExportFamilyNodeTest(const FamilyProblem& minimal, const std::filesystem::path& dir,
                            Finding& f) {
  MM_ASSIGN_OR_RETURN(const family::Plan plan, family::PlanProblem(minimal.View()));
  MM_ASSIGN_OR_RETURN(family::FamilyOracle oracle,
                      family::ExactFamily(plan, Arithmetic::OwnType(plan.y_dtype)));
  f.expected = std::move(oracle.y);
  return conformance::WriteFamilyNodeTest(dir, minimal.View(), f.expected, "mm-fuzz");
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

std::string FuzzCaseName(family::Op op, std::string_view types, std::string_view form,
                         std::string_view values) {
  return "fuzz/" + std::string(family::OpName(op)) + "/" + std::string(types) + "/" +
         std::string(form) + "/" + std::string(values);
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
  for (const auto& [name, tensor] : shrunk.problem.inputs)
    f.types.emplace_back(name, tensor.dtype());
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
  FamilyShrinkResult shrunk = ShrinkFamily(backend, problem, failed, shrink);
  const FamilyProblem minimal = shrunk.problem.Clone();
  Finding f = FamilyFinding(kind, name, problem, std::move(shrunk));
  const std::string library_path = PluginLibraryPath(backend);
  const std::string driver_command = runtime::DriverCommandOf(backend);
  f.replay = ReplayLine(options, f, library_path, driver_command);
  if (options.export_dir.empty()) return f;
  if (shrink.cancel != nullptr && *shrink.cancel) {
    f.exported = "(not written: the run was stopped)";
    return f;
  }
  const std::filesystem::path dir = std::filesystem::path(options.export_dir) / CaseName(f);
  Status written = ExportFamilyNodeTest(minimal, dir, f);
  if (written.ok()) {
    written = io::WriteFileAtomically(dir / "README.md",
                                      ExportReadme(options, f, dir, library_path, driver_command));
  }
  f.exported = written.ok() ? dir.string() : "(not written: " + written.ToString() + ")";
  return f;
}

}  // namespace mm::fuzz
