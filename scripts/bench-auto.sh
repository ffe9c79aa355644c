#!/usr/bin/env bash
# The auto backend's targets on this machine, measured side by side in one mm-bench run per thread
# count (Google Benchmark, random interleaving, repetitions, medians):
#   - per dtype and shape from 64^3 up, the fastest single backend and auto, and auto's ratio
#     (target >= 0.95), at 1 thread and at all cores;
#   - tiny shapes: auto's time per call against the fastest bare library call (raw_eigen,
#     raw_onednn; target <= 1.2x);
#   - onednn float16/bfloat16 through float32 against onednn's own float32 from 256^3 up (>= 0.5);
#   - eigen int32 against bare Eigen's int32 product from 128^3 up (>= 0.95).
# Usage: scripts/bench-auto.sh [--full] [--repetitions N]
#   --full   every mm-bench shape (default: the powers of two 64..1024, 255/257, the batched and
#            broadcast shapes and the tiny ones)
# auto uses its table (MM_AUTO_TABLE, $XDG_CACHE_HOME/mm/auto.json; make one with
# build/bin/mm-bench --mm_calibrate=FILE) or its defaults; what it ran on is printed first.
# Writes build/reports/bench-auto-<threads>.json (Google Benchmark's JSON) and prints the tables.
# Exit 0 when every target passes, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
repetitions=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --full) full=1 ;;
    --repetitions) repetitions="$2"; shift ;;
    *) echo "bench-auto: unknown argument '$1' (--full, --repetitions N)" >&2; exit 2 ;;
  esac
  shift
done
bash scripts/build.sh default --target mm_bench >/dev/null
mkdir -p build/reports
if [[ "$full" == 1 ]]; then
  shapes='[0-9]+x[0-9]+x[0-9]+|64b_.*|8b_.*|bcast_.*|tiny_.*'
else
  shapes='(64|128|255|256|257|512|1024)x[0-9]+x[0-9]+|64b_.*|bcast_.*|tiny_3x4x3|tiny_2b_3x4x3'
fi
filter="^(matmul/[^/]+|raw_eigen|raw_onednn)/[^/]+/(${shapes})(/|\$)"
all=$(nproc)
threads_list="1"
[[ "$all" -gt 1 ]] && threads_list="1 $all"
build/bin/mm-bench --mm_describe | python3 -c '
import json, sys
for b in json.load(sys.stdin)["backends"]:
    if b["name"] == "auto": print("auto runs on:", b.get("runs_on", b.get("error")))'
for threads in $threads_list; do
  OMP_NUM_THREADS="$threads" build/bin/mm-bench --benchmark_filter="$filter" \
    --benchmark_enable_random_interleaving=true --benchmark_repetitions="$repetitions" \
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.05 \
    --benchmark_format=json --benchmark_out="build/reports/bench-auto-${threads}.json" \
    --benchmark_out_format=json >/dev/null 2>"build/reports/bench-auto-${threads}.log"
done
python3 - "$threads_list" <<'EOF'
import json, re, sys
threads_list = sys.argv[1].split()
ok = True
def medians(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        out[b["run_name"]] = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[b["time_unit"]]
    return out
def cube(shape):
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", shape)
    return None if not m else int(m[1]) * int(m[2]) * int(m[3])
for threads in threads_list:
    t = medians(f"build/reports/bench-auto-{threads}.json")
    groups = {}
    for name, seconds in t.items():
        parts = [p for p in name.split("/") if p not in ("real_time", "process_time")]
        if parts[0] == "matmul":
            kind, backend, dtype, shape = parts
        else:
            kind, dtype, shape = parts
            backend = kind
        groups.setdefault((dtype, shape), {})[(kind, backend)] = seconds
    print(f"\n== {threads} thread(s): auto against the fastest single backend (medians) ==")
    print(f"{'dtype':9} {'shape':30} {'best single':12} {'best us':>10} {'auto us':>10} {'ratio':>6}")
    for (dtype, shape), runs in sorted(groups.items()):
        singles = {b: s for (k, b), s in runs.items() if k == "matmul" and b != "auto"}
        if ("matmul", "auto") not in runs or not singles or shape.startswith("tiny"):
            continue
        c = cube(shape)
        if c is not None and c < 64 ** 3:
            continue
        best = min(singles, key=singles.get)
        ratio = singles[best] / runs[("matmul", "auto")]
        passed = ratio >= 0.95
        ok &= passed
        print(f"{dtype:9} {shape:30} {best:12} {singles[best]*1e6:10.1f} "
              f"{runs[('matmul', 'auto')]*1e6:10.1f} {ratio:6.2f} {'pass' if passed else 'FAIL'}")
    print(f"\n-- tiny shapes, {threads} thread(s): auto against the fastest bare library call (<= 1.2x) --")
    for (dtype, shape), runs in sorted(groups.items()):
        if not shape.startswith("tiny") or ("matmul", "auto") not in runs:
            continue
        raws = {k: s for (k, b), s in runs.items() if k.startswith("raw_")}
        if not raws:
            continue
        best = min(raws, key=raws.get)
        x = runs[("matmul", "auto")] / raws[best]
        passed = x <= 1.2
        ok &= passed
        print(f"{dtype:9} {shape:16} {best:11} {raws[best]*1e9:8.0f} ns  auto {runs[('matmul', 'auto')]*1e9:8.0f} ns  {x:5.2f}x {'pass' if passed else 'FAIL'}")
    print(f"\n-- onednn float16/bfloat16 through float32 against its float32, from 256^3 ({threads} thread(s), >= 0.5) --")
    for (dtype, shape), runs in sorted(groups.items()):
        c = cube(shape)
        if dtype not in ("float16", "bfloat16") or c is None or c < 256 ** 3:
            continue
        f32 = groups.get(("float", shape), {}).get(("matmul", "onednn"))
        half = runs.get(("matmul", "onednn"))
        if f32 is None or half is None:
            continue
        ratio = f32 / half
        passed = ratio >= 0.5
        ok &= passed
        print(f"{dtype:9} {shape:16} float32 {f32*1e6:10.1f} us  {dtype} {half*1e6:10.1f} us  {ratio:5.2f} {'pass' if passed else 'FAIL'}")
    print(f"\n-- eigen int32 against bare Eigen's int32 product, from 128^3 ({threads} thread(s), >= 0.95) --")
    for (dtype, shape), runs in sorted(groups.items()):
        c = cube(shape)
        if dtype != "int32" or c is None or c < 128 ** 3:
            continue
        ours = runs.get(("matmul", "eigen"))
        raw = [s for (k, b), s in runs.items() if k == "raw_eigen"]
        if ours is None or not raw:
            continue
        ratio = raw[0] / ours
        passed = ratio >= 0.95
        ok &= passed
        print(f"int32     {shape:16} raw {raw[0]*1e6:10.1f} us  eigen {ours*1e6:10.1f} us  {ratio:5.2f} {'pass' if passed else 'FAIL'}")
print("\nall targets pass" if ok else "\nsome targets FAIL")
sys.exit(0 if ok else 1)
EOF
