// mm-bench's command line as library functions: its own flags parsed into BenchOptions (the rest
// are Google Benchmark's), the run built and run from them. BenchMain chains them.
#ifndef MM_BENCH_BENCH_CLI_H_
#define MM_BENCH_BENCH_CLI_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "mm/bench/bench_shapes.h"
#include "mm/engine/status.h"
#include "mm/family/op.h"

namespace mm::bench {

// Exit codes of mm-bench besides Google Benchmark's.
inline constexpr int kBenchExitUsage = 2;  // A bad flag of mm-bench's own, or a plugin not loaded.

// mm-bench's own flags (see bench/matmul_bench.cc and --help).
struct BenchOptions {
  ShapeSet set = ShapeSet::kFull;  // --mm_set=quick|full.
  bool describe = false;           // --mm_describe.
  bool oracle = false;             // --mm_oracle[=N,...].
  std::vector<std::int64_t> oracle_sizes = {512, 1024};
  std::string calibrate;                    // --mm_calibrate=FILE.
  std::string calibrate_part;               // --mm_calibrate_part=... (internal).
  std::vector<std::string> libraries;       // --backend-lib PATH.
  std::vector<std::string> commands;        // --backend-cmd NAME=COMMAND.
  std::vector<std::string> named;           // --backend NAME.
  std::vector<family::Op> ops;              // --op NAME, in order; empty: MatMul alone.
  std::vector<std::string> benchmark_args;  // The rest, Google Benchmark's, in order.
};

// Parses `args` (without the program name). INVALID_ARGUMENT naming the flag for a flag of
// mm-bench's own without its value, with a bad value, or unknown (--mm_*); for an --op naming no
// operator of MatMul's family or one given twice, and for --op beside --mm_calibrate or
// --mm_oracle (which time MatMul alone).
StatusOr<BenchOptions> ParseBenchOptions(const std::vector<std::string>& args);

// Runs what `options` ask for: a calibration, --mm_describe, --mm_oracle, or the benchmarks
// (`argv0` and options.benchmark_args given to Google Benchmark). Returns the exit code
// (kBenchExitUsage for unreadable MM_EXPECTATIONS or a plugin or driver that does not load).
int RunBench(const BenchOptions& options, const char* argv0, std::ostream& out, std::ostream& err);

// OPENBLAS_THREAD_TIMEOUT as mm-bench sets it: log2 of the cycles OpenBLAS's threads spin after
// a call before they sleep (OpenBLAS's default is 28).
inline constexpr char kOpenBlasThreadTimeout[] = "22";

// Sets, where the user has not, the environment mm-bench measures in (read by the libraries when
// they start, so before any backend is made): ONEDNN_PRIMITIVE_CACHE_CAPACITY=0 and
// OPENBLAS_THREAD_TIMEOUT=kOpenBlasThreadTimeout. docs/benchmarks.md says why.
void SetMeasuringEnvironment();

// mm-bench's main: sets the measuring environment, parses argv, prints a usage error, or runs.
int BenchMain(int argc, char** argv);

}  // namespace mm::bench

#endif  // MM_BENCH_BENCH_CLI_H_
