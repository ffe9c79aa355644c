// mm-bench: Google Benchmark over every MatMul backend, the bare libraries and this machine's
// peak. See --help and backends/bench/matmul_bench.cc.
#include "bench_cli.h"

int main(int argc, char** argv) { return mm::bench::BenchMain(argc, argv); }
