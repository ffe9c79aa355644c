#!/usr/bin/env bash
# The example plugin on MatMul's family, as a user runs it: mm-conformance with the plugin over the
# family's built-in catalogue (written as node tests by mm-fuzz export-builtin) and ONNX's official
# family cases (FAMILY_DATA, when the folder exists). Every MatMulInteger result must PASS, every
# Gemm and QLinearMatMul result be UNSUPPORTED with the plugin's own reason, and nothing else.
#
#   example_family_test.sh MM_CONFORMANCE MM_FUZZ PLUGIN.so [FAMILY_DATA]
set -euo pipefail
conformance=$1 fuzz=$2 plugin=$3 family_data=${4:-}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$fuzz" export-builtin --out "$work/builtin" >/dev/null
roots=(--data-dir "$work/builtin")
if [[ -n "$family_data" && -d "$family_data" ]]; then
  roots+=(--data-dir "$family_data")
else
  echo "example_family_test: no official family cases at '$family_data'; the built-in catalogue only"
fi
status=0
OMP_WAIT_POLICY=passive "$conformance" "${roots[@]}" --no-builtin \
  --filter '^(mm_family_|test_gemm|test_matmulinteger|test_qlinearmatmul)' \
  --backend-lib "$plugin" --backend example --quiet --json "$work/report.json" >"$work/out.txt" 2>&1 ||
  status=$?
if [[ $status != 0 ]]; then
  cat "$work/out.txt" >&2
  echo "example_family_test: mm-conformance exited $status" >&2
  exit 1
fi

python3 - "$work/report.json" <<'PY'
import collections
import json
import sys

results = json.load(open(sys.argv[1]))["results"]
reason = "the example computes MatMulInteger only of MatMul's family, not "
counts = collections.Counter()
wrong = []
for r in results:
    op, verdict, message = r["op"], r["verdict"], r["message"] or ""
    counts[(op, verdict)] += 1
    if op == "MatMulInteger":
        ok = verdict == "PASS"
    elif op in ("Gemm", "QLinearMatMul"):
        ok = verdict == "UNSUPPORTED" and reason + op in message
    else:
        ok = False
    if not ok:
        wrong.append(f"{r['case']} {op}: {verdict} {message}")
for line in wrong[:20]:
    print("example_family_test: unexpected:", line, file=sys.stderr)
print("example_family_test:", dict(sorted(counts.items())))
# The built-in catalogue alone has 155 MatMulInteger cases, every zero-point form among them.
if counts[("MatMulInteger", "PASS")] < 155 or counts[("Gemm", "UNSUPPORTED")] == 0:
    print("example_family_test: too few family results", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if wrong else 0)
PY
