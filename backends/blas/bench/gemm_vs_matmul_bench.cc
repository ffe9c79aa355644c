// Gemm against MatMul at the same shape on the eigen backend and each BLAS library installed here
// (issue 54's target: Gemm >= 0.95x its MatMul): gemm/<backend>/<dtype>/<M>x<K>x<N> is
// Y = A B + C with C [N] and beta 1 (a fully connected layer's bias) through the backend's
// family(), matmul/<backend>/<dtype>/<M>x<K>x<N> the MatMul of the same A and B through a primitive
// prepared once. Run with --benchmark_enable_random_interleaving=true and repetitions, so that
// both are measured side by side in one run on a machine others load, and compare medians.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mm/backends/blas/blas_backend.h"
#include "mm/backends/eigen/eigen_backend.h"
#include "mm/family/backend.h"
#include "mm/family/plan.h"
#include "mm/family/problem.h"

namespace mm {
namespace {

// A [m, k], B [k, n] and C [n] of `dtype` (float or double), values in [-1, 1).
struct Operands {
  Tensor a, b, c, y;
  Operands(DType dtype, std::int64_t m, std::int64_t k, std::int64_t n)
      : a(Tensor::Create(dtype, {m, k}).value()),
        b(Tensor::Create(dtype, {k, n}).value()),
        c(Tensor::Create(dtype, {n}).value()),
        y(Tensor::Create(dtype, {m, n}).value()) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> value(-1, 1);
    for (Tensor* t : {&a, &b, &c}) {
      for (std::int64_t i = 0; i < t->NumElements(); ++i) {
        if (dtype == DType::kFloat) {
          t->Data<float>()[i] = static_cast<float>(value(rng));
        } else {
          t->Data<double>()[i] = value(rng);
        }
      }
    }
  }
};

void Flops(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n) {
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * m * k * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void TimeGemm(benchmark::State& state, Backend* backend, DType dtype, std::int64_t m,
              std::int64_t k, std::int64_t n) {
  Operands x(dtype, m, k, n);
  family::Problem problem;
  problem.op = family::Op::kGemm;
  problem.version = 13;
  problem.inputs = {{"A", x.a.view()}, {"B", x.b.view()}, {"C", x.c.view()}};
  const family::Plan plan = family::PlanProblem(problem).value();
  for (auto _ : state) {
    const Status status = backend->family()->Compute(plan, x.y.mutable_view());
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(x.y.raw_data());
  }
  Flops(state, m, k, n);
}

void TimeMatMul(benchmark::State& state, Backend* backend, DType dtype, std::int64_t m,
                std::int64_t k, std::int64_t n) {
  Operands x(dtype, m, k, n);
  auto primitive = backend->Prepare(PlanMatMul({dtype, {m, k}, {k, n}}).value()).value();
  for (auto _ : state) {
    const Status status = primitive->Execute(x.a.view(), x.b.view(), x.y.mutable_view());
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(x.y.raw_data());
  }
  Flops(state, m, k, n);
}

// The backends timed: eigen, then each BLAS library that loads here (the others are named on
// stderr and left out).
std::vector<std::unique_ptr<Backend>>& Backends() {
  static auto* backends = [] {
    auto* out = new std::vector<std::unique_ptr<Backend>>;
    out->push_back(std::make_unique<EigenBackend>());
    for (const blas::BlasLibraryDescription& d : blas::DebianBlasLibraries()) {
      auto library = blas::BlasLibrary::Load(d, blas::BlasLibraryPath(d, blas::BlasLibDir()));
      if (library.ok()) {
        out->push_back(std::make_unique<blas::BlasBackend>(*library));
      } else {
        std::fprintf(stderr, "%s left out: %s\n", d.name.c_str(),
                     library.status().ToString().c_str());
      }
    }
    return out;
  }();
  return *backends;
}

void Register() {
  for (auto& backend : Backends()) {
    for (const DType dtype : {DType::kFloat, DType::kDouble}) {
      for (const std::int64_t size : {256, 1024}) {
        const std::string suffix = std::string(backend->name()) + "/" +
                                   std::string(DTypeName(dtype)) + "/" + std::to_string(size) +
                                   "x" + std::to_string(size) + "x" + std::to_string(size);
        Backend* b = backend.get();
        benchmark::RegisterBenchmark(("gemm/" + suffix).c_str(), TimeGemm, b, dtype, size, size,
                                     size)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("matmul/" + suffix).c_str(), TimeMatMul, b, dtype, size, size,
                                     size)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace mm

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  mm::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
