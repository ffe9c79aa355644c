"""The tables, shared by the HTML and the Markdown emitters.

A table is (caption, header, rows); a cell is text or (text, details): the details open under a
verdict on the page and follow it in Markdown. Numbers are formatted here, nowhere else.
"""

from .data import (
    DTYPE_ORDER,
    SCORE_SHAPES,
    TINY_SHAPE,
    auto_choices,
    impl_label,
    impl_order,
    shape_kind,
    shape_sort_key,
)
from .shape_matrix import shape_class_of


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


def fmt_facts(facts):
    if isinstance(facts, dict):
        return "; ".join(f"{k}: {fmt_facts(v)}" for k, v in facts.items())
    if isinstance(facts, list):
        return ", ".join(fmt_facts(v) for v in facts)
    return str(facts)


def fmt_measurement(r):
    """A measurement's dispersion and the machine's load, in words (a speed figure's details)."""
    load = r.get("load")
    where = (
        "load not measured"
        if not load
        else f"other processes used {load['other_cores']:.2f} cores, "
        f"{load.get('steal_cores', 0):.2f} stolen, load average "
        f"{load['loadavg'][0]:.1f} → {load['loadavg'][1]:.1f}"
    )
    return (
        f"{r['repetitions']} repetition(s): min {fmt_time(r['min_seconds'])}, median "
        f"{fmt_time(r['median_seconds'])}, max {fmt_time(r['max_seconds'])} per call; {where}"
    )


class Figure(tuple):
    """A speed figure's cell: (text, details) like every cell with details, shown whole in the
    page, and `summary`, what the Markdown twin shows instead of every attempt's details."""

    def __new__(cls, text, details, summary):
        cell = super().__new__(cls, (text, details))
        cell.summary = summary
        return cell


def fmt_spread_summary(r):
    """A measurement's repetitions and the other processes' load, briefly ("3 reps, others 0.12
    cores")."""
    load = r.get("load")
    others = f"others {load['other_cores']:.2f} cores" if load else "load not measured"
    return f"{r['repetitions']} reps, {others}"


def fmt_speed(r, unit="gflops", extra=""):
    """A speed figure with its spread (Figure: "12.3 [11.9–12.5]", details: repetitions and load),
    or Figure("unstable", why) when no measurement passed the stability rule."""
    if r is None:
        return "–"
    if r.get("error"):
        return ("ERROR", r["error"])
    attempts = r.get("attempts") or [r]
    history = " | ".join(
        f"attempt {i + 1}: {fmt_measurement(a)}"
        + (f" ({'; '.join(a['unstable'])})" if a.get("unstable") else "")
        for i, a in enumerate(attempts)
    )
    if r.get("unstable"):
        why = "; ".join(r["unstable"])
        return Figure(
            "unstable",
            f"not shown as the speed: {why}. {history}",
            f"unstable: {why} ({len(attempts)} attempt(s))",
        )
    if unit == "time":
        low, high = r["min_seconds"], r["max_seconds"]
        text = f"{fmt_time(r['rate_seconds'])} [{fmt_time(low)}–{fmt_time(high)}]"
    else:
        # GFLOP/s of the slowest and fastest repetition, from the figure's own rate.
        scale = r["rate_gflops"] * r["rate_seconds"]
        text = (
            f"{fmt_num(r['rate_gflops'])} [{fmt_num(scale / r['max_seconds'])}–"
            f"{fmt_num(scale / r['min_seconds'])}]"
        )
    clock = " Timed by the runtime's own clock." if r.get("runtime_clock") else ""
    return Figure(text + extra, history + clock, f"{text}{extra}, {fmt_spread_summary(r)}")


def fmt_load(values):
    return "?" if not values else " ".join(f"{v:.1f}" for v in values)


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


def fmt_resources(figures):
    """What a backend's calls left behind (mm-conformance's resource findings, which fail a run
    under --strict): '–' without figures, 'none', or the findings, shortened, with their whole
    texts as details."""
    if not figures:
        return "–"
    findings = figures.get("findings") or []
    if not findings:
        return "none"
    short = "; ".join(f.split(" (")[0] for f in findings)
    return (f"FAIL under --strict: {short}", "; ".join(findings))


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
    for name, why in (m.get("unavailable_backends") or {}).items():
        rows.append([f"backend {name}", f"not available here: {why}"])
    for name, facts in libs.items():
        # What mm-bench's probe of a linked library says, as it says it.
        rows.append([f"library {name} (mm-bench's probe)", fmt_facts(facts)])
    for package, version in m.get("packages", {}).items():
        rows.append([f"package {package}", version or "not installed"])
    return ("Machine", ["", ""], rows)


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
    # The shape-class catalogue's cases are in the summary's matrix, one cell per class.
    results = [r for r in c.get("results", []) if shape_class_of(r["case"]) is None]
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
        f"{s.get('ERROR', 0)} ERROR, {s.get('XFAIL', 0)} XFAIL (declared deviations), "
        f"{s.get('XPASS', 0)} XPASS (tolerance rtol {c.get('tolerance', {}).get('rtol')}, "
        f"atol {c.get('tolerance', {}).get('atol')}; click a verdict for its details)"
    )
    tables = [(caption, ["case / data set", *backends], rows)]
    declared = declared_table(report)
    if declared:
        tables.append(declared)
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


def declared_table(report):
    """The declared deviations (expectations) the conformance run applied: each entry that decided
    a result, with its reason and link; None when the run had none."""
    c = report.get("conformance", {})
    expectations = c.get("expectations") or {}
    entries = expectations.get("entries") or []
    if not entries:
        return None
    rows = [
        [
            str(e.get("backend", "")),
            str(e.get("case", "")) + (f" / {e['data_set']}" if e.get("data_set") else ""),
            str(e.get("expect", "")),
            str(e.get("matched", 0)),
            f"{e.get('reason', '')} ({e.get('link', '')})",
        ]
        for e in entries
        if e.get("matched")
    ]
    unmatched = sum(1 for e in entries if not e.get("matched") and not e.get("not_here"))
    elsewhere = [e for e in entries if e.get("not_here")]
    applied = report.get("declared_expectations") or {}
    source = ", ".join(applied.get("files", [])) or expectations.get("file", "?")
    caption = (
        f"Declared deviations: the known failures of libraries and runtimes ({source}), applied "
        "to this run; their results are XFAIL (or SKIP), not problems"
        + (
            f"; {unmatched} more entr{'y' if unmatched == 1 else 'ies'} matched no result here "
            "(cases this run did not judge)"
            if unmatched
            else ""
        )
        + "".join(
            f"; not for this CPU ({e['not_here']}): {e.get('backend', '')} "
            f"{e.get('case', '')}, a deviation of a code path this CPU does not take"
            for e in elsewhere
        )
    )
    if not rows:
        rows = [["–", "no entry matched a result of this run", "", "0", ""]]
    return (caption, ["backend", "cases", "expect", "results", "reason (link)"], rows)


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
            declared = f.get("declared") or {}
            rows.append(
                [
                    str(f.get("kind", "")) + (" (declared)" if declared else ""),
                    str(f.get("backend", "")),
                    str(f.get("dtype", "")),
                    f"{f.get('minimal_a_shape', f.get('a_shape'))} x "
                    f"{f.get('minimal_b_shape', f.get('b_shape'))}",
                    fmt_num(worst.get("abs_error")),
                    fmt_num(worst.get("bound")),
                    fmt_num(fraction),
                    (
                        str(f.get("message", ""))[:60] + "…",
                        f"{f.get('message', '')} Replay: {f.get('replay', '')}"
                        + (f" Declared: {f['expectation']}" if f.get("expectation") else "")
                        + (
                            f" Declared: {declared.get('reason')} ({declared.get('file')})"
                            if declared
                            else ""
                        ),
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
    if not peak_rows:
        peak_rows = [["–", "–", "no stable measurement of the peak", "–"]]
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
                    pct = r.get("percent_of_peak") if r else None
                    wall = r.get("gflops") if r and t == 1 and not r.get("runtime_clock") else None
                    row.append(
                        fmt_speed(
                            r,
                            extra=(f" ({pct:.0f} %)" if pct else "")
                            + (f", wall {fmt_num(wall)}" if wall else ""),
                        )
                    )
            rows.append(row)
        tables.append(
            (
                f"{dtype}: GFLOP/s, median [slowest–fastest repetition] (percent of this "
                f"machine's measured {dtype} peak at the same thread count); 1 thread: by CPU "
                f"time, then by wall time; runtimes by their own clock; 'unstable': no "
                f"measurement passed the stability rule (details: repetitions and load)",
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
        if prepare.get("unstable"):
            rows.append([impl_label(impl), dtype, shape, fmt_speed(prepare), "–", "–"])
            continue
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
                fmt_speed(prepare, unit="time"),
                fmt_speed(execute, unit="time") if execute else "–",
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
        key=lambda r: (
            DTYPE_ORDER.index(r["dtype"]),
            r["shape"],
            r["threads"],
            r.get("rate_seconds", float("inf")),
        ),
    ):
        rows.append(
            [
                r["dtype"],
                r["shape"],
                str(r["threads"]),
                impl_label(r["impl"]),
                fmt_speed(r, unit="time"),
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


def fmt_arithmetic(entry):
    """The declared arithmetic of a scoreboard entry, marked LOOSER (with why) where it is looser
    than ONNX's arithmetic."""
    arithmetic = entry.get("arithmetic")
    if entry.get("support") in (None, "no") or not arithmetic:
        return "–"
    text = arithmetic.get("text") or arithmetic.get("accumulation", "?")
    if entry.get("looser_than_onnx"):
        return (f"LOOSER than ONNX: {text}", entry["looser_than_onnx"])
    return text


def fmt_fuzz(entry):
    """The fuzzer's verdict counts; where its failures are a runtime's declared deviation, said so
    with the deviation's name and reason (collect.py marks the findings)."""
    counts = fmt_counts(entry["fuzz"])
    declared = entry.get("fuzz_declared") or []
    if not declared:
        return counts
    why = "; ".join(f"{d['name']}: {d['reason']} ({d.get('file', '')})" for d in declared)
    return (f"declared deviation: {counts}", why)


def scoreboard_tables(derived):
    """Per dtype, one row per backend; a backend that does not compute the dtype says why."""
    threads = derived["threads"]
    has_other = any(e["other"] for e in derived["scoreboard"])
    header = ["backend", "kind", "support", "declared arithmetic", "official", "built-in"]
    header += ["other cases"] if has_other else []
    header += ["refused shape classes", "fuzz", "IEEE specials", "worst / bound"]
    for shape in SCORE_SHAPES:
        size = shape.split("x")[0]
        header += [f"{size}³ GFLOP/s, {t}t" for t in threads]
    header += [f"{TINY_SHAPE} per call, 1t", "left behind"]
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
            row = [e["backend"], e["kind"], support, fmt_arithmetic(e)]
            row += [fmt_counts(e["official"]), fmt_counts(e["built-in"])]
            if has_other:
                row.append(fmt_counts(e["other"]))
            # Shapes refused on a dtype the backend declares: ERROR results, never UNSUPPORTED.
            gaps = e.get("gaps") or []
            row.append(
                (f"ERROR: {len(gaps)} conformance gap(s)", "; ".join(gaps)) if gaps else "none"
            )
            row.append(fmt_fuzz(e))
            if not e["special_problems"]:
                row.append("–")
            elif e["special_wrong"]:
                row.append(f"WRONG in {e['special_wrong']} of {e['special_problems']}")
            else:
                row.append(f"correct ({e['special_problems']})")
            row.append(fmt_num(e["worst_bound_fraction"]))
            for shape in SCORE_SHAPES:
                row += [fmt_speed(e["speed"][shape].get(str(t))) for t in threads]
            row += [fmt_speed(e["tiny"], unit="time"), fmt_resources(e.get("resources"))]
            rows.append(row)
        tables.append(
            (
                f"Scoreboard, {dtype}: the arithmetic each backend declares (its error bound; "
                "LOOSER where it is looser than ONNX's arithmetic, float32 accumulation for "
                "float16 and bfloat16, exact integers: its passes were earned against a looser "
                "bound), conformance verdicts (official ONNX cases, mm's "
                "built-in cases, the differential fuzzer's problems), IEEE specials (results "
                "with NaN/inf inputs whose NaN/inf outputs are IEEE's), worst error as a "
                "fraction of the K-aware bound (> 1: outside), GFLOP/s (1 thread by CPU "
                "time, more by wall time, runtimes by their own clock; median [slowest–fastest "
                "repetition], 'unstable' when no measurement passed the stability rule), time "
                "per call, shapes a runtime refused on a dtype it declares (conformance gaps, "
                "ERROR results), what its calls left behind (memory, "
                "descriptors or threads per call, threads left spinning)",
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
    if not rows:
        rows = [["–", "–", "–", "no stable measurement to rank (see the speed tables)", "–", "–"]]
    return (
        "Fastest backend per dtype, thread count and size (square sweep; baselines left out; "
        "stable figures only)",
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
        again = (
            f", measuring unstable figures again ({run['attempt']})" if run.get("attempt") else ""
        )
        rows.append(
            [f"  mm-bench, {run['threads']} thread(s){again}", fmt_num(run["seconds"]) + " s"]
        )
    return ("How long each part took", ["part", "wall time"], rows)


def auto_choice_table(table, file_name):
    """Backend auto runs per dtype, shape and thread count, from its calibration table (read by
    data.load_auto_table from the file named file_name)."""
    machine = table.get("machine", {})
    choices, threads = auto_choices(table)
    rows = [
        [dtype, shape] + [row.get(t, "") for t in threads]
        for (dtype, shape), row in sorted(choices.items())
    ]
    caption = (
        f"Backend auto runs per dtype, shape and thread count (the runner-up's time over "
        f"the winner's), from {file_name}, created {table.get('created', '?')} on "
        f"{machine.get('cpu_model', '?')} ({machine.get('logical_cpus', '?')} CPUs), "
        f"candidates {', '.join(sorted(machine.get('backends', {})))}"
    )
    return (caption, ["dtype", "A · B"] + [f"{n} thread(s)" for n in threads], rows)
