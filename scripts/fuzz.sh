#!/usr/bin/env bash
# Every libFuzzer target, as CI runs them: the loader (scripts/fuzz-loader.sh) for LOADER_SECONDS
# (default 60) and each parser (scripts/fuzz-parsers.sh) for PARSER_SECONDS (default 20), with the
# same seeds, flags and findings directories as those scripts, JOBS targets at a time (default: the
# cores), the loader first. Each target keeps a core for its whole time, so no run gets fewer
# executions than it would alone; the lanes end close together. Prints one line per target as it
# ends (its executions, or its finding with the end of its log); every log stays in
# build/asan/fuzz/. Exits non-zero if any target found something.
# Usage: scripts/fuzz.sh [--jobs JOBS] [LOADER_SECONDS [PARSER_SECONDS]]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
source scripts/fuzz/common.sh
jobs=$(nproc)
if [[ "${1:-}" == "--jobs" ]]; then
  jobs="${2:?--jobs needs a number}"
  shift 2
fi
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: --jobs must be a positive number, not '$jobs'" >&2
  exit 2
fi
loader_seconds="${1:-60}"
parser_seconds="${2:-20}"
fuzz_build
fuzz_loader_seeds
fuzz_parser_seeds
# Each run's one line (or its finding) goes to a file of its own, printed whole when the run ends.
declare -A summary_of=()
status=0
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
echo "fuzz: the loader for $loader_seconds s and $(fuzz_parser_kinds | wc -l) parsers for" \
  "$parser_seconds s each, $jobs at a time"
launch loader fuzz_run_loader "$loader_seconds" "$fuzz_out/fuzz-loader.log"
for kind in $(fuzz_parser_kinds); do
  launch "$kind" fuzz_run_parser "$kind" "$parser_seconds" "$fuzz_out/parser-fuzz-$kind.log"
done
while ((${#summary_of[@]} > 0)); do reap; done
exit "$status"
