#include "fuzz_execute.h"

#include <omp.h>

#include <cstring>
#include <exception>

#include "mm/conformance/running/poison.h"
#include "mm/conformance/running/write_guard.h"

namespace mm::fuzz {

using conformance::Judge;
using conformance::Judgement;

namespace {

std::string Describe(const Judgement& j, DType dtype) {
  std::string out = "vs ONNX tolerance: " + j.tolerance.Describe();
  // Integers are judged exactly by both rules; the bound adds nothing to say.
  if (IsFloat(dtype)) out += "; vs bound: " + j.bound.Describe();
  return out;
}

// Executes a prepared problem and judges it (the oracle already computed). As mm-conformance
// computes: Y poisoned (twice where an element still holds the first pattern), inside the write
// guard, so a backend that writes outside Y or into A or B is an ERROR saying so.
Outcome ExecuteAndJudge(MatMulPrimitive& primitive, const Tensor& a, const Tensor& b,
                        const OracleResult& oracle, const OracleBounds& bounds,
                        const conformance::Tolerance& tolerance) {
  Outcome out;
  auto y = conformance::ComputeOverPoison([&](int round) {
    return conformance::ExecuteWithWriteGuard(primitive, a.view(), b.view(), round);
  });
  if (!y.ok()) {
    out.verdict = Verdict::kError;
    out.message = "Execute: " + y.status().ToString();
    return out;
  }
  out.y = std::move(*y);
  Judgement j = Judge(out.y.view(), oracle.y.view(), bounds, tolerance);
  out.verdict = j.verdict;
  out.message = Describe(j, a.dtype());
  out.judgement = std::move(j);
  return out;
}

}  // namespace

Outcome RunPrepared(Backend& backend, const MatMulPlan& plan, const Tensor& a, const Tensor& b,
                    const OracleResult& oracle, const OracleBounds& bounds,
                    const conformance::Tolerance& tolerance) {
  Outcome out;
  try {
    const Support support = backend.Supports(plan.desc);
    if (!support.supported()) {
      out.verdict = Verdict::kUnsupported;
      out.message = support.note;
      return out;
    }
    auto primitive = backend.Prepare(plan);
    if (!primitive.ok()) {
      out.verdict = Verdict::kError;
      out.message = "Prepare: " + primitive.status().ToString();
      return out;
    }
    return ExecuteAndJudge(**primitive, a, b, oracle, bounds, tolerance);
  } catch (const std::exception& e) {
    out.verdict = Verdict::kError;
    out.message = std::string("exception: ") + e.what();
  } catch (...) {
    out.verdict = Verdict::kError;
    out.message = "unknown exception";
  }
  return out;
}

std::string ThreadDifference(const BackendRegistry& registry, const std::string& name,
                             const MatMulPlan& plan, const Tensor& a, const Tensor& b) {
  const int saved = omp_get_max_threads();
  std::vector<Tensor> results;
  for (int threads : {1, omp_get_num_procs()}) {
    omp_set_num_threads(threads);
    auto backend = registry.Create(name);
    if (!backend.ok()) break;
    auto primitive = (*backend)->Prepare(plan);
    if (!primitive.ok()) break;
    auto y = Tensor::Create(a.dtype(), plan.y_dims);
    if (!y.ok() || !(*primitive)->Execute(a.view(), b.view(), y->mutable_view()).ok()) break;
    results.push_back(std::move(*y));
  }
  omp_set_num_threads(saved);
  if (results.size() != 2) return "";
  if (std::memcmp(results[0].raw_data(), results[1].raw_data(), results[0].NumBytes()) == 0) {
    return "";
  }
  const conformance::Comparison c =
      conformance::Compare(results[1].view(), results[0].view(), conformance::Tolerance{0, 0});
  return "1 thread and " + std::to_string(omp_get_num_procs()) +
         " threads differ bit for bit: " + c.Describe();
}

Outcome RunOne(Backend& backend, const Tensor& a, const Tensor& b, const Arithmetic& arithmetic,
               const conformance::Tolerance& tolerance, const std::atomic<bool>* cancel) {
  Outcome out;
  auto plan = PlanMatMul({a.dtype(), a.dims(), b.dims()});
  if (!plan.ok()) {
    out.message = plan.status().ToString();
    return out;
  }
  OracleOptions oracle_options;
  oracle_options.cancel = cancel;
  auto oracle = ExactMatMul(*plan, a.view(), b.view(), oracle_options);
  if (!oracle.ok()) {
    out.message = oracle.status().ToString();
    return out;
  }
  return RunPrepared(backend, *plan, a, b, *oracle, OracleBounds(*oracle, arithmetic, plan->k),
                     tolerance);
}

std::string FuzzCaseName(DType dtype, std::string_view values) {
  return "fuzz/" + std::string(DTypeName(dtype)) + "/" + std::string(values);
}

}  // namespace mm::fuzz
