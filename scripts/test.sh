#!/usr/bin/env bash
# The test command: set-up, configure, incremental build into build/, then every ctest test.
# Uses the official ONNX MatMul node tests in ../shared when present (scripts/onnx-data.sh).
# Exits non-zero on any failure. Usage: scripts/test.sh [--asan] [extra ctest arguments, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
preset=default
if [[ "${1:-}" == "--asan" ]]; then
  preset=asan
  shift
fi
# Every package (the tests run the runtimes, the BLAS libraries, the report's tools), then the build.
bash scripts/setup.sh
bash scripts/build.sh "$preset"
# Tests are independent processes: run as many at once as there are cores, unless told otherwise.
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
ctest --preset "$preset" "$@"
