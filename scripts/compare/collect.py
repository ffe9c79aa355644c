#!/usr/bin/python3
"""Runs mm's tools and gathers what the backend comparison report shows into one compare.json.

Called by scripts/compare.sh (which builds the tools first); render.py turns compare.json into
compare.html and compare.md. Every figure comes from a tool's JSON output: `mm-bench --mm_describe`
(backends' dtype support, libraries), `mm-conformance --json` (verdicts), `mm-fuzz --json`
(accuracy, when the build has it) and Google Benchmark's JSON (`--benchmark_out`) for every timing.

Progress goes to stderr: the phase, how far it is and an estimate of the time left.
"""

import argparse
import datetime
import fnmatch
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import collect_family  # noqa: E402  (after putting this folder on the path)
from rendering.data import repetition_seconds  # noqa: E402
from rendering.stability import LoadMeter, judge  # noqa: E402

# Seconds per benchmark repetition (Google Benchmark's --benchmark_min_time) and repetitions, per
# mode: a figure is the median of its repetitions, judged by rendering/stability.py's rule. A
# figure that fails it is measured again, at most `retries` times and within about `retry_seconds`
# per thread count (estimated, scaled by the first pass); one still unstable is shown flagged.
# Quick mode checks that every section of the report is made, from every tool and backend; its
# figures are a sample, not a measurement: the fewest repetitions the stability rule judges, the
# shortest samples, one short retry pass (so the retry path runs too), and the runtimes (driven
# over a pipe, most of the timing's cost) timed at 1 thread only.
MODES = {
    "quick": {
        "set": "quick",
        "runtime_threads": [1],
        "min_time": 0.001,
        "repetitions": 3,
        "retries": 1,
        "retry_seconds": 2,
        "fuzz_seconds": 2,
        "fuzz_cases": 500,
        "runtime_fuzz_cases": 30,
    },
    "full": {
        "set": "full",
        "runtime_threads": None,  # every thread count measured
        "min_time": 0.03,
        "repetitions": 3,
        "retries": 2,
        "retry_seconds": 120,
        "fuzz_seconds": 60,
        "fuzz_cases": 1000000,
        "runtime_fuzz_cases": 5000,
    },
}
# The most a runtime's fuzz run may take (its driver's start included).
RUNTIME_FUZZ_SECONDS = 60


class Progress:
    """Prints 'compare: [phase] done/total item, elapsed, about N left' to stderr, throttled."""

    def __init__(self, phase, total_weight, count):
        self.phase = phase
        self.total_weight = max(total_weight, 1e-9)
        self.count = count
        self.done = 0
        self.done_weight = 0.0
        self.start = time.monotonic()
        self.last_print = 0.0
        log(f"[{phase}] starting: {count} items")

    def step(self, item, weight):
        self.done += 1
        self.done_weight += weight
        now = time.monotonic()
        if now - self.last_print < 3 and self.done < self.count:
            return
        self.last_print = now
        elapsed = now - self.start
        left = elapsed * (self.total_weight - self.done_weight) / max(self.done_weight, 1e-9)
        log(
            f"[{self.phase}] {self.done}/{self.count} {item}  "
            f"{fmt_seconds(elapsed)} elapsed, about {fmt_seconds(max(left, 0))} left"
        )


def log(message):
    print(f"compare: {message}", file=sys.stderr, flush=True)


def fmt_seconds(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def shown(path):
    """`path` as the report names it: relative to the working directory when it lies there or in
    the repository (so compare.json, .html and .md carry no machine's absolute path, and the
    commands they show run from where compare.sh ran), else as given."""
    path = pathlib.Path(path)
    if not path.is_absolute():
        return str(path)
    normal = pathlib.Path(os.path.normpath(path))
    for root in (pathlib.Path.cwd(), REPO):
        if normal == root or root in normal.parents:
            return os.path.relpath(normal)
    return str(path)


def command_text(command, drop=()):
    """`command` as the report shows it: its words with paths named by shown(), and without the
    options in `drop` (with their values: report files in a folder that is gone afterwards)."""
    words = []
    skip = False
    for word in command:
        if skip:
            skip = False
            continue
        if word in drop:
            skip = True
            continue
        if any(word.startswith(f"{option}=") for option in drop):
            continue
        words.append(shown(word) if word.startswith("/") else word)
    return " ".join(words)


def run_json(command, env=None):
    """Runs `command`, returns its stdout parsed as JSON; raises with its stderr on failure."""
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


def cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line.split(":", 1)[1].split()
    except OSError:
        pass
    return []


def package_version(name):
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() if result.returncode == 0 else None


def git(*args):
    result = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def machine(bin_dir, threads, tool_args):
    describe = run_json([str(bin_dir / "mm-bench"), "--mm_describe", *tool_args["bench"]])
    flags = set(cpu_flags())
    simd = [
        f
        for f in (
            "sse4_2",
            "avx",
            "avx2",
            "fma",
            "avx512f",
            "avx512dq",
            "avx512bw",
            "avx512vl",
            "avx512_vnni",
            "avx512_bf16",
            "avx512_fp16",
            "amx_tile",
        )
        if f in flags
    ]
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "cpu_simd_flags": simd,
        "kernel": platform.release(),
        "load_average_at_start": list(os.getloadavg()),
        "threads_measured": threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset: OpenMP's default)"),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "(unset)"),
        # The variables that change what runs or how fast, as the page shows them.
        "environment": {v: os.environ.get(v) for v in ENVIRONMENT},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git("rev-parse", "HEAD"),
        "git_describe": git("log", "-1", "--format=%h %s"),
        "git_dirty": bool(dirty),
        "packages": {
            p: package_version(p)
            for p in (
                "libdnnl-dev",
                "libeigen3-dev",
                "libbenchmark-dev",
                "libonnx-dev",
                "g++",
                "python3-matplotlib",
            )
        },
        "backends": describe["backends"],
        "libraries": describe["libraries"],
        "baselines": describe.get("baselines", []),
        # Backends (libraries and runtimes) this build knows but cannot run here, with why.
        "unavailable_backends": describe.get("unavailable_backends", {}),
    }


def backend_selection(args, backends):
    """--backend for every backend and --outputs tree: with --backend-lib or --outputs and no
    --backend, mm-conformance would judge only what those name."""
    if any(a == "--backend" or a.startswith("--backend=") for a in args):
        return []
    names = [b["name"] for b in backends]
    for i, arg in enumerate(args):
        if arg == "--outputs" and i + 1 < len(args):
            names.append(args[i + 1].split("=", 1)[0])
        elif arg.startswith("--outputs="):
            names.append(arg[len("--outputs=") :].split("=", 1)[0])
    return [a for name in names for a in ("--backend", name)]


def conformance(bin_dir, work, tool_args, backends):
    out = work / "conformance.json"
    command = [
        str(bin_dir / "mm-conformance"),
        "--quiet",
        "--json",
        str(out),
        *tool_args["conformance"],
        *backend_selection(tool_args["conformance"], backends),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if not out.exists():
        return {
            "error": f"mm-conformance exited {result.returncode} without a report: "
            f"{result.stderr.strip() or result.stdout.strip()}",
            "command": command,
        }
    report = json.loads(out.read_text())
    report["command"] = command_text(command, drop=("--json",))
    return report


def run_fuzz(fuzz, out, seconds, cases, args):
    """One mm-fuzz run; returns (its JSON report or None, the run's description)."""
    command = [
        str(fuzz),
        "--quiet",
        "--json",
        str(out),
        "--time",
        f"{seconds:.3g}",
        "--cases",
        str(cases),
        *args,
    ]
    start = time.monotonic()
    out.unlink(missing_ok=True)
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    # The command as one runs it again: without the report file, which lives in a folder that is
    # gone once the report is made.
    run = {
        "command": command_text(command, drop=("--json",)),
        "exit_code": result.returncode,
        "seconds": time.monotonic() - start,
    }
    if result.returncode < 0 or not out.exists():
        how = (
            f"killed by signal {-result.returncode}"
            if result.returncode < 0
            else f"exited {result.returncode} without a report"
        )
        stderr = result.stderr.strip()[-2000:]
        run["error"] = f"mm-fuzz {how}" + (f": {stderr}" if stderr else "")
        return None, run
    return json.loads(out.read_text()), run


def merge_fuzz(reports):
    """One mm-fuzz report from runs over disjoint (backend, dtype) sets with the same seed."""
    merged = {
        "tool": "mm-fuzz",
        "stats": {"problems": 0, "failures": 0, "seconds": 0.0, "backends": {}, "by_dtype": {}},
        "errors": [],
        "statistics": [],
        "problems": [],
        "findings": [],
        "problems_capped": False,
    }
    for report in reports:
        stats = report.get("stats", {})
        merged["stats"]["problems"] = max(merged["stats"]["problems"], stats.get("problems", 0))
        merged["stats"]["seconds"] += stats.get("seconds", 0.0)
        # Failures beyond the findings (--max-findings) are counted, never shown: kept to be told.
        merged["stats"]["failures"] += stats.get("failures", 0)
        if report.get("error"):
            merged["errors"].append(report["error"])
        for backend, counts in stats.get("backends", {}).items():
            total = merged["stats"]["backends"].setdefault(backend, {})
            for verdict, count in counts.items():
                total[verdict] = total.get(verdict, 0) + count
        for backend, per_dtype in stats.get("by_dtype", {}).items():
            merged["stats"]["by_dtype"].setdefault(backend, {}).update(per_dtype)
        for key in ("statistics", "problems", "findings"):
            merged[key] += report.get(key, [])
        merged["problems_capped"] |= bool(report.get("problems_capped"))
        for key in ("version", "options", "problems_limit"):
            merged.setdefault(key, report.get(key))
    return merged


def accuracy(bin_dir, work, mode, tool_args, backends):
    """mm-fuzz's JSON, one run per backend (the same seed, so the same problems for each).

    A backend that kills the fuzzer (a crash inside its library) is reported (red, at the top)
    with the command that crashed, and loses only its own figures: its run is repeated dtype by
    dtype, each dtype that crashes again is reported too, and every other keeps its data.
    """
    fuzz = bin_dir / "mm-fuzz"
    if not fuzz.exists():
        return {"error": "mm-fuzz is not in this build: no accuracy data"}
    settings = MODES[mode]
    names = [b["name"] for b in backends if "error" not in b]
    budget = settings["fuzz_seconds"] / max(len(names), 1)
    runtimes = {b["name"] for b in backends if b.get("runtime")}
    progress = Progress("accuracy", len(names), len(names))
    reports, runs, crashes = [], [], []
    for name in names:
        # A runtime's driver takes seconds to start (torch's import), inside mm-fuzz's time: it
        # gets a count of problems instead, under a generous time limit.
        runtime = name in runtimes
        report, run = run_fuzz(
            fuzz,
            work / "fuzz.json",
            max(budget, RUNTIME_FUZZ_SECONDS) if runtime else budget,
            settings["runtime_fuzz_cases"] if runtime else settings["fuzz_cases"],
            [*tool_args["fuzz"], "--backend", name],
        )
        runs.append(run)
        if report is not None:
            reports.append(report)
        else:
            # The crash is a finding, shown; the dtype-by-dtype runs keep what can be kept.
            crashes.append(
                {
                    "backend": name,
                    "dtype": "every dtype (then run dtype by dtype)",
                    "error": run["error"],
                    "command": run["command"],
                }
            )
            dtypes = [
                d
                for b in backends
                if b["name"] == name
                for d, s in b.get("supports", {}).items()
                if s.get("level") != "no"
            ]
            for dtype in dtypes:
                report, run = run_fuzz(
                    fuzz,
                    work / "fuzz.json",
                    budget / max(len(dtypes), 1),
                    settings["fuzz_cases"],
                    [*tool_args["fuzz"], "--backend", name, "--dtype", dtype],
                )
                runs.append(run)
                if report is not None:
                    reports.append(report)
                else:
                    crashes.append(
                        {
                            "backend": name,
                            "dtype": dtype,
                            "error": run["error"],
                            "command": run["command"],
                        }
                    )
        progress.step(name, 1)
    if not reports:
        return {
            "error": "; ".join(r.get("error", "") for r in runs) or "mm-fuzz did not run",
            "runs": runs,
            "crashes": crashes,
        }
    return {
        "command": " ".join(runs[0]["command"].split()[:-2]) + " --backend NAME (per backend)",
        "exit_code": max(r["exit_code"] for r in runs),
        "seconds": sum(r["seconds"] for r in runs),
        "runs": runs,
        "crashes": crashes,
        "report": merge_fuzz(reports),
    }


ENVIRONMENT = [
    "OMP_WAIT_POLICY",
    "OMP_NUM_THREADS",
    "ONEDNN_MAX_CPU_ISA",
    "OPENBLAS_CORETYPE",
    "MM_BACKEND_LIBS",
]

SHAPE_RE = re.compile(r"(?:(\d+)b_)?(\d+)x(\d+)x(\d+)$")


def benchmark_weight(name, reps, min_time):
    """A rough cost of one benchmark in seconds, for the time-left estimate."""
    fixed = (reps + 1) * min_time * 2
    match = SHAPE_RE.search(name.split("/process_time")[0].split("/real_time")[0])
    if not match or name.startswith("prepare/"):
        return fixed
    batch, m, k, n = (int(match.group(1) or 1), *map(int, match.group(2, 3, 4)))
    flops = 2.0 * batch * m * k * n
    rate = 2e9 if "/reference/" in name else 3e10  # Pessimistic: int and naive paths are slow.
    return fixed + (reps + 1) * flops / rate


def list_benchmarks(bench, bench_set, regex, args):
    result = subprocess.run(
        [
            str(bench),
            f"--mm_set={bench_set}",
            f"--benchmark_filter={regex}",
            "--benchmark_list_tests=true",
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in result.stdout.splitlines() if line.strip()]


def ere_escape(text):
    """`text` as a literal in a POSIX extended regular expression (Google Benchmark's filter)."""
    return "".join("\\" + c if c in ".[]()*+?{}|^$\\" else c for c in text)


def run_bench(bench, settings, regex, threads, tool_args, weights, phase):
    """One mm-bench run over `regex` at `threads` threads: its entry of compare.json's speed runs,
    with the machine's load while each benchmark ran (stability.LoadMeter, by benchmark name)."""
    progress = Progress(phase, sum(weights.values()), len(weights))
    with tempfile.TemporaryDirectory(prefix="mm-bench-") as tmp:
        out = pathlib.Path(tmp) / "bench.json"
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        command = [
            str(bench),
            f"--mm_set={settings['set']}",
            f"--benchmark_filter={regex}",
            f"--benchmark_min_time={settings['min_time']}",
            f"--benchmark_repetitions={settings['repetitions']}",
            # Every repetition in the JSON (the spread), only the aggregates on the console.
            "--benchmark_display_aggregates_only=true",
            f"--benchmark_out={out}",
            "--benchmark_out_format=json",
            "--benchmark_format=console",
            "--benchmark_color=false",
            *tool_args,
        ]
        start = time.monotonic()
        seen, load = set(), {}
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        ) as process:
            meter = LoadMeter(process.pid)
            meter.sample()
            for line in process.stdout:
                name = line.split(" ", 1)[0]
                base = re.sub(r"_(mean|median|stddev|cv)$", "", name)
                if base in weights and base not in seen:
                    seen.add(base)
                    meter.sample()
                    load[base] = meter.interval()
                    progress.step(base, weights[base])
            stderr = process.stderr.read()
        if process.returncode != 0 or not out.exists():
            raise RuntimeError(f"mm-bench exited {process.returncode}: {stderr[-2000:]}")
        data = json.loads(out.read_text())
    return {
        "threads": threads,
        "command": command_text(command, drop=("--benchmark_out",)),
        "env": f"OMP_NUM_THREADS={threads}",
        "seconds": time.monotonic() - start,
        "benchmark_json": data,
        "load": load,
    }


def unstable_names(run, cpus):
    """The benchmarks of `run` whose figure fails the stability rule."""
    names = []
    for name, reps in repetition_seconds(run["benchmark_json"], run["threads"]).items():
        if judge(reps, run["load"].get(name), run["threads"], cpus):
            names.append(name)
    return names


def speed(bin_dir, mode, threads, backends, runtimes, tool_args):
    """Runs mm-bench per thread count, then again over the figures that fail the stability rule
    (bounded): Google Benchmark's JSON of every run, each with its attempt number and load."""
    bench = bin_dir / "mm-bench"
    settings = MODES[mode]
    cpus = os.cpu_count() or 1
    runs = []
    # The reference backend is naive single-threaded loops (the oracle): its speed at more threads
    # says nothing new, and it is the slowest part of a run.
    threaded = "|".join(ere_escape(b) for b in backends if b != "reference") or "none"
    # Runtimes are run only when named: name the whole set then.
    selection = [a for b in backends for a in ("--backend", b)] if runtimes else []
    for t in threads:
        if settings["runtime_threads"] is not None and t not in settings["runtime_threads"]:
            # The runtimes left out at this thread count: neither named nor in the filter.
            libraries = [b for b in backends if b not in runtimes]
            threaded = "|".join(ere_escape(b) for b in libraries if b != "reference") or "none"
            selection = [a for b in libraries for a in ("--backend", b)] if runtimes else []
        # 1 thread: everything (prepare/ only here: creation is single-threaded work). More
        # threads: the execute benchmarks and the peak at that many threads.
        # MatMul's family (mm-bench --op) in the same run: gemm/, matmulinteger/, ...
        kinds = collect_family.BENCH_KINDS
        if t == 1:
            regex = f"^({kinds}|raw_[a-z_]+|prepare)/|^peak/.*/threads:1$"
        else:
            regex = f"^(({kinds})/({threaded})|raw_[a-z_]+)/|^peak/.*/threads:{t}$"
        args = [*tool_args["bench"], *selection, *collect_family.BENCH_OP_ARGS]
        names = list_benchmarks(bench, settings["set"], regex, args)
        weights = {
            n: benchmark_weight(n, settings["repetitions"], settings["min_time"]) for n in names
        }
        phase = f"speed, {t} thread{'s' if t > 1 else ''}"
        run = run_bench(bench, settings, regex, t, args, weights, phase)
        run["attempt"] = 0
        runs.append(run)
        # The estimates, scaled to what the first pass really took (a busy machine is slower).
        scale = run["seconds"] / max(sum(weights.values()), 1e-9)
        for attempt in range(1, settings["retries"] + 1):
            again, budget = [], settings["retry_seconds"]
            for name in unstable_names(run, cpus):
                if name in weights and weights[name] * scale <= budget:
                    again.append(name)
                    budget -= weights[name] * scale
            if not again:
                break
            regex = "^(" + "|".join(ere_escape(n) for n in again) + ")$"
            run = run_bench(
                bench,
                settings,
                regex,
                t,
                args,
                {n: weights[n] for n in again},
                f"{phase}, measuring {len(again)} unstable figure(s) again",
            )
            run["attempt"] = attempt
            runs.append(run)
    return runs


def stability_settings():
    """The stability rule's margins, as the report states them."""
    from rendering import stability

    return {
        "min_repetitions": stability.MIN_REPETITIONS,
        "spread_margin": stability.SPREAD_MARGIN,
        "load_margin_cores": stability.LOAD_MARGIN_CORES,
        "steal_margin_cores": stability.STEAL_MARGIN_CORES,
    }


# The deviations this project found in the libraries and runtimes it judges, each declared with its
# reason and link (docs/backends.md, docs/runtimes.md). The comparison applies them, so a declared
# deviation shows as XFAIL with its reason, and only an undeclared one as a problem.
REPO = pathlib.Path(__file__).resolve().parents[2]
DECLARED_EXPECTATIONS = [
    "backends/blas/deviations/expectations.json",
    "backends/runtimes/js/expectations/*.json",
    "backends/runtimes/python/expectations/*.json",
]
# Where each runtime's declared fuzz findings are (RUNTIME.fuzz.json).
FUZZ_DECLARATIONS = ["backends/runtimes/js/expectations", "backends/runtimes/python/expectations"]


def gives_expectations(args):
    return any(a == "--expectations" or a.startswith("--expectations=") for a in args)


def declared_expectations(names, out_dir, tool_args, environ=os.environ, repo=REPO):
    """One expectations file (in out_dir) with every declared entry for a backend in `names`, added
    to the conformance and fuzz runs' arguments; returns what was applied (for compare.json).

    A user's own expectations (--expectations or MM_EXPECTATIONS) win: nothing is added."""
    if environ.get("MM_EXPECTATIONS") or any(
        gives_expectations(tool_args[tool]) for tool in ("conformance", "fuzz")
    ):
        return {"applied": False, "why": "the user's expectations were given"}
    files = sorted(
        path
        for pattern in DECLARED_EXPECTATIONS
        for path in repo.glob(pattern)
        if not path.name.endswith(".fuzz.json")  # mm-fuzz findings, not expectations
    )
    entries, sources = [], []
    for path in files:
        mine = [
            e
            for e in json.loads(path.read_text())["expectations"]
            if any(fnmatch.fnmatchcase(name, e["backend"]) for name in names)
        ]
        if mine:
            entries += mine
            sources.append(str(path.relative_to(repo)))
    if not entries:
        return {"applied": False, "why": "no declared entry for these backends"}
    merged = out_dir / "declared-expectations.json"
    merged.write_text(json.dumps({"expectations": entries}, indent=1))
    for tool in ("conformance", "fuzz"):
        tool_args[tool] += ["--expectations", shown(merged)]
    return {"applied": True, "files": sources, "entries": len(entries)}


def mark_declared_findings(findings, repo=REPO):
    """Marks each mm-fuzz finding that a runtime's declared fuzz deviations name
    (RUNTIME.fuzz.json in backends/runtimes/{js,python}/expectations, matched as check_fuzz.py
    matches them: kind, message, dtype and shape class) with "declared": its name, reason and
    file."""
    if str(repo / "backends/runtimes/js") not in sys.path:
        sys.path.insert(0, str(repo / "backends/runtimes/js"))
    from check_fuzz import matches

    declarations = {}
    for finding in findings:
        name = f"{finding.get('backend')}.fuzz.json"
        paths = [repo / folder / name for folder in FUZZ_DECLARATIONS]
        path = next((p for p in paths if p.is_file()), paths[0])
        if path not in declarations:
            declarations[path] = json.loads(path.read_text())["findings"] if path.is_file() else []
        for declared in declarations[path]:
            try:
                found = matches(declared, finding)
            except (KeyError, IndexError, TypeError, re.error):
                found = False
            if found:
                finding["declared"] = {
                    "name": declared["name"],
                    "reason": declared["reason"],
                    "file": str(path.relative_to(repo)),
                }
                break


def split_tool_args(extra):
    """Extra arguments of compare.sh go to every tool (e.g. --backend-lib for plugins)."""
    return {"bench": list(extra), "conformance": list(extra), "fuzz": list(extra)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="full")
    parser.add_argument("--bin", required=True, type=pathlib.Path, help="folder of mm's tools")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="compare.json to write")
    parser.add_argument(
        "--conformance-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="passed on to mm-conformance only (repeatable; --conformance-arg=--x)",
    )
    parser.add_argument("extra", nargs="*", help="passed on to every tool")
    args = parser.parse_args()

    tool_args = split_tool_args(args.extra)
    # The runtimes (run only when named: numpy, torch, ...) are described, judged and timed
    # beside the libraries: mm-bench --mm_describe lists them, every tool gets them by name.
    tool_args["conformance"] += args.conformance_arg
    cpus = os.cpu_count() or 1
    threads = [1] if cpus == 1 else [1, cpus]
    timings = {}
    report = {"format": "mm-compare/1", "mode": args.mode, "extra_args": args.extra}
    with tempfile.TemporaryDirectory(prefix="mm-compare-") as tmp:
        work = pathlib.Path(tmp)
        start = time.monotonic()
        log("[machine] mm-bench --mm_describe")
        report["machine"] = machine(args.bin, threads, tool_args)
        timings["machine"] = time.monotonic() - start
        # Beside compare.json, so the commands the report shows can be run again.
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report["declared_expectations"] = declared_expectations(
            [b["name"] for b in report["machine"]["backends"]], args.out.parent, tool_args
        )

        start = time.monotonic()
        log("[conformance] mm-conformance over the default data roots")
        report["conformance"] = conformance(
            args.bin, work, tool_args, report["machine"]["backends"]
        )
        timings["conformance"] = time.monotonic() - start

        start = time.monotonic()
        log("[accuracy] mm-fuzz (differential fuzzer)")
        report["accuracy"] = accuracy(
            args.bin, work, args.mode, tool_args, report["machine"]["backends"]
        )
        mark_declared_findings((report["accuracy"].get("report") or {}).get("findings", []))
        timings["accuracy"] = time.monotonic() - start

        start = time.monotonic()
        log("[family accuracy] mm-fuzz --op per operator of MatMul's family")
        ops = collect_family.FAMILY_OPS
        family = collect_family.family_accuracy(
            run_fuzz,
            merge_fuzz,
            args.bin,
            work,
            args.mode,
            tool_args,
            report["machine"]["backends"],
            Progress("family accuracy", len(ops), len(ops)),
        )
        for run in family.values():
            mark_declared_findings((run.get("report") or {}).get("findings", []))
        report["family"] = {"ops": ops, "accuracy": family}
        timings["family accuracy"] = time.monotonic() - start

        start = time.monotonic()
        described = report["machine"]["backends"]
        report["speed"] = {
            "settings": MODES[args.mode],
            "stability": stability_settings(),
            "runs": speed(
                args.bin,
                args.mode,
                threads,
                [b["name"] for b in described if "error" not in b],
                [b["name"] for b in described if b.get("runtime") and "error" not in b],
                tool_args,
            ),
        }
        timings["speed"] = time.monotonic() - start
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    report["timings_seconds"] = timings
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
