"""Checks how ctest registered the gtest binaries' variants (mm_gtests in CMakeLists.txt).

Each thread and ISA variant must run with the environment its name promises: `.omp1`/`.threads1`
with OMP_NUM_THREADS=1, `.omp2`/`.threads2` with 2, `.isa_avx2`/`.isa_sse41` with
ONEDNN_MAX_CPU_ISA=AVX2/SSE41, labelled `isa`, and the gtest ones with OMP_NUM_THREADS=2.
gtest_discover_tests once dropped every list element of a property but the first, and the ISA
variants silently ran at the machine's thread count.

Usage: check_registration.py BUILD_DIR   (exit 0: all as promised; 1: the tests that are not)
"""

import json
import re
import subprocess
import sys

VARIANT = re.compile(r"\.(omp|threads)([12])$|\.isa_(avx2|sse41)$")


def environment(test):
    """The variables ctest sets for a test, from ENVIRONMENT and ENVIRONMENT_MODIFICATION."""
    variables = {}
    for prop in test.get("properties", []):
        if prop["name"] == "ENVIRONMENT":
            for item in prop["value"]:
                name, _, value = item.partition("=")
                variables[name] = value
        elif prop["name"] == "ENVIRONMENT_MODIFICATION":
            for item in prop["value"]:
                name, _, operation = item.partition("=")
                op, _, value = operation.partition(":")
                if op == "set":
                    variables[name] = value
    return variables


def labels(test):
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            return set(prop["value"])
    return set()


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    listing = subprocess.run(
        ["ctest", "--test-dir", sys.argv[1], "--show-only=json-v1"],
        check=True,
        capture_output=True,
        text=True,
    )
    tests = json.loads(listing.stdout)["tests"]
    problems = []
    counts = {"threads": 0, "isa": 0}
    for test in tests:
        match = VARIANT.search(test["name"])
        if not match:
            continue
        want = {}
        if match.group(2):
            want["OMP_NUM_THREADS"] = match.group(2)
            counts["threads"] += 1
        else:
            want["ONEDNN_MAX_CPU_ISA"] = match.group(3).upper()
            # The conformance cases' ISA variants (conformance/cmake) keep the caller's threads.
            if not test["name"].startswith("conformance."):
                want["OMP_NUM_THREADS"] = "2"
            counts["isa"] += 1
            if "isa" not in labels(test):
                problems.append(f"{test['name']}: not labelled isa")
        have = environment(test)
        for name, value in want.items():
            if have.get(name) != value:
                problems.append(
                    f"{test['name']}: {name}={have.get(name, '<unset>')}, its name promises {value}"
                )
    for kind, count in counts.items():
        if count == 0:
            problems.append(f"no {kind} variant registered at all")
    for problem in problems[:20]:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_registration: {len(problems)} problems", file=sys.stderr)
        return 1
    print(
        f"check_registration: {counts['threads']} thread and {counts['isa']} ISA variants as named"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
