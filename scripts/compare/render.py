#!/usr/bin/python3
"""Renders compare.json (written by collect.py) as compare.html and compare.md.

compare.html is one self-contained page (styles inline, plots as inline PNG drawn by matplotlib, no
script, nothing fetched); compare.md holds the same tables without the plots. Every plot is drawn
from compare.json alone, which is only read: --derived FILE writes the derived tables (scoreboard,
fastest, accuracy, speed records) beside it, so anyone reading JSON gets the page's numbers.

Nothing in the renderer (the package rendering/ beside this file: data, plots, tables, emit) knows
a backend by name: the backends, their order, the baselines (bare libraries timed beside them,
with their labels and the backend each measures) and so the colours all come from compare.json
(mm-bench --mm_describe), so a plugin named anything gets the same page.
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from rendering.data import load_report  # noqa: E402  (after putting this folder on the path)
from rendering.emit import render  # noqa: E402


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
    page, markdown, derived = render(load_report(args.compare_json), args.auto_table)
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
