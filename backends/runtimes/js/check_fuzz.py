#!/usr/bin/python3
"""Checks an mm-fuzz run of a JavaScript driver against its declared fuzz findings.

mm-fuzz matches its expectations by dtype and value family only, too coarse for a runtime whose
deviations are shape classes (a zero batch dimension, K = 0) of every dtype: declaring them so
would hide a new deviation of the same dtype. The driver's fuzz declarations
(expectations/<runtime>.fuzz.json) name each known deviation by the kind and message of its
minimal problem instead ("k_zero": true: and K = 0 in it; "batch_broadcast": true: and a batch
dimension broadcast in it; "dtype": and its dtype). This check passes when every failure of the
run was shrunk to a finding (--max-findings large enough) and every finding matches a
declaration; it prints the findings per declaration, with the minimal problem and replay line of
the first, and any unmatched finding.
"""
import argparse
import json
import re
import sys


def batch_broadcast(a, b):
    """Whether numpy.matmul broadcasts a batch dimension of size 1 of A or B against another."""
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + list(batch_a)
    batch_b = [1] * (width - len(batch_b)) + list(batch_b)
    return any(x != y for x, y in zip(batch_a, batch_b))


def matches(declared, finding):
    """Whether a finding is of this declared deviation."""
    a, b = finding["minimal_a_shape"], finding["minimal_b_shape"]
    return (
        declared["kind"] == finding["kind"]
        and re.search(declared.get("message", ""), finding["message"]) is not None
        and declared.get("dtype", finding["dtype"]) == finding["dtype"]
        and (not declared.get("k_zero") or a[-1] == 0)
        and (not declared.get("batch_broadcast") or batch_broadcast(a, b))
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="mm-fuzz's --json report")
    parser.add_argument("declared", help="the runtime's expectations/<runtime>.fuzz.json")
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    with open(args.declared) as f:
        declared = json.load(f)["findings"]
    problems = []
    failures = report["stats"]["failures"]
    findings = report["findings"]
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
    for d in declared:
        found = seen[d["name"]]
        if found:
            first = found[0]
            print(
                f"declared ({len(found)} findings): {d['name']}; e.g. {first['dtype']} "
                f"{first['minimal_a_shape']} x {first['minimal_b_shape']}: {first['replay']}"
            )
        else:
            print(f"declared, not found in this run: {d['name']}")
    if problems:
        print(
            f"check_fuzz: FAILED ({args.declared}): a new deviation, or a fixed one; declare a "
            "genuine one with its reason, minimal problem and replay line:",
            file=sys.stderr,
        )
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"check_fuzz: {len(findings)} findings, each a declared deviation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
