// mm-bench --mm_oracle: the exact oracle's throughput beside the fastest GEMM among the backends.
#ifndef MM_BENCH_ORACLE_BENCH_H_
#define MM_BENCH_ORACLE_BENCH_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "mm/engine/registry.h"

namespace mm::bench {

// Prints the machine, then for n^3 with n in `sizes` and each of double, float, float16, bfloat16
// and int64: the oracle's (ExactMatMul's) terms per second (n^3 / wall time of the best of a few
// runs), that run's wall and CPU seconds, the median run's wall seconds, how many elements took
// its exact path, the fastest double GEMM (for int64: the fastest
// int64 GEMM) among `registry`'s backends measured in the same run, and the ratio. Runs at the
// process's OpenMP thread count (OMP_NUM_THREADS: libraries read it when they start). Returns the
// exit code.
int OracleBench(const BackendRegistry& registry, const std::vector<std::int64_t>& sizes,
                std::ostream& out);

}  // namespace mm::bench

#endif  // MM_BENCH_ORACLE_BENCH_H_
