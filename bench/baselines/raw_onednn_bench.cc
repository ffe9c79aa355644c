// raw_onednn/<dtype>/<shape>: a bare oneDNN matmul primitive, written the way a oneDNN user would
// (C++ API, primitive and memory objects created once, execute + wait in the loop), over the same
// shapes and inputs as matmul/<backend>/...: the speed the oneDNN backend must match.
// prepare/raw_onednn/<dtype>/<shape>: creating that primitive (descriptor, primitive descriptor,
// primitive), the bare cost behind prepare/onednn/... (mm-bench turns oneDNN's primitive cache
// off). Also describes oneDNN for `mm-bench --mm_describe`: version, ISA, implementation per dtype.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "mm/backends/onednn/onednn_backend.h"
#include "mm/bench/bench_shapes.h"

namespace mm::bench {
namespace {

dnnl::memory::desc RowMajor(const Dims& dims, dnnl::memory::data_type type) {
  Dims strides(dims.size());
  std::int64_t stride = 1;
  for (std::size_t axis = dims.size(); axis-- > 0;) {
    strides[axis] = stride;
    stride *= dims[axis];
  }
  return dnnl::memory::desc(dims, type, strides);
}

// The bare problem for `shape`: oneDNN wants one rank for all three, batch dims padded with 1s,
// as numpy broadcasting reads them.
struct RawProblem {
  dnnl::memory::desc src, weights, dst;
};
RawProblem MakeProblem(const MatMulPlan& plan, DType dtype) {
  Dims src = plan.a_batch_dims, weights = plan.b_batch_dims, dst = plan.batch_dims;
  src.insert(src.end(), {plan.m, plan.k});
  weights.insert(weights.end(), {plan.k, plan.n});
  dst.insert(dst.end(), {plan.m, plan.n});
  const auto type = dtype == DType::kBFloat16  ? dnnl::memory::data_type::bf16
                    : dtype == DType::kFloat16 ? dnnl::memory::data_type::f16
                                               : dnnl::memory::data_type::f32;
  return {RowMajor(src, type), RowMajor(weights, type), RowMajor(dst, type)};
}

dnnl::matmul::primitive_desc MakePrimitiveDesc(const RawProblem& problem,
                                               const dnnl::engine& engine) {
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(problem.src, problem.weights, problem.dst),
                                      engine);
}

void RunRawOneDnn(benchmark::State& state, DType dtype, const BenchShape& shape) {
  auto plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims});
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  const Tensor a = BenchInput(dtype, shape.a_dims, 1);
  const Tensor b = BenchInput(dtype, shape.b_dims, 2);
  Tensor y = Tensor::Create(dtype, plan->y_dims).value();
  try {
    OneDnnBackend::ApplyIsaPolicy();  // The same ISA as the backend it is the baseline of.
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const RawProblem problem = MakeProblem(*plan, dtype);
    dnnl::matmul matmul(MakePrimitiveDesc(problem, engine));
    const std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, dnnl::memory(problem.src, engine, const_cast<void*>(a.raw_data()))},
        {DNNL_ARG_WEIGHTS, dnnl::memory(problem.weights, engine, const_cast<void*>(b.raw_data()))},
        {DNNL_ARG_DST, dnnl::memory(problem.dst, engine, y.raw_data())}};
    SettleOtherThreads();  // Another library's spinning threads would share the cores.
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
  SetGflops(state, *plan);
}

void PrepareRawOneDnn(benchmark::State& state, DType dtype, const BenchShape& shape) {
  auto plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims});
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  try {
    OneDnnBackend::ApplyIsaPolicy();  // The same ISA as the backend it is the baseline of.
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const RawProblem problem = MakeProblem(*plan, dtype);
    for (auto _ : state) {
      dnnl::matmul matmul(MakePrimitiveDesc(problem, engine));
      benchmark::DoNotOptimize(matmul);
    }
  } catch (const dnnl::error& e) {
    state.SkipWithError((std::string("oneDNN: ") + e.what()).c_str());
  }
}

// Whether oneDNN has a matmul for `dtype` on this CPU (after ONEDNN_MAX_CPU_ISA): bfloat16 has
// none without AVX-512, and a bare baseline that cannot exist is not registered (not an error).
bool HasMatmul(DType dtype) {
  try {
    OneDnnBackend::ApplyIsaPolicy();  // The same ISA as the backend it is the baseline of.
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const MatMulPlan plan = PlanMatMul({dtype, {16, 16}, {16, 16}}).value();
    MakePrimitiveDesc(MakeProblem(plan, dtype), engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

void RegisterRawOneDnn(ShapeSet set) {
  for (DType dtype : BenchDTypes(set)) {
    if (dtype != DType::kFloat && dtype != DType::kBFloat16) continue;
    if (!HasMatmul(dtype)) continue;
    for (const BenchShape& shape : Shapes(set)) {
      if (!Benchmarked(shape, dtype)) continue;
      const std::string suffix = "raw_onednn/" + std::string(DTypeName(dtype)) + "/" + shape.name;
      benchmark::RegisterBenchmark(
          suffix.c_str(),
          [dtype, &shape](benchmark::State& state) { RunRawOneDnn(state, dtype, shape); })
          ->UseRealTime()
          ->MeasureProcessCPUTime();
      if (shape.prepare) {
        benchmark::RegisterBenchmark(
            ("prepare/" + suffix).c_str(),
            [dtype, &shape](benchmark::State& state) { PrepareRawOneDnn(state, dtype, shape); })
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

// oneDNN's version, the ISA it dispatches to on this CPU (after ONEDNN_MAX_CPU_ISA) and the
// implementation it picks for a 256^3 matmul per dtype (or why there is none).
nlohmann::json DescribeOneDnn() {
  const dnnl_version_t* version = dnnl_version();
  nlohmann::json out = {
      {"version", std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
                      std::to_string(version->patch)},
      {"effective_isa", OneDnnBackend::EffectiveIsa()}};
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {256, 256}, {256, 256}}).value();
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kFloat16}) {
    try {
      OneDnnBackend::ApplyIsaPolicy();  // The same ISA as the backend it is the baseline of.
      dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      out["matmul_impl"][std::string(DTypeName(dtype))] =
          MakePrimitiveDesc(MakeProblem(plan, dtype), engine).impl_info_str();
    } catch (const dnnl::error& e) {
      out["matmul_impl"][std::string(DTypeName(dtype))] = std::string("none: ") + e.what();
    }
  }
  return out;
}

[[maybe_unused]] const bool kRawOneDnnRegistered =
    AddRegistrar(&RegisterRawOneDnn) && AddDescriber("onednn", &DescribeOneDnn) &&
    AddBaseline({"raw_onednn", "raw oneDNN", "onednn"});

}  // namespace
}  // namespace mm::bench
