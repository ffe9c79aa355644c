#!/usr/bin/env bash
# Submits an mm campaign to Slurm: a job array of MM_SHARDS tasks (scripts/slurm/shard.sh: one
# conformance shard and one fuzz shard each) and a merge job (scripts/slurm/merge.sh) that runs
# after all of them (--dependency=afterok). Prints "array <id>" and "merge <id>".
#
# The cluster-specific parts are variables (defaults in brackets):
#   MM_SHARDS             number of shards / array tasks [4]
#   MM_RESULTS            shared directory for reports and logs, seen by every node (required)
#   MM_BIN                directory of mm-conformance and mm-fuzz on the nodes [<repo>/build/bin]
#   MM_PARTITION          partition [the cluster's default]
#   MM_TIME_SHARD         time limit of each array task [01:00:00]
#   MM_TIME_MERGE         time limit of the merge job [00:10:00]
#   MM_CPUS_PER_TASK      CPUs of each array task [1]
#   MM_SBATCH_ARGS        more sbatch arguments for both (account, QOS, constraints, ...) []
#   MM_CONFORMANCE_ARGS   arguments of mm-conformance (data, backends) []
#   MM_FUZZ_ARGS          arguments of mm-fuzz (seed, cases, backends) [--seed 1 --cases 100000]
#   MM_RUN_CONFORMANCE, MM_RUN_FUZZ   1 or 0 [1]
# Example:
#   MM_RESULTS=/shared/mm/run1 MM_SHARDS=16 MM_PARTITION=cpu MM_FUZZ_ARGS="--seed 7 --cases 1000000" \
#     scripts/slurm/campaign.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MM_SHARDS="${MM_SHARDS:-4}"
: "${MM_RESULTS:?MM_RESULTS (a shared results directory) must be set}"
export MM_BIN="${MM_BIN:-$(cd "$here/../.." && pwd)/build/bin}"
export MM_FUZZ_ARGS="${MM_FUZZ_ARGS:---seed 1 --cases 100000}"
export MM_CONFORMANCE_ARGS="${MM_CONFORMANCE_ARGS:-}"
export MM_RUN_CONFORMANCE="${MM_RUN_CONFORMANCE:-1}" MM_RUN_FUZZ="${MM_RUN_FUZZ:-1}"
mkdir -p "$MM_RESULTS"
export MM_RESULTS="$(cd "$MM_RESULTS" && pwd)"

common=(--parsable --chdir "$MM_RESULTS" --export ALL)
[[ -n "${MM_PARTITION:-}" ]] && common+=(--partition "$MM_PARTITION")
read -r -a extra <<<"${MM_SBATCH_ARGS:-}"
common+=("${extra[@]}")

array=$(sbatch "${common[@]}" --job-name mm-shard --array "1-$MM_SHARDS" \
  --time "${MM_TIME_SHARD:-01:00:00}" --cpus-per-task "${MM_CPUS_PER_TASK:-1}" \
  --output "$MM_RESULTS/slurm-%A_%a.out" "$here/shard.sh")
array="${array%%;*}"
merge=$(sbatch "${common[@]}" --job-name mm-merge --dependency "afterok:$array" \
  --kill-on-invalid-dep=yes --time "${MM_TIME_MERGE:-00:10:00}" --cpus-per-task 1 \
  --output "$MM_RESULTS/merge.out" "$here/merge.sh")
merge="${merge%%;*}"
echo "array $array"
echo "merge $merge"
