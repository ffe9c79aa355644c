// mm-bench: Google Benchmark over every MatMul backend, the bare libraries and this machine's
// peak. See --help and bench/matmul_bench.cc.
#include "bench_cli.h"
#include "mm/engine/memory_reuse.h"

int main(int argc, char** argv) {
  // As in mm-fuzz and mm-conformance: the arrays of one call reused by the next, for every backend
  // and the oracle alike (false under a sanitizer).
  mm::KeepFreedMemoryForReuse();
  return mm::bench::BenchMain(argc, argv);
}
