"""The shape-class matrix: rows backends, columns the numpy.matmul shape classes of mm's built-in
shape-class catalogue (conformance/loader/shape_classes.cc), each cell how that backend's cases of
the class fared over the dtypes: "8 pass", "3 pass, 5 refused", "1 FAIL, 7 pass".

A case is named mm_shape_<class>_<dtype> (no dtype name holds '_'), so the class is the name less
the prefix and the last '_<dtype>'. A case's state is its worst over its data sets: FAIL (FAIL,
ERROR, XPASS, BOUND, IMPRECISE: what a reader must look at), xfail (declared), refused
(UNSUPPORTED, SKIP), pass. The text says it all; colour only repeats it.
"""

import html

PREFIX = "mm_shape_"
STATES = ["FAIL", "xfail", "refused", "pass"]  # Worst first.
STATE_OF_VERDICT = {
    "PASS": "pass",
    "UNSUPPORTED": "refused",
    "SKIP": "refused",
    "XFAIL": "xfail",
}
CSS = """
table.shape-matrix th.class { writing-mode: vertical-rl; transform: rotate(180deg);
  white-space: nowrap; font-weight: normal; padding: 4px 1px; }
table.shape-matrix td { white-space: nowrap; text-align: center; font-size: 0.9em; }
table.shape-matrix td.s-pass { background: #e3f4e3; } table.shape-matrix td.s-refused {
  background: #eee; color: #666; } table.shape-matrix td.s-xfail { background: #fff0cc; }
table.shape-matrix td.s-FAIL { background: #f9caca; color: #900; font-weight: bold; }
div.shape-matrix { overflow-x: auto; }
"""


def shape_class_of(case):
    """The class of a catalogue case's name, or None for any other case."""
    if not case.startswith(PREFIX):
        return None
    shape_class, sep, dtype = case[len(PREFIX) :].rpartition("_")
    return shape_class if sep and shape_class and dtype else None


def shape_matrix(results):
    """(caption, classes, rows) from mm-conformance's results, or None when there is no catalogue
    case among them. classes: [(name, "[3] x [3,2]; ...")]; rows: [(backend, [cell...])], a cell
    {"text", "state" (the worst), "title" (the dtypes in each state)} or None (no case)."""
    states = {}  # (backend, class) -> {dtype: state}
    shapes = {}  # class -> [shape text of each data set], from the first dtype seen
    for r in results:
        shape_class = shape_class_of(r.get("case", ""))
        if shape_class is None:
            continue
        state = STATE_OF_VERDICT.get(r.get("verdict"), "FAIL")
        by_dtype = states.setdefault((r["backend"], shape_class), {})
        dtype = r.get("dtype") or r["case"].rpartition("_")[2]
        old = by_dtype.get(dtype, "pass")
        by_dtype[dtype] = min(old, state, key=STATES.index)
        seen = shapes.setdefault(shape_class, {"dtype": dtype, "sets": []})
        if seen["dtype"] == dtype and r.get("a_shape"):
            text = f"{r['a_shape']} x {r['b_shape']}"
            if text not in seen["sets"]:
                seen["sets"].append(text)
    if not states:
        return None
    classes = list(shapes)
    backends = list(dict.fromkeys(b for b, _ in states))
    rows = []
    for backend in backends:
        cells = []
        for shape_class in classes:
            by_dtype = states.get((backend, shape_class))
            cells.append(cell(by_dtype) if by_dtype else None)
        rows.append((backend, cells))
    caption = (
        f"Shape classes: mm's shape-class catalogue ({len(classes)} numpy.matmul shape classes, "
        "each in every dtype), per backend the dtypes whose case passes, FAILs, is refused "
        "(UNSUPPORTED) or is a declared failure (xfail); hover a cell for its dtypes, a class "
        "for its shapes"
    )
    return caption, [(c, "; then ".join(shapes[c]["sets"])) for c in classes], rows


def cell(by_dtype):
    counts = {s: [d for d, st in by_dtype.items() if st == s] for s in STATES}
    present = [s for s in STATES if counts[s]]
    return {
        "text": ", ".join(f"{len(counts[s])} {s}" for s in present),
        "state": present[0],
        "title": "; ".join(f"{s}: {', '.join(counts[s])}" for s in present),
    }


def shape_matrix_html(matrix, table_id="shape-classes"):
    caption, classes, rows = matrix
    out = [
        f'<div class="shape-matrix"><table class="shape-matrix" id="{table_id}">'
        f"<caption>{html.escape(caption)}</caption><thead><tr><th>backend</th>"
    ]
    out += [
        f'<th class="class" title="{html.escape(shapes)}">{html.escape(name)}</th>'
        for name, shapes in classes
    ]
    out.append("</tr></thead><tbody>")
    for backend, cells in rows:
        out.append(f"<tr><th>{html.escape(backend)}</th>")
        for c in cells:
            if c is None:
                out.append("<td>–</td>")
            else:
                out.append(
                    f'<td class="s-{c["state"]}" title="{html.escape(c["title"])}">'
                    f'{html.escape(c["text"]).replace(", ", "<br>")}</td>'
                )
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def shape_matrix_md(matrix):
    caption, classes, rows = matrix
    lines = [
        f"**{caption}**",
        "",
        "| backend | " + " | ".join(name for name, _ in classes) + " |",
        "|" + "---|" * (len(classes) + 1),
    ]
    for backend, cells in rows:
        lines.append(f"| {backend} | " + " | ".join(c["text"] if c else "–" for c in cells) + " |")
    return "\n".join(lines) + "\n"
