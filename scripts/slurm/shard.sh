#!/usr/bin/env bash
# One array task of an mm campaign on Slurm: conformance shard I/N and fuzz shard I/N, where
# I = SLURM_ARRAY_TASK_ID and N = MM_SHARDS, with reports in the shared MM_RESULTS directory:
#   conformance-I.json  fuzz-I.json  shard-I.log  status-I (the tools' exit codes)
# Submitted by scripts/slurm/campaign.sh (which sets the variables below); usable by hand:
#   sbatch --array=1-4 --export=ALL,MM_SHARDS=4,MM_RESULTS=/shared/run1,MM_BIN=/opt/mm/bin \
#          scripts/slurm/shard.sh
# A verdict (exit 1: something failed) is a result, not a task failure: the task exits 0 once it
# has recorded both tools' exit codes, so the merge job always runs and is the one place that
# says which shard failed to produce its report (exit >= 2, a signal) or never ran.
set -uo pipefail

: "${MM_SHARDS:?MM_SHARDS (the shard count N) must be set}"
: "${MM_RESULTS:?MM_RESULTS (the shared results directory) must be set}"
: "${MM_BIN:?MM_BIN (the directory holding mm-conformance and mm-fuzz) must be set}"
index="${SLURM_ARRAY_TASK_ID:?not an array task (SLURM_ARRAY_TASK_ID unset)}"
# Extra arguments of each tool (word-split): data, backends, seed, cases, ...
read -r -a conformance_args <<<"${MM_CONFORMANCE_ARGS:-}"
read -r -a fuzz_args <<<"${MM_FUZZ_ARGS:-}"

log="$MM_RESULTS/shard-$index.log"
{
  echo "shard $index/$MM_SHARDS on $(hostname) (job ${SLURM_JOB_ID:-?}), $(date -u +%FT%TZ)"
  conformance=skipped fuzz=skipped
  if [[ "${MM_RUN_CONFORMANCE:-1}" == 1 ]]; then
    "$MM_BIN/mm-conformance" "${conformance_args[@]}" --quiet --shard "$index/$MM_SHARDS" \
      --json "$MM_RESULTS/conformance-$index.json"
    conformance=$?
  fi
  if [[ "${MM_RUN_FUZZ:-1}" == 1 ]]; then
    "$MM_BIN/mm-fuzz" "${fuzz_args[@]}" --quiet --shard "$index/$MM_SHARDS" \
      --json "$MM_RESULTS/fuzz-$index.json"
    fuzz=$?
  fi
  echo "conformance=$conformance fuzz=$fuzz"
} >>"$log" 2>&1
# The status file last, written whole: its presence means the task ran to its end.
status="conformance=$conformance fuzz=$fuzz"
printf '%s\n' "$status" >"$MM_RESULTS/status-$index.tmp" &&
  mv "$MM_RESULTS/status-$index.tmp" "$MM_RESULTS/status-$index"
