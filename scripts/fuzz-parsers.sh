#!/usr/bin/env bash
# Parser fuzzing: fuzzes each reader of the files mm reads besides ONNX ones (--expectations, an
# outputs tree's mm_outputs.json, auto's calibration table, a JSON report read back by --resume or
# `mm-conformance merge`, an mm-fuzz report read back by `mm-fuzz merge`, the frames a runtime
# driver writes to its stdout) with its own libFuzzer
# target (conformance/libfuzzer/), built in the asan tree (build preset "loader-fuzz": clang 14,
# -fsanitize=fuzzer,address,undefined, in build/asan/). Makes the seeds with mm's own
# writers (each must parse), then runs every target in turn for SECONDS (default 20) with a fixed
# seed and prints its executions per second. Exits non-zero on any finding; the input that
# triggered it is in build/asan/fuzz/findings/<kind>/. The ONNX loader has its own:
# scripts/fuzz-loader.sh; both at once, as CI runs them: scripts/fuzz.sh.
# Usage: scripts/fuzz-parsers.sh [SECONDS] [more libFuzzer flags]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz/common.sh
seconds="${1:-20}"
shift || true
fuzz_build
fuzz_parser_seeds
status=0
for kind in $(fuzz_parser_kinds); do
  fuzz_run_parser "$kind" -max_total_time="$seconds" "$fuzz_out/parser-fuzz-$kind.log" "$@" ||
    status=1
done
exit "$status"
