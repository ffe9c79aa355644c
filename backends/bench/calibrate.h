// mm-bench's calibration for the auto backend: every candidate backend timed side by side at every
// benchmark shape and dtype, at 1 thread and at all cores, written as auto's table of choices.
#ifndef MM_BACKENDS_BENCH_CALIBRATE_H_
#define MM_BACKENDS_BENCH_CALIBRATE_H_

#include <string>

#include "backends/bench/bench_shapes.h"

namespace mm::bench {

// Measures and writes the table to `path` (creating its folder): one child process per thread
// count (OMP_NUM_THREADS = 1 and the logical CPU count), each measuring Shapes(set) x
// BenchDTypes(set). Returns 0, or 1 with a message on stderr when a part fails or the file cannot
// be written.
int Calibrate(const std::string& path, ShapeSet set);

// One thread count's part (the child's work, at the OMP_NUM_THREADS it was started with): the
// cells as a JSON array written to `out`. Returns 0.
int CalibratePart(const std::string& out, ShapeSet set);

}  // namespace mm::bench

#endif  // MM_BACKENDS_BENCH_CALIBRATE_H_
