#!/usr/bin/env bash
# The Slurm path end to end on this machine (ctest label slurm): brings up a single-node cluster
# (local-cluster.sh), submits a campaign with scripts/slurm/campaign.sh (4 array tasks, each a
# conformance shard and a fuzz shard, and the merge job after them), and checks that the merged
# reports equal the unsharded runs; then that a shard that never ran, and one whose tool fails,
# make the merge job fail naming the shard. Stops everything it started (trap), and checks that
# no daemon it started is left. A cluster that does not come up is a failure, never a skip.
#
#   scripts/slurm/test-slurm.sh [BIN_DIR]                 the test (BIN_DIR: build/bin)
#   scripts/slurm/test-slurm.sh --scaling "MM-FUZZ ARGS" [BIN_DIR]
#       measures a fuzz campaign's wall time with 1, 2 and 4 array tasks on this node instead
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
scaling=""
if [[ "${1:-}" == --scaling ]]; then
  scaling="${2:?--scaling needs the mm-fuzz arguments}"
  shift 2
fi
bin="$(cd "${1:-$repo/build/bin}" && pwd)"

fail() {
  echo "test-slurm: FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "must run as root (munged, slurmctld and slurmd run as root here)"
for cmd in munged slurmctld slurmd sbatch scontrol sinfo /usr/bin/python3; do
  command -v "$cmd" >/dev/null || fail "$cmd is not installed (scripts/setup.sh installs it)"
done
[[ -x "$bin/mm-fuzz" && -x "$bin/mm-conformance" ]] || fail "no mm-fuzz/mm-conformance in $bin"

work="$(mktemp -d /tmp/mm-slurm.XXXXXX)"
# shellcheck source=local-cluster.sh
source "$here/local-cluster.sh"
pids=()
cleanup() {
  mm_cluster_stop
  local pid left=0
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "test-slurm: FAIL: daemon $pid still running after the cluster was stopped" >&2
      left=1
    fi
  done
  rm -rf "$work"
  ((left)) && exit 1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mm_cluster_start "$work/cluster" || fail "the single-node Slurm cluster did not come up"
for f in slurmd.pid slurmctld.pid munge/munged.pid; do pids+=("$(cat "$work/cluster/$f")"); done
echo "test-slurm: cluster up on $(hostname -s) (pids ${pids[*]})"

export MM_BIN="$bin" MM_PARTITION=mmtest MM_TIME_SHARD=00:20:00 MM_TIME_MERGE=00:05:00

# Submits a campaign into results dir $1 and waits for its merge job; prints the merge job's
# final state.
run_campaign() {
  local ids merge
  ids="$(MM_RESULTS="$1" "$here/campaign.sh")" || fail "campaign.sh failed to submit"
  merge="$(sed -n 's/^merge //p' <<<"$ids")"
  mm_cluster_wait "$merge"
}

if [[ -n "$scaling" ]]; then
  export MM_RUN_CONFORMANCE=0 MM_FUZZ_ARGS="$scaling"
  for n in 1 2 4; do
    start=$(date +%s%N)
    state="$(MM_SHARDS=$n run_campaign "$work/scaling-$n")"
    end=$(date +%s%N)
    [[ "$state" == COMPLETED ]] || fail "campaign with $n tasks ended $state"
    problems=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stats']['problems'])" \
      "$work/scaling-$n/fuzz.json")
    ms=$(((end - start) / 1000000))
    printf 'test-slurm: %d array task(s): %s problems, wall %d.%01d s (submit to merged)\n' \
      "$n" "$problems" $((ms / 1000)) $((ms % 1000 / 100))
  done
  # The figures mean nothing without the machine and its load.
  echo "test-slurm: $(nproc) CPUs, $(grep -m 1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

# The campaign: a generated fair corpus plus the built-in cases on every backend, and a fuzz run.
"$bin/mm-fuzz" generate --out "$work/corpus" --cases 300 --seed 2 >/dev/null ||
  fail "mm-fuzz generate failed"
export MM_CONFORMANCE_ARGS="--data-dir $work/corpus --jobs 1"
# Fuzz shards on reference and eigen: what is tested is the scheduling and merging, and oneDNN's
# AMX kernels can die with SIGILL on a VM that does not grant AMX state, which is the fuzzer's
# finding to report, not this test's.
export MM_FUZZ_ARGS="--seed 2 --cases 400 --backend reference --backend eigen"
read -r -a conformance_args <<<"$MM_CONFORMANCE_ARGS"
read -r -a fuzz_args <<<"$MM_FUZZ_ARGS"
"$bin/mm-conformance" "${conformance_args[@]}" --quiet --json "$work/full-conformance.json" \
  >/dev/null
"$bin/mm-fuzz" "${fuzz_args[@]}" --quiet --json "$work/full-fuzz.json" >/dev/null

state="$(MM_SHARDS=4 run_campaign "$work/results")"
[[ "$state" == COMPLETED ]] ||
  fail "the merge job ended $state: $(cat "$work/results/merge.out" 2>/dev/null)"
for i in 1 2 3 4; do
  [[ -s "$work/results/fuzz-$i.json" && -s "$work/results/conformance-$i.json" ]] ||
    fail "array task $i left no reports"
done
/usr/bin/python3 - "$work" <<'PY' || fail "merged reports differ from the unsharded runs"
import json, sys
work = sys.argv[1]
# Timings and what calls left behind (resident memory, threads, per process) are measurements of
# the processes that ran, which sharding changes; every other field must be equal.
MEASURED = {"seconds", "shrink_seconds", "problems_per_second", "resources"}
def untimed(x):
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if k not in MEASURED}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x
ok = True
for tool in ("conformance", "fuzz"):
    full = untimed(json.load(open(f"{work}/full-{tool}.json")))
    merged = untimed(json.load(open(f"{work}/results/{tool}.json")))
    if full != merged:
        ok = False
        keys = [k for k in set(full) | set(merged) if full.get(k) != merged.get(k)]
        print(f"test-slurm: {tool}: merged differs from unsharded in {sorted(keys)}")
    else:
        n = len(full["results"]) if tool == "conformance" else full["stats"]["results"]
        print(f"test-slurm: {tool}: merged report of 4 shards == unsharded report ({n} results)")
sys.exit(0 if ok else 1)
PY

# A shard that never ran: tasks 1, 2 and 4 of 4 only.
mkdir -p "$work/missing"
export MM_RESULTS="$work/missing" MM_SHARDS=4 MM_RUN_CONFORMANCE=0
array="$(sbatch --parsable --partition mmtest --array 1,2,4 --export ALL \
  --output "$work/missing/slurm-%A_%a.out" "$here/shard.sh")" || fail "sbatch of the array failed"
merge="$(sbatch --parsable --partition mmtest --dependency "afterok:${array%%;*}" --export ALL \
  --output "$work/missing/merge.out" "$here/merge.sh")" || fail "sbatch of the merge failed"
state="$(mm_cluster_wait "${merge%%;*}")"
[[ "$state" == FAILED ]] || fail "merge with shard 3 missing ended $state, not FAILED"
grep -q "shard 3/4 never ran" "$work/missing/merge.out" ||
  fail "the merge job did not name the missing shard: $(cat "$work/missing/merge.out")"
echo "test-slurm: a shard that never ran fails the merge job: $(cat "$work/missing/merge.out")"

# A shard whose tool fails (an unknown backend: mm-fuzz exits 2).
state="$(MM_SHARDS=2 MM_RUN_CONFORMANCE=0 MM_FUZZ_ARGS="--cases 5 --backend no-such-backend" \
  run_campaign "$work/failing")"
[[ "$state" == FAILED ]] || fail "merge after a failing shard ended $state, not FAILED"
grep -q "shard 1/2 failed: mm-fuzz exited 2" "$work/failing/merge.out" ||
  fail "the merge job did not name the failing shard: $(cat "$work/failing/merge.out")"
echo "test-slurm: a failing shard fails the merge job: $(head -1 "$work/failing/merge.out")"
echo "test-slurm: PASS"
