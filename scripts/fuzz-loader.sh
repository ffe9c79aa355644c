#!/usr/bin/env bash
# Loader fuzzing: fuzzes mm's loader (TensorProto decoding, model classification, whole case
# directories) with libFuzzer: builds its target in the asan tree (build preset "loader-fuzz":
# clang 14, -fsanitize=fuzzer,address,undefined, in build/asan/), writes the seed corpus from the
# official ONNX MatMul cases (MM_ONNX_DATA, else Debian's libonnx-testdata) and the built-in
# examples, and runs for SECONDS (default 60) with a fixed seed. Exits non-zero on any finding; the
# input that triggered it is in build/asan/fuzz/findings/. (The differential fuzzing of the
# backends is mm-fuzz, docs/differential-fuzzing.md.)
# Usage: scripts/fuzz-loader.sh [SECONDS] [more libFuzzer flags, e.g. -jobs=2 -seed=7]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
seconds="${1:-60}"
shift || true
bash scripts/setup.sh
[[ -f build/asan/build.ninja ]] || cmake --preset asan >/dev/null
cmake --build --preset loader-fuzz
out=build/asan/fuzz
roots=()
IFS=: read -r -a roots <<< "${MM_ONNX_DATA:-}"
[[ -d /usr/share/libonnx-testdata/data/node ]] && roots+=(/usr/share/libonnx-testdata/data/node)
existing=()
for r in "${roots[@]}"; do [[ -n "$r" && -d "$r" ]] && existing+=("$r"); done
# Only MatMul cases are seeds: Debian's root holds ~930 other operators' cases.
seeds="$out/seeds"
rm -rf "$seeds" && mkdir -p "$seeds" "$out/corpus" "$out/findings"
matmul_roots=()
for r in "${existing[@]}"; do
  if [[ -f "$r/model.onnx" ]]; then matmul_roots+=("$(dirname "$r")"); continue; fi
  tmp="$out/roots/$(echo "$r" | tr / _)"
  rm -rf "$tmp" && mkdir -p "$tmp"
  for c in "$r"/test_matmul*; do [[ -d "$c" ]] && ln -s "$(cd "$c" && pwd)" "$tmp/"; done
  matmul_roots+=("$tmp")
done
build/asan/bin/mm-loader-fuzz-seeds "$seeds" "${matmul_roots[@]}"
echo "loader-fuzz: ${seconds} s, seed 1 (corpus $out/corpus, seeds $seeds)"
exec build/asan/bin/mm_loader_fuzzer -seed=1 -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$out/findings/" \
  "$@" "$out/corpus" "$seeds"
