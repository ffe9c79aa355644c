#include "conformance/runner.h"

#include <chrono>
#include <exception>
#include <map>
#include <memory>

#include "conformance/poison.h"
#include "conformance/write_guard.h"
#include "engine/error_bound.h"
#include "engine/matmul_plan.h"

namespace mm::conformance {
namespace {

// Plans, prepares and executes y = MatMul(a, b) on `backend`. Returns the Support decision through
// `support`; an unsupported desc returns no tensor and OK.
// `implementation` receives what the prepared primitive says computes it.
StatusOr<std::optional<Tensor>> Execute(Backend& backend, const MatMulPlan& plan,
                                        const DataSet& set, Support& support,
                                        std::string* implementation = nullptr) {
  try {
    support = backend.Supports(plan.desc);
    if (!support.supported()) return std::optional<Tensor>();
    MM_ASSIGN_OR_RETURN(auto primitive, backend.Prepare(plan));
    if (implementation != nullptr) *implementation = primitive->implementation();
    // Every backend, built-in or plugin, must write only Y. Y starts poisoned; again over the
    // second pattern when an element still holds the first, so an unwritten element cannot pass.
    MM_ASSIGN_OR_RETURN(Tensor y, ExecuteWithWriteGuard(*primitive, set.a.view(), set.b.view(), 0));
    if (HoldsPoison(y.view(), 0)) {
      MM_ASSIGN_OR_RETURN(y, ExecuteWithWriteGuard(*primitive, set.a.view(), set.b.view(), 1));
    }
    return std::optional<Tensor>(std::move(y));
  } catch (const std::exception& e) {
    return InternalError(std::string("backend threw an exception: ") + e.what());
  } catch (...) {
    return InternalError("backend threw a non-standard exception");
  }
}

// Both rules (ONNX's tolerance, the error bound of the backend's declared arithmetic; see
// compare.h) on one result: sets its verdict, message, vs_expected and vs_bound.
void JudgeNodeTestResult(const MatMulPlan& plan, const DataSet& set, const Tensor& actual,
                         const Arithmetic& arithmetic, const Tolerance& tolerance, Result& r) {
  auto bounds = NodeTestBounds(plan, set.a.view(), set.b.view(), set.y.view(), arithmetic);
  Judgement j = Judge(actual.view(), set.y.view(),
                      bounds.ok() ? *bounds : std::vector<ElementBound>{}, tolerance);
  r.verdict = VerdictFromGrade(j.grade);
  r.message = j.tolerance.Describe();
  if (r.verdict != Verdict::kPass && IsFloat(plan.desc.dtype) && j.tolerance.mismatch.empty()) {
    r.message += "; vs bound: " + j.bound.Describe();
  }
  r.vs_expected = std::move(j.tolerance);
  r.vs_bound = std::move(j.bound);
}

std::string DescribeVsReference(const Comparison& c) {
  if (!c.mismatch.empty()) return "differs: " + c.mismatch;
  if (c.match && c.bitwise_equal) return "bit-identical";
  if (c.match) return "within tolerance (max abs " + FormatShort(c.max_abs_error) + ")";
  return "differs: " + c.Describe();
}

}  // namespace

Verdict VerdictFromGrade(Grade grade) {
  switch (grade) {
    case Grade::kPass:
      return Verdict::kPass;
    case Grade::kBound:
      return Verdict::kBound;
    case Grade::kImprecise:
      return Verdict::kImprecise;
    case Grade::kFail:
      break;
  }
  return Verdict::kFail;
}

bool FailsUnder(Verdict verdict, ToleranceRule rule) {
  switch (verdict) {
    case Verdict::kFail:
    case Verdict::kError:
      return true;
    case Verdict::kBound:
      return rule == ToleranceRule::kOnnx;
    case Verdict::kImprecise:
      return rule == ToleranceRule::kBound;
    default:
      return false;
  }
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kBound:
      return "BOUND";
    case Verdict::kImprecise:
      return "IMPRECISE";
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kUnsupported:
      return "UNSUPPORTED";
    case Verdict::kError:
      break;
  }
  return "ERROR";
}

Verdict WorseVerdict(Verdict a, Verdict b) {
  auto rank = [](Verdict v) {
    switch (v) {
      case Verdict::kPass:
        return 0;
      case Verdict::kUnsupported:
        return 1;
      case Verdict::kImprecise:
        return 2;
      case Verdict::kBound:
        return 3;
      case Verdict::kFail:
        return 4;
      case Verdict::kError:
        break;
    }
    return 5;
  };
  return rank(a) >= rank(b) ? a : b;
}

std::vector<BackendInfo> DescribeBackends(const BackendRegistry& registry,
                                          const std::vector<std::string>& names) {
  std::vector<BackendInfo> infos;
  for (const std::string& name : names) {
    BackendInfo info{name, registry.Description(name), {}};
    try {
      auto backend = registry.Create(name);
      info.runs_on =
          backend.ok() ? (*backend)->RunsOn() : "failed to start: " + backend.status().message();
    } catch (const std::exception& e) {
      info.runs_on = std::string("failed to start: ") + e.what();
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

std::vector<Result> RunConformance(const Catalog& catalog, const BackendRegistry& registry,
                                   const RunOptions& options) {
  // One instance per backend, created up front; the reference is created even when not selected,
  // for the three-way comparison.
  std::map<std::string, StatusOr<std::unique_ptr<Backend>>> instances;
  auto instance = [&](const std::string& name) -> StatusOr<std::unique_ptr<Backend>>& {
    auto it = instances.find(name);
    if (it == instances.end()) {
      StatusOr<std::unique_ptr<Backend>> created = InternalError("not created");
      try {
        created = registry.Create(name);
      } catch (const std::exception& e) {
        created = InternalError(std::string("backend threw while starting: ") + e.what());
      }
      it = instances.emplace(name, std::move(created)).first;
    }
    return it->second;
  };
  const bool have_reference = registry.Contains(kReferenceBackend);

  std::vector<Result> results;
  for (const CaseEntry& entry : catalog.cases) {
    if (!entry.loaded) {
      for (const std::string& backend : options.backends) {
        Result r;
        r.case_name = entry.name;
        r.source = entry.source;
        r.backend = backend;
        r.verdict = Verdict::kError;
        r.message = "invalid case: " + entry.error.message();
        r.vs_reference = "n/a (invalid case)";
        results.push_back(std::move(r));
      }
      continue;
    }
    const MatMulCase& c = *entry.loaded;
    for (const DataSet& set : c.data_sets) {
      Result base;
      base.case_name = c.name;
      base.source = entry.source;
      base.data_set = set.name;
      base.dtype = c.dtype;
      base.a_dims = set.a.dims();
      base.b_dims = set.b.dims();

      auto plan = PlanMatMul({c.dtype, set.a.dims(), set.b.dims()});
      std::string case_error;
      if (!plan.ok()) {
        case_error = "invalid case: inputs are not a valid MatMul: " + plan.status().message();
      } else if (plan->y_dims != set.y.dims()) {
        case_error = "invalid case: MatMul of " + DimsToString(set.a.dims()) + " and " +
                     DimsToString(set.b.dims()) + " gives " + DimsToString(plan->y_dims) +
                     " but output_0.pb has shape " + DimsToString(set.y.dims());
      }
      if (!case_error.empty()) {
        for (const std::string& backend : options.backends) {
          Result r = base;
          r.backend = backend;
          r.message = case_error;
          r.vs_reference = "n/a (invalid case)";
          results.push_back(std::move(r));
        }
        continue;
      }

      // The reference result, once per data set, for the three-way comparison.
      std::optional<Tensor> reference_y;
      std::string no_reference = "n/a (no reference backend in this build)";
      if (have_reference) {
        auto& ref = instance(std::string(kReferenceBackend));
        if (!ref.ok()) {
          no_reference = "n/a (reference failed to start: " + ref.status().message() + ")";
        } else {
          Support support;
          auto y = Execute(**ref, *plan, set, support);
          if (!y.ok()) {
            no_reference = "n/a (reference failed: " + y.status().message() + ")";
          } else if (!y->has_value()) {
            no_reference = "n/a (reference does not support it: " + support.note + ")";
          } else {
            reference_y = std::move(**y);
          }
        }
      }

      for (const std::string& backend : options.backends) {
        Result r = base;
        r.backend = backend;
        auto& created = instance(backend);
        if (!created.ok()) {
          r.verdict = Verdict::kError;
          r.message = "backend failed to start: " + created.status().message();
          r.vs_reference = "n/a";
          results.push_back(std::move(r));
          continue;
        }
        Support support;
        const auto start = std::chrono::steady_clock::now();
        auto y = Execute(**created, *plan, set, support, &r.implementation);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!y.ok()) {
          r.verdict = Verdict::kError;
          r.message = "backend failed: " + y.status().ToString();
          r.vs_reference = "n/a (no result)";
          results.push_back(std::move(r));
          continue;
        }
        if (!y->has_value()) {
          r.verdict = Verdict::kUnsupported;
          r.message = support.note.empty() ? "backend declared it unsupported" : support.note;
          r.vs_reference = "n/a (unsupported)";
          results.push_back(std::move(r));
          continue;
        }
        if (support.level == Support::Level::kByConversion) r.support_note = support.note;
        const Tensor& actual = **y;
        JudgeNodeTestResult(*plan, set, actual, DeclaredArithmetic(backend, c.dtype),
                            options.tolerance, r);
        if (backend == kReferenceBackend) {
          r.vs_reference = "is reference";
        } else if (reference_y) {
          Comparison vs_ref = Compare(actual.view(), reference_y->view(), options.tolerance);
          r.vs_reference = DescribeVsReference(vs_ref);
          r.vs_reference_comparison = std::move(vs_ref);
        } else {
          r.vs_reference = no_reference;
        }
        results.push_back(std::move(r));
      }
    }
  }
  return results;
}

}  // namespace mm::conformance
