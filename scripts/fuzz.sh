#!/usr/bin/env bash
# Fuzzes mm's loader (TensorProto decoding, model classification, whole case directories) with
# libFuzzer: builds the CMake preset "fuzz" (clang 14, -fsanitize=fuzzer,address,undefined) into
# build/fuzz/, writes the seed corpus from the official ONNX MatMul cases (MM_ONNX_DATA, else
# Debian's libonnx-testdata) and the built-in examples, and runs for SECONDS (default 60) with a
# fixed seed. Exits non-zero on any finding; the input that triggered it is in build/fuzz/findings/.
# Usage: scripts/fuzz.sh [SECONDS] [more libFuzzer flags, e.g. -jobs=2 -seed=7]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
seconds="${1:-60}"
shift || true
bash scripts/setup.sh
[[ -f build/fuzz/build.ninja ]] || cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
roots=()
IFS=: read -r -a roots <<< "${MM_ONNX_DATA:-}"
[[ -d /usr/share/libonnx-testdata/data/node ]] && roots+=(/usr/share/libonnx-testdata/data/node)
existing=()
for r in "${roots[@]}"; do [[ -n "$r" && -d "$r" ]] && existing+=("$r"); done
# Only MatMul cases are seeds: Debian's root holds ~930 other operators' cases.
seeds=build/fuzz/seeds
rm -rf "$seeds" && mkdir -p "$seeds" build/fuzz/corpus build/fuzz/findings
matmul_roots=()
for r in "${existing[@]}"; do
  if [[ -f "$r/model.onnx" ]]; then matmul_roots+=("$(dirname "$r")"); continue; fi
  tmp="build/fuzz/roots/$(echo "$r" | tr / _)"
  rm -rf "$tmp" && mkdir -p "$tmp"
  for c in "$r"/test_matmul*; do [[ -d "$c" ]] && ln -s "$(cd "$c" && pwd)" "$tmp/"; done
  matmul_roots+=("$tmp")
done
build/fuzz/bin/mm-loader-fuzz-seeds "$seeds" "${matmul_roots[@]}"
echo "fuzz: ${seconds} s, seed 1 (corpus build/fuzz/corpus, seeds $seeds)"
exec build/fuzz/bin/mm_loader_fuzzer -seed=1 -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix=build/fuzz/findings/ \
  "$@" build/fuzz/corpus "$seeds"
