// MatMulInteger through the onednn backend against the bare oneDNN int8 matmul it runs, on the
// square benchmark shapes (M = K = N >= 64):
//   raw_onednn_int8/uint8xint8/<shape>: a u8 x s8 -> s32 oneDNN matmul primitive without
//     attributes, created once (C++ API), execute + wait in the loop: the speed to match;
//   matmulinteger/onednn/uint8xint8/<shape>: MatMulInteger-10, uint8 A x int8 B, no zero points,
//     planned once, computed by the backend's FamilyBackend::Compute into one Y;
//   matmulinteger/onednn/uint8xint8_zp/<shape>: the same with a_zero_point 128 and b_zero_point 3
//     (per tensor), whose terms the backend subtracts itself (docs/backends.md, "oneDNN backend").
// The GFLOPS counter counts 2 * M * N * K integer operations per call. Registered only where the
// backend accepts MatMulInteger (oneDNN runs int8 with VNNI).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "mm/backends/onednn/onednn_backend.h"
#include "mm/bench/bench_shapes.h"
#include "mm/family/backend.h"
#include "mm/family/plan.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::bench {
namespace {

using family::Op;

// Seeded bytes over the whole range of the type.
Tensor Bytes(DType dtype, const Dims& dims, std::uint64_t seed) {
  Tensor t = Tensor::Create(dtype, dims).value();
  auto* data = static_cast<std::uint8_t*>(t.raw_data());
  for (std::size_t i = 0; i < t.NumBytes(); ++i) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    data[i] = static_cast<std::uint8_t>(seed >> 56);
  }
  return t;
}

void RunRaw(benchmark::State& state, const BenchShape& shape) {
  const MatMulPlan plan = PlanMatMul({DType::kFloat, shape.a_dims, shape.b_dims}).value();
  const Tensor a = Bytes(DType::kUInt8, shape.a_dims, 1), b = Bytes(DType::kInt8, shape.b_dims, 2);
  Tensor y = Tensor::Create(DType::kInt32, plan.y_dims).value();
  try {
    OneDnnBackend::ApplyIsaPolicy();  // The same ISA as the backend it is the baseline of.
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc src(shape.a_dims, dt::u8, tag::ab),
        weights(shape.b_dims, dt::s8, tag::ab), dst(plan.y_dims, dt::s32, tag::ab);
    dnnl::matmul matmul(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), engine));
    const std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, dnnl::memory(src, engine, const_cast<void*>(a.raw_data()))},
        {DNNL_ARG_WEIGHTS, dnnl::memory(weights, engine, const_cast<void*>(b.raw_data()))},
        {DNNL_ARG_DST, dnnl::memory(dst, engine, y.raw_data())}};
    SettleOtherThreads();
    for (auto _ : state) {
      matmul.execute(stream, args);
      stream.wait();
      benchmark::DoNotOptimize(y.raw_data());
      benchmark::ClobberMemory();
    }
  } catch (const dnnl::error& e) {
    state.SkipWithError((std::string("oneDNN: ") + e.what()).c_str());
    return;
  }
  SetGflops(state, plan);
}

void RunBackend(benchmark::State& state, const BenchShape& shape, bool zero_points) {
  auto backend = OneDnnBackend::Create();
  if (!backend.ok()) {
    state.SkipWithError(backend.status().ToString().c_str());
    return;
  }
  family::testing::ProblemBuilder problem(Op::kMatMulInteger, 10);
  problem.Input("A", DType::kUInt8, shape.a_dims);
  problem.Input("B", DType::kInt8, shape.b_dims);
  if (zero_points) {
    problem.Input("a_zero_point", DType::kUInt8, {}, {128});
    problem.Input("b_zero_point", DType::kInt8, {}, {3});
  }
  const Tensor a = Bytes(DType::kUInt8, shape.a_dims, 1), b = Bytes(DType::kInt8, shape.b_dims, 2);
  family::Problem p = problem.problem();
  p.inputs[0].tensor.data = a.raw_data();
  p.inputs[1].tensor.data = b.raw_data();
  auto plan = family::PlanProblem(p);
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  Tensor y = Tensor::Create(DType::kInt32, plan->y_dims()).value();
  family::FamilyBackend& family = *(*backend)->family();
  SettleOtherThreads();
  for (auto _ : state) {
    const Status status = family.Compute(*plan, y.mutable_view());
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(y.raw_data());
    benchmark::ClobberMemory();
  }
  SetGflops(state, plan->product);
}

bool BackendTakesMatMulInteger() {
  auto backend = OneDnnBackend::Create();
  return backend.ok() && family::SupportOf(**backend, {Op::kMatMulInteger, 10, DType::kUInt8,
                                                       DType::kInt8, DType::kInt32})
                             .supported();
}

void RegisterOneDnnInt8(ShapeSet set) {
  if (!BackendTakesMatMulInteger()) return;
  for (const BenchShape& shape : Shapes(set)) {
    if (shape.kind != ShapeKind::kSquare || shape.a_dims[0] < 64) continue;
    const auto add = [&shape](const std::string& name, auto run) {
      benchmark::RegisterBenchmark(name.c_str(),
                                   [&shape, run](benchmark::State& state) { run(state, shape); })
          ->UseRealTime()
          ->MeasureProcessCPUTime();
    };
    add("raw_onednn_int8/uint8xint8/" + shape.name, RunRaw);
    add("matmulinteger/onednn/uint8xint8/" + shape.name,
        [](benchmark::State& state, const BenchShape& s) { RunBackend(state, s, false); });
    add("matmulinteger/onednn/uint8xint8_zp/" + shape.name,
        [](benchmark::State& state, const BenchShape& s) { RunBackend(state, s, true); });
  }
}

[[maybe_unused]] const bool kOneDnnInt8Registered = AddRegistrar(&RegisterOneDnnInt8);

}  // namespace
}  // namespace mm::bench
