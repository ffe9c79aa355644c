// mm-bench's benchmarks of the registered backends (matmul/..., prepare/...; see
// matmul_bench.cc).
#ifndef MM_BENCH_MATMUL_BENCH_H_
#define MM_BENCH_MATMUL_BENCH_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mm/bench/bench_shapes.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"

namespace mm::bench {

// Chooses the backends benchmarked and described from `registry`, which the benchmarks use
// later (it must outlive them): `named` (each checked; INVALID_ARGUMENT naming --backend), else
// the default set and the drivers of `commands`. A runtime is a backend run only when named, or
// one of `commands`.
Status ChooseBenchBackends(const BackendRegistry& registry, const std::vector<std::string>& named,
                           const std::vector<std::string>& commands);

// Whether `name`, one of the chosen backends, is a runtime behind a driver (timed by round trips).
bool IsBenchRuntime(const std::string& name);

// The backends chosen to be benchmarked, in order.
const std::vector<std::string>& BenchmarkedBackends();

// Registers matmul/<backend>/<dtype>/<shape> and prepare/... for the chosen backends and the
// shapes of `set` (before the baselines of RegisterAll, so they are listed and run first).
void RegisterBackendBenchmarks(ShapeSet set);

// What --mm_describe prints: the machine, the chosen backends' dtype support, the libraries'
// facts and the baselines.
nlohmann::json DescribeBenchBackends();

}  // namespace mm::bench

#endif  // MM_BENCH_MATMUL_BENCH_H_
