#!/usr/bin/env bash
# Benchmarks mm-fuzz's rate, in problems per second, through the ONNX Runtime Node driver
# (`--backend onnxruntime`) on small problems, per operator of MatMul's family, beside the
# reference backend alone (mm's own side: generation, the oracle, judging) as the baseline.
#
# Usage: scripts/bench-ort-fuzz-rate.sh [--runs N] [--time SECONDS] [--threads T]
#                                        [--backend NAME] [--build DIR]
#   --runs N       alternating runs per (operator, backend) (default 5)
#   --time S       mm-fuzz's time budget per run (default 4)
#   --threads T    OMP_NUM_THREADS, mm's and so the driver's thread count (default 2)
#   --backend NAME the runtime measured (default onnxruntime; onnxruntime-web works too)
#   --build DIR    the build folder holding bin/mm-fuzz (default build)
#   --compare DIR  also the runtime through the JavaScript drivers in DIR (MM_JS_RUNTIMES_DIR: a
#                  copy of backends/runtimes/js at another commit), as a column of its own, so
#                  that a change's before and after are measured in one session
#
# Each run is `mm-fuzz --op OP --backend B --max-elements 256 --time S --no-shrink --quiet
# --seed 3` (float only for MatMul and Gemm): A, B and Y of at most 256 elements, every 16x16x16
# product and smaller ones, each problem counted (refused and failing ones too), with no
# shrinking, so the figure is the rate of judging alone. The runs alternate between operators and
# backends so that a change of the machine's load reaches every figure alike; the script prints
# each operator's median problems per second (the figure mm-fuzz's summary gives) for the runtime
# and for reference, with the machine's CPU and load average at the start and at the end.
# Needs the JavaScript packages (scripts/runtimes-npm.sh). A benchmark, never a test.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
seconds=4
threads=2
backend=onnxruntime
build=build
compare=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --time) seconds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --compare) compare="$2"; shift 2 ;;
    *) echo "bench-ort-fuzz-rate: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
fuzz="$build/bin/mm-fuzz"
[[ -x "$fuzz" ]] || { echo "bench-ort-fuzz-rate: no $fuzz: build the mm-fuzz target" >&2; exit 2; }

operators=(MatMul Gemm MatMulInteger QLinearMatMul)
# The columns: name, then the backend and the drivers' folder (empty: the checkout's).
columns=("$backend" reference)
declare -A column_backend=(["$backend"]="$backend" [reference]=reference)
declare -A column_drivers=(["$backend"]= [reference]=)
if [[ -n "$compare" ]]; then
  [[ -f "$compare/mm_runtime.js" ]] ||
    { echo "bench-ort-fuzz-rate: --compare $compare holds no mm_runtime.js" >&2; exit 2; }
  columns=("$backend" "$backend@compare" reference)
  column_backend["$backend@compare"]="$backend"
  column_drivers["$backend@compare"]="$(cd "$compare" && pwd)"
fi

# The problems per second of one run, from mm-fuzz's summary ("(R problems/s without shrinking)").
rate() {
  local op="$1" backend="$2" drivers="$3" dtype=() env=() summary
  [[ "$op" == MatMul || "$op" == Gemm ]] && dtype=(--dtype float)
  [[ -n "$drivers" ]] && env=("MM_JS_RUNTIMES_DIR=$drivers")
  summary=$(env "${env[@]}" OMP_NUM_THREADS="$threads" "$fuzz" --op "$op" "${dtype[@]}" --backend "$backend" \
    --max-elements 256 --time "$seconds" --no-shrink --quiet --seed 3 2>&1 |
    grep '^summary:' || true)
  [[ -n "$summary" ]] ||
    { echo "bench-ort-fuzz-rate: mm-fuzz --op $op --backend $backend printed no summary" >&2;
      exit 1; }
  sed -E 's/.*\(([0-9.]+) problems\/s.*/\1/' <<< "$summary"
}

median() { tr -s ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs;" \
  "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mm-fuzz --max-elements 256 --time $seconds --no-shrink --seed 3, OMP_NUM_THREADS=$threads," \
  "$runs alternating runs"
declare -A rates
for ((run = 1; run <= runs; run++)); do
  for op in "${operators[@]}"; do
    for c in "${columns[@]}"; do
      rates["$op,$c"]+="$(rate "$op" "${column_backend[$c]}" "${column_drivers[$c]}") "
    done
  done
done
echo "median problems/s (each run's figure after the columns)"
printf '%-14s' operator; printf ' %22s' "${columns[@]}"; echo
for op in "${operators[@]}"; do
  printf '%-14s' "$op"
  for c in "${columns[@]}"; do printf ' %22s' "$(median <<< "${rates[$op,$c]}")"; done
  for c in "${columns[@]}"; do printf '  %s: %s' "$c" "${rates[$op,$c]}"; done
  echo
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
