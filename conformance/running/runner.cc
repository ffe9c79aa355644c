#include "mm/conformance/running/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <map>
#include <memory>

#include "mm/conformance/running/poison.h"
#include "mm/conformance/running/process_state.h"
#include "mm/conformance/running/write_guard.h"
#include "mm/engine/matmul_plan.h"
#include "mm/oracle/error_bound.h"

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
    MM_ASSIGN_OR_RETURN(Tensor y, ComputeOverPoison([&](int round) {
                          return ExecuteWithWriteGuard(*primitive, set.a.view(), set.b.view(),
                                                       round);
                        }));
    return std::optional<Tensor>(std::move(y));
  } catch (const std::exception& e) {
    return InternalError(std::string("backend threw an exception: ") + e.what());
  } catch (...) {
    return InternalError("backend threw a non-standard exception");
  }
}

// Whether the data set's expected Y is what a computation in its own type could give: within the
// bound of accumulating in `dtype` (integers: equal) around the exact product of its own A and B.
// Empty when it is; else why not, naming output_0.pb.
std::string SuspectExpectedY(const MatMulPlan& plan, const OracleResult& oracle,
                             const DataSet& set) {
  const DType dtype = plan.desc.dtype;
  const OracleBounds own(oracle, Arithmetic{dtype, false}, plan.k);
  const BoundCheck check = CheckBound(set.y.view(), oracle.y.view(), own);
  if (check.outside == 0) return "";
  std::string out = "the expected Y of " + set.name + " is not the product of its inputs";
  if (IsFloat(dtype)) out += " computed in " + std::string(DTypeName(dtype));
  out += ": " + std::to_string(check.outside) + " of " + std::to_string(check.elements) +
         " elements outside";
  if (const std::optional<WorstElement>& w = check.worst) {
    out += "; worst at " + DimsToString(w->index) + ": exact " + w->expected + ", expected " +
           w->actual;
    if (IsFloat(dtype))
      out += " (abs " + FormatShort(w->abs_error) + " > bound " + FormatShort(w->allowed) + ")";
  }
  return out + "; the case's data is suspect, not the backend";
}

// Both rules (ONNX's tolerance against the expected Y; the error bound of the backend's declared
// arithmetic around the exact product of the data set's own A and B: see compare.h) on one result:
// sets its verdict, message, vs_expected, vs_bound and data_suspect.
void JudgeNodeTestResult(const MatMulPlan& plan, const DataSet& set, const Tensor& actual,
                         const Arithmetic& arithmetic, const Tolerance& tolerance, Result& r) {
  auto oracle = ExactMatMul(plan, set.a.view(), set.b.view());
  if (!oracle.ok()) {
    r.verdict = Verdict::kError;
    r.message = "the exact product could not be computed: " + oracle.status().ToString();
    return;
  }
  const OracleBounds bounds(*oracle, arithmetic, plan.k);
  Judgement j = Judge(actual.view(), set.y.view(), oracle->y.view(), bounds, tolerance);
  r.verdict = j.verdict;
  r.message = j.tolerance.Describe();
  if (r.verdict != Verdict::kPass && j.tolerance.mismatch.empty()) {
    r.message += "; vs bound: " + j.bound.Describe();
  }
  r.vs_expected = std::move(j.tolerance);
  r.vs_bound = std::move(j.bound);
  r.data_suspect = SuspectExpectedY(plan, *oracle, set);
}

std::string DescribeVsReference(const Comparison& c) {
  if (!c.mismatch.empty()) return "differs: " + c.mismatch;
  if (c.match && c.bitwise_equal) return "bit-identical";
  if (c.match) return "within tolerance (max abs " + FormatShort(c.max_abs_error) + ")";
  return "differs: " + c.Describe();
}

}  // namespace

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

bool InShard(std::string_view case_name, const Shard& shard) {
  if (shard.count <= 1) return true;
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : case_name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return static_cast<int>(hash % static_cast<std::uint64_t>(shard.count)) == shard.index - 1;
}

StatusOr<std::unique_ptr<Backend>>& BackendInstances::Get(const std::string& name) {
  auto it = instances_.find(name);
  if (it == instances_.end()) {
    StatusOr<std::unique_ptr<Backend>> created = InternalError("not created");
    try {
      created = registry_.Create(name);
    } catch (const std::exception& e) {
      created = InternalError(std::string("backend threw while starting: ") + e.what());
    } catch (...) {
      created = InternalError("backend threw a non-standard exception while starting");
    }
    it = instances_.emplace(name, std::move(created)).first;
  }
  return it->second;
}

std::string BackendErrorMessage(const Status& status) {
  // A refusal of a supported dtype's problem is named first, so every report shows it as such.
  constexpr std::string_view kGap = "conformance gap: ";  // ConformanceGapError's start.
  const std::string& text = status.message();
  const std::size_t gap = text.find(kGap);
  return IsConformanceGap(status) && gap != std::string::npos
             ? std::string(kGap) + text.substr(0, gap) + text.substr(gap + kGap.size())
             : "backend failed: " + status.ToString();
}

void ExecuteAndJudge(Backend& backend, const MatMulPlan& plan, const DataSet& set,
                     const ReferenceY& reference, const Tolerance& tolerance, Result& r) {
  Support support;
  const auto start = std::chrono::steady_clock::now();
  const auto* recorded = dynamic_cast<const RecordedBackend*>(&backend);
  auto y = recorded != nullptr ? recorded->Recorded(r, plan, support, r.implementation)
                               : Execute(backend, plan, set, support, &r.implementation);
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
  const Tensor& actual = **y;
  JudgeNodeTestResult(plan, set, actual, backend.DeclaredArithmetic(plan.desc.dtype), tolerance, r);
  if (r.backend == kReferenceBackend) {
    r.vs_reference = "is reference";
  } else if (reference.y) {
    Comparison vs_ref = Compare(actual.view(), reference.y->view(), tolerance);
    r.vs_reference = DescribeVsReference(vs_ref);
    r.vs_reference_comparison = std::move(vs_ref);
  } else {
    r.vs_reference = reference.missing;
  }
}

std::vector<Result> InvalidCaseResults(const CaseEntry& entry, std::size_t case_index,
                                       const RunOptions& options) {
  std::vector<Result> results;
  for (const std::string& backend : options.backends) {
    Result r;
    r.case_name = entry.name;
    r.case_index = static_cast<std::int64_t>(case_index);
    r.source = entry.source();
    r.backend = backend;
    r.op = std::string(family::OpName(entry.op));
    r.verdict = Verdict::kError;
    r.message = "invalid case: " + entry.error.message();
    r.vs_reference = "n/a (invalid case)";
    results.push_back(std::move(r));
  }
  return results;
}

namespace {

// Why a data set's inputs and output cannot be a MatMul problem ("" when they can).
std::string InvalidProblem(const StatusOr<MatMulPlan>& plan, const DataSet& set) {
  if (!plan.ok()) return "invalid case: inputs are not a valid MatMul: " + plan.status().message();
  if (!SameShape(plan->y_dims, set.y.dims())) {
    return "invalid case: MatMul of " + DimsToString(set.a.dims()) + " and " +
           DimsToString(set.b.dims()) + " gives " + DimsToString(plan->y_dims) +
           " but output_0.pb has shape " + DimsToString(set.y.dims());
  }
  return "";
}

// The reference result of a data set, for the three-way comparison; computed only when the build
// has a reference backend and a backend other than the reference remains to run.
ReferenceY ReferenceOf(const MatMulPlan& plan, const DataSet& set, const Result& base,
                       const CaseProgress& at, BackendInstances& instances,
                       const BackendRegistry& registry, const RunOptions& options,
                       CaseEvents& events) {
  ReferenceY reference;
  reference.missing = "n/a (no reference backend in this build)";
  bool need_reference = false;
  for (std::size_t b = at.backend; b < options.backends.size(); ++b) {
    need_reference |= options.backends[b] != kReferenceBackend;
  }
  if (!at.reference_missing.empty()) {
    reference.missing = at.reference_missing;
    return reference;
  }
  if (!registry.Contains(kReferenceBackend) || !need_reference) return reference;
  events.OnStage(CaseEvents::Stage::kReference, base, at);
  auto& ref = instances.Get(std::string(kReferenceBackend));
  if (!ref.ok()) {
    reference.missing = "n/a (reference failed to start: " + ref.status().message() + ")";
    return reference;
  }
  Support support;
  auto y = Execute(**ref, plan, set, support);
  if (!y.ok()) {
    reference.missing = "n/a (reference failed: " + y.status().message() + ")";
  } else if (!y->has_value()) {
    reference.missing = "n/a (reference does not support it: " + support.note + ")";
  } else {
    reference.y = std::move(**y);
  }
  return reference;
}

}  // namespace

void RunOneBackend(const CaseProgress& at, BackendInstances& instances, const RunOptions& options,
                   CaseEvents& events, Result r,
                   const std::function<void(Backend&, Result&)>& execute) {
  // Declared not to be run (it may crash or hang): never touched.
  if (const Expectation* e = options.expectations
                                 ? options.expectations->Find(r.case_name, r.backend, r.data_set)
                                 : nullptr;
      e != nullptr && e->kind == Expectation::Kind::kSkip) {
    r.verdict = Verdict::kSkip;
    events.OnResult(std::move(r));
    return;
  }
  if (const auto failed = options.failed_to_start.find(r.backend);
      failed != options.failed_to_start.end()) {
    r.verdict = Verdict::kError;
    r.message = "backend failed to start: " + failed->second;
    r.vs_reference = "n/a";
    events.OnResult(std::move(r));
    return;
  }
  events.OnStage(CaseEvents::Stage::kBackend, r, at);
  auto& created = instances.Get(r.backend);
  if (!created.ok()) {
    r.verdict = Verdict::kError;
    r.message = "backend failed to start: " + created.status().message();
    r.vs_reference = "n/a";
  } else {
    execute(**created, r);
  }
  events.OnResult(std::move(r));
}

namespace {

// One backend's result `r` on a valid data set: SKIP when an entry declares it not to be run,
// else executed and judged.
void RunBackend(const MatMulPlan& plan, const DataSet& set, const ReferenceY& reference,
                const CaseProgress& at, BackendInstances& instances, const RunOptions& options,
                CaseEvents& events, Result r) {
  RunOneBackend(at, instances, options, events, std::move(r), [&](Backend& backend, Result& out) {
    ExecuteAndJudge(backend, plan, set, reference, options.tolerance, out);
  });
}

// Data set `d` of a valid case from `at`: loaded, checked, its reference computed, and each
// backend from at.backend run; a data set that is not a valid problem gives an ERROR per backend.
void RunDataSet(const CaseEntry& entry, std::size_t d, Result base, CaseProgress at,
                BackendInstances& instances, const BackendRegistry& registry,
                const RunOptions& options, CaseEvents& events) {
  // Each result carries its backend's name from here on.
  auto for_each_backend = [&](auto&& fill) {
    for (std::size_t b = at.backend; b < options.backends.size(); ++b) {
      Result r = base;
      r.backend = options.backends[b];
      fill(r, b);
    }
  };
  auto invalid = [&](const std::string& message) {
    for_each_backend([&](Result& r, std::size_t) {
      r.message = message;
      r.vs_reference = "n/a (invalid case)";
      events.OnResult(std::move(r));
    });
  };
  events.OnStage(CaseEvents::Stage::kLoad, base, at);
  auto loaded = LoadCaseDataSet(entry, d);
  if (!loaded.ok()) {
    base.dtype.reset();
    return invalid("invalid case: " + loaded.status().message());
  }
  const DataSet& set = *loaded;
  base.a_dims = set.a.dims();
  base.b_dims = set.b.dims();
  const auto plan = PlanMatMul({set.a.dtype(), set.a.dims(), set.b.dims()});
  if (const std::string error = InvalidProblem(plan, set); !error.empty()) return invalid(error);
  const ReferenceY reference =
      ReferenceOf(*plan, set, base, at, instances, registry, options, events);
  for_each_backend([&](Result& r, std::size_t b) {
    at.backend = b;
    RunBackend(*plan, set, reference, at, instances, options, events, std::move(r));
  });
}

}  // namespace

void RunCase(const CaseEntry& entry, std::size_t case_index, BackendInstances& instances,
             const BackendRegistry& registry, const RunOptions& options, const CaseProgress& from,
             CaseEvents& events) {
  if (!entry.valid()) {
    for (Result& r : InvalidCaseResults(entry, case_index, options)) {
      events.OnResult(std::move(r));
    }
    return;
  }
  if (entry.family) return RunFamilyCase(entry, case_index, instances, options, from, events);
  for (std::size_t d = from.data_set; d < entry.data_sets.size(); ++d) {
    const std::size_t first_backend = d == from.data_set ? from.backend : 0;
    CaseProgress at{d, first_backend, d == from.data_set ? from.reference_missing : ""};
    Result base;
    base.case_name = entry.name;
    base.case_index = static_cast<std::int64_t>(case_index);
    base.source = entry.source();
    base.data_set = entry.data_sets.name(d);
    base.dtype = entry.model->a.dtype;
    RunDataSet(entry, d, std::move(base), std::move(at), instances, registry, options, events);
  }
}

std::int64_t DefaultMemoryLimitBytes(int jobs) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  const std::int64_t total =
      pages > 0 && page_size > 0 ? std::int64_t{pages} * page_size : std::int64_t{8} << 30;
  return std::max<std::int64_t>(total / 2 / std::max(1, jobs), std::int64_t{256} << 20);
}

std::vector<CaseStart> CasesInShard(const Catalog& catalog, const Shard& shard) {
  std::vector<CaseStart> cases;
  for (std::size_t i = 0; i < catalog.cases.size(); ++i) {
    if (InShard(catalog.cases[i].name, shard)) cases.push_back({i, 0, 0});
  }
  return cases;
}

std::size_t ResultsOfCase(const Catalog& catalog, std::size_t case_index,
                          std::size_t num_backends) {
  const CaseEntry& entry = catalog.cases[case_index];
  return (entry.valid() ? entry.data_sets.size() : 1) * num_backends;
}

}  // namespace mm::conformance
