"""The report's sections of MatMul's family: one per operator (Gemm, MatMulInteger, QLinearMatMul),
and the summary's list of the operators each backend gets wrong.

Every figure is read from compare.json: the operator every result names (mm-conformance's `op`,
absent in older reports: MatMul), mm-bench's `operators` (each backend's support per description)
and its family benchmarks (`gemm/`, `matmulinteger/`, `qlinearmatmul/`), and the fuzzer's report
per operator (`family.accuracy`, collect.py). No backend is known here by name.
"""

import collections

from .data import FAMILY_OPS, ORDER, accuracy_tables, impl_label, impl_order

SHAPES = ["256x256x256", "1024x1024x1024"]
TINY_SHAPE = "tiny_3x4x3"
WRONG = ("FAIL", "ERROR", "XPASS")


def op_of(result):
    """The operator a result names; a result of an older tool names none: MatMul."""
    return result.get("op") or "MatMul"


def family_accuracy(report, op):
    """collect.py's fuzz run of `op`: {"report", "crashes", "not_fuzzed", ...}, or {}."""
    return ((report.get("family") or {}).get("accuracy") or {}).get(op) or {}


def _undeclared_findings(fuzz_report):
    for f in (fuzz_report or {}).get("findings") or []:
        if (
            isinstance(f, dict)
            and str(f.get("kind", "")).upper() in ("FAIL", "FAILURE", "ERROR")
            and not f.get("declared")
        ):
            yield f


def operators_wrong(report):
    """backend -> {operator -> [what went wrong]}: conformance FAIL, ERROR or XPASS of a result
    naming the operator, the fuzzer's undeclared FAIL and ERROR findings and its crashes (MatMul's
    from the accuracy section, the family's per operator)."""
    wrong = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for r in (report.get("conformance") or {}).get("results") or []:
        if r.get("verdict") in WRONG and r.get("backend"):
            wrong[r["backend"]][op_of(r)][f"conformance {r['verdict']}"] += 1
    runs = [("MatMul", report.get("accuracy") or {})]
    runs += [(op, family_accuracy(report, op)) for op in FAMILY_OPS]
    for op, run in runs:
        for f in _undeclared_findings(run.get("report")):
            wrong[f.get("backend")][op][f"fuzzer {str(f.get('kind')).upper()}"] += 1
        for c in run.get("crashes") or []:
            wrong[c.get("backend")][op]["fuzzer crash"] += 1
    return {
        backend: {
            op: [f"{n} {what}" for what, n in sorted(counts.items())]
            for op, counts in sorted(ops.items(), key=lambda kv: _op_order(kv[0]))
        }
        for backend, ops in wrong.items()
        if backend
    }


def _op_order(op):
    order = ["MatMul"] + FAMILY_OPS
    return order.index(op) if op in order else len(order)


def family_problems(report):
    """The family fuzz runs' undeclared findings and crashes, for the problems at the top (the
    conformance results' are listed there already, whatever their operator)."""
    problems = []
    for op in FAMILY_OPS:
        run = family_accuracy(report, op)
        for f in _undeclared_findings(run.get("report")):
            problems.append(
                f"fuzzer {f.get('kind')}: {op} on {f.get('backend')} {f.get('dtype')}: "
                f"{f.get('message', '')} (replay: {f.get('replay', '')})"
            )
        for c in run.get("crashes") or []:
            problems.append(
                f"fuzzer crash: {op} on {c.get('backend')}: {c.get('error', '')} (run again: "
                f"{c.get('command', '')})"
            )
        if run.get("error"):
            problems.append(f"fuzzer: {op}: {run['error']}")
    return problems


def _sources(report):
    conformance = report.get("conformance") or {}
    official = {
        f.get("case")
        for f in (conformance.get("official") or {}).get("found", [])
        if isinstance(f, dict)
    }

    def source(r):
        if r.get("case") in official:
            return "official"
        return "built-in" if r.get("source") == "built-in" else "other"

    return source


def _figures(records, impl, types, key):
    """{types: {"<shape>@<threads>": record}} of `impl`'s records (`key`: op or None)."""
    return {
        t: {
            f"{r['shape']}@{r['threads']}": r
            for r in records
            if r["impl"] == impl
            and r["dtype"] == t
            and r["shape"] in SHAPES + [TINY_SHAPE]
            and r.get("op") == key
        }
        for t in types
    }


def operator_baselines(records, op):
    """Entries for the bare libraries mm-bench timed on the element types of `op`'s benchmarks
    (a baseline's `<name>/<types>/<shape>`): yardsticks, shown beside the backends."""
    mine = [r for r in records if r.get("kind") == "family" and r["op"] == op]
    types = sorted({r["dtype"] for r in mine})
    bare = [r for r in records if r.get("kind") == "operator_baseline" and r["dtype"] in types]
    return [
        {"op": op, "backend": impl, "baseline": True, "speed": _figures(bare, impl, types, None)}
        for impl in sorted({r["impl"] for r in bare}, key=impl_order)
    ]


def family_scoreboard(report, records):
    """Per operator, one entry per backend: its support per description, conformance verdict
    counts (official, built-in, other cases), the fuzzer's counts and worst error against the
    bound, the speed figures per element types and the tiny call's time, what it gets wrong; then
    the bare libraries timed on the operator's element types (operator_baselines)."""
    source = _sources(report)
    counts = collections.defaultdict(collections.Counter)
    for r in (report.get("conformance") or {}).get("results") or []:
        if op_of(r) in FAMILY_OPS:
            counts[(op_of(r), r.get("backend"), source(r))][r.get("verdict")] += 1
    described = {b.get("name"): b for b in (report.get("machine") or {}).get("backends", [])}
    family = [r for r in records if r.get("kind") == "family" and not r["error"]]
    wrong = operators_wrong(report)
    entries = []
    for op in FAMILY_OPS:
        run = family_accuracy(report, op)
        stats = ((run.get("report") or {}).get("stats") or {}).get("backends") or {}
        worst = collections.defaultdict(list)
        for row in accuracy_tables({"report": run.get("report") or {}})[0]:
            if row.get("worst_bound_fraction") is not None:
                worst[row["backend"]].append(row["worst_bound_fraction"])
        mine = [r for r in family if r["op"] == op]
        types = sorted({r["dtype"] for r in mine})
        for backend in sorted(ORDER, key=impl_order):
            b = described.get(backend, {})
            entries.append(
                {
                    "op": op,
                    "backend": backend,
                    "kind": "runtime" if b.get("runtime") else "library",
                    "support": [s for s in b.get("operators") or [] if s.get("op") == op],
                    "official": dict(counts.get((op, backend, "official"), {})),
                    "built-in": dict(counts.get((op, backend, "built-in"), {})),
                    "other": dict(counts.get((op, backend, "other"), {})),
                    "fuzz": dict(stats.get(backend, {})),
                    "not_fuzzed": (run.get("not_fuzzed") or {}).get(backend),
                    "worst_bound_fraction": max(worst[backend], default=None),
                    "speed": _figures(mine, backend, types, op),
                    "wrong": wrong.get(backend, {}).get(op, []),
                }
            )
        entries += operator_baselines(records, op)
    return entries


def catalogue_matrix(report, op):
    """(row labels, backends, {(row, backend): Counter}, {(row, backend): [non-PASS case names]})
    over `op`'s conformance results: one row per official case, the built-in and other cases by
    their dtype."""
    source = _sources(report)
    cells = collections.defaultdict(collections.Counter)
    odd = collections.defaultdict(list)
    rows, backends = [], []
    for r in (report.get("conformance") or {}).get("results") or []:
        if op_of(r) != op:
            continue
        where = source(r)
        row = r.get("case") if where == "official" else f"{where}, {r.get('dtype')}"
        if row not in rows:
            rows.append(row)
        if r.get("backend") not in backends:
            backends.append(r.get("backend"))
        cells[(row, r.get("backend"))][r.get("verdict")] += 1
        if r.get("verdict") not in ("PASS", "UNSUPPORTED"):
            odd[(row, r.get("backend"))].append(
                f"{r.get('case')}/{r.get('data_set', '')}: {r.get('verdict')}: "
                f"{r.get('message', '')}"
            )
    return rows, sorted(backends, key=impl_order), cells, odd


def wrong_table(report):
    """The summary's table: per backend (library or runtime), the operators it gets wrong."""
    wrong = operators_wrong(report)
    runtimes = {
        b.get("name") for b in (report.get("machine") or {}).get("backends", []) if b.get("runtime")
    }
    rows = []
    for backend in sorted(set(ORDER) | set(wrong), key=impl_order):
        ops = wrong.get(backend, {})
        text = (
            (
                "WRONG: " + ", ".join(ops),
                "; ".join(f"{op}: {', '.join(w)}" for op, w in ops.items()),
            )
            if ops
            else "none"
        )
        rows.append([impl_label(backend), "runtime" if backend in runtimes else "library", text])
    return (
        "Operators each backend gets wrong (MatMul and its family: a conformance FAIL, ERROR or "
        "XPASS, an undeclared fuzzer FAIL or ERROR, or a fuzzer crash naming the operator)",
        ["backend", "kind", "operators wrong"],
        rows,
    )
