// The shapes every MatMul benchmark in mm-bench runs, so that our backends and the bare libraries
// are measured on exactly the same problems in one run.
#ifndef MM_BACKENDS_BENCH_BENCH_SHAPES_H_
#define MM_BACKENDS_BENCH_BENCH_SHAPES_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/dtype.h"
#include "engine/matmul_plan.h"
#include "engine/tensor.h"

namespace mm::bench {

// One benchmark problem: Y = MatMul(A, B).
struct BenchShape {
  std::string_view name;  // Appears in benchmark names: matmul/<backend>/<dtype>/<name>.
  Dims a_dims;
  Dims b_dims;
  bool large;  // 1024^3-class: skipped for the naive reference backend.
};

// The shared shape list: square 128/256/1024 (M x K x N), 64 batched 64^3, a two-sided batch
// broadcast, and two tiny shapes where per-call overhead dominates.
std::span<const BenchShape> Shapes();

// The dtypes benchmarked: float and bfloat16 for every backend, double and int32 where supported.
std::span<const DType> BenchDTypes();

// 2 * batch * M * N * K of `plan`: the flop count behind the GFLOPS counter.
double MatMulFlops(const MatMulPlan& plan);

// Sets the GFLOPS counter (flops per iteration, as a rate) and items processed on `state`.
void SetGflops(benchmark::State& state, const MatMulPlan& plan);

// Seeded inputs for `shape` in `dtype` (small values, so no benchmark times NaN or overflow paths).
Tensor BenchInput(DType dtype, const Dims& dims, std::uint64_t seed);

}  // namespace mm::bench

#endif  // MM_BACKENDS_BENCH_BENCH_SHAPES_H_
