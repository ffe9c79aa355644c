"""The emitters: the page (one self-contained HTML file) and its Markdown twin.

render() puts the sections together in their order (summary with problems first and the operators
each backend gets wrong, machine, support, conformance, accuracy, speed, one section per operator
of MatMul's family, auto's choices, how the report was made); every table comes from
tables.py, every plot from plots.py, and both are written here as HTML and as Markdown.
"""

import html
import re

from .data import FAMILY_OPS, configure, derive, load_auto_table, scoreboard
from .family import family_problems, family_scoreboard, operators_wrong, wrong_table
from .family_tables import op_tables
from .plots import plot_accuracy, plot_scaling, plot_sweep, plot_tiny
from .shape_matrix import CSS as SHAPE_MATRIX_CSS
from .shape_matrix import shape_matrix, shape_matrix_html, shape_matrix_md
from .tables import (
    Figure,
    accuracy_table,
    auto_choice_table,
    conformance_tables,
    fastest_table,
    fuzz_tables,
    machine_table,
    most_accurate_table,
    scoreboard_tables,
    speed_tables,
    support_table,
    timing_table,
)


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
.v-LOOSER { color: #b45f00; font-weight: bold; }
.v-unstable { color: #707; font-style: italic; text-decoration: line-through dotted; }
details summary { cursor: pointer; } details p { max-width: 40em; margin: 0.3em 0; }
figure { margin: 0.5em 0 1.5em; } figcaption { font-size: 0.85em; color: #555; }
img.plot { max-width: 100%; border: 1px solid #ddd; }
.note { font-size: 0.85em; color: #555; max-width: 60em; }
"""
CSS += SHAPE_MATRIX_CSS


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
    if isinstance(cell, Figure):
        text = cell.summary  # Every attempt's details stay in the page and compare.json.
    elif isinstance(cell, tuple):
        text = f"{cell[0]}: {cell[1]}" if cell[0] not in ("PASS", "UNSUPPORTED") else cell[0]
    else:
        text = cell
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
    """The auto backend's choice map, fed by its calibration table file alone (not compare.json):
    (title, [html parts], [markdown parts]); a note on how to make one when there is none."""
    title = "auto's choices"
    table = load_auto_table(table_path)
    if table is None:
        where = html.escape(str(table_path)) if table_path else "(none given)"
        note = (
            f"No calibration table at {where}: auto runs on its built-in defaults "
            "(docs/backends.md, auto backend). Make one with "
            "<code>build/bin/mm-bench --mm_calibrate=FILE</code>."
        )
        return title, [f'<p class="note">{note}</p>'], [re.sub(r"</?code>", "`", note) + "\n"]
    t = auto_choice_table(table, table_path.name)
    return title, [table_html(t, "auto-choices")], [table_md(t)]


def render(report, auto_table=None):
    configure(report)
    derived = derive(report)
    derived["scoreboard"] = scoreboard(report, derived)
    derived["problems"] += family_problems(report)
    derived["family"] = family_scoreboard(report, derived["records"])
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
        ok = (
            f"No FAIL and no ERROR beyond {derived['declared']} declared deviation(s) of libraries "
            "and runtimes (XFAIL in Conformance, declared findings in Accuracy, each with its "
            "reason)."
            if derived["declared"]
            else "No FAIL and no ERROR anywhere."
        )
        problems_html = f'<div class="ok" id="problems">{html.escape(ok)}</div>'
        problems_md = ok + "\n"
    summary = scoreboard_tables(derived)
    if not summary:
        summary = [("Scoreboard", ["backend"], [["no backend data in this report"]])]
    # Per runtime and backend, the operators it gets wrong: before MatMul's scoreboard.
    summary.insert(0, wrong_table(report))
    summary_html = [problems_html] + [table_html(t, f"summary-{i}") for i, t in enumerate(summary)]
    summary_md = [problems_md] + [table_md(t) for t in summary]
    matrix = shape_matrix(report.get("conformance", {}).get("results", []))
    if matrix:
        summary_html.append(shape_matrix_html(matrix))
        summary_md.append(shape_matrix_md(matrix))
    sections.append(("Summary", summary_html, summary_md))

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

    # One section per operator of MatMul's family.
    for op in FAMILY_OPS:
        tables = op_tables(report, op, derived["family"], threads_list)
        sections.append(
            (
                op,
                [table_html(t, f"{op.lower()}-{i}") for i, t in enumerate(tables)],
                [table_md(t) for t in tables],
            )
        )

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
        "family": derived["family"],
        "operators_wrong": operators_wrong(report),
    }
    return page, "\n".join(markdown), derived_json
