#!/usr/bin/env bash
# The merge job of an mm campaign on Slurm (after every array task: --dependency=afterok): checks
# that every shard 1..MM_SHARDS ran and produced its reports, then merges them in MM_RESULTS:
#   conformance.json (mm-conformance merge)  fuzz.json (mm-fuzz merge)
# Exit: 0 all shards merged and nothing failed; 1 merged, and a tool's verdict is a failure;
# 3 a shard failed (a tool exited >= 2 or was killed) or never ran, each named on stderr; 2 a
# merge refused the reports.
set -uo pipefail

: "${MM_SHARDS:?MM_SHARDS must be set}"
: "${MM_RESULTS:?MM_RESULTS must be set}"
: "${MM_BIN:?MM_BIN must be set}"

bad=0
for ((i = 1; i <= MM_SHARDS; i++)); do
  status_file="$MM_RESULTS/status-$i"
  if [[ ! -f "$status_file" ]]; then
    echo "merge: shard $i/$MM_SHARDS never ran or did not finish (no $status_file)" >&2
    bad=1
    continue
  fi
  read -r status <"$status_file"
  for tool in conformance fuzz; do
    code=$(sed -n "s/.*$tool=\([^ ]*\).*/\1/p" <<<"$status")
    [[ "$code" == skipped ]] && continue
    report="$MM_RESULTS/$tool-$i.json"
    if [[ ! "$code" =~ ^[01]$ || ! -s "$report" ]]; then
      echo "merge: shard $i/$MM_SHARDS failed: mm-$tool exited $code" \
        "(see $MM_RESULTS/shard-$i.log)" >&2
      bad=1
    fi
  done
done
((bad)) && exit 3

result=0
for tool in conformance fuzz; do
  reports=()
  for ((i = 1; i <= MM_SHARDS; i++)); do
    [[ -f "$MM_RESULTS/$tool-$i.json" ]] && reports+=("$MM_RESULTS/$tool-$i.json")
  done
  ((${#reports[@]} == 0)) && continue
  "$MM_BIN/mm-$tool" merge --quiet --json "$MM_RESULTS/$tool.json" "${reports[@]}"
  code=$?
  if ((code >= 2)); then
    echo "merge: mm-$tool merge refused the shard reports (exit $code)" >&2
    exit 2
  fi
  ((code > result)) && result=$code
done
exit "$result"
