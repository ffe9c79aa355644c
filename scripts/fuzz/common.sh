# Sourced by scripts/fuzz-loader.sh, scripts/fuzz-parsers.sh and scripts/fuzz.sh (not run on its
# own): building the libFuzzer targets, making their seeds and running one target for a time with
# the flags every run shares. Expects the repository root as the working directory.

fuzz_out=build/asan/fuzz

# Set-up, configure when needed, and the build preset that holds every libFuzzer target.
fuzz_build() {
  bash scripts/setup.sh
  [[ -f build/asan/build.ninja ]] || cmake --preset asan >/dev/null
  cmake --build --preset loader-fuzz
}

# The loader's seeds in $fuzz_out/seeds: the MatMul cases of every data root (MM_ONNX_DATA, else
# Debian's libonnx-testdata, whose root holds ~930 other operators' cases) and the built-in ones.
fuzz_loader_seeds() {
  local roots=() existing=() matmul_roots=() r c tmp
  IFS=: read -r -a roots <<< "${MM_ONNX_DATA:-}"
  [[ -d /usr/share/libonnx-testdata/data/node ]] && roots+=(/usr/share/libonnx-testdata/data/node)
  for r in "${roots[@]}"; do [[ -n "$r" && -d "$r" ]] && existing+=("$r"); done
  rm -rf "$fuzz_out/seeds" && mkdir -p "$fuzz_out/seeds" "$fuzz_out/corpus" "$fuzz_out/findings"
  for r in "${existing[@]}"; do
    if [[ -f "$r/model.onnx" ]]; then matmul_roots+=("$(dirname "$r")"); continue; fi
    tmp="$fuzz_out/roots/$(echo "$r" | tr / _)"
    rm -rf "$tmp" && mkdir -p "$tmp"
    for c in "$r"/test_matmul*; do [[ -d "$c" ]] && ln -s "$(cd "$c" && pwd)" "$tmp/"; done
    matmul_roots+=("$tmp")
  done
  build/asan/bin/mm-loader-fuzz-seeds "$fuzz_out/seeds" "${matmul_roots[@]}"
}

# The parsers' seeds in $fuzz_out/parser-seeds/<kind>/, made by mm's own writers and each checked
# to parse (conformance/libfuzzer/check_seeds.sh).
fuzz_parser_seeds() {
  bash conformance/libfuzzer/check_seeds.sh build/asan/bin "$fuzz_out/parser-seeds" \
    backends/blas/deviations/expectations.json backends/runtimes/js/expectations/onnxruntime.json
}

# The kinds of file with a parser target, one per line (after fuzz_parser_seeds).
fuzz_parser_kinds() {
  local dir
  for dir in "$fuzz_out"/parser-seeds/*/; do basename "$dir"; done
}

# Fixed amounts of work (inputs run) per target, for scripts/fuzz.sh --runs: about 0.7 of what a
# timed run (the loader 60 s, each parser 20 s) gets through on one core of a 2-core development
# machine, CI's campaign. The same seed and count make the same campaign on any machine, however
# loaded. The last third of those timed runs added 1 to 4 % of coverage (the loader's 2,220 edges
# at 131,072 inputs, 2,249 at 270,000): CI's time goes further elsewhere; the timed runs
# (scripts/fuzz.sh without --runs) go deeper.
declare -A fuzz_fixed_runs=(
  [loader]=190000 [calibration_table]=100000 [conformance_report]=3100 [expectations]=140000
  [fuzz_report]=90000 [outputs_manifest]=260000 [runtime_frames]=200000)

# Sets fuzz_cmd to the libFuzzer command line every run shares: TARGET until LIMIT (a libFuzzer
# flag: -max_total_time=SECONDS or -runs=N) with seed 1, a finding's input kept in FINDINGS/, then
# MORE flags and the corpus directories.
# Usage: fuzz_command TARGET LIMIT FINDINGS [MORE...] CORPUS...
fuzz_command() {
  local target="$1" limit="$2" findings="$3"
  shift 3
  mkdir -p "$findings"
  fuzz_cmd=("build/asan/bin/$target" -seed=1 "$limit" -timeout=10 -rss_limit_mb=2048
            -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" "$@")
}

# Runs the loader's target (after fuzz_loader_seeds) into LOG, then prints one line.
# Usage: fuzz_run_loader LIMIT LOG [libFuzzer flags]
fuzz_run_loader() {
  local limit="$1" log="$2"
  shift 2
  fuzz_command mm_loader_fuzzer "$limit" "$fuzz_out/findings" "$@" \
    "$fuzz_out/corpus" "$fuzz_out/seeds"
  fuzz_run_logged loader "$log" "$fuzz_out/findings"
}

# Runs the parser target of KIND (after fuzz_parser_seeds) into LOG, then prints one line.
# Usage: fuzz_run_parser KIND LIMIT LOG [libFuzzer flags]
fuzz_run_parser() {
  local kind="$1" limit="$2" log="$3"
  shift 3
  mkdir -p "$fuzz_out/parser-corpus/$kind"
  fuzz_command "mm_${kind}_fuzzer" "$limit" "$fuzz_out/findings/$kind" "$@" \
    "$fuzz_out/parser-corpus/$kind" "$fuzz_out/parser-seeds/$kind"
  fuzz_run_logged "$kind" "$log" "$fuzz_out/findings/$kind"
}

# Runs fuzz_cmd with its output in LOG and prints what it did: its executions, or its finding
# (with the log's last lines, on stderr) and a non-zero status.
fuzz_run_logged() {
  local name="$1" log="$2" findings="$3" runs rate start=$SECONDS
  if "${fuzz_cmd[@]}" > "$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    echo "fuzz: $name: ${runs:-?} inputs in $((SECONDS - start)) s (${rate:-?} per second)," \
      "no finding"
  else
    tail -n 40 "$log" >&2
    echo "fuzz: $name: FINDING (log $log, input in $findings/)" >&2
    return 1
  fi
}
