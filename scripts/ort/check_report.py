#!/usr/bin/python3
"""Checks mm-conformance's judgement of ONNX Runtime's driver (scripts/ort-conformance.sh).

Asserts, from the JSON report:
  * exactly one result per (case, data set) of the corpus: the 7 official cases, every data set
    of the built-in ones as export-builtin wrote them (the 9 examples of the ONNX MatMul page and
    the shape-class catalogue), every data set of the generated corpus; nothing skipped unless an
    entry of backends/runtimes/js/expectations/onnxruntime.json declares it with its reason,
    nothing extra;
  * every official result and every built-in example PASSes; the shape-class catalogue's results
    are held to the rules below like the generated ones (its ONNX Runtime deviations are XFAIL);
  * every bfloat16 result is UNSUPPORTED by ONNX Runtime's own word (it has no CPU bfloat16
    MatMul kernel), never silently dropped;
  * no FAIL, IMPRECISE, XPASS or undeclared ERROR: ONNX Runtime's known deviations are XFAIL by
    backends/runtimes/js/expectations/onnxruntime.json, each with its reason;
  * a BOUND result only where the corpus's expected value depends on the order of summation (an
    intermediate sum may overflow: the error bound is unbounded there), which is a property of the
    problem, not of the runtime; mm-conformance's exit code is then 1 for that reason alone,
    otherwise it must be 0.
Prints the verdict counts per dtype. Exits 1 with every broken assertion listed.
"""
import argparse
import collections
import json
import os
import sys

OFFICIAL = [
    "test_matmul_1d_1d",
    "test_matmul_1d_3d",
    "test_matmul_2d",
    "test_matmul_3d",
    "test_matmul_4d",
    "test_matmul_4d_1d",
    "test_matmul_bcast",
]
SHAPE_PREFIX = "mm_shape_"
# The family's catalogue (Gemm, MatMulInteger, QLinearMatMul), which export-builtin writes and
# mm-conformance runs among its built-in cases, is not checked here (these checks are MatMul's):
# neither its data sets nor its results are counted.
FAMILY_PREFIX = "mm_family_"
BACKEND = "onnxruntime"
REFUSAL = "Could not find an implementation"


def data_sets_of(root):
    """Every (case, data set) folder of a folder of node tests."""
    found = set()
    for case in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, case)):
            continue  # A corpus's README.md and manifest.json.
        for data_set in os.listdir(os.path.join(root, case)):
            if data_set.startswith("test_data_set_"):
                found.add((case, data_set))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--exit-code", type=int, required=True, help="mm-conformance's exit code")
    parser.add_argument("--generated", required=True, help="the generated corpus folder")
    parser.add_argument("--builtin", required=True, help="the folder export-builtin wrote")
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    results = [
        r
        for r in report["results"]
        if r["backend"] == BACKEND
        and not (r["source"] == "built-in" and r["case"].startswith(FAMILY_PREFIX))
    ]
    problems = []

    generated = data_sets_of(args.generated)
    exported = {d for d in data_sets_of(args.builtin) if not d[0].startswith(FAMILY_PREFIX)}
    seen = collections.Counter((r["case"], r["data_set"]) for r in results)
    for key, n in seen.items():
        if n != 1:
            problems.append(f"{key}: {n} results")
    official = [r for r in results if r["case"] in OFFICIAL]
    builtin = [r for r in results if r["source"] == "built-in"]
    examples = [r for r in builtin if not r["case"].startswith(SHAPE_PREFIX)]
    if sorted(r["case"] for r in official) != OFFICIAL:
        problems.append(f"official results: {sorted(r['case'] for r in official)}")
    # An example's one data set is "example" in mm, test_data_set_0 in the exported folder.
    judged = {(r["case"], r["data_set"].replace("example", "test_data_set_0")) for r in builtin}
    if judged != exported or len(builtin) != len(exported):
        problems.append(
            f"{len(builtin)} built-in results for the {len(exported)} data sets "
            "export-builtin wrote"
        )
    if not any(r["case"].startswith(SHAPE_PREFIX) for r in builtin):
        problems.append("no result of the shape-class catalogue")
    missing = generated - set(seen)
    if missing:
        problems.append(f"{len(missing)} generated data sets without a result, e.g. {min(missing)}")
    extra = [
        r
        for r in results
        if (r["case"], r["data_set"]) not in generated
        and r["case"] not in OFFICIAL
        and r["source"] != "built-in"
    ]
    for r in extra:
        problems.append(
            f"unexpected result {r['case']} {r['data_set']}: {r['verdict']} " f"{r['message']}"
        )

    for r in official + examples:
        if r["verdict"] != "PASS":
            problems.append(f"{r['case']}: {r['verdict']}, expected PASS: {r['message']}")
    order_dependent = []
    for r in results:
        v = r["verdict"]
        if r.get("dtype") == "bfloat16":
            if v != "UNSUPPORTED" or REFUSAL not in r["message"]:
                problems.append(
                    f"{r['case']} (bfloat16): {v}, expected UNSUPPORTED by ONNX "
                    f"Runtime's refusal: {r['message']}"
                )
        elif v == "BOUND":
            bound = r.get("vs_bound") or {}
            if bound.get("outside", 1) == 0 and bound.get("unbounded", 0) > 0:
                order_dependent.append(r["case"])
            else:
                problems.append(
                    f"{r['case']}: BOUND outside an order-independent bound: " f"{r['message']}"
                )
        elif v == "SKIP" and r.get("expectation"):
            pass  # Declared (an intermittent deviation), shown below with its reason.
        elif v not in ("PASS", "XFAIL"):
            problems.append(f"{r['case']}: {v}: {r['message']}")

    expected_code = 1 if order_dependent else 0
    if args.exit_code != expected_code:
        problems.append(f"mm-conformance exited {args.exit_code}, expected {expected_code}")

    counts = collections.defaultdict(collections.Counter)
    for r in results:
        counts[r.get("dtype") or "-"][r["verdict"]] += 1
    print(
        f"ONNX Runtime judged by mm: {len(results)} results "
        f"({len(official)} official, {len(builtin)} built-in, {len(generated)} generated)"
    )
    for dtype in sorted(counts):
        print(f"  {dtype:9} " + ", ".join(f"{n} {v}" for v, n in sorted(counts[dtype].items())))
    for r in results:
        if r["verdict"] in ("XFAIL", "SKIP"):
            print(
                f"  {r['verdict']} {r['case']} {r['a_shape']} x {r['b_shape']}: "
                f"{r['expectation']}"
            )
    for case in order_dependent:
        print(f"  BOUND {case}: the expected value depends on the order of summation (overflow)")
    if problems:
        print(
            "check_report: FAILED (a new deviation of ONNX Runtime, or a changed corpus: "
            "declare a genuine one in backends/runtimes/js/expectations/onnxruntime.json with "
            "its reason):",
            file=sys.stderr,
        )
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print("check_report: every verdict is as it should be")
    return 0


if __name__ == "__main__":
    sys.exit(main())
