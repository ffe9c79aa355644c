// matmul/<backend>/<dtype>/<shape>: every registered backend through the engine API (Prepare once,
// Execute in the loop), for every benchmark dtype the backend supports. Bare-library baselines
// (raw_onednn/..., raw_eigen/...) live beside their backends and link into the same binary.
#include <benchmark/benchmark.h>

#include <iostream>
#include <memory>
#include <string>

#include "backends/backend_list.h"
#include "backends/bench/bench_shapes.h"

namespace mm::bench {
namespace {

void RunBackend(benchmark::State& state, const std::string& backend_name, DType dtype,
                const BenchShape& shape) {
  auto backend = BuiltinBackends().Create(backend_name);
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
  for (auto _ : state) {
    Status status = (*primitive)->Execute(a_view, b_view, y_view);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(y_view.data);
    benchmark::ClobberMemory();
  }
  SetGflops(state, *plan);
}

// Registers before main() runs the benchmarks; the backend list is explicit, this only walks it.
[[maybe_unused]] const bool kRegistered = [] {
  BackendRegistry registry = BuiltinBackends();
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name);
    if (!backend.ok()) {
      std::cerr << "mm-bench: backend " << name << " unavailable: " << backend.status() << "\n";
      continue;
    }
    for (DType dtype : BenchDTypes()) {
      for (const BenchShape& shape : Shapes()) {
        if (name == "reference" && shape.large) continue;
        if (!(*backend)->Supports({dtype, shape.a_dims, shape.b_dims}).supported()) continue;
        const std::string bench_name =
            "matmul/" + name + "/" + std::string(DTypeName(dtype)) + "/" + std::string(shape.name);
        benchmark::RegisterBenchmark(bench_name.c_str(), [name, dtype,
                                                          &shape](benchmark::State& state) {
          RunBackend(state, name, dtype, shape);
        })->UseRealTime();
      }
    }
  }
  // The oracle's own speed target: a 512^3 float matmul well under a second.
  static const BenchShape kReference512{"512x512x512", {512, 512}, {512, 512}, false};
  benchmark::RegisterBenchmark(
      "matmul/reference/float/512x512x512",
      [](benchmark::State& state) { RunBackend(state, "reference", DType::kFloat, kReference512); })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace mm::bench
