#include "family_bench.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <utility>

#include "matmul_bench.h"

namespace mm::bench {
namespace {

using family::Op;

constexpr struct {
  const char* name;
  std::int64_t size;
  bool quick;
} kSquares[] = {{"64x64x64", 64, false},
                {"256x256x256", 256, true},
                {"512x512x512", 512, false},
                {"1024x1024x1024", 1024, false}};

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The element type pairs timed for `op`: Gemm float; the integer operators uint8 x int8 (the pair
// whose products saturate in x86's vpmaddubsw), and in the full set the other two pairs ONNX
// models use.
std::vector<std::pair<DType, DType>> TypePairs(Op op, ShapeSet set) {
  if (op == Op::kGemm) {
    if (set == ShapeSet::kQuick) return {{DType::kFloat, DType::kFloat}};
    return {{DType::kFloat, DType::kFloat}, {DType::kDouble, DType::kDouble}};
  }
  if (set == ShapeSet::kQuick) return {{DType::kUInt8, DType::kInt8}};
  return {
      {DType::kUInt8, DType::kInt8}, {DType::kUInt8, DType::kUInt8}, {DType::kInt8, DType::kInt8}};
}

// Seeded inputs: BenchInput's for MatMul's types; small non-negative integers for 8-bit ones.
Tensor FamilyInput(DType dtype, const Dims& dims, std::uint64_t seed) {
  if (IsMatMulDType(dtype)) return BenchInput(dtype, dims, seed);
  Tensor t = Tensor::Create(dtype, dims).value();
  std::mt19937_64 rng(seed);
  auto* data = static_cast<std::uint8_t*>(t.raw_data());
  for (std::int64_t i = 0; i < t.NumElements(); ++i)
    data[i] = static_cast<std::uint8_t>(rng() % 17);
  return t;
}

// A scalar ([]) of `dtype` holding `value` (exact in it: the scales and zero points below).
Tensor Scalar(DType dtype, double value) {
  Tensor t = Tensor::Create(dtype, {}).value();
  VisitElementType(dtype, [&](auto tag) {
    *t.Data<CppType<decltype(tag)::value>>() =
        static_cast<CppType<decltype(tag)::value>>(static_cast<float>(value));
  });
  return t;
}

// The operator's inputs in ONNX's order, as (name, tensor).
std::vector<std::pair<std::string, Tensor>> Inputs(const FamilyBenchProblem& p) {
  std::vector<std::pair<std::string, Tensor>> in;
  in.emplace_back(p.op == Op::kQLinearMatMul ? "a" : "A", FamilyInput(p.a_dtype, {p.m, p.k}, 1));
  const auto zero_point = [](DType dtype) {
    return Scalar(dtype, dtype == DType::kUInt8 ? 128 : 0);
  };
  if (p.op == Op::kGemm) {
    in.emplace_back("B", FamilyInput(p.b_dtype, {p.k, p.n}, 2));
    in.emplace_back("C",
                    FamilyInput(p.a_dtype, {p.n}, 3));  // A bias, as in a fully connected layer.
  } else if (p.op == Op::kMatMulInteger) {
    in.emplace_back("B", FamilyInput(p.b_dtype, {p.k, p.n}, 2));
    in.emplace_back("a_zero_point", zero_point(p.a_dtype));
    in.emplace_back("b_zero_point", zero_point(p.b_dtype));
  } else {
    in.emplace_back("a_scale", Scalar(DType::kFloat, 1.0 / 64));
    in.emplace_back("a_zero_point", zero_point(p.a_dtype));
    in.emplace_back("b", FamilyInput(p.b_dtype, {p.k, p.n}, 2));
    in.emplace_back("b_scale", Scalar(DType::kFloat, 1.0 / 64));
    in.emplace_back("b_zero_point", zero_point(p.b_dtype));
    in.emplace_back("y_scale", Scalar(DType::kFloat, 1.0));
    in.emplace_back("y_zero_point", zero_point(DType::kUInt8));
  }
  return in;
}

int VersionOf(Op op) { return op == Op::kGemm ? 13 : 10; }

// Calls per repetition of a runtime: a round trip each, so a fixed count, fewer for large ones.
benchmark::IterationCount RoundTrips(const FamilyBenchProblem& p) {
  const double flops = 2.0 * static_cast<double>(p.m * p.k * p.n);
  return std::clamp<benchmark::IterationCount>(
      static_cast<benchmark::IterationCount>(2e8 / std::max(flops, 1.0)), 2, 100);
}

// Times `problem` on `kept` when given (a runtime's one instance), else on a fresh instance of
// `name`.
void RunFamily(benchmark::State& state, const BackendRegistry& registry, const std::string& name,
               const FamilyBenchProblem& problem, Backend* kept) {
  StatusOr<std::unique_ptr<Backend>> fresh = std::unique_ptr<Backend>();
  if (kept == nullptr) fresh = registry.Create(name);
  auto inputs = MakeFamilyBenchInputs(problem);
  const Status ready = !fresh.ok() ? fresh.status() : inputs.status();
  if (!ready.ok()) {
    state.SkipWithError(ready.ToString().c_str());
    return;
  }
  Backend* backend = kept != nullptr ? kept : fresh->get();
  const family::Plan& plan = (*inputs)->plan;
  SettleOtherThreads();  // Another library's spinning threads would share the cores.
  for (auto _ : state) {
    // ComputeOp is the engine's entry: the support check, Y's allocation and the computation.
    auto y = family::ComputeOp(*backend, plan);
    if (!y.ok()) {
      state.SkipWithError(y.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(y->raw_data());
    benchmark::ClobberMemory();
  }
  SetGflops(state, plan.product);
  const family::OpDesc desc = family::DescOf(plan);
  family::FamilyBackend* computes = backend->family();
  std::string label = desc.ToString();
  if (computes != nullptr && !computes->Implementation(desc).empty()) {
    label += ": " + computes->Implementation(desc);
  }
  if (IsBenchRuntime(name)) label += "; timed by the round trip";
  state.SetLabel(label);
}

}  // namespace

bool FamilyBenchProblem::Large() const { return m * k * n > std::int64_t{512} * 512 * 512; }

std::string FamilyBenchProblem::BenchmarkName(const std::string& backend) const {
  return Lower(family::OpName(op)) + "/" + backend + "/" + types + "/" + shape;
}

std::vector<FamilyBenchProblem> FamilyBenchProblems(Op op, ShapeSet set) {
  std::vector<FamilyBenchProblem> problems;
  if (op == Op::kMatMul) return problems;
  for (const auto& [a, b] : TypePairs(op, set)) {
    FamilyBenchProblem p;
    p.op = op;
    p.a_dtype = a;
    p.b_dtype = b;
    p.types = a == b && op == Op::kGemm
                  ? std::string(DTypeName(a))
                  : std::string(DTypeName(a)) + "x" + std::string(DTypeName(b));
    for (const auto& square : kSquares) {
      if (set == ShapeSet::kQuick && !square.quick) continue;
      p.shape = square.name;
      p.m = p.k = p.n = square.size;
      problems.push_back(p);
    }
    p.shape = "tiny_3x4x3";  // Per-call cost, as MatMul's tiny shape.
    p.m = 3, p.k = 4, p.n = 3;
    problems.push_back(p);
  }
  return problems;
}

StatusOr<std::unique_ptr<FamilyBenchInputs>> MakeFamilyBenchInputs(
    const FamilyBenchProblem& problem) {
  auto inputs = std::make_unique<FamilyBenchInputs>();
  inputs->problem.op = problem.op;
  inputs->problem.version = VersionOf(problem.op);
  std::vector<std::pair<std::string, Tensor>> named = Inputs(problem);
  // Every tensor in place before any view of one is taken.
  for (auto& [name, tensor] : named) inputs->tensors.push_back(std::move(tensor));
  for (std::size_t i = 0; i < named.size(); ++i) {
    inputs->problem.inputs.push_back({named[i].first, inputs->tensors[i].view()});
  }
  MM_ASSIGN_OR_RETURN(inputs->plan, family::PlanProblem(inputs->problem));
  return inputs;
}

std::vector<FamilyBenchChoice> ChooseFamilyBenchmarks(Backend& backend, const std::string& name,
                                                      const std::vector<Op>& ops, ShapeSet set) {
  std::vector<FamilyBenchChoice> choices;
  for (Op op : ops) {
    for (const FamilyBenchProblem& problem : FamilyBenchProblems(op, set)) {
      if (name == "reference" && problem.Large()) continue;
      FamilyBenchChoice choice;
      choice.benchmark = problem.BenchmarkName(name);
      choice.backend = name;
      choice.problem = problem;
      choice.desc = {.op = op,
                     .version = VersionOf(op),
                     .a_dtype = problem.a_dtype,
                     .b_dtype = problem.b_dtype,
                     .y_dtype = op == Op::kGemm            ? problem.a_dtype
                                : op == Op::kMatMulInteger ? DType::kInt32
                                                           : DType::kUInt8};
      choice.support = family::SupportOf(backend, choice.desc);
      choices.push_back(std::move(choice));
    }
  }
  return choices;
}

std::vector<FamilyBenchChoice> RegisterFamilyBenchmarks(const BackendRegistry& registry,
                                                        const std::vector<std::string>& names,
                                                        const std::vector<Op>& ops, ShapeSet set,
                                                        std::ostream& err) {
  std::vector<FamilyBenchChoice> all;
  for (const std::string& name : names) {
    auto created = registry.Create(name);
    if (!created.ok()) {
      err << "mm-bench: backend " << name << " unavailable: " << created.status() << "\n";
      continue;
    }
    const std::shared_ptr<Backend> backend = std::move(created).value();
    // A runtime's instance is kept for all its benchmarks, as the MatMul benchmarks keep theirs:
    // each instance starts a driver process (seconds for torch), and a benchmark runs several
    // times (its repetitions).
    std::shared_ptr<Backend> kept = IsBenchRuntime(name) ? backend : nullptr;
    std::string refused;  // One line per description, not per shape.
    for (FamilyBenchChoice& choice : ChooseFamilyBenchmarks(*backend, name, ops, set)) {
      if (!choice.support.supported()) {
        const std::string line = "mm-bench: " + name + " refuses " + choice.desc.ToString() +
                                 " (not timed): " + choice.support.note + "\n";
        if (line != refused) err << line;
        refused = line;
      } else {
        const FamilyBenchProblem problem = choice.problem;
        auto* bench = benchmark::RegisterBenchmark(
            choice.benchmark.c_str(), [&registry, name, problem, kept](benchmark::State& state) {
              RunFamily(state, registry, name, problem, kept.get());
            });
        if (IsBenchRuntime(name)) {
          bench->UseRealTime()->Iterations(RoundTrips(problem));
        } else {
          bench->UseRealTime()->MeasureProcessCPUTime();
        }
      }
      all.push_back(std::move(choice));
    }
  }
  return all;
}

nlohmann::json DescribeFamilySupport(Backend& backend, const std::vector<Op>& ops) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<family::OpDesc> seen;
  for (const FamilyBenchChoice& choice :
       ChooseFamilyBenchmarks(backend, std::string(backend.name()), ops, ShapeSet::kFull)) {
    if (std::find(seen.begin(), seen.end(), choice.desc) != seen.end()) continue;
    seen.push_back(choice.desc);
    const Support& s = choice.support;
    nlohmann::json entry = {{"op", family::OpName(choice.desc.op)},
                            {"types", choice.problem.types},
                            {"desc", choice.desc.ToString()},
                            {"level", s.level == Support::Level::kNative         ? "native"
                                      : s.level == Support::Level::kByConversion ? "conversion"
                                                                                 : "no"},
                            {"note", s.note}};
    if (s.supported() && backend.family() != nullptr) {
      const Arithmetic arithmetic = backend.family()->DeclaredArithmetic(choice.desc);
      entry["arithmetic"] = {{"accumulation", DTypeName(arithmetic.accumulation)},
                             {"flushes_subnormals", arithmetic.flushes_subnormals},
                             {"text", arithmetic.ToString()}};
      entry["implementation"] = backend.family()->Implementation(choice.desc);
    }
    out.push_back(entry);
  }
  return out;
}

}  // namespace mm::bench
