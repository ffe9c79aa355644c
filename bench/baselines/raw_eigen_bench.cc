// raw_eigen/<dtype>/<shape>: what a programmer gets from Eigen alone, the yardstick for
// matmul/eigen/<dtype>/<shape>. Each is a bare `Y.noalias() = A * B` over row-major Eigen::Map
// views of preallocated buffers, the copy compiled for the running CPU that the backend runs too
// (eigen_kernels.h: one copy per instruction-set level, chosen at run time); a batched shape is a
// loop of such products over operand pointers worked out before timing.
//  - float, double: Eigen's product of that type.
//  - int32: Eigen's int32 product (values are small, nothing overflows).
//  - bfloat16: the same work the backend does, done bare: widen A and B to float32 with Eigen casts
//    into preallocated buffers, float32 product, cast Y back to bfloat16.
// raw_eigen_native/bfloat16/<shape> is Eigen's own bfloat16 product for comparison (every multiply
// and add rounded to bfloat16: the accuracy the backend avoids; much slower too).
// Also describes Eigen for `mm-bench --mm_describe`: version and the SIMD sets of the chosen copy.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mm/backends/eigen/eigen_kernels.h"
#include "mm/bench/bench_shapes.h"

namespace mm::bench {
namespace {

template <class S>
using RowMajorMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Element offsets of every batch entry's A and B matrix, from the engine's broadcasting rules.
std::vector<std::pair<std::int64_t, std::int64_t>> AllBatchOffsets(const MatMulPlan& plan) {
  std::vector<std::pair<std::int64_t, std::int64_t>> offsets;
  for (std::int64_t i = 0; i < plan.batch; ++i) offsets.push_back(plan.BatchOffsets(i));
  return offsets;
}

// The chosen copy of the eigen backend's kernels (an unknown MM_MAX_CPU_ISA ends the benchmark).
const eigen_internal::EigenKernels& Kernels() {
  const auto kernels = eigen_internal::ChosenEigenKernels();
  if (!kernels.ok()) {
    std::fprintf(stderr, "mm-bench: %s\n", kernels.status().ToString().c_str());
    std::exit(2);
  }
  return **kernels;
}

// Eigen's own product in S, compiled here (for bfloat16: scalar code at any level).
template <class S>
void PlainProduct(const S* a, const S* b, S* y, std::ptrdiff_t m, std::ptrdiff_t k,
                  std::ptrdiff_t n) {
  const Eigen::Map<const RowMajorMatrix<S>> a_mat(a, m, k);
  const Eigen::Map<const RowMajorMatrix<S>> b_mat(b, k, n);
  Eigen::Map<RowMajorMatrix<S>> y_mat(y, m, n);
  y_mat.noalias() = a_mat * b_mat;
}

// The bare loop: one Eigen product (`product`, in S, the type Eigen multiplies in) per batch
// entry.
template <class S>
void BareProducts(benchmark::State& state, const MatMulPlan& plan, const S* a, const S* b, S* y,
                  const std::function<void()>& before, const std::function<void()>& after,
                  eigen_internal::ProductFn<S> product) {
  const auto offsets = AllBatchOffsets(plan);
  const Eigen::Index m = plan.m, k = plan.k, n = plan.n;
  SettleOtherThreads();  // Another library's spinning threads would share the cores.
  for (auto _ : state) {
    before();
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      product(a + offsets[i].first, b + offsets[i].second, y + static_cast<std::int64_t>(i) * m * n,
              m, k, n);
    }
    after();
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  SetGflops(state, plan);
}

template <class T>
void RawEigen(benchmark::State& state, const BenchShape& shape) {
  const MatMulPlan plan = PlanMatMul({DTypeOf<T>(), shape.a_dims, shape.b_dims}).value();
  const Tensor a = BenchInput(DTypeOf<T>(), shape.a_dims, 1);
  const Tensor b = BenchInput(DTypeOf<T>(), shape.b_dims, 2);
  Tensor y = Tensor::Create(DTypeOf<T>(), plan.y_dims).value();
  BareProducts<T>(
      state, plan, a.Data<T>(), b.Data<T>(), y.Data<T>(), [] {}, [] {}, Kernels().Product<T>());
}

// Eigen's own bfloat16 product, on Eigen's type: the inputs' bits handed over once, before the
// timed loop (std::bit_cast of mm's bfloat16).
void RawEigenBFloat16(benchmark::State& state, const BenchShape& shape) {
  const MatMulPlan plan = PlanMatMul({DType::kBFloat16, shape.a_dims, shape.b_dims}).value();
  const auto eigen_copy = [](const Tensor& t) {
    std::vector<Eigen::bfloat16> copy(static_cast<std::size_t>(t.NumElements()));
    for (std::size_t i = 0; i < copy.size(); ++i) {
      copy[i] = std::bit_cast<Eigen::bfloat16>(t.Data<bfloat16>()[i]);
    }
    return copy;
  };
  const std::vector<Eigen::bfloat16> a = eigen_copy(BenchInput(DType::kBFloat16, shape.a_dims, 1));
  const std::vector<Eigen::bfloat16> b = eigen_copy(BenchInput(DType::kBFloat16, shape.b_dims, 2));
  std::vector<Eigen::bfloat16> y(static_cast<std::size_t>(plan.y_elements));
  BareProducts<Eigen::bfloat16>(
      state, plan, a.data(), b.data(), y.data(), [] {}, [] {}, &PlainProduct<Eigen::bfloat16>);
}

void RawEigenBFloat16ViaFloat(benchmark::State& state, const BenchShape& shape) {
  const MatMulPlan plan = PlanMatMul({DType::kBFloat16, shape.a_dims, shape.b_dims}).value();
  const Tensor a = BenchInput(DType::kBFloat16, shape.a_dims, 1);
  const Tensor b = BenchInput(DType::kBFloat16, shape.b_dims, 2);
  Tensor y = Tensor::Create(DType::kBFloat16, plan.y_dims).value();
  std::vector<float> a_float(plan.a_elements), b_float(plan.b_elements), y_float(plan.y_elements);
  const eigen_internal::EigenKernels& kernels = Kernels();
  const auto widen = [&] {
    kernels.bfloat16_to_float(a.Data<bfloat16>(), a_float.data(), plan.a_elements);
    kernels.bfloat16_to_float(b.Data<bfloat16>(), b_float.data(), plan.b_elements);
  };
  const auto narrow = [&] {
    kernels.float_to_bfloat16(y_float.data(), y.Data<bfloat16>(), plan.y_elements);
  };
  BareProducts<float>(state, plan, a_float.data(), b_float.data(), y_float.data(), widen, narrow,
                      kernels.product_float);
}

void RegisterRawEigen(ShapeSet set) {
  for (DType dtype : BenchDTypes(set)) {
    for (const BenchShape& shape : Shapes(set)) {
      if (!Benchmarked(shape, dtype)) continue;
      const std::string name = "raw_eigen/" + std::string(DTypeName(dtype)) + "/" + shape.name;
      benchmark::internal::Benchmark* bench = nullptr;
      switch (dtype) {
        case DType::kFloat:
          bench = benchmark::RegisterBenchmark(name.c_str(), RawEigen<float>, shape);
          break;
        case DType::kDouble:
          bench = benchmark::RegisterBenchmark(name.c_str(), RawEigen<double>, shape);
          break;
        case DType::kInt32:
          bench = benchmark::RegisterBenchmark(name.c_str(), RawEigen<std::int32_t>, shape);
          break;
        case DType::kInt64:
          bench = benchmark::RegisterBenchmark(name.c_str(), RawEigen<std::int64_t>, shape);
          break;
        case DType::kBFloat16:
          bench = benchmark::RegisterBenchmark(name.c_str(), RawEigenBFloat16ViaFloat, shape);
          // Eigen's native bfloat16 product is scalar code, hence slow: only small shapes,
          // and only in the full set.
          if (set == ShapeSet::kFull && !shape.Large() && shape.kind != ShapeKind::kSquare) {
            benchmark::RegisterBenchmark(("raw_eigen_native/bfloat16/" + shape.name).c_str(),
                                         RawEigenBFloat16, shape)
                ->UseRealTime()
                ->MeasureProcessCPUTime();
          }
          break;
        default:
          break;
      }
      if (bench != nullptr) bench->UseRealTime()->MeasureProcessCPUTime();
    }
  }
}

nlohmann::json DescribeEigen() {
  return {
      {"version", std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
                      "." + std::to_string(EIGEN_MINOR_VERSION)},
      {"simd", Kernels().simd},
      {"mm_kernels", DescribeChosenCpuIsa()},
      {"eigen_threads", Eigen::nbThreads()}};
}

[[maybe_unused]] const bool kRawEigenRegistered =
    AddRegistrar(&RegisterRawEigen) && AddDescriber("eigen", &DescribeEigen) &&
    AddBaseline({"raw_eigen", "raw Eigen", "eigen"}) &&
    AddBaseline({"raw_eigen_native", "raw Eigen (own bfloat16 product)", "eigen"});

}  // namespace
}  // namespace mm::bench
