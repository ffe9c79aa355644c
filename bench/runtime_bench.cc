// mm-bench's figures of the runtime protocol: problems per second through a shipped driver, the
// pipe and the driver's framing included (what a run of many small problems costs). Shapes: a
// fixed 16x16x16, and a cycle of 64 random M, K, N in 1..16 (fixed seed).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/bench/bench_shapes.h"

namespace mm::bench {
namespace {

struct Prepared {
  Tensor a, b, y;
  std::unique_ptr<MatMulPrimitive> primitive;
};

Prepared Prepare(Backend& backend, DType dtype, Dims a_dims, Dims b_dims) {
  const MatMulPlan plan = PlanMatMul({dtype, a_dims, b_dims}).value();
  Prepared p{Tensor::Create(dtype, a_dims).value(), Tensor::Create(dtype, b_dims).value(),
             Tensor::Create(dtype, plan.y_dims).value(), backend.Prepare(plan).value()};
  return p;
}

void RunRoundTrips(benchmark::State& state, const std::string& runtime, DType dtype, bool mixed) {
  auto backend = BuiltinBackends().Create(runtime);
  if (!backend.ok()) {
    state.SkipWithError(backend.status().ToString().c_str());
    return;
  }
  std::vector<Prepared> problems;
  std::mt19937 random(1);
  std::uniform_int_distribution<std::int64_t> extent(1, 16);
  for (int i = 0; i < (mixed ? 64 : 1); ++i) {
    const std::int64_t m = mixed ? extent(random) : 16, k = mixed ? extent(random) : 16,
                       n = mixed ? extent(random) : 16;
    problems.push_back(Prepare(**backend, dtype, {m, k}, {k, n}));
  }
  std::size_t next = 0;
  for (auto _ : state) {
    Prepared& p = problems[next];
    next = (next + 1) % problems.size();
    const Status done = p.primitive->Execute(p.a.view(), p.b.view(), p.y.mutable_view());
    if (!done.ok()) {
      state.SkipWithError(done.ToString().c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void RegisterRuntimeRoundTrips(ShapeSet) {
  for (const char* runtime :
       {"numpy", "torch", "onnxruntime", "onnxruntime-web", "tfjs", "tfjs-wasm"}) {
    for (bool mixed : {false, true}) {
      const std::string name = std::string("BM_RuntimeRoundTrip/") + runtime + "/float/" +
                               (mixed ? "mixed_upto16" : "16x16x16");
      benchmark::RegisterBenchmark(name.c_str(),
                                   [runtime, mixed](benchmark::State& state) {
                                     RunRoundTrips(state, runtime, DType::kFloat, mixed);
                                   })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

[[maybe_unused]] const bool kRuntimeRoundTripsRegistered = AddRegistrar(&RegisterRuntimeRoundTrips);

}  // namespace
}  // namespace mm::bench
