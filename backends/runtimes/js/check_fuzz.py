#!/usr/bin/python3
"""Checks mm-fuzz runs of a JavaScript driver against its declared fuzz findings.

mm-fuzz matches its expectations by dtype and value family only, too coarse for a runtime whose
deviations are shape classes (a zero batch dimension, K = 0) of every dtype: declaring them so
would hide a new deviation of the same dtype. The driver's fuzz declarations
(expectations/<runtime>.fuzz.json) name each known deviation by the kind and message of its
minimal problem instead ("k_zero": true: and K = 0 in it; "batch_broadcast": true: and a batch
dimension broadcast in it; "dtype": and its dtype; "op": of that operator of MatMul's family,
MatMul when absent; "problem": a regular expression its minimal problem, as mm-fuzz writes a family
problem, holds; "types": the element type of each input of its minimal problem by ONNX's input
name, {"A": "uint8", "B": "int8"}; "outside_standard_range": whether the problem's exact
accumulation leaves int32). "unless_cpu_has" conditions a declaration on the CPU as an
expectations file's entry is (docs/conformance.md): on a CPU with every listed feature (an item
"a|b": either) it is not for this CPU, neither matched nor awaited, so a finding of it there is
undeclared. Declarations sharing a "group" are symptoms of one deviation whose verdict varies from
run to run (uninitialised memory read as FAIL or
IMPRECISE); "passes" lists the mm-fuzz options of the runs that reproduce every declared one.

This check passes when every failure of the runs was shrunk to a finding (--max-findings large
enough), every finding matches a declaration, and every declaration (or one of its group) was
found: a fixed deviation must be removed from the declarations, not carried on. It prints the
findings per declaration, with the minimal problem and replay line of the first, and any
unmatched finding. `check_fuzz.py --passes DECLARED` prints the passes' options, one pass a line.
"""
import argparse
import json
import re
import sys

FINDING_FIELDS = ("kind", "dtype", "message", "minimal_a_shape", "minimal_b_shape", "replay")


def batch_broadcast(a, b):
    """Whether numpy.matmul broadcasts a batch dimension of size 1 of A or B against another."""
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + list(batch_a)
    batch_b = [1] * (width - len(batch_b)) + list(batch_b)
    return any(x != y for x, y in zip(batch_a, batch_b))


def cpu_features(path):
    """The CPU's features as the first "flags" line of `path` (a /proc/cpuinfo) names them."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def not_for_this_cpu(declared, features):
    """Why `declared` does not apply on a CPU with `features` ("" where it applies)."""
    had = []
    for item in declared.get("unless_cpu_has", []):
        found = [f for f in item.split("|") if f in features]
        if not found:
            return ""
        had.append(found[0])
    return "this CPU has " + ", ".join(had) if had else ""


def matches(declared, finding):
    """Whether a finding is of this declared deviation."""
    a, b = finding["minimal_a_shape"], finding["minimal_b_shape"]
    types = finding.get("types", {})
    return (
        declared["kind"] == finding["kind"]
        and declared.get("op", "MatMul") == finding.get("op", "MatMul")
        and re.search(declared.get("problem", ""), finding.get("minimal_problem", "")) is not None
        and re.search(declared.get("message", ""), finding["message"]) is not None
        and declared.get("dtype", finding["dtype"]) == finding["dtype"]
        and all(types.get(name) == t for name, t in declared.get("types", {}).items())
        and declared.get("outside_standard_range", finding.get("outside_standard_range"))
        == finding.get("outside_standard_range")
        and (not declared.get("k_zero") or a[-1] == 0)
        and (not declared.get("batch_broadcast") or batch_broadcast(a, b))
    )


def read_report(path):
    """The failures count and findings of one mm-fuzz --json report; ValueError if malformed."""
    with open(path) as f:
        report = json.load(f)
    try:
        failures = report["stats"]["failures"]
        findings = report["findings"]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{path}: not an mm-fuzz report (no stats.failures or findings: {e})")
    for i, finding in enumerate(findings):
        missing = [k for k in FINDING_FIELDS if k not in finding]
        if missing:
            raise ValueError(f"{path}: findings[{i}] has no {', '.join(missing)}")
    return failures, findings


def check(reports, declared, features):
    """The problems of the runs (failures, findings pairs) against `declared` on a CPU with
    `features`; prints each one."""
    problems = []
    for d in declared:
        why = not_for_this_cpu(d, features)
        if why:
            print(f"not for this CPU ({why}): {d['name']}")
    declared = [d for d in declared if not not_for_this_cpu(d, features)]
    failures = sum(r[0] for r in reports)
    findings = [f for r in reports for f in r[1]]
    if len(findings) < failures:
        problems.append(f"{failures} failures but {len(findings)} findings: raise --max-findings")
    seen = {d["name"]: [] for d in declared}
    for finding in findings:
        match = next((d for d in declared if matches(d, finding)), None)
        if match is None:
            problems.append(
                f"undeclared {finding['kind']} {finding['dtype']} "
                f"{finding['minimal_a_shape']} x {finding['minimal_b_shape']}: "
                f"{finding['message']}\n    replay: {finding['replay']}"
            )
        else:
            seen[match["name"]].append(finding)
    groups = {}
    for d in declared:
        groups.setdefault(d.get("group", d["name"]), []).append(d["name"])
        found = seen[d["name"]]
        if found:
            first = found[0]
            print(
                f"declared ({len(found)} findings): {d['name']}; e.g. {first['dtype']} "
                f"{first['minimal_a_shape']} x {first['minimal_b_shape']}: {first['replay']}"
            )
        else:
            print(f"declared, not found in this run: {d['name']}")
    for group, names in groups.items():
        if not any(seen[n] for n in names):
            problems.append(
                f"declared, not reproduced (fixed? or not reached): {' / '.join(names)}"
            )
    return problems, len(findings)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", action="store_true", help="print the declared passes' options")
    parser.add_argument("reports", nargs="*", help="mm-fuzz's --json reports, one per pass")
    parser.add_argument("declared", help="the runtime's expectations/<runtime>.fuzz.json")
    parser.add_argument(
        "--cpuinfo", default="/proc/cpuinfo", help="where the CPU's flags are read (a cpuinfo)"
    )
    args = parser.parse_args()
    with open(args.declared) as f:
        declarations = json.load(f)
    if args.passes:
        for options in declarations.get("passes", ["--seed 1 --cases 2000"]):
            print(options)
        return 0
    if not args.reports:
        parser.error("give at least one report")
    try:
        reports = [read_report(path) for path in args.reports]
    except ValueError as e:
        print(f"check_fuzz: {e}", file=sys.stderr)
        return 2
    features = cpu_features(args.cpuinfo)
    problems, count = check(reports, declarations["findings"], features)
    if problems:
        print(
            f"check_fuzz: FAILED ({args.declared}): a new deviation, or a fixed one; declare a "
            "genuine one with its reason, minimal problem and replay line, remove a fixed one:",
            file=sys.stderr,
        )
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"check_fuzz: {count} findings, each a declared deviation, every declared one found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
