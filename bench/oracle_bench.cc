#include "oracle_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mm/backends/onednn/onednn_settings.h"
#include "mm/engine/machine.h"
#include "mm/oracle/error_bound.h"

namespace mm::bench {
namespace {

// printf-style formatting into a std::string.
template <class... Args>
std::string Format(const char* format, Args... args) {
  char line[256];
  std::snprintf(line, sizeof line, format, args...);
  return line;
}

// Wall seconds of a function's runs: the fastest (with the process's CPU seconds during it, all
// threads) and the median (the upper one of an even count); all zero when a run failed.
struct RunTimes {
  double best = 0, best_cpu = 0, median = 0;
};

// Runs `f` at least `min_runs` times and until about a second has passed (at most 20 runs).
RunTimes TimeRuns(const std::function<bool()>& f, int min_runs = 2) {
  RunTimes times;
  std::vector<double> runs;
  double total = 0;
  for (int run = 0; run < min_runs || (total < 1.0 && run < 20); ++run) {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    if (!f()) return {};
    const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (runs.empty() || seconds < times.best) times = {seconds, cpu, 0};
    runs.push_back(seconds);
    total += seconds;
  }
  std::sort(runs.begin(), runs.end());
  times.median = runs[runs.size() / 2];
  return times;
}

Tensor RandomSquare(DType dtype, std::int64_t n, std::mt19937_64& rng) {
  Tensor t = Tensor::Create(dtype, {n, n}).value();
  std::uniform_real_distribution<double> value(-1, 1);
  VisitDType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    for (std::int64_t i = 0; i < n * n; ++i) {
      if constexpr (std::is_integral_v<T>) {
        t.Data<T>()[i] = static_cast<T>(static_cast<std::int64_t>(rng() % 2001) - 1000);
      } else {
        t.Data<T>()[i] = RoundFromDouble<T>(value(rng));
      }
    }
  });
  return t;
}

// The fastest backend's seconds for `plan` on a and b, and its name ("" when none computes it).
std::pair<double, std::string> FastestBackend(const BackendRegistry& registry,
                                              const MatMulPlan& plan, const Tensor& a,
                                              const Tensor& b) {
  std::pair<double, std::string> best = {0, ""};
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name);
    if (!backend.ok() || (*backend)->Supports(plan.desc).level == Support::Level::kNo) continue;
    auto primitive = (*backend)->Prepare(plan);
    if (!primitive.ok()) continue;
    Tensor y = Tensor::Create(plan.desc.dtype, plan.y_dims).value();
    const double seconds =
        TimeRuns([&] { return (*primitive)->Execute(a.view(), b.view(), y.mutable_view()).ok(); },
                 3)
            .best;
    if (seconds > 0 && (best.second.empty() || seconds < best.first)) best = {seconds, name};
  }
  return best;
}

}  // namespace

int OracleBench(const BackendRegistry& registry, const std::vector<std::int64_t>& sizes,
                std::ostream& out) {
  out << "machine: " << DescribeMachine({kOneDnnMaxCpuIsaVariable}).ToString() << "\n";
  out << "threads: " << omp_get_max_threads() << " (OMP_NUM_THREADS)\n";
  // The machine may be shared: the oracle's CPU seconds beside its wall time tell load apart. The
  // median beside the best shows what a loop of calls gets.
  out << Format("%5s %9s %12s %9s %9s %9s %10s %14s %12s %7s\n", "n", "dtype", "oracle t/s",
                "best s", "cpu s", "median s", "exact-path", "fastest GEMM", "GEMM t/s", "ratio");
  std::mt19937_64 rng(1);
  for (const std::int64_t n : sizes) {
    const double terms = static_cast<double>(n) * n * n;
    std::pair<double, std::string> gemm;
    for (const DType dtype :
         {DType::kDouble, DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kInt64}) {
      const Tensor a = RandomSquare(dtype, n, rng), b = RandomSquare(dtype, n, rng);
      const MatMulPlan plan = PlanMatMul({dtype, a.dims(), b.dims()}).value();
      // The reference GEMM: double's for the float dtypes, int64's for int64.
      if (dtype == DType::kDouble || dtype == DType::kInt64) {
        gemm = FastestBackend(registry, plan, a, b);
      }
      std::int64_t fallbacks = 0;
      const RunTimes times = TimeRuns([&] {
        auto oracle = ExactMatMul(plan, a.view(), b.view());
        if (!oracle.ok()) return false;
        fallbacks = oracle->exact_fallbacks;
        return true;
      });
      if (times.best == 0) {
        out << "ExactMatMul failed for " << plan.desc.ToString() << "\n";
        return 1;
      }
      const double rate = terms / times.best;
      const double gemm_rate = gemm.first > 0 ? terms / gemm.first : 0;
      out << Format("%5lld %9s %12.3e %9.3g %9.3g %9.3g %10lld %14s %12.3e %7.3f\n",
                    static_cast<long long>(n), std::string(DTypeName(dtype)).c_str(), rate,
                    times.best, times.best_cpu, times.median, static_cast<long long>(fallbacks),
                    gemm.second.empty() ? "none" : gemm.second.c_str(), gemm_rate,
                    gemm_rate > 0 ? rate / gemm_rate : 0.0);
      out.flush();
    }
  }
  return 0;
}

}  // namespace mm::bench
