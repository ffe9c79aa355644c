// The calibration's pieces shared by its files (not an API): the clocks it times with, its sample
// time, and one cell measured (calibrate_cell.cc). The parent (calibrate.cc) runs a child per
// thread count; the child (calibrate_part.cc) measures its cells with MeasureCell.
#ifndef MM_BENCH_CALIBRATE_CELL_H_
#define MM_BENCH_CALIBRATE_CELL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/bench/bench_shapes.h"
#include "mm/engine/backend.h"
#include "mm/engine/io/output_file.h"

namespace mm::bench::internal {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The clock a cell is timed with: at 1 thread the process's CPU time, which other work on a shared
// machine does not inflate (wall time also counts the moments the process waits for a core, and
// those differ from sample to sample); at more threads wall time, since CPU time would add the
// threads up and hide what parallelism gains.
double Now(bool cpu_time);

// Sets the time of one sample from MM_CALIBRATE_SAMPLE_SECONDS when set (else 4 ms); false (saying
// why on stderr) if the value is not a number of seconds in (0, 1].
bool LoadSampleSeconds();

// The calibration's candidates, each created once (creating a backend costs more than timing a
// small cell), by name.
using Candidates = std::vector<std::pair<std::string, std::unique_ptr<Backend>>>;

// One call of a candidate, as auto makes it (its inputs and output held by the call).
using TimedCall = std::function<void()>;

// A candidate of a cell: its ranking entry ("name", or "name@N" run on N threads), its call and
// the thread count it runs on (0: the cell's).
struct TimedCandidate {
  std::string entry;
  TimedCall call;
  int threads = 0;
};

// `cell` (dtype or op, threads, shapes set) ranked: `candidates` timed side by side in blocks at
// cell.threads (see calibrate_cell.cc), ranked by FastestBlockMedian, ties broken by
// `preference`, the cell's default ranking. An empty ranking when there are no candidates.
AutoCell RankCandidates(AutoCell cell, std::vector<TimedCandidate> candidates,
                        const std::vector<std::string>& preference);

// Every candidate computing (dtype, shape), timed side by side in blocks at `threads` (see
// calibrate_cell.cc); ranked by FastestBlockMedian, ties broken by the default ranking. An empty
// ranking when no candidate computes it.
AutoCell MeasureCell(const Candidates& candidates, DType dtype, const BenchShape& shape,
                     int threads);

// Every candidate whose SupportOf accepts `desc` (the reference not on a large shape), timed
// through ComputeOp on a problem of `desc` whose product is `shape` (2-D), as MeasureCell times
// MatMul; the cell's op is `desc`. An empty ranking when no candidate takes it.
AutoCell MeasureFamilyCell(const Candidates& candidates, const family::OpDesc& desc,
                           const BenchShape& shape, int threads);

// Writes `text` to `path` whole or not at all, as mm's reports are written: into a new file of an
// unpredictable name beside it (never a planted link), renamed over `path` once complete.
inline bool WriteWhole(const std::string& path, const std::string& text) {
  return io::WriteFileAtomically(path, text).ok();
}

}  // namespace mm::bench::internal

#endif  // MM_BENCH_CALIBRATE_CELL_H_
