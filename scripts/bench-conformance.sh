#!/usr/bin/env bash
# Whole-process throughput and memory of mm-conformance over a corpus, without and with reports
# (--json and --junit), run one after the other (not a test: the figures depend on the machine and
# its load). For each: results/s, the peak RSS of the largest process (/usr/bin/time -v: the
# parent or one worker), the parent's peak RSS, and the peak sum over the parent and its workers
# (sampled every 20 ms), as RSS (shared library and copy-on-write pages counted once per process)
# and as PSS (each shared page split among its sharers: the memory the run really takes). Then the
# ratios of the run with reports to the one without, and the machine (as mm-conformance reports it)
# with its load average at the end.
# Usage: scripts/bench-conformance.sh CORPUS_DIR [mm-conformance options, default --jobs 2]
# A corpus of 10,000 small valid cases: build/bin/mm-fuzz generate --out DIR --cases 10000 --seed 1
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${1:?usage: scripts/bench-conformance.sh CORPUS_DIR [mm-conformance options]}"
shift
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--jobs 2)
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# run NAME [extra options]: one measured run; sets rate_NAME, largest_NAME, parent_NAME, sum_NAME,
# pss_NAME (KiB) and prints its figures.
run() {
  local name=$1
  shift
  local log="$work/$name.log" start end tool sum pss p v peak_sum=0 peak_pss=0 peak_parent=0
  start=$(date +%s%N)
  /usr/bin/time -v -o "$log.time" build/bin/mm-conformance --data-dir "$corpus" --no-builtin \
    --quiet "${args[@]}" "$@" > "$log" 2>&1 &
  local timer=$!
  while kill -0 "$timer" 2>/dev/null; do
    # The tool is the child of /usr/bin/time; its workers are its children.
    tool=$(pgrep -P "$timer" || true)
    if [[ -n "$tool" ]]; then
      v=$(ps -o rss= -p "$tool" 2>/dev/null | awk "{print \$1 + 0}" || true)
      if (( ${v:-0} > peak_parent )); then peak_parent=$v; fi
      sum=$(ps -o rss= -p "$tool" --ppid "$tool" 2>/dev/null | awk "{s += \$1} END {print s + 0}" || true)
      if (( ${sum:-0} > peak_sum )); then peak_sum=$sum; fi
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
  local results seconds
  results=$(grep -o 'summary: [0-9]* results' "$log" | grep -o '[0-9]*' || echo 0)
  seconds=$(awk -v ns=$((end - start)) 'BEGIN {printf "%.2f", ns / 1e9}')
  printf -v "rate_$name" '%s' "$(awk -v r="$results" -v s="$seconds" 'BEGIN {printf "%.0f", r / s}')"
  printf -v "largest_$name" '%s' "$(awk '/Maximum resident/ {print $6}' "$log.time")"
  printf -v "parent_$name" '%s' "$peak_parent"
  printf -v "sum_$name" '%s' "$peak_sum"
  printf -v "pss_$name" '%s' "$peak_pss"
  echo "== $name: $(grep '^summary' "$log" || tail -3 "$log")"
  local rate_var="rate_$name" largest_var="largest_$name"
  echo "   $results results in $seconds s wall = ${!rate_var} results/s; peak RSS: largest process" \
    "$(mb "${!largest_var}"), parent $(mb "$peak_parent"), parent + workers $(mb "$peak_sum")" \
    "(PSS $(mb "$peak_pss"))"
}
mb() { awk -v k="$1" 'BEGIN {printf "%.1f MB", k / 1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }

run plain
run reports --json "$work/r.json" --junit "$work/r.xml"
echo "== reports / plain: throughput $(ratio "$rate_reports" "$rate_plain")x," \
  "largest process $(ratio "$largest_reports" "$largest_plain")x," \
  "parent + workers $(ratio "$sum_reports" "$sum_plain")x (PSS $(ratio "$pss_reports" "$pss_plain")x)"
echo "   report sizes: JSON $(du -h "$work/r.json" | cut -f1), JUnit $(du -h "$work/r.xml" | cut -f1)"
# The figures mean nothing without the machine and its load.
echo "   $(grep -m 1 '^machine:' "$work/plain.log" || echo 'machine: ?');" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
