#include "mm/bench/bench_shapes.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>

namespace mm::bench {

bool BenchShape::Large() const {
  const MatMulPlan plan = PlanMatMul({DType::kFloat, a_dims, b_dims}).value();
  return MatMulFlops(plan) > 2.0 * 512 * 512 * 512;
}

namespace {

BenchShape Square(std::int64_t size, bool quick, bool prepare) {
  const std::string n = std::to_string(size);
  return {n + "x" + n + "x" + n, {size, size}, {size, size}, ShapeKind::kSquare, quick, prepare};
}

std::vector<BenchShape> AllShapes() {
  std::vector<BenchShape> shapes;
  // Powers of two and their odd neighbours: blocked kernels are fastest on the first and pay for
  // remainders on the second. The quick set keeps a few that show both and the curve's rise.
  for (std::int64_t power = 8; power <= 2048; power *= 2) {
    if (power <= 1024) shapes.push_back(Square(power - 1, power == 128, false));
    shapes.push_back(
        Square(power, power == 8 || power == 64 || power == 128 || power == 256 || power == 512,
               power == 8 || power == 128 || power == 1024));
    if (power <= 1024) shapes.push_back(Square(power + 1, false, false));
  }
  shapes.push_back({"64b_64x64x64", {64, 64, 64}, {64, 64, 64}, ShapeKind::kBatched, true, true});
  shapes.push_back(
      {"8b_128x256x64", {8, 128, 256}, {8, 256, 64}, ShapeKind::kBatched, false, false});
  shapes.push_back({"bcast_8x1x128x256_1x4x256x64",
                    {8, 1, 128, 256},
                    {1, 4, 256, 64},
                    ShapeKind::kBroadcast,
                    true,
                    true});
  // Tiny: per-call cost (checks, dispatch, library entry) is all there is to measure.
  shapes.push_back({"tiny_3x4x3", {3, 4}, {4, 3}, ShapeKind::kTiny, true, true});
  shapes.push_back({"tiny_2b_3x4x3", {2, 3, 4}, {2, 4, 3}, ShapeKind::kTiny, true, false});
  shapes.push_back({"tiny_1d_16", {16}, {16}, ShapeKind::kTiny, false, false});
  return shapes;
}

}  // namespace

std::span<const BenchShape> Shapes(ShapeSet set) {
  static const std::vector<BenchShape> kFull = AllShapes();
  static const std::vector<BenchShape> kQuick = [] {
    std::vector<BenchShape> quick;
    for (const BenchShape& shape : kFull) {
      if (shape.quick) quick.push_back(shape);
    }
    return quick;
  }();
  return set == ShapeSet::kQuick ? std::span<const BenchShape>(kQuick)
                                 : std::span<const BenchShape>(kFull);
}

bool Benchmarked(const BenchShape& shape, DType dtype) {
  const MatMulPlan plan = PlanMatMul({DType::kFloat, shape.a_dims, shape.b_dims}).value();
  const bool huge = MatMulFlops(plan) >= 2.0 * 2048 * 2048 * 2048;
  return !huge || dtype == DType::kFloat || dtype == DType::kBFloat16;
}

std::span<const DType> BenchDTypes(ShapeSet set) {
  static constexpr DType kQuick[] = {DType::kFloat, DType::kBFloat16, DType::kDouble,
                                     DType::kInt32};
  static constexpr DType kFull[] = {DType::kFloat,  DType::kBFloat16, DType::kFloat16,
                                    DType::kDouble, DType::kInt32,    DType::kInt64};
  return set == ShapeSet::kQuick ? std::span<const DType>(kQuick) : std::span<const DType>(kFull);
}

double MatMulFlops(const MatMulPlan& plan) {
  return 2.0 * static_cast<double>(plan.batch) * static_cast<double>(plan.m) *
         static_cast<double>(plan.n) * static_cast<double>(plan.k);
}

namespace {

// Whether a thread of this process other than the caller is running or runnable now.
bool OtherThreadRunning() {
  const std::string self = std::to_string(gettid());
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    if (task.path().filename() == self) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // "tid (comm) S ...": the state follows the last ')', the name may hold anything.
    const std::size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') {
      return true;
    }
  }
  return false;
}

}  // namespace

double SettleOtherThreads(double limit_seconds) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto limit = std::chrono::duration<double>(limit_seconds);
  // Polls without sleeping: a caller that slept left its core idle, and the next library's first
  // calls were then many times slower, as if its threads were woken on the same core.
  while (OtherThreadRunning() && Clock::now() - start < limit) {
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
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

namespace {

std::vector<Registrar>& Registrars() {
  static std::vector<Registrar> registrars;
  return registrars;
}

std::map<std::string, Describer>& Describers() {
  static std::map<std::string, Describer> describers;
  return describers;
}

std::vector<Baseline>& MutableBaselines() {
  static std::vector<Baseline> baselines;
  return baselines;
}

}  // namespace

bool AddRegistrar(Registrar registrar) {
  Registrars().push_back(registrar);
  return true;
}

void RegisterAll(ShapeSet set) {
  for (Registrar registrar : Registrars()) registrar(set);
}

bool AddDescriber(std::string name, Describer describer) {
  Describers().emplace(std::move(name), describer);
  return true;
}

bool AddBaseline(Baseline baseline) {
  MutableBaselines().push_back(std::move(baseline));
  return true;
}

const std::vector<Baseline>& Baselines() { return MutableBaselines(); }

nlohmann::json DescribeLibraries() {
  nlohmann::json libraries = nlohmann::json::object();
  for (const auto& [name, describer] : Describers()) libraries[name] = describer();
  return libraries;
}

}  // namespace mm::bench
