#!/usr/bin/env bash
# Whole-process throughput and memory of mm-conformance over a corpus, without and with reports
# (--json and --junit), side by side: PAIRS pairs of runs (default 3), the order within a pair
# alternating, so load that changes during the benchmark falls on both. Not a test: the figures
# depend on the machine and its load. For each run: results/s, the peak RSS of the largest process
# (/usr/bin/time -v: the parent or one worker), the parent's peak RSS, and the peak sum over the
# parent, its worker launcher and the workers (sampled every 100 ms), as RSS (shared library and copy-on-write pages
# counted once per process) and as PSS (each shared page split among its sharers: the memory the
# run really takes). Then, per pair, the ratio of the run with reports to the one without, and the
# medians, and the machine (as mm-conformance reports it) with its load average at the end.
# Usage: [PAIRS=N] scripts/bench-conformance.sh CORPUS_DIR [mm-conformance options, default --jobs 2]
# A corpus of 10,000 small valid cases: build/bin/mm-fuzz generate --out DIR --cases 10000 --seed 1
# REPORTS_ONLY=1 runs only the run with reports (PAIRS times): the memory of a large run, say.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${1:?usage: scripts/bench-conformance.sh CORPUS_DIR [mm-conformance options]}"
shift
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--jobs 2)
pairs="${PAIRS:-3}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mb() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {
  if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The process ids of PID and all its descendants (the tool, its worker launcher, the workers).
tree() {
  local p
  echo "$1"
  for p in $(cat /proc/"$1"/task/*/children 2>/dev/null || true); do tree "$p"; done
}

# One sample of the tool's tree: "PARENT_RSS SUM_RSS SUM_PSS" (KiB), read from /proc in one awk.
sample() {
  local tool=$1 files=() p
  for p in $(tree "$tool"); do
    files+=("/proc/$p/status" "/proc/$p/smaps_rollup")
  done
  awk -v parent="/proc/$tool/status" '
    /^VmRSS:/ { rss += $2; if (FILENAME == parent) own = $2 }
    /^Pss:/ { pss += $2 }
    END { print own + 0, rss + 0, pss + 0 }' "${files[@]}" 2>/dev/null || echo "0 0 0"
}

# run NAME [extra options]: one measured run; prints "RESULTS SECONDS RATE LARGEST PARENT SUM PSS"
# (memory in KiB) and leaves the tool's output in $work/NAME.log.
run() {
  local name=$1
  shift
  local log="$work/$name.log" start end tool own sum pss peak_sum=0 peak_pss=0 peak_parent=0
  start=$(date +%s%N)
  /usr/bin/time -v -o "$log.time" build/bin/mm-conformance --data-dir "$corpus" --no-builtin \
    --quiet "${args[@]}" "$@" > "$log" 2>&1 &
  local timer=$!
  while kill -0 "$timer" 2>/dev/null; do
    # The tool is the child of /usr/bin/time; its workers are its children.
    tool=$(cat "/proc/$timer/task/$timer/children" 2>/dev/null || true)
    tool=${tool%% *}
    if [[ -n "$tool" ]]; then
      read -r own sum pss < <(sample "$tool")
      if (( own > peak_parent )); then peak_parent=$own; fi
      if (( sum > peak_sum )); then peak_sum=$sum; fi
      if (( pss > peak_pss )); then peak_pss=$pss; fi
    fi
    sleep 0.1
  done
  wait "$timer" || true
  end=$(date +%s%N)
  local results seconds
  results=$(grep -o 'summary: [0-9]* results' "$log" | grep -o '[0-9]*' || echo 0)
  seconds=$(awk -v ns=$((end - start)) 'BEGIN {printf "%.2f", ns / 1e9}')
  echo "$results $seconds $(awk -v r="$results" -v s="$seconds" 'BEGIN {printf "%.0f", r / s}')" \
    "$(awk '/Maximum resident/ {print $6}' "$log.time") $peak_parent $peak_sum $peak_pss"
}

# Prints one run's line of the table and adds its figures to the lists of its kind.
declare -A all
report_line() {
  local pair=$1 kind=$2 results seconds rate largest parent sum pss
  read -r results seconds rate largest parent sum pss <<< "$3"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$pair" "$kind" "$results" "$seconds" \
    "$rate" "$(mb "$largest")" "$(mb "$parent")" "$(mb "$sum")" "$(mb "$pss")"
  all[$kind.rate]+=" $rate"
  all[$kind.largest]+=" $largest"
  all[$kind.parent]+=" $parent"
  all[$kind.sum]+=" $sum"
  all[$kind.pss]+=" $pss"
}

echo "mm-conformance ${args[*]} over $corpus; $pairs pair(s); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| pair | run | results | seconds | results/s | largest MB | parent MB | tree RSS MB | tree PSS MB |"
echo "|---|---|---|---|---|---|---|---|---|"
ratios=""
for ((i = 1; i <= pairs; ++i)); do
  reports_args=(--json "$work/r.json" --junit "$work/r.xml")
  if [[ -n "${REPORTS_ONLY:-}" ]]; then
    report_line "$i" reports "$(run reports "${reports_args[@]}")"
    continue
  fi
  if (( i % 2 )); then
    plain=$(run plain)
    reports=$(run reports "${reports_args[@]}")
  else
    reports=$(run reports "${reports_args[@]}")
    plain=$(run plain)
  fi
  report_line "$i" plain "$plain"
  report_line "$i" reports "$reports"
  ratios+=" $(ratio "$(echo "$reports" | cut -d' ' -f3)" "$(echo "$plain" | cut -d' ' -f3)")"
done
for kind in plain reports; do
  [[ -n "${all[$kind.rate]:-}" ]] || continue
  printf '| median | %s | | | %s | %s | %s | %s | %s |\n' "$kind" \
    "$(echo "${all[$kind.rate]}" | median)" "$(mb "$(echo "${all[$kind.largest]}" | median)")" \
    "$(mb "$(echo "${all[$kind.parent]}" | median)")" "$(mb "$(echo "${all[$kind.sum]}" | median)")" \
    "$(mb "$(echo "${all[$kind.pss]}" | median)")"
done
echo "== last summary: $(grep '^summary' "$work/reports.log" || tail -3 "$work/reports.log")"
if [[ -n "$ratios" ]]; then
  echo "== throughput with reports / without, per pair:$ratios; median $(echo "$ratios" | median)x"
  echo "   report sizes: JSON $(du -h "$work/r.json" | cut -f1), JUnit $(du -h "$work/r.xml" | cut -f1)"
fi
# The figures mean nothing without the machine and its load.
echo "   $(grep -m 1 '^machine:' "$work/reports.log" || echo 'machine: ?');" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
