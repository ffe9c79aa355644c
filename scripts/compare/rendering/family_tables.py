"""The tables of one operator's section of the report (Gemm, MatMulInteger, QLinearMatMul): its
scoreboard, one row per backend, and its catalogue matrix, from family.py's entries."""

from .data import impl_label
from .family import SHAPES, TINY_SHAPE, catalogue_matrix
from .tables import fmt_counts, fmt_num, fmt_speed


def fmt_support(entry):
    """'uint8xint8: native' per description mm-bench asked about, or 'no' with every reason."""
    support = entry["support"]
    if not support:
        return "–"
    details = "; ".join(
        f"{s.get('desc')}: {s.get('level')}"
        + (f" ({s['note']})" if s.get("note") else "")
        + (f", {s['implementation']}" if s.get("implementation") else "")
        for s in support
    )
    levels = {s.get("types"): s.get("level") for s in support}
    if all(level == "no" for level in levels.values()):
        # The reasons, each once (a backend without the operator gives one for every description).
        return ("no", "; ".join(dict.fromkeys(s.get("note") or "?" for s in support)))
    text = ", ".join(f"{t}: {level}" for t, level in levels.items())
    return (text, details)


def fmt_arithmetic(entry):
    declared = {
        s["arithmetic"].get("text", "?")
        for s in entry["support"]
        if isinstance(s.get("arithmetic"), dict)
    }
    return "; ".join(sorted(declared)) or "–"


def fmt_fuzz(entry):
    if entry.get("not_fuzzed"):
        return ("not fuzzed", entry["not_fuzzed"])
    return fmt_counts(entry["fuzz"])


def speed_cells(entry, types, threads):
    cells = []
    for t in types:
        figures = entry["speed"].get(t, {})
        for shape in SHAPES:
            cells += [fmt_speed(figures.get(f"{shape}@{n}")) for n in threads]
        cells.append(fmt_speed(figures.get(f"{TINY_SHAPE}@1"), unit="time"))
    return cells


def baseline_row(entry, types, threads, width):
    """A bare library's row: its speed figures, '–' where a backend's row judges."""
    speed = speed_cells(entry, types, threads)
    label = impl_label(entry["backend"])
    return [label, "bare library"] + ["–"] * (width - 3 - len(speed)) + speed + ["–"]


def op_scoreboard(op, entries, threads):
    """The operator's scoreboard: support, arithmetic, conformance, fuzz, worst error against the
    bound, speed per element types at each thread count, the tiny call, what it gets wrong."""
    entries = [e for e in entries if e["op"] == op]
    types = sorted({t for e in entries for t in e["speed"]})
    unit = "GFLOP/s" if op == "Gemm" else "GOP/s"
    has_other = any(e.get("other") for e in entries)
    header = ["backend", "kind", "support", "declared arithmetic", "official", "built-in"]
    header += ["other cases"] if has_other else []
    header += ["fuzz", "worst / bound"]
    for t in types:
        for shape in SHAPES:
            header += [f"{t} {shape.split('x')[0]}³ {unit}, {n}t" for n in threads]
        header.append(f"{t} {TINY_SHAPE} per call, 1t")
    header.append("wrong")
    rows = []
    for e in entries:
        if e.get("baseline"):
            rows.append(baseline_row(e, types, threads, len(header)))
            continue
        row = [impl_label(e["backend"]), e["kind"], fmt_support(e), fmt_arithmetic(e)]
        row += [fmt_counts(e["official"]), fmt_counts(e["built-in"])]
        row += [fmt_counts(e["other"])] if has_other else []
        row += [fmt_fuzz(e), fmt_num(e["worst_bound_fraction"])]
        row += speed_cells(e, types, threads)
        row.append(("WRONG", "; ".join(e["wrong"])) if e["wrong"] else "none")
        rows.append(row)
    caption = (
        f"{op}: each backend's support per description (mm-bench --op; 'no' with why), the "
        "arithmetic it declares, conformance verdicts (official ONNX cases, mm's built-in "
        "catalogue, other cases), the differential fuzzer's verdicts (mm-fuzz --op) and worst "
        f"error as a fraction of the bound (> 1: outside; – where mm-fuzz reports none), {unit} "
        "(2·M·N·K per second; 1 thread by CPU time, more by wall time; median [slowest–fastest "
        "repetition]), the time per tiny call, and FAIL, ERROR, XPASS or crashes naming the "
        "operator; bare libraries timed on the same element types follow as yardsticks"
    )
    return (caption, header, rows)


def op_catalogue_table(report, op):
    """The operator's conformance matrix: official cases one by one, the others by dtype, a
    column per backend; a cell's details list its results other than PASS and UNSUPPORTED."""
    rows, backends, cells, odd = catalogue_matrix(report, op)
    table_rows = []
    for row in rows:
        line = [row]
        for backend in backends:
            counts = cells.get((row, backend))
            text = fmt_counts(counts)
            line.append((text, "; ".join(odd[(row, backend)])) if odd.get((row, backend)) else text)
        table_rows.append(line)
    if not table_rows:
        table_rows = [[f"no {op} result in this report's conformance run"]]
    return (
        f"{op}: catalogue matrix (mm-conformance: official cases one by one, built-in and other "
        "cases by dtype; verdict counts per backend)",
        ["cases"] + [impl_label(b) for b in backends],
        table_rows,
    )


def op_tables(report, op, entries, threads):
    """Every table of `op`'s section, in order."""
    return [op_scoreboard(op, entries, threads), op_catalogue_table(report, op)]
