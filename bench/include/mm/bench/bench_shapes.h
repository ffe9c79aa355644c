// The shapes every MatMul benchmark in mm-bench runs, so that our backends and the bare libraries
// are measured on exactly the same problems in one run, and the hooks through which the backend
// folders add their bare-library baselines and machine facts to mm-bench.
#ifndef MM_BENCH_BENCH_SHAPES_H_
#define MM_BENCH_BENCH_SHAPES_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/tensor.h"

namespace mm::bench {

// Which benchmarks mm-bench registers (its --mm_set flag). kQuick is a small sample of every kind
// of benchmark (seconds); kFull is everything (minutes).
enum class ShapeSet { kQuick, kFull };

// What a shape is there to show; the report groups its figures by it.
enum class ShapeKind {
  kSquare,     // M = K = N: the GFLOP/s-against-size sweep.
  kBatched,    // Same-shaped batch on both sides.
  kBroadcast,  // Batch dims broadcast on both operands.
  kTiny,       // Per-call overhead dominates: reported as time per call.
};

// One benchmark problem: Y = MatMul(A, B).
struct BenchShape {
  std::string name;  // Appears in benchmark names: matmul/<backend>/<dtype>/<name>.
  Dims a_dims;
  Dims b_dims;
  ShapeKind kind;
  bool quick;    // Also in the quick set.
  bool prepare;  // Also gets a prepare/ (creation time) benchmark.

  // 2 * M * N * K * batch above 2 * 512^3: too slow for the naive reference backend.
  bool Large() const;
};

// Shapes of `set`. The full set: square M = K = N for every power of two from 8 to 2048 and its odd
// neighbours (2^k - 1, 2^k + 1, up to 1025: the sizes where blocked kernels have a remainder), 64
// batched 64^3, 8 batched 128 x 256 x 64, a two-sided batch broadcast, and two tiny shapes.
std::span<const BenchShape> Shapes(ShapeSet set);

// Whether `shape` is benchmarked in `dtype`. Everything is, except the largest square (2048^3)
// outside float and bfloat16, whose slow products would take much of the full report's budget.
bool Benchmarked(const BenchShape& shape, DType dtype);

// The dtypes benchmarked in `set`: float, bfloat16, double, int32 (quick and full), float16 and
// int64 (full). A backend gets only those its Supports() accepts.
std::span<const DType> BenchDTypes(ShapeSet set);

// 2 * batch * M * N * K of `plan`: the flop count behind the GFLOPS counter.
double MatMulFlops(const MatMulPlan& plan);

// Waits until no other thread of this process is running, for at most `limit_seconds`, and returns
// the seconds waited. After a call, a library's threads keep spinning for a while and would share
// the cores with the next library timed. Every timing of mm-bench and of the calibration starts
// with it. The caller's thread keeps its core busy while it waits.
double SettleOtherThreads(double limit_seconds = 0.25);

// Sets the GFLOPS counter (flops per iteration, as a rate) and items processed on `state`.
void SetGflops(benchmark::State& state, const MatMulPlan& plan);

// Seeded inputs for `shape` in `dtype` (small values, so no benchmark times NaN or overflow paths).
Tensor BenchInput(DType dtype, const Dims& dims, std::uint64_t seed);

// A function that registers benchmarks for `set` with benchmark::RegisterBenchmark. Source files
// linked into mm-bench add theirs with AddRegistrar from a static initialiser; mm-bench's main()
// calls them all, once it knows the set, through RegisterAll.
using Registrar = void (*)(ShapeSet set);
bool AddRegistrar(Registrar registrar);
void RegisterAll(ShapeSet set);

// A function returning facts about a library linked into mm-bench (version, what it runs on this
// CPU), printed under "libraries"/`name` by `mm-bench --mm_describe`.
using Describer = nlohmann::json (*)();
bool AddDescriber(std::string name, Describer describer);
nlohmann::json DescribeLibraries();

// A baseline: a bare library timed beside the backends (benchmarks `<name>/<dtype>/<shape>`),
// with the label reports show for it and the backend it is the yardstick of (drawn in that
// backend's colour). Source files registering baselines declare them with AddBaseline from a
// static initialiser; `mm-bench --mm_describe` prints them under "baselines", so a report needs
// no list of its own.
struct Baseline {
  std::string name;     // First part of its benchmark names, e.g. "raw_mylib".
  std::string label;    // E.g. "raw MyLib".
  std::string backend;  // The backend it is the bare library of.
};
bool AddBaseline(Baseline baseline);
const std::vector<Baseline>& Baselines();

}  // namespace mm::bench

#endif  // MM_BENCH_BENCH_SHAPES_H_
