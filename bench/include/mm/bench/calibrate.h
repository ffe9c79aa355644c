// mm-bench's calibration for the auto backend: every candidate backend timed side by side at every
// benchmark shape and dtype, at 1 thread and at all cores, written as auto's table of choices.
#ifndef MM_BENCH_CALIBRATE_H_
#define MM_BENCH_CALIBRATE_H_

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/bench/bench_shapes.h"
#include "mm/engine/machine.h"
#include "mm/family/backend.h"

namespace mm::bench {

// Measures and writes the table to `path` (creating its folder): one child process per thread
// count (OMP_NUM_THREADS = 1 and the logical CPU count), each measuring Shapes(set) x
// CalibratedDTypes(set) and CalibratedFamilyDescs() into `path`.part<threads>. The table appears
// whole or not at all (written beside it, then renamed), and no part file is left behind. Returns
// 0; 1 with a message on stderr when a part fails or the file cannot be written; 128 + the signal
// when SIGINT, SIGTERM or SIGHUP interrupts it (the signal is passed on to the child measuring,
// which is waited for).
int Calibrate(const std::string& path, ShapeSet set);

// The dtypes a calibration of `set` measures: BenchDTypes(set), and float16 in the quick set too
// (the quick benchmarks leave it out; a table without it would leave auto's float16 choices,
// threads included, to the built-in defaults).
std::vector<DType> CalibratedDTypes(ShapeSet set);

// The descriptions of MatMul's family a calibration measures, on every 2-D shape of its set:
// Gemm-13 float, MatMulInteger-10 uint8 x int8 and uint8 x uint8 (per-tensor zero points),
// QLinearMatMul-10 uint8 x int8 -> uint8 with float scales. auto's other descriptions of an
// operator take the built-in defaults.
std::vector<family::OpDesc> CalibratedFamilyDescs();

// One thread count's part (the child's work, at the OMP_NUM_THREADS it was started with): the
// cells as a JSON array written to `out` (whole or not at all). Dies with its parent. Returns 0,
// or 1 with a message on stderr when `out` cannot be written.
int CalibratePart(const std::string& out, ShapeSet set);

// The time of one warm-up call above which the calibration prunes a candidate on that call alone
// (else it takes the fastest of at least two): 10 times `best`, the fastest candidate's time so
// far (infinity before any), and at least 10 ms, so that no stall of a fast call reaches it.
double OneCallPruneThreshold(double best);

// What ranks a candidate in a cell: its samples (seconds per call, in the order taken) cut into
// whole blocks of `block` samples, and the fastest block's median (a block's median: its
// (block/2)-th smallest sample); samples after the last whole block do not count. With fewer
// samples than a block, the median of all of them; infinity when there are none. Other work on a
// shared machine only ever slows a block down, and one phase of it can span two blocks of a
// candidate: the median of all samples would then be the phase's.
double FastestBlockMedian(std::span<const double> samples, int block);

// The candidates of a close cell, which the calibration times again before it ranks: the indices
// of `measures` (one per candidate, its FastestBlockMedian; infinity for a pruned one) at most
// (1 + margin) times the fastest, the fastest first, then in their order; empty when no other is
// that close (or none is finite). One phase of other work can slow every block of a candidate and
// lose it a cell it wins in mm-bench.
std::vector<std::size_t> CloseContenders(std::span<const double> measures, double margin);

// A cell's ranking from its entries' measures (seconds per call, entry "name" or "name@N"):
// fastest first, except that an entry within (1 + tie_margin) times the fastest goes first when
// its backend comes earlier in `preference` (backend names, most preferred first; not named:
// last) or, for the same backend, when it runs on all the cell's threads: auto runs an "@N"
// entry with the thread count set around every call, a cost the tie cannot see.
std::vector<std::pair<double, std::string>> RankEntries(
    std::vector<std::pair<double, std::string>> measures,
    const std::vector<std::string>& preference, double tie_margin);

// The machine's load while one part measures, for the table (AutoTable::load): from construction
// to Finish, other processes' CPU time (the machine's busy time less the part's and this
// process's) and the hypervisor's steal, in cores on average.
class LoadMeter {
 public:
  LoadMeter();
  // The load since construction while a part at `threads` used `part_cpu_seconds` of CPU time;
  // nullopt where the machine's times cannot be read (/proc/stat).
  std::optional<CalibrationLoad> Finish(int threads, double part_cpu_seconds) const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::optional<MachineCpuTimes> machine_;
  double own_cpu_seconds_;
};

}  // namespace mm::bench

#endif  // MM_BENCH_CALIBRATE_H_
