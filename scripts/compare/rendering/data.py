"""The report's data: compare.json read (never written) and what the page derives from it.

benchmark_records() flattens Google Benchmark's JSON; configure() takes the backends, their order,
colours and the baselines from the report itself; derive() and scoreboard() compute the figures
every table and plot shows (fastest, accuracy, problems, the scoreboard). Nothing here formats or
draws.
"""

import collections
import json
import math
import re

from . import stability

DTYPE_ORDER = ["float", "double", "float16", "bfloat16", "int32", "int64", "uint32", "uint64"]
# Filled from the report by configure(): baseline name -> label, baseline -> the backend it
# measures, implementation -> colour, backend -> position in the registry's order.
BASELINES = {}
BASELINE_OF = {}
COLOURS = {}
ORDER = {}
SQUARE_RE = re.compile(r"^(\d+)x(\d+)x(\d+)$")
# The scoreboard's speed columns: two square sizes (at 1 thread and all cores) and a tiny shape.
SCORE_SHAPES = ["256x256x256", "1024x1024x1024"]
TINY_SHAPE = "tiny_3x4x3"
# ONNX's arithmetic, what a pass is measured against: float16 and bfloat16 accumulated in
# float32, float and double in their own type, integers exact modulo 2^bits. A backend declaring
# less (fewer significant bits, a float type for an integer, flushed subnormals) is judged against
# a looser bound, and the scoreboard says so.
ONNX_ACCUMULATION = {"float16": "float", "bfloat16": "float"}
SIGNIFICANT_BITS = {"bfloat16": 8, "float16": 11, "float": 24, "double": 53}
INTEGERS = {"int32", "int64", "uint32", "uint64"}
# MatMul's family beyond MatMul, and the first part of each operator's benchmark names (mm-bench
# --op): "matmulinteger/<backend>/<types>/<shape>".
FAMILY_OPS = ["Gemm", "MatMulInteger", "QLinearMatMul"]
FAMILY_BENCH_KINDS = {op.lower(): op for op in FAMILY_OPS}


def load_report(path):
    """compare.json (a pathlib.Path) as collect.py wrote it, read only: it stays as collected."""
    return json.loads(path.read_text())


def load_auto_table(path):
    """The auto backend's calibration table (mm-bench --mm_calibrate), or None when it is absent."""
    if path is None or not path.exists():
        return None
    return json.loads(path.read_text())


def auto_choices(table):
    """Per (dtype, "A shape · B shape"): {threads: the backend ranked first, with its margin (the
    runner-up's time over the winner's)}; and the thread counts, sorted."""
    threads = sorted({c["threads"] for c in table.get("cells", [])})
    choices = {}
    for c in table.get("cells", []):
        shape = "x".join(map(str, c["a"])) + " · " + "x".join(map(str, c["b"]))
        secs = c.get("seconds") or []
        margin = f" ({secs[1] / secs[0]:.2f}x)" if len(secs) > 1 and secs[0] > 0 else ""
        choices.setdefault((c["dtype"], shape), {})[c["threads"]] = c["ranking"][0] + margin
    return choices, threads


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
        if p not in ("real_time", "process_time", "manual_time")
        and not p.startswith(("threads:", "iterations:"))
    )


def seconds(entry, key):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    return entry[key] * scale


def rate_seconds_of(entry, threads):
    """The time a figure is rated by. At 1 thread the process's CPU time for mm's own backends:
    the time the work had a core, which a shared machine leaves put while wall time grows with the
    load; a runtime's figure is its own clock's (manual time, in another process); more threads:
    wall."""
    name = entry.get("run_name", entry["name"])
    kind = base_name(name).split("/")[0]
    cpu = seconds(entry, "cpu_time")
    if threads == 1 and cpu > 0 and kind in ("matmul", "prepare") and "manual_time" not in name:
        return cpu
    # The family's benchmarks of a library measure the process's CPU time (a runtime's do not:
    # its work is in its driver's process).
    if threads == 1 and cpu > 0 and kind in FAMILY_BENCH_KINDS and "process_time" in name:
        return cpu
    return seconds(entry, "real_time")


def _iterations(benchmark_json):
    """run name -> its repetitions' entries (Google Benchmark's run_type "iteration")."""
    by_name = collections.defaultdict(list)
    for entry in benchmark_json.get("benchmarks", []):
        if entry.get("run_type", "iteration") == "iteration" and not entry.get("error_occurred"):
            by_name[entry.get("run_name", entry["name"])].append(entry)
    return by_name


def repetition_seconds(benchmark_json, threads):
    """run name -> the rated seconds of each repetition (what the stability rule judges)."""
    return {
        name: [rate_seconds_of(e, threads) for e in entries]
        for name, entries in _iterations(benchmark_json).items()
    }


def _attempt(entries, load, threads, cpus):
    """One measurement of a benchmark: its repetitions' spread, load and the rule's reasons."""
    reps = sorted(rate_seconds_of(e, threads) for e in entries)
    return {
        "repetitions": len(reps),
        "min_seconds": reps[0],
        "median_seconds": reps[len(reps) // 2],
        "max_seconds": reps[-1],
        "load": load,
        "unstable": stability.judge(reps, load, threads, cpus),
    }


def _record(entry, threads):
    name = entry.get("run_name", entry["name"])
    parts = base_name(name).split("/")
    record = {"name": name, "threads": threads, "error": None}
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
    elif parts[0] in FAMILY_BENCH_KINDS and len(parts) >= 4:
        # An operator of MatMul's family (its own section): never among MatMul's figures.
        record.update(
            kind="family",
            op=FAMILY_BENCH_KINDS[parts[0]],
            impl=parts[1],
            dtype=parts[2],
            shape=parts[3],
        )
    elif parts[0] == "prepare":
        record.update(kind="prepare", impl=parts[1], dtype=parts[-2], shape=parts[-1])
    elif len(parts) >= 3:  # A baseline (listed by mm-bench, or any other family).
        BASELINES.setdefault(parts[0], parts[0])
        # A baseline timed on element types that are no MatMul dtype (an operator's of the
        # family, "uint8xint8") is a yardstick of the operators' sections, not of MatMul's.
        kind = "execute" if parts[1] in DTYPE_ORDER else "operator_baseline"
        record.update(kind=kind, impl=parts[0], dtype=parts[1], shape=parts[2])
    else:
        return None
    record["runtime_clock"] = "manual_time" in name
    return record


def benchmark_records(speed):
    """One record per benchmark and thread count, from its first stable measurement (collect.py
    measures an unstable one again): the median of its repetitions, with their spread and the
    machine's load. When no measurement is stable the record carries no speed ("unstable": why,
    and each attempt), so no table, plot or ranking takes it for the library's speed."""
    attempts = collections.defaultdict(list)  # (run name, threads) -> [(entries, load, cpus)]
    errors = {}
    for run in sorted(speed.get("runs", []), key=lambda r: r.get("attempt", 0)):
        data = run["benchmark_json"]
        cpus = (data.get("context") or {}).get("num_cpus") or run["threads"]
        for entry in data.get("benchmarks", []):
            if entry.get("error_occurred"):
                errors.setdefault((entry.get("run_name", entry["name"]), run["threads"]), entry)
        for name, entries in _iterations(data).items():
            load = (run.get("load") or {}).get(name)
            attempts[(name, run["threads"])].append((entries, load, cpus))
    records = []
    for (name, threads), entry in errors.items():
        if (name, threads) not in attempts:
            record = _record(entry, threads)
            if record:
                records.append(record)
    for (name, threads), tries in attempts.items():
        measured = [_attempt(entries, load, threads, cpus) for entries, load, cpus in tries]
        chosen = next((i for i, a in enumerate(measured) if not a["unstable"]), None)
        entries = tries[len(tries) - 1 if chosen is None else chosen][0]
        # The repetition at the median is the figure (its wall time and counters with it).
        median = sorted(entries, key=lambda e: rate_seconds_of(e, threads))[len(entries) // 2]
        record = _record(median, threads)
        if record is None:
            continue
        record.update(measured[-1 if chosen is None else chosen])
        record["attempts"] = measured
        if median.get("GFLOPS"):  # Flops per call: the GFLOP/s of each repetition's time.
            record["flops"] = median["GFLOPS"] * 1e9 * seconds(median, "real_time")
        if chosen is None:
            records.append(record)
            continue
        record["seconds"] = seconds(median, "real_time")
        record["cpu_seconds"] = seconds(median, "cpu_time")
        record["gflops"] = median.get("GFLOPS")
        record["rate_seconds"] = rate_seconds_of(median, threads)
        if record["gflops"]:
            record["rate_gflops"] = record["gflops"] * record["seconds"] / record["rate_seconds"]
        records.append(record)
    return records


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


def impl_label(impl):
    return BASELINES.get(impl, impl)


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


def fuzz_exit_reasons(fuzz_report, findings):
    """Why mm-fuzz failed beyond the declared findings that `findings` shows: its errors, and
    failures that no declared finding accounts for (uncounted ones are beyond --max-findings).
    Empty when every failure is a declared finding, so the exit code is no further problem."""
    reasons = [
        f"error: {e}" for e in fuzz_report.get("errors", []) + [fuzz_report.get("error")] if e
    ]
    failing = [
        f
        for f in findings
        if isinstance(f, dict) and str(f.get("kind", "")) not in ("XFAIL", "NONDETERMINISTIC")
    ]
    declared = sum(1 for f in failing if f.get("declared"))
    failures = (fuzz_report.get("stats") or {}).get("failures")
    if not isinstance(failures, int):
        reasons.append("its report counts no failures (stats.failures)")
    elif failures > declared:
        reasons.append(
            f"{failures} failure(s), {declared} of them declared findings"
            + (
                f", {failures - len(failing)} beyond the findings shown (raise --max-findings)"
                if failures > len(failing)
                else ""
            )
        )
    return reasons


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
    # XFAIL is a deviation the project declared (Conformance lists them with their reasons); XPASS,
    # a declared one that did not occur, is a problem: the declaration is out of date.
    for r in conformance.get("results", []):
        if r.get("verdict") in ("FAIL", "ERROR", "XPASS"):
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
    # A finding a runtime's fuzz declarations name (collect.py: "declared") is listed in Accuracy
    # with its reason; so are XFAIL ones (mm-fuzz's expectations). Neither is a problem.
    undeclared = 0
    for f in (accuracy.get("report") or {}).get("findings", []) or []:
        if (
            isinstance(f, dict)
            and str(f.get("kind", "")).upper() in ("FAIL", "FAILURE", "ERROR")
            and not f.get("declared")
        ):
            undeclared += 1
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
    findings = (accuracy.get("report") or {}).get("findings") or []
    if accuracy.get("report") and accuracy.get("exit_code") not in (0, None):
        unexplained = fuzz_exit_reasons(accuracy["report"], findings)
        if undeclared or unexplained:
            problems.append(
                f"mm-fuzz exited {accuracy['exit_code']}"
                + (f": {'; '.join(unexplained)}" if unexplained else "")
                + " (findings: see the accuracy section)"
            )
    declared = sum(1 for r in conformance.get("results", []) if r.get("verdict") == "XFAIL") + sum(
        1
        for f in findings
        if isinstance(f, dict) and (f.get("declared") or f.get("kind") == "XFAIL")
    )
    return {
        "declared": declared,
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


def shape_sort_key(shape):
    kind_order = {"square": 0, "batched": 1, "broadcast": 2, "tiny": 3, "other": 4}
    match = SQUARE_RE.match(shape)
    return (kind_order[shape_kind(shape)], int(match.group(1)) if match else 0, shape)


def conformance_gaps(results):
    """(backend, dtype) -> the shape classes it refused on a dtype it declares: its ERROR results
    whose message says "conformance gap: " (mm/engine/backend.h), by shape class or A x B shape."""
    from .shape_matrix import shape_class_of

    gaps = collections.defaultdict(set)
    for r in results:
        if (r.get("op") or "MatMul") != "MatMul":
            continue  # MatMul's scoreboard; the family's gaps are in their operators' sections.
        if r.get("verdict") == "ERROR" and "conformance gap: " in str(r.get("message", "")):
            where = shape_class_of(r.get("case", "")) or f"{r.get('a_shape')} x {r.get('b_shape')}"
            gaps[(r.get("backend"), r.get("dtype"))].add(where)
    return gaps


def looser_than_onnx(dtype, arithmetic):
    """Why `arithmetic` (a backend's declaration for `dtype`: mm-bench's "arithmetic") is looser
    than ONNX's arithmetic, or None when it is not (or nothing was declared)."""
    if not arithmetic:
        return None
    accumulation = arithmetic.get("accumulation")
    onnx = ONNX_ACCUMULATION.get(dtype, dtype)
    why = []
    if dtype in INTEGERS:
        if accumulation not in INTEGERS:
            why.append(f"{dtype} computed in {accumulation}, not exact modulo 2^bits")
    elif SIGNIFICANT_BITS.get(accumulation, 0) < SIGNIFICANT_BITS[onnx]:
        why.append(f"accumulates in {accumulation} where ONNX uses {onnx}")
    if arithmetic.get("flushes_subnormals"):
        why.append("flushes subnormals, which ONNX keeps")
    return "; ".join(why) or None


def scoreboard(report, derived):
    """One entry per (dtype, backend): conformance, IEEE specials, worst / bound, speed."""
    c = report.get("conformance", {})
    official = {
        f.get("case") for f in (c.get("official") or {}).get("found", []) if isinstance(f, dict)
    }
    conformance = collections.defaultdict(collections.Counter)
    for r in c.get("results", []):
        # MatMul's results only: the family's operators have their own sections.
        if r.get("dtype") and (r.get("op") or "MatMul") == "MatMul":
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
    # The fuzzer's findings a runtime's declarations name: its deviation, per backend and dtype.
    # Only where every finding of the pair is declared: an undeclared one keeps the cell red.
    declared_findings = collections.defaultdict(dict)
    undeclared_findings = set()
    for f in fuzz.get("findings") or []:
        if not isinstance(f, dict):
            continue
        key = (f.get("backend"), f.get("dtype"))
        if isinstance(f.get("declared"), dict):
            declared_findings[key][f["declared"]["name"]] = f["declared"]
        elif f.get("kind") != "XFAIL":
            undeclared_findings.add(key)
    for key in undeclared_findings:
        declared_findings.pop(key, None)
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
    runtimes = {
        b["name"] for b in report.get("machine", {}).get("backends", []) if b.get("runtime")
    }
    gaps = conformance_gaps(c.get("results", []))
    entries = []
    for dtype in DTYPE_ORDER:
        for backend in backends:
            support = supports.get(backend, {}).get(dtype)
            entry = {
                "dtype": dtype,
                "backend": backend,
                "support": support["level"] if support else None,
                "support_note": support.get("note", "") if support else "",
                "arithmetic": (support or {}).get("arithmetic"),
                "looser_than_onnx": looser_than_onnx(dtype, (support or {}).get("arithmetic")),
                "fuzz": dict(by_dtype.get(backend, {}).get(dtype, {})),
                "fuzz_declared": list(declared_findings.get((backend, dtype), {}).values()),
            }
            for source in ("official", "built-in", "other"):
                entry[source] = dict(conformance.get((backend, dtype, source), {}))
            special = specials.get((backend, dtype))
            entry["special_problems"] = special["special_problems"] if special else None
            entry["special_wrong"] = special["special_wrong"] if special else None
            row = accuracy.get((backend, dtype))
            entry["worst_bound_fraction"] = row["worst_bound_fraction"] if row else None
            # Each figure with its spread and load; an unstable one has no rate ("unstable").
            entry["speed"] = {
                shape: {
                    str(t): records[(backend, dtype, shape, t)]
                    for t in threads
                    if (backend, dtype, shape, t) in records
                }
                for shape in SCORE_SHAPES
            }
            entry["gflops"] = {
                shape: {t: r.get("rate_gflops") for t, r in entry["speed"][shape].items()}
                for shape in SCORE_SHAPES
            }
            entry["tiny"] = records.get((backend, dtype, TINY_SHAPE, 1))
            entry["tiny_seconds"] = entry["tiny"].get("rate_seconds") if entry["tiny"] else None
            entry["kind"] = "runtime" if backend in runtimes else "library"
            entry["gaps"] = sorted(gaps.get((backend, dtype), ()))
            # What its calls left behind (mm-conformance's "resources"): per backend, any dtype.
            entry["resources"] = ((c.get("resources") or {}).get("backends") or {}).get(backend)
            entries.append(entry)
    return entries
