// matmul/<backend>/<dtype>/<shape>: every registered backend through the engine API (Prepare once,
// Execute in the loop), for every benchmark dtype the backend supports, plugins included
// (`--backend-lib PATH`, repeatable, and MM_BACKEND_LIBS). Bare-library baselines (raw_onednn/...,
// raw_eigen/...) live beside their backends and link into the same binary.
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend_list.h"
#include "backends/bench/bench_shapes.h"
#include "backends/plugin/plugin_backend.h"

namespace mm::bench {
namespace {

// Built-in backends and loaded plugins; set by main() before any benchmark is registered.
const BackendRegistry* g_registry = nullptr;

void RunBackend(benchmark::State& state, const std::string& backend_name, DType dtype,
                const BenchShape& shape) {
  auto backend = g_registry->Create(backend_name);
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

// Registers matmul/... for every backend of `registry` (which must outlive the benchmarks).
void RegisterBackendBenchmarks(const BackendRegistry& registry) {
  g_registry = &registry;
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
}

void PrintHelp() {
  std::cout
      << "mm-bench: Google Benchmark over every MatMul backend and the bare libraries.\n"
         "  --backend-lib PATH   also benchmark the backend plugin at PATH (repeatable; also\n"
         "                       MM_BACKEND_LIBS, colon-separated, loaded first)\n"
         "Google Benchmark's options:\n";
  benchmark::PrintDefaultHelp();
}

}  // namespace
}  // namespace mm::bench

// Takes --backend-lib out of the arguments (the rest are Google Benchmark's), loads the plugins,
// registers the benchmarks and runs them. A plugin that cannot be loaded is a usage error (2).
int main(int argc, char** argv) {
  std::vector<std::string> libraries;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend-lib") {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::cerr << "mm-bench: --backend-lib needs a path\n";
        return 2;
      }
      libraries.push_back(argv[++i]);
    } else if (arg.rfind("--backend-lib=", 0) == 0) {
      libraries.push_back(arg.substr(std::strlen("--backend-lib=")));
    } else {
      rest.push_back(argv[i]);
    }
  }
  mm::BackendRegistry registry = mm::BuiltinBackends();
  const mm::Status loaded =
      mm::RegisterBackendLibraries(registry, mm::BackendLibrariesToLoad(libraries));
  if (!loaded.ok()) {
    std::cerr << "mm-bench: " << loaded.message() << "\n";
    return 2;
  }
  mm::bench::RegisterBackendBenchmarks(registry);
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data(), mm::bench::PrintHelp);
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
