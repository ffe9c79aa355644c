#!/usr/bin/env bash
# Loader fuzzing: fuzzes mm's loader (TensorProto decoding, model classification, whole case
# directories) with libFuzzer: builds its target in the asan tree (build preset "loader-fuzz":
# clang 14, -fsanitize=fuzzer,address,undefined, in build/asan/), writes the seed corpus from the
# official ONNX MatMul cases (MM_ONNX_DATA, else Debian's libonnx-testdata) and the built-in
# examples, and runs for SECONDS (default 60) with a fixed seed, its output on the terminal. Exits
# non-zero on any finding; the input that triggered it is in build/asan/fuzz/findings/. (The
# differential fuzzing of the backends is mm-fuzz, docs/differential-fuzzing.md; every fuzz target
# at once, as CI runs them: scripts/fuzz.sh.)
# Usage: scripts/fuzz-loader.sh [SECONDS] [more libFuzzer flags, e.g. -jobs=2 -seed=7]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
source scripts/fuzz/common.sh
seconds="${1:-60}"
shift || true
fuzz_build
fuzz_loader_seeds
echo "loader-fuzz: ${seconds} s, seed 1 (corpus $fuzz_out/corpus, seeds $fuzz_out/seeds)"
fuzz_command mm_loader_fuzzer -max_total_time="$seconds" "$fuzz_out/findings" "$@" \
  "$fuzz_out/corpus" "$fuzz_out/seeds"
exec "${fuzz_cmd[@]}"
