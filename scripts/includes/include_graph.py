"""The folder-level include graph of mm's tree and the layering rules it must keep.

Nodes are folders. A file's folder is the one that holds it, except that a public header
(`<folder>/include/mm/...`) belongs to the folder that holds its `include/`, and a test beside the
code it tests (`FOLDER/x_test.cc`) to a folder of its own, `FOLDER (tests)`, as the tests in a
`tests/` folder have theirs: a test is a leaf, which no file includes. Each `#include "mm/..."` line
is an arrow from the including file's folder to the folder whose `include/` holds that header.
Two rules (docs/development.md, Layers):

  1. Inside a floor (a top-level folder: engine, backends, bench, conformance, tools), the arrows
     between its folders form no loop.
  2. Between floors, arrows run only downward: engine (bottom) <- backends <- bench, conformance
     <- tools (bench and conformance side by side above the backends: neither includes the other).

Every violation is printed with the include lines (file:line) that make it. An `mm/` include that
no `include/` folder holds fails too (a private header reached through another folder's include
path hides an arrow), but for the headers CMake generates (GENERATED). A top-level folder holding C
or C++ files that is not a floor fails: its place must be declared.

Usage: include_graph.py [--graph] [--allow FROM:TO]... ROOT
  --graph         print the graph (one "FROM -> TO  (N includes)" line per arrow) and check nothing
  --allow FROM:TO take the arrows from folder FROM to folder TO out of rule 1 (an entry that
                  matches no include is itself an error: a stale exception must go)
Exit: 0 when the rules hold, 1 on a violation, 2 on a usage error.
"""

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

# The floors, bottom first, each with the floors below it, which are all it may include
# (docs/development.md, Layers).
FLOORS = {
    "engine": [],
    "backends": ["engine"],
    "bench": ["engine", "backends"],
    "conformance": ["engine", "backends"],
    "tools": ["engine", "backends", "bench", "conformance"],
}
FLOOR_ORDER = "engine < backends < bench, conformance < tools"
# Headers the build generates, in no source folder (the top CMakeLists.txt's configure_file).
GENERATED = {"mm/version.h"}
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*"(mm/[^"]+)"')
SKIPPED_DIRS = {"node_modules", "third_party"}


def source_files(root):
    """Paths (relative to root, '/'-separated) of the C/C++ files of the tree: what git tracks or
    would add when root is a work tree's top, every file below root (hidden and build* folders
    left out) otherwise."""
    try:
        top = subprocess.run(
            ["git", "-C", root, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        top = None
    if top and os.path.realpath(top) == os.path.realpath(root):
        listed = subprocess.run(
            ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        files = [f for f in listed if os.path.isfile(os.path.join(root, f))]
    else:
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [
                d
                for d in dirs
                if not d.startswith(".") and not d.startswith("build") and d not in SKIPPED_DIRS
            ]
            rel = os.path.relpath(folder, root)
            files += [os.path.normpath(os.path.join(rel, n)).replace(os.sep, "/") for n in names]
    return sorted(
        f
        for f in files
        if f.endswith(SOURCE_SUFFIXES) and not set(f.split("/")[:-1]) & SKIPPED_DIRS
    )


def folder_of(path):
    """The folder a file belongs to: the one holding its `include/` for a public header, FOLDER
    (tests) for a test beside its code, else its own."""
    parts = path.split("/")
    if "include" in parts[:-1]:
        return "/".join(parts[: parts.index("include")]) or "."
    folder = "/".join(parts[:-1]) or "."
    if re.search(r"_test\.(c|cc|cpp)$", parts[-1]) and parts[-2:-1] != ["tests"]:
        return folder + " (tests)"
    return folder


def header_owners(files):
    """{"mm/x/y.h": folder} for every public header; a header two folders hold is an error."""
    owners, errors = {}, []
    for f in files:
        parts = f.split("/")
        if "include" not in parts[:-1]:
            continue
        key = "/".join(parts[parts.index("include") + 1 :])
        if key in owners and owners[key] != folder_of(f):
            errors.append(f"{key} is held by both {owners[key]} and {folder_of(f)}")
        owners[key] = folder_of(f)
    return owners, errors


def arrows_of(root, files, owners):
    """{(from, to): ["file:line", ...]} for every include between two folders, and the errors of
    includes no folder holds."""
    arrows, errors = defaultdict(list), []
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                match = INCLUDE_LINE.match(line)
                if not match:
                    continue
                header = match.group(1)
                if header in GENERATED:
                    continue
                if header not in owners:
                    errors.append(f'{f}:{number}: "{header}" is in no folder\'s include/')
                    continue
                if owners[header] != folder_of(f):
                    arrows[(folder_of(f), owners[header])].append(f"{f}:{number}")
    return arrows, errors


def floor_of(folder):
    """The top-level folder of `folder` ("backends (tests)" is in backends)."""
    return folder.split("/")[0].removesuffix(" (tests)")


def loops(nodes, edges):
    """The strongly connected components of more than one folder (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return found


def check(arrows, allowed):
    """The violations of the two rules, as lines to print."""
    out = []
    for (src, dst), where in sorted(arrows.items()):
        here, there = floor_of(src), floor_of(dst)
        if here == there or here not in FLOORS or there not in FLOORS or there in FLOORS[here]:
            continue
        if here in FLOORS[there]:
            out.append(f"upward include: {src} -> {dst} ({here} is below {there}):")
        else:
            out.append(f"include across floors: {src} -> {dst} ({here} and {there} side by side):")
        out += [f"  {w}" for w in where]
    floors = {floor_of(f) for pair in arrows for f in pair}
    for floor in sorted(floors):
        edges, nodes = defaultdict(set), set()
        for src, dst in arrows:
            if floor_of(src) == floor == floor_of(dst) and (src, dst) not in allowed:
                edges[src].add(dst)
                nodes |= {src, dst}
        for component in loops(nodes, edges):
            out.append(f"include loop among {', '.join(component)}; its arrows:")
            for src in component:
                for dst in sorted(edges[src] & set(component)):
                    out.append(f"  {src} -> {dst}")
                    out += [f"    {w}" for w in arrows[(src, dst)]]
    return out


def main():
    parser = argparse.ArgumentParser(description="mm's folder-level include graph and its rules")
    parser.add_argument("--graph", action="store_true")
    parser.add_argument("--allow", action="append", default=[], metavar="FROM:TO")
    parser.add_argument("root")
    args = parser.parse_args()
    allowed = set()
    for entry in args.allow:
        if entry.count(":") != 1 or "" in entry.split(":"):
            parser.error(f"--allow {entry}: expected FROM:TO (two folders)")
        allowed.add(tuple(entry.split(":")))
    if not os.path.isdir(args.root):
        parser.error(f"no directory {args.root}")

    files = source_files(args.root)
    owners, errors = header_owners(files)
    arrows, unresolved = arrows_of(args.root, files, owners)
    errors += unresolved
    if args.graph:
        for (src, dst), where in sorted(arrows.items()):
            note = "  (allowed)" if (src, dst) in allowed else ""
            print(f"{src} -> {dst}  ({len(where)} includes){note}")
        return 0
    floorless = sorted({floor_of(folder_of(f)) for f in files} - set(FLOORS) - {"."})
    errors += [f"{d}/ holds C/C++ files but is no floor (FLOORS: {FLOOR_ORDER})" for d in floorless]
    errors += [
        f"--allow {src}:{dst} matches no include: remove it"
        for src, dst in sorted(allowed)
        if (src, dst) not in arrows
    ]
    errors += check(arrows, allowed)
    for line in errors:
        print(line)
    if errors:
        return 1
    print(
        f"includes: {len(files)} files, {len(arrows)} arrows between folders;"
        f" no loop inside a floor, none upward ({FLOOR_ORDER})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
