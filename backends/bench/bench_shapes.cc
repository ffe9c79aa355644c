#include "backends/bench/bench_shapes.h"

#include <random>

namespace mm::bench {

std::span<const BenchShape> Shapes() {
  static const BenchShape kShapes[] = {
      {"128x128x128", {128, 128}, {128, 128}, false},
      {"256x256x256", {256, 256}, {256, 256}, false},
      {"1024x1024x1024", {1024, 1024}, {1024, 1024}, true},
      {"64b_64x64x64", {64, 64, 64}, {64, 64, 64}, false},
      {"bcast_8x1x128x256_1x4x256x64", {8, 1, 128, 256}, {1, 4, 256, 64}, false},
      {"tiny_3x4x3", {3, 4}, {4, 3}, false},
      {"tiny_2b_3x4x3", {2, 3, 4}, {2, 4, 3}, false},
  };
  return kShapes;
}

std::span<const DType> BenchDTypes() {
  static constexpr DType kDTypes[] = {DType::kFloat, DType::kBFloat16, DType::kDouble,
                                      DType::kInt32};
  return kDTypes;
}

double MatMulFlops(const MatMulPlan& plan) {
  return 2.0 * static_cast<double>(plan.batch) * static_cast<double>(plan.m) *
         static_cast<double>(plan.n) * static_cast<double>(plan.k);
}

void SetGflops(benchmark::State& state, const MatMulPlan& plan) {
  state.counters["GFLOPS"] =
      benchmark::Counter(MatMulFlops(plan) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

Tensor BenchInput(DType dtype, const Dims& dims, std::uint64_t seed) {
  Tensor t = Tensor::Create(dtype, dims).value();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    T* data = t.Data<T>();
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        data[i] = static_cast<T>(rng() % 17);
      } else {
        data[i] = RoundFromDouble<T>(dist(rng));
      }
    }
  });
  return t;
}

}  // namespace mm::bench
