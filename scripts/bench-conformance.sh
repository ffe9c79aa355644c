#!/usr/bin/env bash
# Whole-process throughput and memory of mm-conformance over a corpus (not a test: the figures
# depend on the machine and its load). Prints results/s, the peak RSS of the largest process
# (/usr/bin/time -v: the parent or one worker) and the peak sum over the parent and its workers
# (sampled every 20 ms), as RSS (shared library and copy-on-write pages counted once per process)
# and as PSS (each shared page split among its sharers: the memory the run really takes).
# Usage: scripts/bench-conformance.sh CORPUS_DIR [mm-conformance options, default --jobs 2]
# A corpus of 10,000 small valid cases: build/bin/mm-fuzz generate --out DIR --cases 10000 --seed 1
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${1:?usage: scripts/bench-conformance.sh CORPUS_DIR [mm-conformance options]}"
shift
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--jobs 2)
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
log="$(mktemp)"
trap 'rm -f "$log" "$log.time"' EXIT
start=$(date +%s%N)
/usr/bin/time -v -o "$log.time" build/bin/mm-conformance --data-dir "$corpus" --no-builtin --quiet \
  "${args[@]}" > "$log" 2>&1 &
timer=$!
peak_sum=0
peak_pss=0
while kill -0 "$timer" 2>/dev/null; do
  # The tool is the child of /usr/bin/time; its workers are its children.
  tool=$(pgrep -P "$timer" || true)
  if [[ -n "$tool" ]]; then
    sum=$(ps -o rss= -p "$tool" --ppid "$tool" 2>/dev/null | awk '{s += $1} END {print s + 0}')
    if (( sum > peak_sum )); then peak_sum=$sum; fi
    pss=0
    for p in $tool $(pgrep -P "$tool" || true); do
      v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || true)
      pss=$((pss + ${v:-0}))
    done
    if (( pss > peak_pss )); then peak_pss=$pss; fi
  fi
  sleep 0.02
done
wait "$timer" || true
end=$(date +%s%N)
results=$(grep -o 'summary: [0-9]* results' "$log" | grep -o '[0-9]*' || echo 0)
seconds=$(awk -v ns=$((end - start)) 'BEGIN {printf "%.2f", ns / 1e9}')
grep '^summary' "$log" || tail -5 "$log"
mb() { awk -v k="$1" 'BEGIN {printf "%.1f MB", k / 1024}'; }
rate=$(awk -v r="$results" -v s="$seconds" 'BEGIN {printf "%.0f", r / s}')
echo "results: $results in $seconds s wall = $rate results/s"
echo "peak RSS, largest process: $(mb "$(awk '/Maximum resident/ {print $6}' "$log.time")")"
echo "peak RSS, parent + workers (sampled): $(mb "$peak_sum")"
echo "peak PSS, parent + workers (sampled): $(mb "$peak_pss")"
