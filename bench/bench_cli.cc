#include "bench_cli.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "family_bench.h"
#include "matmul_bench.h"
#include "mm/backends/auto/auto_deviations.h"
#include "mm/backends/backend_list.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/bench/calibrate.h"
#include "oracle_bench.h"

namespace mm::bench {
namespace {

void PrintHelp() {
  std::cout
      << "mm-bench: Google Benchmark over every MatMul backend, the bare libraries and this\n"
         "machine's peak.\n"
         "  --backend-lib PATH   also benchmark the backend plugin at PATH (repeatable; also\n"
         "                       MM_BACKEND_LIBS, colon-separated, loaded first)\n"
         "  --backend-cmd NAME=COMMAND  also benchmark the runtime behind the driver COMMAND\n"
         "                       (runtime protocol; timed by the runtime's own clock)\n"
         "  --backend NAME       benchmark and describe NAME (repeatable; default: every backend\n"
         "                       of the default set and of --backend-lib/--backend-cmd)\n"
         "  --op NAME            time operator NAME: MatMul (the default), Gemm, MatMulInteger or\n"
         "                       QLinearMatMul (repeatable; a backend refusing one is named with\n"
         "                       its reason, not timed; baselines and peak run with any)\n"
         "  --mm_set=quick|full  which shapes and dtypes (default full)\n"
         "  --mm_describe        print the backends' dtype support and the libraries' facts as\n"
         "                       JSON, run nothing\n"
         "  --mm_calibrate=FILE  time the auto backend's candidates at every shape of the set, at\n"
         "                       1 thread and at OMP_NUM_THREADS, and write auto's table to FILE\n"
         "                       (auto makes its own on first use; MM_AUTO_TABLE=FILE uses this "
         "one)\n"
         "  --mm_oracle          print the exact oracle's throughput beside the fastest double "
         "and\n"
         "                       int64 GEMMs among the backends (at OMP_NUM_THREADS threads)\n"
         "Baselines (bare libraries) in this build:";
  for (const Baseline& baseline : Baselines()) std::cout << " " << baseline.name;
  std::cout << "\n"
               "  (a library whose backend is configured off, MM_WITH_ONEDNN or\n"
               "  MM_WITH_EIGEN_BACKEND, has no baseline)\n"
               "Google Benchmark's options:\n";
  benchmark::PrintDefaultHelp();
}

// Parses "512,1024" into `sizes`; false unless every entry is a positive integer.
bool ParseSizes(const std::string& text, std::vector<std::int64_t>& sizes) {
  sizes.clear();
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char* end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value <= 0) return false;
    sizes.push_back(value);
  }
  return !sizes.empty();
}

// The value of `arg` when it is "FLAG=value", else nullopt.
std::optional<std::string> ValueOf(const std::string& arg, const std::string& flag) {
  if (!arg.starts_with(flag + "=")) return std::nullopt;
  return arg.substr(flag.size() + 1);
}

// The backend flags (--backend-lib, --backend-cmd, --backend) at args[i], in either form
// ("--flag value" advances `i`). Returns whether args[i] is one of them.
StatusOr<bool> ParseBackendFlag(const std::vector<std::string>& args, std::size_t& i,
                                BenchOptions& o) {
  const std::string& arg = args[i];
  const bool lib = arg == "--backend-lib";
  if (lib || arg == "--backend-cmd" || arg == "--backend") {
    if (i + 1 >= args.size() || args[i + 1].empty()) {
      return InvalidArgumentError(arg + (lib ? " needs a path" : " needs a value"));
    }
    (lib ? o.libraries : arg == "--backend" ? o.named : o.commands).push_back(args[++i]);
    return true;
  }
  if (auto v = ValueOf(arg, "--backend-lib")) {
    o.libraries.push_back(*v);
  } else if (auto c = ValueOf(arg, "--backend-cmd")) {
    o.commands.push_back(*c);
  } else if (auto n = ValueOf(arg, "--backend")) {
    o.named.push_back(*n);
  } else {
    return false;
  }
  return true;
}

// --op NAME or --op=NAME at args[i] ("--op NAME" advances `i`). Returns whether args[i] is one.
StatusOr<bool> ParseOpFlag(const std::vector<std::string>& args, std::size_t& i, BenchOptions& o) {
  std::optional<std::string> name = ValueOf(args[i], "--op");
  if (args[i] == "--op") {
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) {
      return InvalidArgumentError(
          "--op needs an operator (MatMul, Gemm, MatMulInteger, "
          "QLinearMatMul)");
    }
    name = args[++i];
  }
  if (!name.has_value()) return false;
  auto op = family::OpFromName(*name);
  if (!op.ok()) return op.status().WithContext("--op");
  if (std::find(o.ops.begin(), o.ops.end(), *op) != o.ops.end()) {
    return InvalidArgumentError("--op " + *name + " given twice");
  }
  o.ops.push_back(*op);
  return true;
}

// mm-bench's --mm_* flags. Returns whether `arg` is one of them; an unknown --mm_ flag is an
// error.
StatusOr<bool> ParseMmFlag(const std::string& arg, BenchOptions& o) {
  if (!arg.starts_with("--mm_")) return false;
  if (arg == "--mm_describe") {
    o.describe = true;
  } else if (arg == "--mm_oracle") {
    o.oracle = true;
  } else if (auto sizes = ValueOf(arg, "--mm_oracle")) {
    o.oracle = true;
    if (!ParseSizes(*sizes, o.oracle_sizes)) {
      return InvalidArgumentError("--mm_oracle=N,N,... takes positive sizes, got '" + *sizes + "'");
    }
  } else if (auto file = ValueOf(arg, "--mm_calibrate")) {
    o.calibrate = *file;
    if (file->empty()) return InvalidArgumentError("--mm_calibrate needs a file name");
  } else if (auto part = ValueOf(arg, "--mm_calibrate_part")) {
    o.calibrate_part = *part;
  } else if (auto set = ValueOf(arg, "--mm_set")) {
    if (*set != "quick" && *set != "full") {
      return InvalidArgumentError("--mm_set must be quick or full, got '" + *set + "'");
    }
    o.set = *set == "quick" ? ShapeSet::kQuick : ShapeSet::kFull;
  } else {
    return InvalidArgumentError("unknown flag " + arg +
                                " (known: --mm_set=quick|full, --mm_describe, "
                                "--mm_calibrate=FILE, --mm_oracle)");
  }
  return true;
}

// auto leaves out the backends MM_EXPECTATIONS declares deviating, as in mm-conformance and
// mm-fuzz (which take --expectations too).
StatusOr<std::optional<std::vector<AutoDeviation>>> ExpectedDeviations() {
  const char* path = std::getenv("MM_EXPECTATIONS");
  if (path == nullptr || *path == '\0') return std::optional<std::vector<AutoDeviation>>();
  auto declared = LoadDeviationsFile(path);
  if (!declared.ok()) return declared.status().WithContext("MM_EXPECTATIONS");
  return std::optional<std::vector<AutoDeviation>>(AutoDeviationsOf(*declared));
}

// The built-in backends, the plugins of MM_BACKEND_LIBS and --backend-lib, the drivers of
// --backend-cmd.
Status LoadBackends(const BenchOptions& o, BackendRegistry& registry) {
  MM_RETURN_IF_ERROR(RegisterBackendLibraries(registry, BackendLibrariesToLoad(o.libraries)));
  return runtime::RegisterCommandBackends(registry, o.commands);
}

// Google Benchmark over the registered benchmarks, with `argv0` and the remaining arguments:
// MatMul's unless --op leaves it out, the family's operators of --op, the baselines and the peak.
int RunBenchmarks(const BenchOptions& o, const BackendRegistry& registry, const char* argv0,
                  std::ostream& err) {
  const bool matmul =
      o.ops.empty() || std::find(o.ops.begin(), o.ops.end(), family::Op::kMatMul) != o.ops.end();
  if (matmul) RegisterBackendBenchmarks(o.set);
  RegisterFamilyBenchmarks(registry, BenchmarkedBackends(), o.ops, o.set, err);
  RegisterAll(o.set);
  std::vector<char*> argv = {const_cast<char*>(argv0)};
  std::vector<std::string> args = o.benchmark_args;
  for (std::string& arg : args) argv.push_back(arg.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  benchmark::Initialize(&argc, argv.data(), PrintHelp);
  if (benchmark::ReportUnrecognizedArguments(argc, argv.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace

StatusOr<BenchOptions> ParseBenchOptions(const std::vector<std::string>& args) {
  BenchOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    MM_ASSIGN_OR_RETURN(const bool backend_flag, ParseBackendFlag(args, i, o));
    if (backend_flag) continue;
    MM_ASSIGN_OR_RETURN(const bool op_flag, ParseOpFlag(args, i, o));
    if (op_flag) continue;
    MM_ASSIGN_OR_RETURN(const bool mm_flag, ParseMmFlag(args[i], o));
    if (!mm_flag) o.benchmark_args.push_back(args[i]);
  }
  if (!o.ops.empty() && (o.oracle || !o.calibrate.empty())) {
    return InvalidArgumentError(std::string("--op selects the benchmarks; ") +
                                (o.oracle ? "--mm_oracle" : "--mm_calibrate") +
                                " measures MatMul alone");
  }
  return o;
}

int RunBench(const BenchOptions& o, const char* argv0, std::ostream& out, std::ostream& err) {
  if (!o.calibrate_part.empty()) return CalibratePart(o.calibrate_part, o.set);
  if (!o.calibrate.empty()) return Calibrate(o.calibrate, o.set);
  auto deviations = ExpectedDeviations();
  if (!deviations.ok()) {
    err << "mm-bench: " << deviations.status().message() << "\n";
    return kBenchExitUsage;
  }
  std::optional<ScopedAutoDeviations> scoped;
  if (deviations->has_value()) scoped.emplace(std::move(**deviations));
  // The benchmarks registered below use it while they run, within this call.
  BackendRegistry registry = BuiltinBackends();
  Status ready = LoadBackends(o, registry);
  if (ready.ok()) ready = ChooseBenchBackends(registry, o.named, o.commands);
  if (!ready.ok()) {
    err << "mm-bench: " << ready.message() << "\n";
    return kBenchExitUsage;
  }
  if (o.describe) {
    out << DescribeBenchBackends().dump(2) << "\n";
    return 0;
  }
  if (o.oracle) return OracleBench(registry, o.oracle_sizes, out);
  return RunBenchmarks(o, registry, argv0, err);
}

void SetMeasuringEnvironment() {
  // prepare/ benchmarks time primitive creation, not a lookup in oneDNN's process-wide primitive
  // cache (execute benchmarks create theirs once, so they do not care). Read when oneDNN starts.
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0", /*overwrite=*/0);
  // Every timing starts by waiting for the other libraries' threads to stop (SettleOtherThreads),
  // and OpenBLAS's spin for 2^28 cycles after their last call by default: most of a 2-thread
  // calibration's waiting. 2^22 cycles still outlasts any gap between the calls of one timing, so
  // what is timed is the same. Read when OpenBLAS is opened (at run time, after this).
  setenv("OPENBLAS_THREAD_TIMEOUT", kOpenBlasThreadTimeout, /*overwrite=*/0);
}

int BenchMain(int argc, char** argv) {
  SetMeasuringEnvironment();
  auto options = ParseBenchOptions(std::vector<std::string>(argv + 1, argv + argc));
  if (!options.ok()) {
    std::cerr << "mm-bench: " << options.status().message() << "\n";
    return kBenchExitUsage;
  }
  return RunBench(*options, argv[0], std::cout, std::cerr);
}

}  // namespace mm::bench
