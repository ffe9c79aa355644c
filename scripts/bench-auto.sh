#!/usr/bin/env bash
# The auto backend's and the fast paths' targets on this machine, measured side by side in one
# mm-bench run per thread count (Google Benchmark, random interleaving, repetitions, medians), one
# PASS/MISS per row:
#   - per dtype and shape from 64^3 up, the fastest single backend (every backend, BLAS ones
#     included) and auto, auto's ratio >= 0.95, at 1 thread (CPU time, as calibration times it,
#     see below) and at all cores (wall time);
#   - tiny shapes: auto's and eigen's time per call against the fastest bare library call
#     (raw_eigen, raw_onednn), <= 1.2x, and onednn's against a bare oneDNN call (what the library
#     itself costs); the reference, the oracle's naive loops, is listed, not judged; CPU time per
#     call, which other work on a shared machine does not inflate (wall time counts the moments
#     the process waits for a core);
#   - onednn float16/bfloat16 where they go through float32, against onednn's own float32, from
#     256^3 up, >= 0.5 (a type oneDNN computes natively here is listed, not judged);
#   - eigen int32 against bare Eigen's int32 product from 128^3 up, >= 0.95.
# Usage: scripts/bench-auto.sh [--full] [--repetitions N] [--table FILE] [--calibrate] [--fresh]
#                             [--avx2] [--tables-only]
#   --full         every mm-bench shape (default: the powers of two 64..1024, 255/257, the batched
#                  and broadcast shapes and the tiny ones)
#   --table FILE   auto's calibration table (default: MM_AUTO_TABLE, else auto's own, made on
#                  first use in $XDG_CACHE_HOME/mm/ for this machine, environment and thread count)
#   --fresh        as a newcomer gets it: auto's own table in an empty cache
#                  (build/reports/bench-auto-cache), made on first use; prints what that cost
#   --calibrate    first make the table (mm-bench --mm_calibrate=FILE, with --mm_set=full under
#                  --full, else quick) and print what it cost; FILE is --table's, or
#                  build/reports/auto.json
#   --avx2         oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA=AVX2): only the onednn rows, to see
#                  the float32 paths of a machine without AVX-512 (bfloat16 goes through float32)
#   --tables-only  run nothing: print the tables of the last run again (its JSON files)
# OpenMP's wait policy is the environment's, passive when unset, as mm's tools set it
# (mm/backends/openmp_wait_policy.h): threads sleep between parallel regions, and the all-cores figures
# of small shapes include their wake-ups (the header says which policy was in effect).
# Without --table, auto's own table for each thread count is made (or found) before the timed runs,
# and the time that took is printed.
# A row where auto misses 0.95 is measured again before it is judged: auto and that best backend
# alone, interleaved, 3x the repetitions of 4x the time each (at least 0.2 s, so that a 100 ms call
# is timed twice per repetition; RECHECK_REPETITIONS=N to change their number); the row shows both
# measurements and is judged on the second. So is an eigen int32 row under 0.95 (eigen and bare
# Eigen, paired), a tiny row over 1.2x (the backend and its bare call, paired) and a half-precision
# row under 0.5 (onednn's float16 or bfloat16 and its float32, paired).
# Writes build/reports/bench-auto-<threads>.json (Google Benchmark's JSON; the rechecks'
# bench-auto-recheck-*.json) and prints the tables.
# Exit 0 when every judged row passes, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
repetitions=5
table="${MM_AUTO_TABLE:-}"
calibrate=0
avx2=0
fresh=0
tables_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --full) full=1 ;;
    --repetitions) repetitions="$2"; shift ;;
    --table) table="$2"; shift ;;
    --calibrate) calibrate=1 ;;
    --fresh) fresh=1 ;;
    --avx2) avx2=1 ;;
    --tables-only) tables_only=1 ;;
    *) echo "bench-auto: unknown argument '$1' (--full, --repetitions N, --table FILE, --calibrate, --fresh, --avx2, --tables-only)" >&2
       exit 2 ;;
  esac
  shift
done
all=$(nproc)
threads_list="1"
[[ "$all" -gt 1 ]] && threads_list="1 $all"
if [[ "$tables_only" == 0 ]]; then
bash scripts/setup.sh
bash scripts/build.sh default --target mm_bench >/dev/null
mkdir -p build/reports
if [[ "$avx2" == 1 ]]; then
  export ONEDNN_MAX_CPU_ISA=AVX2
fi
if [[ "$calibrate" == 1 ]]; then
  table="${table:-build/reports/auto.json}"
  set_flag=--mm_set=quick
  [[ "$full" == 1 ]] && set_flag=--mm_set=full
  echo "calibrating ($set_flag) into $table; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  start=$(date +%s)
  build/bin/mm-bench --mm_calibrate="$table" "$set_flag" 2>build/reports/bench-auto-calibrate.log
  echo "calibration cost: $(( $(date +%s) - start )) s wall ($(grep -c 'calibrated' build/reports/bench-auto-calibrate.log) cells; log build/reports/bench-auto-calibrate.log)"
fi
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
if [[ "$fresh" == 1 ]]; then
  table=""
  unset MM_AUTO_TABLE
  rm -rf build/reports/bench-auto-cache
  export XDG_CACHE_HOME="$PWD/build/reports/bench-auto-cache"
fi
if [[ -n "$table" ]]; then
  export MM_AUTO_TABLE="$table"
else
  # auto's own table per thread count, made on first use by the first auto created (here, not in
  # the middle of the timed runs).
  for threads in $threads_list; do
    start=$(date +%s%N)
    OMP_NUM_THREADS="$threads" build/bin/mm-bench --mm_describe >/dev/null \
      2>"build/reports/bench-auto-first-use-${threads}.log"
    echo "auto's table at OMP_NUM_THREADS=$threads: ready in $(( ($(date +%s%N) - start) / 1000000 )) ms wall$(grep -q 'calibrating' "build/reports/bench-auto-first-use-${threads}.log" && echo ', calibrated on first use' || echo ', found cached'); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
fi
if [[ "$full" == 1 ]]; then
  shapes='[0-9]+x[0-9]+x[0-9]+|64b_.*|8b_.*|bcast_.*|tiny_.*'
else
  shapes='(64|128|255|256|257|512|1024)x[0-9]+x[0-9]+|64b_.*|bcast_.*|tiny_3x4x3|tiny_2b_3x4x3'
fi
if [[ "$avx2" == 1 ]]; then
  filter="^(matmul/onednn|raw_onednn)/(float|float16|bfloat16)/(${shapes})(/|\$)"
else
  filter="^(matmul/[^/]+|raw_eigen|raw_onednn)/[^/]+/(${shapes})(/|\$)"
fi
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset, the default of the OpenMP runtime}"
build/bin/mm-bench --mm_describe >build/reports/bench-auto-describe.json
python3 - <<'EOF2'
import json
for b in json.load(open("build/reports/bench-auto-describe.json"))["backends"]:
    if b["name"] in ("auto", "onednn"):
        print(f"{b['name']} runs on:", b.get("runs_on", b.get("error")))
EOF2
for threads in $threads_list; do
  echo "mm-bench at OMP_NUM_THREADS=$threads; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  OMP_NUM_THREADS="$threads" build/bin/mm-bench --benchmark_filter="$filter" \
    --benchmark_enable_random_interleaving=true --benchmark_repetitions="$repetitions" \
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.05 \
    --benchmark_format=json --benchmark_out="build/reports/bench-auto-${threads}.json" \
    --benchmark_out_format=json >/dev/null 2>"build/reports/bench-auto-${threads}.log"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
python3 - "$threads_list" "$tables_only" "$repetitions" <<'EOF'
import json, os, re, subprocess, sys
threads_list = sys.argv[1].split()
tables_only = sys.argv[2] == "1"
# A row where auto misses 0.95 is measured again, auto and the best backend alone, interleaved,
# with three times the repetitions (RECHECK_REPETITIONS): between two benchmarks of one kernel the
# medians of 5 repetitions differ by up to 10% here, more than the margin the target leaves.
recheck_repetitions = int(os.environ.get("RECHECK_REPETITIONS", 3 * int(sys.argv[3])))
describe = json.load(open("build/reports/bench-auto-describe.json"))
onednn_level = {}
for b in describe["backends"]:
    if b["name"] == "onednn":
        onednn_level = {d: s["level"] for d, s in b.get("supports", {}).items()}
counts = {"PASS": 0, "MISS": 0}
def verdict(passed):
    word = "PASS" if passed else "MISS"
    counts[word] += 1
    return word
def medians(path, key):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        out[b["run_name"]] = b[key] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[b["time_unit"]]
    return out
def auto_ran(path):
    # mm-bench labels each run with what computed it: "auto -> onednn: ...".
    ran = {}
    for b in json.load(open(path))["benchmarks"]:
        label = b.get("label", "")
        if b["run_name"].startswith("matmul/auto/") and label.startswith("auto -> "):
            dtype, shape = b["run_name"].split("/")[2:4]
            ran[(dtype, shape)] = label[len("auto -> "):].split(":")[0]
    return ran
def cube(shape):
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", shape)
    return None if not m else int(m[1]) * int(m[2]) * int(m[3])
def grouped(times):
    groups = {}
    for name, seconds in times.items():
        parts = [p for p in name.split("/") if p not in ("real_time", "process_time")]
        if parts[0] == "matmul":
            kind, backend, dtype, shape = parts
        else:
            kind, dtype, shape = parts
            backend = kind
        groups.setdefault((dtype, shape), {})[(kind, backend)] = seconds
    return groups
def recheck_path(threads, shape, first, second):
    # Where recheck keeps the paired measurement of `first` and `second` (see recheck).
    label = "-".join(dict.fromkeys(part for key in (first, second) for part in key))
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{shape}-{label}")
    return f"build/reports/bench-auto-recheck-{threads}-{name}.json"
def recheck(threads, shape, first, second, clock_key):
    # The paired measurement of one row: two benchmarks given as (dtype, kind, backend), kind and
    # backend as in grouped()'s keys (the dtypes differ for the half-precision rows): (first's
    # seconds, second's seconds), kept in its own JSON file so that --tables-only prints it again.
    path = recheck_path(threads, shape, first, second)
    def prefix(key):
        dtype, kind, backend = key
        return (f"matmul/{re.escape(backend)}" if kind == "matmul" else re.escape(kind)) + "/" + dtype
    if not tables_only:
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        subprocess.run(["build/bin/mm-bench",
                        f"--benchmark_filter=^({prefix(first)}|{prefix(second)})/{re.escape(shape)}(/|$)",
                        "--benchmark_enable_random_interleaving=true",
                        f"--benchmark_repetitions={recheck_repetitions}",
                        "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.2",
                        f"--benchmark_out={path}", "--benchmark_out_format=json"],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if not os.path.exists(path):
        return None
    groups = grouped(medians(path, clock_key))
    times = [groups.get((key[0], shape), {}).get(key[1:]) for key in (first, second)]
    return None if None in times else tuple(times)
def ran_in_recheck(threads, shape, first, second):
    # What auto ran in the recheck of its row: the same backend as in the main run, unless its
    # table or environment changed in between.
    path = recheck_path(threads, shape, first, second)
    dtype = second[0]
    return auto_ran(path).get((dtype, shape), "?") if os.path.exists(path) else "?"
for threads in threads_list:
    path = f"build/reports/bench-auto-{threads}.json"
    wall = grouped(medians(path, "real_time"))
    cpu = grouped(medians(path, "cpu_time"))
    # At 1 thread CPU time is the time of the work, and other work on the machine does not
    # inflate it; at more threads only wall time shows what the threads gain.
    clock, timed = ("CPU", cpu) if threads == "1" else ("wall", wall)
    ran = auto_ran(path)
    rows = [(k, r) for k, r in sorted(timed.items()) if ("matmul", "auto") in r
            and not k[1].startswith("tiny") and (cube(k[1]) is None or cube(k[1]) >= 64 ** 3)]
    if rows:
        print(f"\n== {threads} thread(s): auto against the fastest single backend ({clock}-time medians, >= 0.95) ==")
        print(f"{'dtype':9} {'shape':30} {'best single':12} {'best us':>10} {'auto us':>10} {'ratio':>6} verdict  auto ran")
    for (dtype, shape), runs in rows:
        singles = {b: s for (k, b), s in runs.items() if k == "matmul" and b != "auto"}
        if not singles:
            continue
        best = min(singles, key=singles.get)
        ratio = singles[best] / runs[("matmul", "auto")]
        # When auto ran the best backend itself, a ratio below 1 is the spread between two
        # measurements of the same kernel.
        chosen = ran.get((dtype, shape), "?")
        again = ""
        if ratio < 0.95:
            pair = ((dtype, "matmul", best), (dtype, "matmul", "auto"))
            paired = recheck(threads, shape, *pair, "cpu_time" if threads == "1" else "real_time")
            if paired is not None:
                again_ran = ran_in_recheck(threads, shape, *pair)
                differs = "" if again_ran == chosen else f", auto ran {again_ran} this time"
                again = (f"  (first {ratio:.2f}; again, paired, {recheck_repetitions} repetitions{differs}: "
                         f"{paired[0]*1e6:.1f} against {paired[1]*1e6:.1f} us)")
                ratio = paired[0] / paired[1]
        print(f"{dtype:9} {shape:30} {best:12} {singles[best]*1e6:10.1f} "
              f"{runs[('matmul', 'auto')]*1e6:10.1f} {ratio:6.2f} {verdict(ratio >= 0.95):8} {chosen}{again}")
    tiny = [(k, r) for k, r in sorted(cpu.items()) if k[1].startswith("tiny")]
    if tiny:
        print(f"\n-- tiny shapes, {threads} thread(s): time per call (CPU-time medians) against the fastest bare library call (<= 1.2x) --")
    for (dtype, shape), runs in tiny:
        raws = {k: s for (k, b), s in runs.items() if k.startswith("raw_")}
        if not raws:
            continue
        best = min(raws, key=raws.get)
        # auto and eigen against the fastest bare call; onednn against bare oneDNN, what the
        # library itself costs per call; the reference (the oracle) is listed.
        for backend, against in (("auto", best), ("eigen", best), ("onednn", "raw_onednn"),
                                 ("reference", best)):
            ours = runs.get(("matmul", backend))
            if ours is None or against not in raws:
                continue
            x = ours / raws[against]
            again = ""
            if backend != "reference" and x > 1.2:
                paired = recheck(threads, shape, (dtype, against, against), (dtype, "matmul", backend),
                                 "cpu_time")
                if paired is not None:
                    again = (f"  (first {x:.2f}x; again, paired, {recheck_repetitions} repetitions: "
                             f"{paired[1]*1e9:.1f} against {paired[0]*1e9:.1f} ns)")
                    x = paired[1] / paired[0]
            judged = "(oracle, not judged)" if backend == "reference" else verdict(x <= 1.2)
            print(f"{dtype:9} {shape:14} {backend:9} {ours*1e9:8.1f} ns  {against:10} {raws[against]*1e9:8.1f} ns  {x:6.2f}x {judged}{again}")
    half_rows = []
    for (dtype, shape), runs in sorted(timed.items()):
        c = cube(shape)
        if dtype not in ("float16", "bfloat16") or c is None or c < 256 ** 3:
            continue
        f32 = timed.get(("float", shape), {}).get(("matmul", "onednn"))
        half = runs.get(("matmul", "onednn"))
        if f32 is not None and half is not None:
            half_rows.append((dtype, shape, f32, half))
    if half_rows:
        print(f"\n-- onednn float16/bfloat16 through float32 against its float32, from 256^3 ({threads} thread(s), {clock} time, >= 0.5) --")
    for dtype, shape, f32, half in half_rows:
        ratio = f32 / half
        via = onednn_level.get(dtype) == "conversion"
        again = ""
        if via and ratio < 0.5:
            paired = recheck(threads, shape, ("float", "matmul", "onednn"), (dtype, "matmul", "onednn"),
                             "cpu_time" if threads == "1" else "real_time")
            if paired is not None:
                again = (f"  (first {ratio:.2f}; again, paired, {recheck_repetitions} repetitions: "
                         f"{paired[0]*1e6:.1f} against {paired[1]*1e6:.1f} us)")
                ratio = paired[0] / paired[1]
        judged = verdict(ratio >= 0.5) if via else "(native here, not judged)"
        print(f"{dtype:9} {shape:16} float32 {f32*1e6:10.1f} us  {dtype} {half*1e6:10.1f} us  {ratio:5.2f} {judged}{again}")
    int_rows = []
    for (dtype, shape), runs in sorted(timed.items()):
        c = cube(shape)
        ours = runs.get(("matmul", "eigen"))
        raw = runs.get(("raw_eigen", "raw_eigen"))
        if dtype == "int32" and c is not None and c >= 128 ** 3 and ours and raw:
            int_rows.append((shape, raw, ours))
    if int_rows:
        print(f"\n-- eigen int32 against bare Eigen's int32 product, from 128^3 ({threads} thread(s), {clock} time, >= 0.95) --")
    for shape, raw, ours in int_rows:
        ratio = raw / ours
        again = ""
        if ratio < 0.95:
            paired = recheck(threads, shape, ("int32", "raw_eigen", "raw_eigen"), ("int32", "matmul", "eigen"),
                             "cpu_time" if threads == "1" else "real_time")
            if paired is not None:
                again = (f"  (first {ratio:.2f}; again, paired, {recheck_repetitions} repetitions: "
                         f"{paired[0]*1e6:.1f} against {paired[1]*1e6:.1f} us)")
                ratio = paired[0] / paired[1]
        print(f"int32     {shape:16} bare {raw*1e6:10.1f} us  eigen {ours*1e6:10.1f} us  {ratio:5.2f} {verdict(ratio >= 0.95)}{again}")
print(f"\n{counts['PASS']} PASS, {counts['MISS']} MISS")
sys.exit(0 if counts["MISS"] == 0 else 1)
EOF
