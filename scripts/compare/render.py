#!/usr/bin/python3
"""Renders compare.json (written by collect.py) as compare.html and compare.md.

compare.html is one self-contained page (styles inline, plots as inline PNG drawn by matplotlib, no
script, nothing fetched); compare.md holds the same tables without the plots. Every plot is drawn
from compare.json alone, which is only read: --derived FILE writes the derived tables (scoreboard,
fastest, accuracy, speed records) beside it, so anyone reading JSON gets the page's numbers.

Nothing here knows a backend by name: the backends, their order, the baselines (bare libraries
timed beside them, with their labels and the backend each measures) and so the colours all come
from compare.json (mm-bench --mm_describe), so a plugin named anything gets the same page.
"""

import argparse
import base64
import collections
import html
import io
import json
import math
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)

DTYPE_ORDER = ["float", "double", "float16", "bfloat16", "int32", "int64", "uint32", "uint64"]
# Filled from the report by configure(): baseline name -> label, baseline -> the backend it
# measures, implementation -> colour, backend -> position in the registry's order.
BASELINES = {}
BASELINE_OF = {}
COLOURS = {}
ORDER = {}
# Benchmark families that are not baselines (mm-bench's own).
OWN_FAMILIES = ("matmul", "prepare", "peak")
SQUARE_RE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


# ---------------------------------------------------------------------------------------------
# Reading Google Benchmark's JSON into flat records.


def shape_kind(shape):
    if shape.startswith("tiny_"):
        return "tiny"
    if shape.startswith("bcast_"):
        return "broadcast"
    if re.match(r"^\d+b_", shape):
        return "batched"
    match = SQUARE_RE.match(shape)
    if match and len(set(match.groups())) == 1:
        return "square"
    return "other"


def base_name(name):
    """A benchmark's name without Google Benchmark's suffixes (/process_time, /real_time, ...)."""
    return "/".join(
        p
        for p in name.split("/")
        if p not in ("real_time", "process_time") and not p.startswith("threads:")
    )


def seconds(entry, key):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    return entry[key] * scale


def benchmark_records(speed):
    """One record per benchmark and thread count: the median when repeated, else the single run."""
    records = []
    for run in speed.get("runs", []):
        entries = run["benchmark_json"].get("benchmarks", [])
        aggregated = any(e.get("run_type") == "aggregate" for e in entries)
        for entry in entries:
            if aggregated and entry.get("aggregate_name") != "median":
                if not entry.get("error_occurred"):
                    continue
            name = entry.get("run_name", entry["name"])
            parts = base_name(name).split("/")
            record = {"name": name, "threads": run["threads"], "error": None}
            if entry.get("error_occurred"):
                record["error"] = entry.get("error_message", "error")
            if parts[0] == "peak":
                record.update(
                    kind="peak",
                    impl="peak",
                    dtype=parts[1],
                    shape="",
                    threads=entry.get("threads", 1),
                    label=entry.get("label", ""),
                )
            elif parts[0] == "matmul":
                record.update(kind="execute", impl=parts[1], dtype=parts[2], shape=parts[3])
            elif parts[0] == "prepare":
                record.update(kind="prepare", impl=parts[1], dtype=parts[-2], shape=parts[-1])
            elif len(parts) >= 3:  # A baseline (listed by mm-bench, or any other family).
                BASELINES.setdefault(parts[0], parts[0])
                record.update(kind="execute", impl=parts[0], dtype=parts[1], shape=parts[2])
            else:
                continue
            if record["error"] is None:
                record["seconds"] = seconds(entry, "real_time")
                record["cpu_seconds"] = seconds(entry, "cpu_time")
                record["gflops"] = entry.get("GFLOPS")
                # At 1 thread the process's CPU time is the time the work had a core: on a shared
                # machine it stays put while wall time grows with the load. More threads: wall.
                if (
                    record["kind"] in ("execute", "prepare")
                    and record["threads"] == 1
                    and record["cpu_seconds"] > 0
                ):
                    record["rate_seconds"] = record["cpu_seconds"]
                else:
                    record["rate_seconds"] = record["seconds"]
                if record["gflops"]:
                    record["rate_gflops"] = (
                        record["gflops"] * record["seconds"] / record["rate_seconds"]
                    )
            records.append(record)
    return records


# ---------------------------------------------------------------------------------------------
# Plots: matplotlib figures as inline PNG.


class Plot:
    def __init__(self, title, png, series):
        self.title = title
        self.png = png
        self.series = series  # Number of plotted lines/bar groups: 0 means an empty plot.


def figure_png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def impl_label(impl):
    return BASELINES.get(impl, impl)


# Matplotlib's tab10, then the lighter halves of tab20: distinct colours for 20 backends.
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
]


def configure(report):
    """Backends, their order and colours, and the baselines, from the report's own data."""
    for table in (BASELINES, BASELINE_OF, COLOURS, ORDER):
        table.clear()
    m = report.get("machine", {})
    names = [b["name"] for b in m.get("backends", []) if "name" in b]
    # Backends met only in a tool's results (a report of older tools) come after, in that order.
    names += [r.get("backend") for r in report.get("conformance", {}).get("results", [])]
    stats = ((report.get("accuracy") or {}).get("report") or {}).get("stats") or {}
    names += list((stats.get("backends") or {}).keys())
    for name in dict.fromkeys(n for n in names if isinstance(n, str)):
        ORDER[name] = len(ORDER)
        COLOURS[name] = PALETTE[(len(COLOURS)) % len(PALETTE)]
    for b in m.get("baselines", []):
        BASELINES[b["name"]] = b.get("label") or b["name"]
        if b.get("backend"):
            BASELINE_OF[b["name"]] = b["backend"]


def impl_order(impl):
    """Sort key: backends in the registry's order, then baselines beside theirs."""
    backend = BASELINE_OF.get(impl, impl)
    return (impl in BASELINES, ORDER.get(backend, len(ORDER)), impl)


def impl_colour(impl):
    # A baseline is drawn in its backend's colour (dashed or hatched): the two read as a pair.
    impl = BASELINE_OF.get(impl, impl)
    if impl not in COLOURS:
        COLOURS[impl] = PALETTE[len(COLOURS) % len(PALETTE)]
    return COLOURS[impl]


def impl_style(impl):
    return {
        "linestyle": "--" if impl in BASELINES else "-",
        "marker": "o",
        "markersize": 3,
        "color": impl_colour(impl),
    }


def plot_sweep(records, dtype, threads_list, peaks):
    fig, axes = plt.subplots(
        1, len(threads_list), figsize=(5.2 * len(threads_list), 3.8), squeeze=False, sharey=True
    )
    series = 0
    for ax, threads in zip(axes[0], threads_list):
        lines = collections.defaultdict(list)
        for r in records:
            if (
                r["kind"] == "execute"
                and r["dtype"] == dtype
                and r["threads"] == threads
                and shape_kind(r["shape"]) == "square"
                and r.get("rate_gflops")
            ):
                lines[r["impl"]].append((int(r["shape"].split("x")[0]), r["rate_gflops"]))
        for impl in sorted(lines, key=impl_order):
            points = sorted(lines[impl])
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                label=impl_label(impl),
                **impl_style(impl),
            )
            series += 1
        peak = peaks.get((dtype, threads))
        if peak:
            ax.axhline(peak["gflops"], color="grey", linewidth=0.8, linestyle=":")
            ax.text(
                8,
                peak["gflops"],
                f" peak {peak['gflops']:.0f}",
                va="bottom",
                fontsize=7,
                color="grey",
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("M = K = N")
        clock = "CPU time" if threads == 1 else "wall time"
        ax.set_title(
            f"{dtype}, {threads} thread{'s' if threads > 1 else ''} ({clock})", fontsize=10
        )
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=7)
    axes[0][0].set_ylabel("GFLOP/s")
    return Plot(f"{dtype}: GFLOP/s against size", figure_png(fig), series)


def plot_tiny(records, threads):
    tiny = [
        r
        for r in records
        if r["kind"] == "execute"
        and shape_kind(r["shape"]) == "tiny"
        and r["threads"] == threads
        and r.get("rate_seconds")
    ]
    shapes = sorted({r["shape"] for r in tiny})
    dtypes = [d for d in DTYPE_ORDER if any(r["dtype"] == d for r in tiny)]
    if not shapes:
        return Plot("tiny shapes", "", 0)
    fig, axes = plt.subplots(1, len(shapes), figsize=(4.6 * len(shapes), 3.6), squeeze=False)
    series = 0
    for ax, shape in zip(axes[0], shapes):
        impls = sorted({r["impl"] for r in tiny if r["shape"] == shape}, key=impl_order)
        width = 0.8 / max(len(impls), 1)
        for i, impl in enumerate(impls):
            xs, ys = [], []
            for j, dtype in enumerate(dtypes):
                for r in tiny:
                    if r["shape"] == shape and r["impl"] == impl and r["dtype"] == dtype:
                        xs.append(j + i * width)
                        ys.append(r["rate_seconds"] * 1e9)
            if xs:
                ax.bar(
                    xs,
                    ys,
                    width=width,
                    label=impl_label(impl),
                    color=impl_colour(impl),
                    hatch="//" if impl in BASELINES else None,
                    edgecolor="white",
                )
                series += 1
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(dtypes))], dtypes, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ns per call")
        ax.set_title(shape, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    return Plot(
        f"tiny shapes: time per call, {threads} thread{'s' if threads > 1 else ''} "
        f"({'CPU' if threads == 1 else 'wall'} time)",
        figure_png(fig),
        series,
    )


def plot_scaling(records, threads_list):
    if len(threads_list) < 2:
        return Plot("thread scaling", "", 0)
    low, high = threads_list[0], threads_list[-1]
    by_key = {
        (r["impl"], r["dtype"], r["shape"], r["threads"]): r
        for r in records
        if r["kind"] == "execute" and r.get("rate_gflops")
    }
    dtypes = [d for d in DTYPE_ORDER if any(k[1] == d for k in by_key)]
    fig, axes = plt.subplots(
        1, len(dtypes), figsize=(3.6 * len(dtypes), 3.4), squeeze=False, sharey=True
    )
    series = 0
    for ax, dtype in zip(axes[0], dtypes):
        lines = collections.defaultdict(list)
        for (impl, d, shape, threads), r in by_key.items():
            if d != dtype or threads != high or shape_kind(shape) != "square":
                continue
            base = by_key.get((impl, d, shape, low))
            if base:
                lines[impl].append(
                    (int(shape.split("x")[0]), r["rate_gflops"] / base["rate_gflops"])
                )
        for impl in sorted(lines, key=impl_order):
            points = sorted(lines[impl])
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                label=impl_label(impl),
                **impl_style(impl),
            )
            series += 1
        ax.axhline(high / low, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.set_title(dtype, fontsize=10)
        ax.set_xlabel("M = K = N")
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=6)
    axes[0][0].set_ylabel(f"speed-up, {high} threads / {low}")
    return Plot(f"thread scaling: {high} threads against {low}", figure_png(fig), series)


def plot_accuracy(points, what, ylabel):
    """points: {(backend, dtype): [(k, value), ...]}."""
    dtypes = [d for d in DTYPE_ORDER if any(key[1] == d for key in points)]
    if not dtypes:
        return Plot(f"accuracy against K ({what})", "", 0)
    fig, axes = plt.subplots(1, len(dtypes), figsize=(3.6 * len(dtypes), 3.4), squeeze=False)
    series = 0
    for ax, dtype in zip(axes[0], dtypes):
        for (backend, d), values in sorted(
            points.items(), key=lambda kv: (impl_order(kv[0][0]), kv[0][1])
        ):
            if d != dtype or not values:
                continue
            values = sorted(values)
            ax.plot(
                [v[0] for v in values],
                [max(v[1], 1e-3) for v in values],
                ".",
                label=backend,
                color=impl_colour(backend),
                alpha=0.6,
            )
            series += 1
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("K")
        ax.set_title(dtype, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(ylabel)
    return Plot(f"accuracy against K: {what}", figure_png(fig), series)


# ---------------------------------------------------------------------------------------------
# Accuracy: whatever mm-fuzz reports, per backend and dtype.


def percentile(values, fraction):
    values = sorted(values)
    if not values:
        return None
    index = min(len(values) - 1, max(0, math.ceil(fraction * len(values)) - 1))
    return values[index]


def accuracy_tables(accuracy):
    """Per-(backend, dtype) worst and p99 errors, and the points to plot against K.

    Reads per-problem records from mm-fuzz's report ("problems", "results" or "samples": objects
    with backend, dtype, k and ulp / bound_fraction errors); also takes per-(backend, dtype)
    statistics when the fuzzer reports only those ("statistics").
    """
    report = accuracy.get("report") or {}
    rows, ulp_points, bound_points = (
        {},
        collections.defaultdict(list),
        collections.defaultdict(list),
    )
    problems = report.get("problems") or report.get("results") or report.get("samples") or []
    per_key = collections.defaultdict(lambda: {"ulp": [], "bound": []})
    for p in problems if isinstance(problems, list) else []:
        if not isinstance(p, dict) or "backend" not in p or "dtype" not in p:
            continue
        key = (p["backend"], p["dtype"])
        ulp = p.get("max_ulp", p.get("ulps", p.get("ulp")))
        bound = p.get("max_bound_fraction", p.get("bound_fraction"))
        k = p.get("k", p.get("K"))
        if isinstance(ulp, (int, float)):
            per_key[key]["ulp"].append(ulp)
            if isinstance(k, (int, float)) and k > 0:
                ulp_points[key].append((k, ulp))
        if isinstance(bound, (int, float)):
            per_key[key]["bound"].append(bound)
            if isinstance(k, (int, float)) and k > 0:
                bound_points[key].append((k, bound))
    for key, values in per_key.items():
        rows[key] = {
            "backend": key[0],
            "dtype": key[1],
            "problems": max(len(values["ulp"]), len(values["bound"])),
            "worst_ulp": max(values["ulp"], default=None),
            "p99_ulp": percentile(values["ulp"], 0.99),
            "worst_bound_fraction": max(values["bound"], default=None),
            "p99_bound_fraction": percentile(values["bound"], 0.99),
        }
    stats = report.get("statistics")
    if isinstance(stats, list):
        for s in stats:
            if isinstance(s, dict) and "backend" in s and "dtype" in s:
                key = (s["backend"], s["dtype"])
                if key not in rows:
                    rows[key] = {
                        "backend": key[0],
                        "dtype": key[1],
                        "problems": s.get("problems", s.get("count")),
                        "worst_ulp": s.get("worst_ulp", s.get("max_ulp")),
                        "p99_ulp": s.get("p99_ulp"),
                        "worst_bound_fraction": s.get(
                            "worst_bound_fraction", s.get("max_bound_fraction")
                        ),
                        "p99_bound_fraction": s.get("p99_bound_fraction"),
                    }
    ordered = sorted(
        rows.values(),
        key=lambda r: (
            DTYPE_ORDER.index(r["dtype"]) if r["dtype"] in DTYPE_ORDER else 99,
            r["backend"],
        ),
    )
    return ordered, ulp_points, bound_points


# ---------------------------------------------------------------------------------------------
# Derived tables: what the page and the Markdown show.


def fmt_num(value, digits=3):
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if value == 0:
        return "0"
    if abs(value) >= 1000 or abs(value) < 0.01:
        return f"{value:.{digits}g}"
    return f"{value:.{digits}g}" if abs(value) < 10 else f"{value:.1f}"


def fmt_time(seconds_value):
    if seconds_value is None:
        return "–"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds_value >= scale:
            return f"{seconds_value / scale:.3g} {unit}"
    return f"{seconds_value * 1e9:.3g} ns"


def derive(report):
    records = benchmark_records(report.get("speed", {}))
    threads_list = sorted({r["threads"] for r in records if r["kind"] != "peak"})
    peaks = {
        (r["dtype"], r["threads"]): r for r in records if r["kind"] == "peak" and r.get("gflops")
    }
    for r in records:
        peak = peaks.get((r["dtype"], r["threads"]))
        if r["kind"] == "execute" and r.get("rate_gflops") and peak:
            r["percent_of_peak"] = 100.0 * r["rate_gflops"] / peak["gflops"]
    backends = [b["name"] for b in report.get("machine", {}).get("backends", [])]
    dtypes = [
        d for d in DTYPE_ORDER if any(r["dtype"] == d and r["kind"] == "execute" for r in records)
    ]

    # Fastest: our backends only (baselines are yardsticks), per dtype, size class and threads.
    classes = [
        ("small (M=K=N ≤ 64)", 0, 64),
        ("medium (65–512)", 65, 512),
        ("large (≥ 513)", 513, 1 << 30),
    ]
    fastest = []
    for dtype in dtypes:
        for threads in threads_list:
            for label, low, high in classes:
                totals = collections.defaultdict(list)
                for r in records:
                    if (
                        r["kind"] == "execute"
                        and r["dtype"] == dtype
                        and r["threads"] == threads
                        and r["impl"] in backends
                        and shape_kind(r["shape"]) == "square"
                        and r.get("rate_gflops")
                        and low <= int(r["shape"].split("x")[0]) <= high
                    ):
                        totals[r["impl"]].append(r["rate_gflops"])
                if not totals:
                    continue
                # Geometric mean over the sizes every candidate ran.
                means = {
                    impl: math.exp(sum(math.log(v) for v in vs) / len(vs))
                    for impl, vs in totals.items()
                }
                ranked = sorted(means.items(), key=lambda kv: -kv[1])
                fastest.append(
                    {
                        "dtype": dtype,
                        "threads": threads,
                        "sizes": label,
                        "fastest": ranked[0][0],
                        "gflops_geomean": ranked[0][1],
                        "runner_up": ranked[1][0] if len(ranked) > 1 else None,
                        "runner_up_gflops": ranked[1][1] if len(ranked) > 1 else None,
                    }
                )
            tiny = {}
            for r in records:
                if (
                    r["kind"] == "execute"
                    and r["dtype"] == dtype
                    and r["threads"] == threads
                    and r["impl"] in backends
                    and r["shape"] == "tiny_3x4x3"
                    and r.get("rate_seconds")
                ):
                    tiny[r["impl"]] = r["rate_seconds"]
            if tiny:
                best = min(tiny, key=tiny.get)
                fastest.append(
                    {
                        "dtype": dtype,
                        "threads": threads,
                        "sizes": "tiny 3x4x3 (per call)",
                        "fastest": best,
                        "seconds_per_call": tiny[best],
                    }
                )

    accuracy_rows, ulp_points, bound_points = accuracy_tables(report.get("accuracy", {}))
    most_accurate = {}
    for row in accuracy_rows:
        if row["worst_ulp"] is None:
            continue
        best = most_accurate.get(row["dtype"])
        if best is None or row["worst_ulp"] < best["worst_ulp"]:
            most_accurate[row["dtype"]] = row

    conformance = report.get("conformance", {})
    problems = []
    if "error" in conformance:
        problems.append(f"conformance: {conformance['error']}")
    for r in conformance.get("results", []):
        if r.get("verdict") in ("FAIL", "ERROR"):
            problems.append(
                f"conformance {r['verdict']}: {r['case']} / {r.get('data_set', '')} on "
                f"{r['backend']}: {r.get('message', '')}"
            )
    official = conformance.get("official")
    if isinstance(official, dict) and official.get("altered"):
        problems.append(f"official corpus altered: {official['altered']}")
    for r in records:
        if r["error"]:
            problems.append(f"benchmark ERROR: {r['name']} ({r['threads']} threads): {r['error']}")
    accuracy = report.get("accuracy", {})
    for f in (accuracy.get("report") or {}).get("findings", []) or []:
        if isinstance(f, dict) and str(f.get("kind", "")).upper() in ("FAIL", "FAILURE", "ERROR"):
            problems.append(
                f"fuzzer {f.get('kind')}: {f.get('backend')} {f.get('dtype')} "
                f"{f.get('minimal_a_shape')} x {f.get('minimal_b_shape')}: "
                f"{f.get('message', '')}"
            )
    for c in accuracy.get("crashes", []) or []:
        # A backend's library killed the fuzzer: that (backend, dtype) has no accuracy figures.
        error = str(c.get("error", "")).splitlines()[0] if c.get("error") else ""
        problems.append(
            f"fuzzer crash: {c.get('backend')} {c.get('dtype')}: {error} (run again: "
            f"{c.get('command', '')})"
        )
    if accuracy.get("report") and accuracy.get("exit_code") not in (0, None):
        problems.append(
            f"mm-fuzz exited {accuracy['exit_code']} (findings: see the accuracy " f"section)"
        )
    return {
        "records": records,
        "threads": threads_list,
        "dtypes": dtypes,
        "peaks": peaks,
        "fastest": fastest,
        "accuracy_rows": accuracy_rows,
        "ulp_points": ulp_points,
        "bound_points": bound_points,
        "most_accurate": most_accurate,
        "problems": problems,
        "backends": backends,
    }


# ---------------------------------------------------------------------------------------------
# Tables, shared by HTML and Markdown: (caption, header, rows); a cell is text or (text, details).


def machine_table(report):
    m = report.get("machine", {})
    libs = m.get("libraries", {})
    rows = [
        ["CPU", m.get("cpu_model", "?")],
        ["logical CPUs", str(m.get("logical_cpus"))],
        ["SIMD flags", " ".join(m.get("cpu_simd_flags", []))],
        [
            "threads measured",
            ", ".join(str(t) for t in m.get("threads_measured", [])) + " (OMP_NUM_THREADS)",
        ],
        [
            "load average at start / end",
            f"{fmt_load(m.get('load_average_at_start'))} / "
            f"{fmt_load(m.get('load_average_at_end'))}",
        ],
        ["date (UTC)", m.get("date", "?")],
        [
            "git commit",
            f"{m.get('git_describe', '?')}"
            + (" (uncommitted changes)" if m.get("git_dirty") else ""),
        ],
        ["kernel", m.get("kernel", "?")],
    ]
    for variable, value in (m.get("environment") or {}).items():
        rows.append([f"environment {variable}", value if value is not None else "(unset)"])
    conformance_machine = report.get("conformance", {}).get("machine") or {}
    if conformance_machine.get("compiler"):
        rows.append(["compiler (what built mm)", conformance_machine["compiler"]])
    for backend in m.get("backends", []):
        # The backend's own RunsOn(), else its registry description; why it could not start.
        runs = backend.get("runs_on") or backend.get("description", "")
        if backend.get("error"):
            runs = f"not available: {backend['error']}"
        rows.append([f"backend {backend['name']} runs on", runs])
    for name, facts in libs.items():
        # What mm-bench's probe of a linked library says, as it says it.
        rows.append([f"library {name} (mm-bench's probe)", fmt_facts(facts)])
    for package, version in m.get("packages", {}).items():
        rows.append([f"package {package}", version or "not installed"])
    return ("Machine", ["", ""], rows)


def fmt_facts(facts):
    if isinstance(facts, dict):
        return "; ".join(f"{k}: {fmt_facts(v)}" for k, v in facts.items())
    if isinstance(facts, list):
        return ", ".join(fmt_facts(v) for v in facts)
    return str(facts)


def fmt_load(values):
    return "?" if not values else " ".join(f"{v:.1f}" for v in values)


def support_table(report):
    backends = report.get("machine", {}).get("backends", [])
    rows = []
    for b in backends:
        row = [b["name"]]
        for dtype in DTYPE_ORDER:
            s = b.get("supports", {}).get(dtype)
            if s is None:
                row.append("?")
            elif s["level"] == "native":
                row.append("native")
            elif s["level"] == "conversion":
                row.append(("by conversion", s["note"]))
            else:
                row.append(("no", s["note"]))
        rows.append(row)
    return (
        "Support: backend × dtype (asked of each backend's Supports() for a 64×64×64 problem)",
        ["backend", *DTYPE_ORDER],
        rows,
    )


def conformance_tables(report):
    c = report.get("conformance", {})
    if "error" in c:
        return [("Conformance", ["error"], [[c["error"]]])]
    results = c.get("results", [])
    backends = list(dict.fromkeys(r["backend"] for r in results))
    cases = list(dict.fromkeys((r["case"], r.get("data_set", "")) for r in results))
    by_key = {(r["case"], r.get("data_set", ""), r["backend"]): r for r in results}
    rows = []
    for case, data_set in cases:
        row = [f"{case} / {data_set}" if data_set else case]
        for backend in backends:
            r = by_key.get((case, data_set, backend))
            if r is None:
                row.append("–")
                continue
            # Every one-line comparison the tool made ("vs_<what>": text), as it says it.
            detail = (
                f"{r['dtype']} {r['a_shape']} x {r['b_shape']}: {r.get('message', '')}"
                + (f"; support: {r['support_note']}" if r.get("support_note") else "")
                + "".join(
                    f"; {key.replace('_', ' ')}: {value}"
                    for key, value in r.items()
                    if key.startswith("vs_") and isinstance(value, str)
                )
            )
            row.append((r["verdict"], detail))
        rows.append(row)
    s = c.get("summary", {})
    caption = (
        f"Conformance: {s.get('total', 0)} results, {s.get('PASS', 0)} PASS, "
        f"{s.get('FAIL', 0)} FAIL, {s.get('UNSUPPORTED', 0)} UNSUPPORTED, "
        f"{s.get('ERROR', 0)} ERROR (tolerance rtol {c.get('tolerance', {}).get('rtol')}, "
        f"atol {c.get('tolerance', {}).get('atol')}; click a verdict for its details)"
    )
    tables = [(caption, ["case / data set", *backends], rows)]
    official = c.get("official", {})
    if official:
        found = official.get("found", [])
        tables.append(
            (
                "Official ONNX MatMul node tests",
                ["complete", "found", "missing", "altered"],
                [
                    [
                        "yes" if official.get("complete") else "no",
                        str(len(found)),
                        ", ".join(map(str, official.get("missing", []))) or "none",
                        ", ".join(map(str, official.get("altered", []))) or "none",
                    ]
                ],
            )
        )
    return tables


def fuzz_tables(report):
    """What mm-fuzz reports besides error figures: verdict counts per backend, and findings."""
    fuzz = (report.get("accuracy", {}) or {}).get("report") or {}
    tables = []
    stats = fuzz.get("stats", {})
    backends = stats.get("backends", {}) if isinstance(stats, dict) else {}
    if isinstance(backends, dict) and backends:
        verdicts = list(dict.fromkeys(v for counts in backends.values() for v in counts))
        rows = [
            [name, *[str(counts.get(v, 0)) for v in verdicts]] for name, counts in backends.items()
        ]
        tables.append(
            (
                f"Differential fuzzer: results per backend over {stats.get('problems', '?')} "
                f"random problems ({fmt_num(stats.get('seconds'))} s; BOUND: within the "
                "K-aware error bound but outside ONNX's rtol/atol, IMPRECISE: the reverse)",
                ["backend", *verdicts],
                rows,
            )
        )
    findings = fuzz.get("findings", [])
    if isinstance(findings, list) and findings:
        rows = []
        for f in findings:
            worst = f.get("worst") or {}
            fraction = None
            if (
                isinstance(worst.get("abs_error"), (int, float))
                and isinstance(worst.get("bound"), (int, float))
                and worst["bound"] > 0
            ):
                fraction = worst["abs_error"] / worst["bound"]
            rows.append(
                [
                    str(f.get("kind", "")),
                    str(f.get("backend", "")),
                    str(f.get("dtype", "")),
                    f"{f.get('minimal_a_shape', f.get('a_shape'))} x "
                    f"{f.get('minimal_b_shape', f.get('b_shape'))}",
                    fmt_num(worst.get("abs_error")),
                    fmt_num(worst.get("bound")),
                    fmt_num(fraction),
                    (
                        str(f.get("message", ""))[:60] + "…",
                        f"{f.get('message', '')} Replay: {f.get('replay', '')}",
                    ),
                ]
            )
        tables.append(
            (
                "Differential fuzzer: findings (minimal problems)",
                [
                    "kind",
                    "backend",
                    "dtype",
                    "shapes",
                    "worst abs error",
                    "bound",
                    "error / bound",
                    "message",
                ],
                rows,
            )
        )
    return tables


def accuracy_table(derived, report):
    accuracy = report.get("accuracy", {})
    rows = [
        [
            r["backend"],
            r["dtype"],
            fmt_num(r["problems"]),
            fmt_num(r["worst_ulp"]),
            fmt_num(r["p99_ulp"]),
            fmt_num(r["worst_bound_fraction"]),
            fmt_num(r["p99_bound_fraction"]),
        ]
        for r in derived["accuracy_rows"]
    ]
    if not rows:
        why = accuracy.get("error") or (
            "mm-fuzz's report has no per-problem error figures (ULPs, "
            "fraction of the bound, K): nothing to show here"
        )
        rows = [["–", "–", "–", "–", "–", "–", why]]
    return (
        "Accuracy from the differential fuzzer (errors of the output type; bound: the K-aware "
        "error bound)",
        ["backend", "dtype", "problems", "worst ULP", "p99 ULP", "worst / bound", "p99 / bound"],
        rows,
    )


def speed_tables(derived):
    records = derived["records"]
    tables = []
    peaks = derived["peaks"]
    peak_rows = [
        [d, str(t), fmt_num(p["gflops"]), p.get("label", "")]
        for (d, t), p in sorted(
            peaks.items(), key=lambda kv: (DTYPE_ORDER.index(kv[0][0]), kv[0][1])
        )
    ]
    tables.append(
        (
            "Measured peak (peak/<dtype> in mm-bench: independent multiply-add chains, CPU "
            "time)",
            ["dtype", "threads", "GFLOP/s", "instructions"],
            peak_rows,
        )
    )
    for dtype in derived["dtypes"]:
        impls = sorted(
            {r["impl"] for r in records if r["kind"] == "execute" and r["dtype"] == dtype},
            key=impl_order,
        )
        shapes = sorted(
            {
                r["shape"]
                for r in records
                if r["kind"] == "execute"
                and r["dtype"] == dtype
                and shape_kind(r["shape"]) != "tiny"
            },
            key=shape_sort_key,
        )
        by_key = {
            (r["impl"], r["shape"], r["threads"]): r
            for r in records
            if r["kind"] == "execute" and r["dtype"] == dtype
        }
        # Columns: the implementations measured at each thread count.
        columns = {
            t: [i for i in impls if any(k[0] == i and k[2] == t for k in by_key)]
            for t in derived["threads"]
        }
        header = ["shape"]
        for t in derived["threads"]:
            header += [f"{impl_label(i)} ({t}t)" for i in columns[t]]
        rows = []
        for shape in shapes:
            row = [shape]
            for t in derived["threads"]:
                for impl in columns[t]:
                    r = by_key.get((impl, shape, t))
                    if r is None:
                        row.append("–")
                    elif r["error"]:
                        row.append(("ERROR", r["error"]))
                    else:
                        pct = r.get("percent_of_peak")
                        row.append(
                            f"{fmt_num(r['rate_gflops'])}"
                            + (f" ({pct:.0f} %)" if pct else "")
                            + (f", wall {fmt_num(r['gflops'])}" if t == 1 else "")
                        )
            rows.append(row)
        tables.append(
            (
                f"{dtype}: GFLOP/s (percent of this machine's measured {dtype} peak at the "
                f"same thread count); 1 thread: by CPU time, then by wall time",
                header,
                rows,
            )
        )
    # Tiny shapes and creation (Prepare) against execution, one table.
    rows = []
    by_key = {(r["kind"], r["impl"], r["dtype"], r["shape"], r["threads"]): r for r in records}
    prepares = sorted(
        {
            (r["impl"], r["dtype"], r["shape"])
            for r in records
            if r["kind"] == "prepare" and not r["error"]
        },
        key=lambda k: (
            DTYPE_ORDER.index(k[1]) if k[1] in DTYPE_ORDER else 99,
            shape_sort_key(k[2]),
            k[0],
        ),
    )
    for impl, dtype, shape in prepares:
        prepare = by_key[("prepare", impl, dtype, shape, 1)]
        execute = by_key.get(("execute", impl, dtype, shape, 1))
        ratio = (
            prepare["rate_seconds"] / execute["rate_seconds"]
            if execute and execute.get("rate_seconds")
            else None
        )
        rows.append(
            [
                impl_label(impl),
                dtype,
                shape,
                fmt_time(prepare["rate_seconds"]),
                fmt_time(execute["rate_seconds"])
                if execute and execute.get("rate_seconds")
                else "–",
                fmt_num(ratio),
            ]
        )
    tables.append(
        (
            "Creation (Prepare, fresh backend, nothing cached) against one Execute, 1 thread",
            ["implementation", "dtype", "shape", "Prepare", "Execute", "Prepare / Execute"],
            rows,
        )
    )
    rows = []
    for r in sorted(
        (
            r
            for r in records
            if r["kind"] == "execute" and shape_kind(r["shape"]) == "tiny" and not r["error"]
        ),
        key=lambda r: (DTYPE_ORDER.index(r["dtype"]), r["shape"], r["threads"], r["rate_seconds"]),
    ):
        rows.append(
            [
                r["dtype"],
                r["shape"],
                str(r["threads"]),
                impl_label(r["impl"]),
                fmt_time(r["rate_seconds"]),
            ]
        )
    tables.append(
        (
            "Tiny shapes: time per call",
            ["dtype", "shape", "threads", "implementation", "time per call"],
            rows,
        )
    )
    return tables


def shape_sort_key(shape):
    kind_order = {"square": 0, "batched": 1, "broadcast": 2, "tiny": 3, "other": 4}
    match = SQUARE_RE.match(shape)
    return (kind_order[shape_kind(shape)], int(match.group(1)) if match else 0, shape)


# The scoreboard's speed columns: two square sizes (at 1 thread and all cores) and a tiny shape.
SCORE_SHAPES = ["256x256x256", "1024x1024x1024"]
TINY_SHAPE = "tiny_3x4x3"
VERDICT_ORDER = [
    "PASS",
    "FAIL",
    "BOUND",
    "IMPRECISE",
    "ERROR",
    "UNSUPPORTED",
    "XFAIL",
    "XPASS",
    "SKIP",
]


def fmt_counts(counts):
    """'7 PASS' or '5 PASS, 1 FAIL, 1 BOUND': the verdicts that occurred, in a fixed order."""
    if not counts:
        return "–"
    verdicts = [v for v in VERDICT_ORDER if counts.get(v)] + sorted(
        v for v in counts if v not in VERDICT_ORDER and counts[v]
    )
    return ", ".join(f"{counts[v]} {v}" for v in verdicts) or "–"


def scoreboard(report, derived):
    """One entry per (dtype, backend): conformance, IEEE specials, worst / bound, speed."""
    c = report.get("conformance", {})
    official = {
        f.get("case") for f in (c.get("official") or {}).get("found", []) if isinstance(f, dict)
    }
    conformance = collections.defaultdict(collections.Counter)
    for r in c.get("results", []):
        if r.get("dtype"):
            source = (
                "official"
                if r.get("case") in official
                else "built-in"
                if r.get("source") == "built-in"
                else "other"
            )
            conformance[(r["backend"], r["dtype"], source)][r["verdict"]] += 1
    fuzz = (report.get("accuracy") or {}).get("report") or {}
    by_dtype = (fuzz.get("stats") or {}).get("by_dtype") or {}
    specials = {
        (s_["backend"], s_["dtype"]): s_
        for s_ in fuzz.get("statistics") or []
        if isinstance(s_, dict) and "special_problems" in s_
    }
    accuracy = {(r["backend"], r["dtype"]): r for r in derived["accuracy_rows"]}
    records = {
        (r["impl"], r["dtype"], r["shape"], r["threads"]): r
        for r in derived["records"]
        if r["kind"] == "execute" and not r["error"]
    }
    supports = {
        b["name"]: b.get("supports", {}) for b in report.get("machine", {}).get("backends", [])
    }
    backends = sorted(ORDER, key=impl_order)
    threads = derived["threads"]
    entries = []
    for dtype in DTYPE_ORDER:
        for backend in backends:
            support = supports.get(backend, {}).get(dtype)
            entry = {
                "dtype": dtype,
                "backend": backend,
                "support": support["level"] if support else None,
                "support_note": support.get("note", "") if support else "",
                "fuzz": dict(by_dtype.get(backend, {}).get(dtype, {})),
            }
            for source in ("official", "built-in", "other"):
                entry[source] = dict(conformance.get((backend, dtype, source), {}))
            special = specials.get((backend, dtype))
            entry["special_problems"] = special["special_problems"] if special else None
            entry["special_wrong"] = special["special_wrong"] if special else None
            row = accuracy.get((backend, dtype))
            entry["worst_bound_fraction"] = row["worst_bound_fraction"] if row else None
            entry["gflops"] = {
                shape: {
                    str(t): records[(backend, dtype, shape, t)].get("rate_gflops")
                    for t in threads
                    if (backend, dtype, shape, t) in records
                }
                for shape in SCORE_SHAPES
            }
            tiny = records.get((backend, dtype, TINY_SHAPE, 1))
            entry["tiny_seconds"] = tiny.get("rate_seconds") if tiny else None
            entries.append(entry)
    return entries


def scoreboard_tables(derived):
    """Per dtype, one row per backend; a backend that does not compute the dtype says why."""
    threads = derived["threads"]
    has_other = any(e["other"] for e in derived["scoreboard"])
    header = ["backend", "support", "official", "built-in"] + (["other cases"] if has_other else [])
    header += ["fuzz", "IEEE specials", "worst / bound"]
    for shape in SCORE_SHAPES:
        size = shape.split("x")[0]
        header += [f"{size}³ GFLOP/s, {t}t" for t in threads]
    header.append(f"{TINY_SHAPE} per call, 1t")
    tables = []
    for dtype in DTYPE_ORDER:
        entries = [e for e in derived["scoreboard"] if e["dtype"] == dtype]
        if not any(
            e["support"] not in (None, "no") or e["fuzz"] or e["official"] or e["built-in"]
            for e in entries
        ):
            continue
        rows = []
        for e in entries:
            if e["support"] == "no":
                support = ("no", e["support_note"])
            elif e["support"] == "conversion":
                support = ("by conversion", e["support_note"])
            else:
                support = e["support"] or "?"
            row = [e["backend"], support, fmt_counts(e["official"]), fmt_counts(e["built-in"])]
            if has_other:
                row.append(fmt_counts(e["other"]))
            row.append(fmt_counts(e["fuzz"]))
            if not e["special_problems"]:
                row.append("–")
            elif e["special_wrong"]:
                row.append(f"WRONG in {e['special_wrong']} of {e['special_problems']}")
            else:
                row.append(f"correct ({e['special_problems']})")
            row.append(fmt_num(e["worst_bound_fraction"]))
            for shape in SCORE_SHAPES:
                row += [fmt_num(e["gflops"][shape].get(str(t))) for t in threads]
            row.append(fmt_time(e["tiny_seconds"]))
            rows.append(row)
        tables.append(
            (
                f"Scoreboard, {dtype}: conformance verdicts (official ONNX cases, mm's "
                "built-in cases, the differential fuzzer's problems), IEEE specials (results "
                "with NaN/inf inputs whose NaN/inf outputs are IEEE's), worst error as a "
                "fraction of the K-aware bound (> 1: outside), GFLOP/s (1 thread by CPU "
                "time, more by wall time), time per call",
                header,
                rows,
            )
        )
    return tables


def fastest_table(derived):
    rows = []
    for f in derived["fastest"]:
        if "seconds_per_call" in f:
            figure = fmt_time(f["seconds_per_call"]) + " per call"
            other = ""
        else:
            figure = f"{fmt_num(f['gflops_geomean'])} GFLOP/s (geometric mean)"
            other = f"{f['runner_up']} {fmt_num(f['runner_up_gflops'])}" if f["runner_up"] else ""
        rows.append([f["dtype"], str(f["threads"]), f["sizes"], f["fastest"], figure, other])
    return (
        "Fastest backend per dtype, thread count and size (square sweep; baselines left out)",
        ["dtype", "threads", "sizes", "fastest", "its speed", "runner-up"],
        rows,
    )


def most_accurate_table(derived):
    rows = []
    for dtype in DTYPE_ORDER:
        best = derived["most_accurate"].get(dtype)
        if best:
            rows.append(
                [
                    dtype,
                    best["backend"],
                    fmt_num(best["worst_ulp"]),
                    fmt_num(best["worst_bound_fraction"]),
                ]
            )
    if not rows:
        rows = [["–", "no accuracy data (see Accuracy)", "–", "–"]]
    return (
        "Most accurate backend per dtype (smallest worst-case ULP error in the fuzzer's "
        "problems)",
        ["dtype", "backend", "worst ULP", "worst / bound"],
        rows,
    )


def timing_table(report):
    t = report.get("timings_seconds", {})
    rows = [[part, fmt_num(seconds_value) + " s"] for part, seconds_value in t.items()]
    for run in report.get("speed", {}).get("runs", []):
        rows.append([f"  mm-bench, {run['threads']} thread(s)", fmt_num(run["seconds"]) + " s"])
    return ("How long each part took", ["part", "wall time"], rows)


# ---------------------------------------------------------------------------------------------
# HTML and Markdown writers.

CSS = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1300px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.82em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } caption { text-align: left; font-weight: bold; padding: 4px 0; }
.problems { background: #fde8e8; border: 2px solid #c00; color: #900; padding: 0.5em 1em; }
.ok { background: #e8f6e8; border: 1px solid #4a4; padding: 0.5em 1em; }
.v-PASS { color: #070; } .v-FAIL, .v-ERROR { color: #c00; font-weight: bold; }
.v-UNSUPPORTED, .v-no { color: #777; } .v-by { color: #a60; }
details summary { cursor: pointer; } details p { max-width: 40em; margin: 0.3em 0; }
figure { margin: 0.5em 0 1.5em; } figcaption { font-size: 0.85em; color: #555; }
img.plot { max-width: 100%; border: 1px solid #ddd; }
.note { font-size: 0.85em; color: #555; max-width: 60em; }
"""


def cell_html(cell):
    if isinstance(cell, tuple):
        text, details = cell
        css = "v-" + (text.split() or [""])[0]
        return (
            f'<td><details><summary class="{html.escape(css)}">{html.escape(text)}</summary>'
            f"<p>{html.escape(details)}</p></details></td>"
        )
    css = f' class="v-{html.escape(cell.split()[0])}"' if cell in ("PASS", "no", "native") else ""
    if re.search(r"\b(FAIL|ERROR|WRONG|XPASS)\b", cell):
        css = ' class="v-FAIL"'  # A count or verdict that is a problem, red wherever it is.
    elif re.fullmatch(r"\d+ PASS|correct \(\d+\)", cell):
        css = ' class="v-PASS"'
    return f"<td{css}>{html.escape(cell)}</td>"


def table_html(table, table_id):
    caption, header, rows = table
    out = [f'<table id="{table_id}"><caption>{html.escape(caption)}</caption><thead><tr>']
    out += [f"<th>{html.escape(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(cell_html(c) for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def plot_html(plot, plot_id):
    if not plot.series:
        return f'<p class="note">No data for: {html.escape(plot.title)}.</p>'
    return (
        f'<figure><img class="plot" id="{plot_id}" data-series="{plot.series}" '
        f'alt="{html.escape(plot.title)}" src="data:image/png;base64,{plot.png}">'
        f"<figcaption>{html.escape(plot.title)}</figcaption></figure>"
    )


def cell_md(cell):
    text = (
        f"{cell[0]}: {cell[1]}"
        if isinstance(cell, tuple) and cell[0] not in ("PASS", "UNSUPPORTED")
        else (cell[0] if isinstance(cell, tuple) else cell)
    )
    return text.replace("|", "\\|").replace("\n", " ")


def table_md(table):
    caption, header, rows = table
    lines = [
        f"**{caption}**",
        "",
        "| " + " | ".join(h or " " for h in header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(cell_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def auto_choice_section(table_path):
    """The auto backend's choice map: per dtype and shape, the backend its calibration table ranks
    first at each thread count, and by how much (runner-up time / winner's). Self-contained: fed by
    the table file alone (mm-bench --mm_calibrate), not by compare.json."""
    title = "auto's choices"
    if table_path is None or not table_path.exists():
        where = html.escape(str(table_path)) if table_path else "(none given)"
        note = (
            f"No calibration table at {where}: auto runs on its built-in defaults "
            "(docs/backends.md, auto backend). Make one with "
            "<code>build/bin/mm-bench --mm_calibrate=FILE</code>."
        )
        return title, [f'<p class="note">{note}</p>'], [re.sub(r"</?code>", "`", note) + "\n"]
    table = json.loads(table_path.read_text())
    machine = table.get("machine", {})
    threads = sorted({c["threads"] for c in table.get("cells", [])})
    choices = {}
    for c in table.get("cells", []):
        shape = "x".join(map(str, c["a"])) + " · " + "x".join(map(str, c["b"]))
        secs = c.get("seconds") or []
        margin = f" ({secs[1] / secs[0]:.2f}x)" if len(secs) > 1 and secs[0] > 0 else ""
        choices.setdefault((c["dtype"], shape), {})[c["threads"]] = c["ranking"][0] + margin
    rows = [
        [dtype, shape] + [row.get(t, "") for t in threads]
        for (dtype, shape), row in sorted(choices.items())
    ]
    caption = (
        f"Backend auto runs per dtype, shape and thread count (the runner-up's time over "
        f"the winner's), from {table_path.name}, created {table.get('created', '?')} on "
        f"{machine.get('cpu_model', '?')} ({machine.get('logical_cpus', '?')} CPUs), "
        f"candidates {', '.join(sorted(machine.get('backends', {})))}"
    )
    t = (caption, ["dtype", "A · B"] + [f"{n} thread(s)" for n in threads], rows)
    return title, [table_html(t, "auto-choices")], [table_md(t)]


def render(report, auto_table=None):
    configure(report)
    derived = derive(report)
    derived["scoreboard"] = scoreboard(report, derived)
    m = report.get("machine", {})
    threads_list = derived["threads"]
    sections = []  # (title, [html parts], [markdown parts])

    # Summary first: problems in red at the very top.
    if derived["problems"]:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in derived["problems"])
        problems_html = (
            f'<div class="problems" id="problems"><strong>{len(derived["problems"])} '
            f"problem(s): FAIL / ERROR</strong><ul>{items}</ul></div>"
        )
        problems_md = (
            "**Problems (FAIL / ERROR):**\n\n"
            + "\n".join(f"- **{p}**" for p in derived["problems"])
            + "\n"
        )
    else:
        problems_html = '<div class="ok" id="problems">No FAIL and no ERROR anywhere.</div>'
        problems_md = "No FAIL and no ERROR anywhere.\n"
    summary = scoreboard_tables(derived)
    if not summary:
        summary = [("Scoreboard", ["backend"], [["no backend data in this report"]])]
    sections.append(
        (
            "Summary",
            [problems_html] + [table_html(t, f"summary-{i}") for i, t in enumerate(summary)],
            [problems_md] + [table_md(t) for t in summary],
        )
    )

    machine = machine_table(report)
    sections.append(("Machine", [table_html(machine, "machine")], [table_md(machine)]))
    support = support_table(report)
    sections.append(("Support", [table_html(support, "support")], [table_md(support)]))
    conf = conformance_tables(report)
    sections.append(
        (
            "Conformance",
            [table_html(t, f"conformance-{i}") for i, t in enumerate(conf)],
            [table_md(t) for t in conf],
        )
    )

    acc = accuracy_table(derived, report)
    most_accurate = most_accurate_table(derived)
    acc_html = [table_html(acc, "accuracy"), table_html(most_accurate, "most-accurate")]
    accuracy = report.get("accuracy", {})
    if accuracy.get("command"):
        acc_html.append(
            f'<p class="note">From <code>{html.escape(accuracy["command"])}</code>.</p>'
        )
    for what, points, ylabel in (
        ("worst ULP per problem", derived["ulp_points"], "ULP"),
        ("error / K-aware bound per problem", derived["bound_points"], "fraction of bound"),
    ):
        if points:
            acc_html.append(
                plot_html(plot_accuracy(points, what, ylabel), f"plot-accuracy-{what[:5]}")
            )
    fuzz = fuzz_tables(report)
    acc_html += [table_html(t, f"fuzz-{i}") for i, t in enumerate(fuzz)]
    sections.append(
        (
            "Accuracy",
            acc_html,
            [table_md(acc), table_md(most_accurate)] + [table_md(t) for t in fuzz],
        )
    )

    speed_html, speed_md = [], []
    settings = report.get("speed", {}).get("settings", {})
    speed_html.append(
        f'<p class="note">Google Benchmark (mm-bench, <code>--mm_set={settings.get("set")}</code>, '
        f'min time {settings.get("min_time")} s, {settings.get("repetitions")} repetition(s), the '
        "median when more than one), with OMP_NUM_THREADS = "
        f"{', '.join(map(str, threads_list))}. GFLOP/s = 2·batch·M·N·K per second. At 1 thread "
        "every figure is per second of the process's CPU time: the time the work had a core, "
        "which a busy machine does not change (wall-time figures are in compare.json and the "
        "tables); at more threads, per second of wall time, which other work on the machine "
        "lowers (see the load average in Machine). Dashed lines are the bare libraries "
        "(baselines), in their backend's colour. Percent of peak: against the peak/&lt;dtype&gt; "
        "microbenchmark at the same thread count (CPU time).</p>"
    )
    for dtype in derived["dtypes"]:
        plot = plot_sweep(derived["records"], dtype, threads_list, derived["peaks"])
        speed_html.append(plot_html(plot, f"plot-sweep-{dtype}"))
    for threads in threads_list:
        speed_html.append(plot_html(plot_tiny(derived["records"], threads), f"plot-tiny-{threads}"))
    scaling = plot_scaling(derived["records"], threads_list)
    speed_html.append(plot_html(scaling, "plot-scaling"))
    for i, t in enumerate([fastest_table(derived)] + speed_tables(derived)):
        speed_html.append(table_html(t, f"speed-{i}"))
        speed_md.append(table_md(t))
    sections.append(("Speed", speed_html, speed_md))

    sections.append(auto_choice_section(auto_table))

    timing = timing_table(report)
    how = (
        f"Made by <code>scripts/compare.sh{' --quick' if report.get('mode') == 'quick' else ''}"
        f"{' ' + ' '.join(report.get('extra_args', [])) if report.get('extra_args') else ''}"
        "</code> from <code>compare.json</code> (the data behind this page)."
    )
    sections.append(
        (
            "How this report was made",
            [f"<p>{how}</p>", table_html(timing, "timings")],
            [re.sub(r"</?code>", "`", how) + "\n", table_md(timing)],
        )
    )

    date = m.get("date", "?").replace("T", " ").replace("+00:00", " UTC")
    title = (
        f"mm backend comparison: {m.get('cpu_model', '?')}, {date}"
        f"{' (quick)' if report.get('mode') == 'quick' else ''}"
    )
    body = [
        f"<h1>{html.escape(title)}</h1>",
        "<nav>"
        + " · ".join(
            f'<a href="#{s[0].split()[0].lower()}">{html.escape(s[0])}</a>' for s in sections
        )
        + "</nav>",
    ]
    for name, parts, _ in sections:
        body.append(f'<h2 id="{name.split()[0].lower()}">{html.escape(name)}</h2>')
        body.extend(parts)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
    markdown = [f"# {title}\n"]
    for name, _, parts in sections:
        markdown.append(f"## {name}\n")
        markdown.extend(parts)
    derived_json = {
        "problems": derived["problems"],
        "scoreboard": derived["scoreboard"],
        "fastest": derived["fastest"],
        "accuracy": derived["accuracy_rows"],
        "speed": [{k: v for k, v in r.items()} for r in derived["records"]],
    }
    return page, "\n".join(markdown), derived_json


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare_json", type=pathlib.Path)
    parser.add_argument("--html", required=True, type=pathlib.Path)
    parser.add_argument("--markdown", required=True, type=pathlib.Path)
    parser.add_argument(
        "--derived",
        type=pathlib.Path,
        help="also write the derived tables (scoreboard, ...) as JSON here",
    )
    parser.add_argument(
        "--auto-table",
        type=pathlib.Path,
        default=None,
        help="the auto backend's calibration table, for its choice map",
    )
    args = parser.parse_args()
    report = json.loads(args.compare_json.read_text())  # Read only: the data stays as collected.
    page, markdown, derived = render(report, args.auto_table)
    args.html.write_text(page)
    args.markdown.write_text(markdown)
    if args.derived:
        args.derived.write_text(json.dumps(derived, indent=1))
    print(
        f"compare: wrote {args.html}, {args.markdown} ({len(derived['problems'])} problem(s))",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
