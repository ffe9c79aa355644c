// mm-bench: Google Benchmark over every registered backend and the bare libraries.
//
//   matmul/<backend>/<dtype>/<shape>   our backend through the engine API (Prepare once, Execute
//                                      in the loop), for every benchmark dtype it supports. Timed
//                                      in wall time; the CPU time reported is the whole process's
//                                      (every thread), as for the raw_ baselines.
//   prepare/<backend>/<dtype>/<shape>  creation time: Prepare on a fresh backend (nothing cached).
//   raw_onednn/..., raw_eigen/..., peak/...  baselines and the machine's peak, registered by the
//                                      other source files linked in (AddRegistrar).
//   gemm/..., matmulinteger/..., qlinearmatmul/...  with --op: MatMul's family (family_bench.h).
//
// Backends: every built-in one and every plugin loaded with --backend-lib PATH (repeatable) or
// MM_BACKEND_LIBS (colon-separated, loaded first), every driver of --backend-cmd NAME=COMMAND; or
// exactly those named with --backend NAME (how a runtime run only when named, numpy or torch, is
// benchmarked). A runtime behind a driver is timed by the runtime's own clock (the y answer's
// "seconds", the pipe left out) when its driver sends it, by the whole round trip otherwise (the
// label says which), with a fixed iteration count (each call is a round trip through a pipe).
//
// Flags of its own, before Google Benchmark's (--benchmark_filter, --benchmark_out, ...):
//   --backend-lib PATH    also benchmark the backend plugin at PATH.
//   --backend-cmd NAME=COMMAND  also benchmark the runtime behind the driver COMMAND.
//   --backend NAME        benchmark NAME (repeatable); without it, the default set.
//   --op NAME             time operator NAME (MatMul, the default; Gemm, MatMulInteger,
//                         QLinearMatMul); repeatable.
//   --mm_set=quick|full   which shapes and dtypes to register (default full).
//   --mm_describe         print the machine, the backends' dtype support and the libraries' facts
//                         as JSON on stdout, run nothing.
//   --mm_calibrate=FILE   measure auto's candidates at every shape of the set, at 1 thread and all
//                         cores, and write auto's table of choices to FILE (see calibrate.h).
//   --mm_oracle[=N,...]   print the exact oracle's throughput at N^3 (default 512 and 1024) beside
//                         the fastest double and int64 GEMMs among the backends, at
//                         OMP_NUM_THREADS threads (oracle_bench.h).
#include "matmul_bench.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "family_bench.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/bench/bench_shapes.h"

namespace mm::bench {
namespace {

// Built-in backends and loaded plugins; set by ChooseBenchBackends before any benchmark is
// registered.
const BackendRegistry* g_registry = nullptr;
// The backends benchmarked and described, and which of them are runtimes behind a driver.
std::vector<std::string> g_benchmarked;
std::vector<std::string> g_runtimes;
// What --mm_describe lists: the benchmarked backends, and without --backend the runtimes run only
// when named too (marked "on_request"), so a report knows every runtime it can name.
std::vector<std::string> g_described;

bool IsRuntime(const std::string& name) { return IsBenchRuntime(name); }

// Calls per repetition of a runtime: a round trip each, so a fixed count, fewer for large ones.
benchmark::IterationCount RuntimeIterations(const BenchShape& shape, DType dtype) {
  const MatMulPlan plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims}).value();
  return std::clamp<benchmark::IterationCount>(
      static_cast<benchmark::IterationCount>(2e8 / std::max(MatMulFlops(plan), 1.0)), 2, 100);
}

// Executes once; the runtime's own seconds for the call when its driver says them, else the
// round trip's. Sets `own_clock` false when the round trip had to be used.
Status TimedRuntimeCall(MatMulPrimitive& primitive, TensorView a, TensorView b, MutableTensorView y,
                        benchmark::State& state, bool& own_clock) {
  const auto start = std::chrono::steady_clock::now();
  MM_RETURN_IF_ERROR(primitive.Execute(a, b, y));
  const double round_trip =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::optional<double> own = runtime::LastRuntimeSeconds(primitive);
  own_clock = own_clock && own.has_value();
  state.SetIterationTime(own.value_or(round_trip));
  return OkStatus();
}

// A backend for one benchmark: a fresh one, or for a runtime the one instance kept for the whole
// run (each instance starts a driver process, which for torch takes seconds).
StatusOr<Backend*> BackendFor(const std::string& name, std::unique_ptr<Backend>& fresh) {
  static std::map<std::string, std::unique_ptr<Backend>> runtimes;
  std::unique_ptr<Backend>& slot = IsRuntime(name) ? runtimes[name] : fresh;
  if (slot == nullptr) {
    MM_ASSIGN_OR_RETURN(slot, g_registry->Create(name));
  }
  return slot.get();
}

void RunBackend(benchmark::State& state, const std::string& backend_name, DType dtype,
                const BenchShape& shape) {
  std::unique_ptr<Backend> fresh;
  auto backend = BackendFor(backend_name, fresh);
  if (!backend.ok()) {
    state.SkipWithError(backend.status().ToString().c_str());
    return;
  }
  auto plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims});
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  auto primitive = (*backend)->Prepare(*plan);
  if (!primitive.ok()) {
    state.SkipWithError(primitive.status().ToString().c_str());
    return;
  }
  const Tensor a = BenchInput(dtype, shape.a_dims, 1);
  const Tensor b = BenchInput(dtype, shape.b_dims, 2);
  Tensor y = Tensor::Create(dtype, plan->y_dims).value();
  const TensorView a_view = a.view();
  const TensorView b_view = b.view();
  const MutableTensorView y_view = y.mutable_view();
  SettleOtherThreads();  // Another library's spinning threads would share the cores.
  const bool runtime = IsRuntime(backend_name);
  bool own_clock = true;
  for (auto _ : state) {
    Status status = runtime
                        ? TimedRuntimeCall(**primitive, a_view, b_view, y_view, state, own_clock)
                        : (*primitive)->Execute(a_view, b_view, y_view);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(y_view.data);
    benchmark::ClobberMemory();
  }
  SetGflops(state, *plan);
  // What ran ("auto -> onednn: ..."), so a report can tell auto's choice from the numbers.
  std::string label = (*primitive)->implementation();
  if (runtime) {
    label += own_clock ? "; timed by the runtime's own clock"
                       : "; timed by the round trip (the driver sends no seconds)";
  }
  state.SetLabel(label);
}

// Creation cost as a user meets it the first time a shape is seen: each iteration creates a fresh
// backend (untimed, so no cache of the backend's survives) and times its Prepare alone.
void PrepareBackend(benchmark::State& state, const std::string& backend_name, DType dtype,
                    const BenchShape& shape) {
  const BackendRegistry& registry = *g_registry;
  auto plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims});
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto created = registry.Create(backend_name);
    if (!created.ok()) {
      state.SkipWithError(created.status().ToString().c_str());
      break;
    }
    std::unique_ptr<Backend> backend = std::move(created).value();
    state.ResumeTiming();
    auto primitive = backend->Prepare(*plan);
    benchmark::DoNotOptimize(primitive);
    state.PauseTiming();
    if (!primitive.ok()) {
      state.SkipWithError(primitive.status().ToString().c_str());
      break;
    }
    // Destroyed untimed: creation is what this measures.
    std::unique_ptr<MatMulPrimitive>(std::move(primitive).value()).reset();
    backend.reset();
    state.ResumeTiming();
  }
}

}  // namespace

bool IsBenchRuntime(const std::string& name) {
  return std::find(g_runtimes.begin(), g_runtimes.end(), name) != g_runtimes.end();
}

const std::vector<std::string>& BenchmarkedBackends() { return g_benchmarked; }

void RegisterBackendBenchmarks(ShapeSet set) {
  const BackendRegistry& registry = *g_registry;
  for (const std::string& name : g_benchmarked) {
    auto backend = registry.Create(name);
    if (!backend.ok()) {
      std::cerr << "mm-bench: backend " << name << " unavailable: " << backend.status() << "\n";
      continue;
    }
    // A runtime in the quick set: the scoreboard's shapes only (a 256^3 product and the tiny
    // ones); its calls are round trips through a pipe, and some runtimes have no fast kernel for
    // some dtypes (torch's bfloat16, numpy's integers).
    const bool runtime = IsRuntime(name);
    for (DType dtype : BenchDTypes(set)) {
      for (const BenchShape& shape : Shapes(set)) {
        if (name == "reference" && shape.Large()) continue;
        if (runtime && set == ShapeSet::kQuick && shape.kind != ShapeKind::kTiny &&
            shape.name != "256x256x256") {
          continue;
        }
        if (!Benchmarked(shape, dtype)) continue;
        if (!(*backend)->Supports({dtype, shape.a_dims, shape.b_dims}).supported()) continue;
        const std::string suffix = name + "/" + std::string(DTypeName(dtype)) + "/" + shape.name;
        auto* bench = benchmark::RegisterBenchmark(("matmul/" + suffix).c_str(),
                                                   [name, dtype, &shape](benchmark::State& state) {
                                                     RunBackend(state, name, dtype, shape);
                                                   });
        if (runtime) {
          bench->UseManualTime()->Iterations(RuntimeIterations(shape, dtype));
        } else {
          bench->UseRealTime()->MeasureProcessCPUTime();
        }
        if (shape.prepare && !runtime) {
          benchmark::RegisterBenchmark(("prepare/" + suffix).c_str(),
                                       [name, dtype, &shape](benchmark::State& state) {
                                         PrepareBackend(state, name, dtype, shape);
                                       })
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

nlohmann::json DescribeBenchBackends() {
  nlohmann::json out;
  out["logical_cpus"] = std::thread::hardware_concurrency();
  const char* omp_threads = std::getenv("OMP_NUM_THREADS");
  out["omp_num_threads"] = omp_threads != nullptr ? omp_threads : "";
  nlohmann::json backends = nlohmann::json::array();
  const BackendRegistry& registry = *g_registry;
  for (const std::string& name : g_described) {
    nlohmann::json entry = {{"name", name}, {"description", registry.Description(name)}};
    if (IsRuntime(name)) entry["runtime"] = true;
    if (std::find(g_benchmarked.begin(), g_benchmarked.end(), name) == g_benchmarked.end()) {
      entry["on_request"] = true;
    }
    auto backend = registry.Create(name);
    if (!backend.ok()) {
      entry["error"] = backend.status().ToString();
      backends.push_back(entry);
      continue;
    }
    entry["runs_on"] = (*backend)->RunsOn();
    // The family's operators it computes or refuses, with why (mm-bench --op times them).
    entry["operators"] = DescribeFamilySupport(**backend, kFamilyOps);
    // Support is asked for a plain 2-D problem; a backend may still refuse particular shapes.
    for (DType dtype : kAllDTypes) {
      const Support support = (*backend)->Supports({dtype, {64, 64}, {64, 64}});
      const char* level = support.level == Support::Level::kNative         ? "native"
                          : support.level == Support::Level::kByConversion ? "conversion"
                                                                           : "no";
      nlohmann::json& described = entry["supports"][std::string(DTypeName(dtype))];
      described = {{"level", level}, {"note", support.note}};
      // What its results are judged against (the scoreboard marks one looser than ONNX's).
      if (support.supported()) {
        const Arithmetic arithmetic = (*backend)->DeclaredArithmetic(dtype);
        described["arithmetic"] = {{"accumulation", DTypeName(arithmetic.accumulation)},
                                   {"flushes_subnormals", arithmetic.flushes_subnormals},
                                   {"text", arithmetic.ToString()}};
      }
    }
    backends.push_back(entry);
  }
  out["backends"] = backends;
  // Backends this build knows but cannot run here (a BLAS library not installed), with why.
  out["unavailable_backends"] = nlohmann::json::object();
  for (const std::string& name : registry.UnavailableNames()) {
    out["unavailable_backends"][name] = registry.UnavailableReason(name);
  }
  out["libraries"] = DescribeLibraries();
  out["baselines"] = nlohmann::json::array();
  for (const Baseline& b : Baselines()) {
    out["baselines"].push_back({{"name", b.name}, {"label", b.label}, {"backend", b.backend}});
  }
  return out;
}

// Fills g_benchmarked, g_runtimes and g_described.
Status ChooseBenchBackends(const BackendRegistry& registry, const std::vector<std::string>& named,
                           const std::vector<std::string>& commands) {
  const std::vector<std::string> defaults = registry.DefaultNames();
  g_benchmarked = named.empty() ? defaults : named;
  for (const std::string& name : named) {
    if (Status ok = registry.CheckSelectable(name); !ok.ok()) return ok.WithContext("--backend");
  }
  for (const std::string& spec : commands) {
    const std::string name = spec.substr(0, spec.find('='));
    g_runtimes.push_back(name);  // Registered in the default set already.
  }
  for (const std::string& name : registry.Names()) {
    if (std::find(defaults.begin(), defaults.end(), name) == defaults.end()) {
      g_runtimes.push_back(name);
    }
  }
  g_registry = &registry;
  g_described = g_benchmarked;
  if (named.empty()) {
    for (const std::string& name : registry.Names()) {
      if (std::find(defaults.begin(), defaults.end(), name) == defaults.end()) {
        g_described.push_back(name);
      }
    }
  }
  return OkStatus();
}

}  // namespace mm::bench
