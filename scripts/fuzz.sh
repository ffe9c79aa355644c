#!/usr/bin/env bash
# Every libFuzzer target, as CI runs them: the loader (scripts/fuzz-loader.sh) for LOADER_SECONDS
# (default 60) and each parser (scripts/fuzz-parsers.sh) for PARSER_SECONDS (default 20), with the
# same seeds, flags and findings directories as those scripts, JOBS targets at a time (default: the
# cores), the loader first, so the lanes end close together. Each target keeps a core for its
# whole time, so no run gets fewer executions than it would alone. Prints one line per target as
# it ends (its executions, or its finding with the end of its log); every log stays in
# build/asan/fuzz/. Exits non-zero if any target found something.
#   --runs      a fixed amount of work instead of a time: each target runs its count of inputs
#               (fuzz_fixed_runs, scripts/fuzz/common.sh), the same campaign however loaded the
#               machine is (CI runs it at the lowest priority beside the sanitizer pass)
#   --no-build  the targets are built already (CI: by the asan build; no second ninja in
#               build/asan while the sanitizer pass builds there)
# Usage: scripts/fuzz.sh [--jobs JOBS] [--runs] [--no-build] [LOADER_SECONDS [PARSER_SECONDS]]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
source scripts/fuzz/common.sh
jobs=$(nproc) fixed_runs=0 build=1
while (($#)) && [[ "$1" == --* ]]; do
  case "$1" in
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --runs) fixed_runs=1; shift ;;
    --no-build) build=0; shift ;;
    *) echo "fuzz: unknown option '$1' (--jobs N, --runs, --no-build)" >&2; exit 2 ;;
  esac
done
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: --jobs must be a positive number, not '$jobs'" >&2
  exit 2
fi
loader_seconds="${1:-60}"
parser_seconds="${2:-20}"
((build)) && fuzz_build
fuzz_loader_seeds
fuzz_parser_seeds
# What bounds a target's run: its fixed count of inputs, or the time.
limit_of() {
  if ((fixed_runs)); then
    echo "-runs=${fuzz_fixed_runs[$1]}"
  elif [[ "$1" == loader ]]; then
    echo "-max_total_time=$loader_seconds"
  else
    echo "-max_total_time=$parser_seconds"
  fi
}
for kind in loader $(fuzz_parser_kinds); do
  if ((fixed_runs)) && [[ -z "${fuzz_fixed_runs[$kind]:-}" ]]; then
    echo "fuzz: no fixed run count for the '$kind' target: add it to fuzz_fixed_runs" \
      "(scripts/fuzz/common.sh)" >&2
    exit 2
  fi
done
# Each run's one line (or its finding) goes to a file of its own, printed whole when the run ends.
declare -A summary_of=()
status=0
# Each run in a process group of its own (job control), so that a stop (Ctrl-C, kill -TERM) ends
# the runs in progress whole, never leaving a fuzzer running on.
set -m
stop() {
  local pid
  for pid in "${!summary_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  wait
  echo "fuzz: stopped by SIG$1; the runs in progress were ended" >&2
  exit $((128 + $(kill -l "$1")))
}
trap 'stop INT' INT
trap 'stop TERM' TERM
reap() {
  local pid
  wait -n -p pid || status=1
  cat "${summary_of[$pid]}"
  unset "summary_of[$pid]"
}
launch() {
  local summary="$fuzz_out/summary-$1.txt"
  shift
  while ((${#summary_of[@]} >= jobs)); do reap; done
  "$@" > "$summary" 2>&1 &
  summary_of[$!]="$summary"
}
if ((fixed_runs)); then
  echo "fuzz: the loader and $(fuzz_parser_kinds | wc -l) parsers, each its fixed count of" \
    "inputs, $jobs at a time"
else
  echo "fuzz: the loader for $loader_seconds s and $(fuzz_parser_kinds | wc -l) parsers for" \
    "$parser_seconds s each, $jobs at a time"
fi
launch loader fuzz_run_loader "$(limit_of loader)" "$fuzz_out/fuzz-loader.log"
for kind in $(fuzz_parser_kinds); do
  launch "$kind" fuzz_run_parser "$kind" "$(limit_of "$kind")" "$fuzz_out/parser-fuzz-$kind.log"
done
while ((${#summary_of[@]} > 0)); do reap; done
exit "$status"
