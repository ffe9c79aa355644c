#!/usr/bin/python3
"""Re-measures benchmarks of a comparison report with a direct mm-bench run, and compares.

Usage: recheck.py [--report build/reports/compare.json] [--bin build/bin] [--tolerance 0.10]
                  NAME [NAME...]
NAME is a benchmark of the report without its suffixes, e.g. matmul/onednn/float/256x256x256;
`NAME@T` takes the figure measured with T threads (default 1). Each is run on its own right away
(same --mm_set, min time, OMP_NUM_THREADS and OMP_WAIT_POLICY as the report, 5 repetitions, the
median), and both times per iteration, as the report counts them (CPU time at 1 thread, wall time
at more), are printed with their ratio, and the wall times beside them. Exits 1 when any differs by
more than the tolerance: on a shared machine, run it right after the report ("the same minute").
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from rendering.data import base_name, benchmark_records  # noqa: E402
from rendering.tables import fmt_time  # noqa: E402


def report_figure(report, name, threads):
    for record in benchmark_records(report["speed"]):
        if (
            base_name(record["name"]) == name
            and record["threads"] == threads
            and not record["error"]
        ):
            return record
    return None


def direct_run(bin_dir, settings, env, name, threads, repetitions):
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "bench.json"
        command = [
            str(bin_dir / "mm-bench"),
            f"--mm_set={settings['set']}",
            f"--benchmark_filter=^{name}(/process_time)?(/real_time)?$",
            f"--benchmark_min_time={settings['min_time']}",
            f"--benchmark_repetitions={repetitions}",
            "--benchmark_report_aggregates_only=true",
            f"--benchmark_out={out}",
            "--benchmark_out_format=json",
        ]
        subprocess.run(
            command,
            env=dict(env, OMP_NUM_THREADS=str(threads)),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        data = json.loads(out.read_text())
    records = benchmark_records({"runs": [{"threads": threads, "benchmark_json": data}]})
    return records[0] if records else None, " ".join(command)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--report", type=pathlib.Path, default=pathlib.Path("build/reports/compare.json")
    )
    parser.add_argument("--bin", type=pathlib.Path, default=pathlib.Path("build/bin"))
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    report = json.loads(args.report.read_text())
    settings = report["speed"]["settings"]
    # The report's OpenMP wait policy (scripts/compare.sh sets passive unless told otherwise).
    env = dict(os.environ)
    policy = report["machine"].get("omp_wait_policy", "")
    if policy and not policy.startswith("("):
        env["OMP_WAIT_POLICY"] = policy
    failures = 0
    for spec in args.names:
        name, _, threads = spec.partition("@")
        threads = int(threads or 1)
        figure = report_figure(report, name, threads)
        if figure is None:
            print(f"recheck: {name} ({threads} threads) is not in {args.report}", file=sys.stderr)
            failures += 1
            continue
        direct, command = direct_run(args.bin, settings, env, name, threads, args.repetitions)
        if direct is None or direct["error"]:
            print(f"recheck: {command} gave no figure", file=sys.stderr)
            failures += 1
            continue
        # The report's own figure: CPU time at 1 thread, wall time at more (rendering/data.py).
        ratio = direct["rate_seconds"] / figure["rate_seconds"]
        ok = abs(ratio - 1) <= args.tolerance
        failures += not ok
        gflops = (
            f"; GFLOP/s report {figure['rate_gflops']:.2f}, direct {direct['rate_gflops']:.2f}"
            if figure.get("rate_gflops")
            else ""
        )
        wall = (
            f"; wall time report {fmt_time(figure['seconds'])}, direct "
            f"{fmt_time(direct['seconds'])}"
        )
        print(
            f"{'OK  ' if ok else 'DIFF'} {name} @{threads}t: report "
            f"{fmt_time(figure['rate_seconds'])}, direct "
            f"{fmt_time(direct['rate_seconds'])} (direct / report {ratio:.3f}){gflops}{wall}"
            f"\n     direct: OMP_NUM_THREADS={threads} "
            f"{command}"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
