#!/usr/bin/env bash
# Parser fuzzing: fuzzes each reader of the files mm reads besides ONNX ones (--expectations, an
# outputs tree's mm_outputs.json, auto's calibration table, a JSON report read back by --resume or
# `mm-conformance merge`, an mm-fuzz report read back by `mm-fuzz merge`, the frames a runtime
# driver writes to its stdout) with its own libFuzzer
# target (conformance/libfuzzer/), built in the asan tree (build preset "loader-fuzz": clang 14,
# -fsanitize=fuzzer,address,undefined, in build/asan/). Makes the seeds with mm's own
# writers (each must parse), then runs every target for SECONDS (default 20) with a fixed seed and
# prints its executions per second. Exits non-zero on any finding; the input that triggered it is
# in build/asan/fuzz/findings/<kind>/. The ONNX loader has its own: scripts/fuzz-loader.sh.
# Usage: scripts/fuzz-parsers.sh [SECONDS] [more libFuzzer flags]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
bash scripts/setup.sh
[[ -f build/asan/build.ninja ]] || cmake --preset asan >/dev/null
cmake --build --preset loader-fuzz
out=build/asan/fuzz
seeds="$out/parser-seeds"
bash conformance/libfuzzer/check_seeds.sh build/asan/bin "$seeds" \
  backends/blas/deviations/expectations.json backends/runtimes/js/expectations/onnxruntime.json
status=0
for dir in "$seeds"/*/; do
  kind=$(basename "$dir")
  corpus="$out/parser-corpus/$kind"
  findings="$out/findings/$kind"
  mkdir -p "$corpus" "$findings"
  log="$out/parser-fuzz-$kind.log"
  if "build/asan/bin/mm_${kind}_fuzzer" -seed=1 -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
       "$@" "$corpus" "$dir" > "$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    echo "parser-fuzz: $kind: ${runs:-?} inputs in ${seconds} s (${rate:-?} per second), no finding"
  else
    tail -n 40 "$log" >&2
    echo "parser-fuzz: $kind: FINDING (log $log, input in $findings/)" >&2
    status=1
  fi
done
exit "$status"
