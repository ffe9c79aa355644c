// raw_onednn/<dtype>/<shape>: a bare oneDNN matmul primitive, written the way a oneDNN user would
// (C++ API, primitive and memory objects created once, execute + wait in the loop), over the same
// shapes and inputs as matmul/<backend>/...: the speed the oneDNN backend must match.
#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "backends/bench/bench_shapes.h"

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

void RunRawOneDnn(benchmark::State& state, DType dtype, const BenchShape& shape) {
  auto plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims});
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  // oneDNN wants one rank for all three: batch dims padded with 1s, as numpy broadcasting reads.
  Dims src = plan->a_batch_dims, weights = plan->b_batch_dims, dst = plan->batch_dims;
  src.insert(src.end(), {plan->m, plan->k});
  weights.insert(weights.end(), {plan->k, plan->n});
  dst.insert(dst.end(), {plan->m, plan->n});
  const auto type =
      dtype == DType::kBFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  const Tensor a = BenchInput(dtype, shape.a_dims, 1);
  const Tensor b = BenchInput(dtype, shape.b_dims, 2);
  Tensor y = Tensor::Create(dtype, plan->y_dims).value();
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const auto src_md = RowMajor(src, type), weights_md = RowMajor(weights, type),
               dst_md = RowMajor(dst, type);
    dnnl::matmul matmul(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_md, dst_md), engine));
    const std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, dnnl::memory(src_md, engine, const_cast<void*>(a.raw_data()))},
        {DNNL_ARG_WEIGHTS, dnnl::memory(weights_md, engine, const_cast<void*>(b.raw_data()))},
        {DNNL_ARG_DST, dnnl::memory(dst_md, engine, y.raw_data())}};
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

[[maybe_unused]] const bool kRegistered = [] {
  for (DType dtype : {DType::kFloat, DType::kBFloat16}) {
    for (const BenchShape& shape : Shapes()) {
      const std::string name =
          "raw_onednn/" + std::string(DTypeName(dtype)) + "/" + std::string(shape.name);
      benchmark::RegisterBenchmark(name.c_str(), [dtype, &shape](benchmark::State& state) {
        RunRawOneDnn(state, dtype, shape);
      })->UseRealTime();
    }
  }
  return true;
}();

}  // namespace
}  // namespace mm::bench
