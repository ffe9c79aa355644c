#!/usr/bin/env bash
# A new Python driver for a made-up runtime is ten lines with the SDK and is judged like any
# backend: writes one (a "toy" runtime: numpy's product scaled by its argument; float and double
# declared, bfloat16 refused), checks it is ten lines, and has mm-conformance judge it through
# --backend-cmd with the SDK given by PYTHONPATH alone: exit 0 with PASS results as written, exit 1
# with a FAIL of the toy once it scales by 1.5. Run on the build tree (ctest) and on an installed
# mm (scripts/test-plugin-package.sh). Exit 77 (skipped) without python3 and numpy.
# Usage: ten_line_driver_test.sh MM_CONFORMANCE SDK_DIR (holding the package mm_runtime)
set -euo pipefail
conformance=$(realpath "$1")
sdk=$(realpath "$2")
python=${MM_PYTHON:-/usr/bin/python3}
"$python" -c 'import numpy' 2>/dev/null || { echo "ten_line_driver: skipped: no numpy"; exit 77; }
[[ -f "$sdk/mm_runtime/__init__.py" ]] ||
  { echo "ten_line_driver: no package mm_runtime in $sdk" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "ten_line_driver: $*" >&2; exit 1; }

cat >"$work/toy_driver.py" <<'EOF'
import sys
import numpy
import mm_runtime

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0

def matmul(a, b, out, dtype):  # the toy runtime: numpy's product, scaled
    return (numpy.matmul(a, b) * SCALE).astype(a.dtype)

mm_runtime.serve(mm_runtime.Driver(runtime="toy", version="0.1", matmul=matmul,
    dtypes={"float": "float", "double": "double"}, refused={"bfloat16": "toy has none"}))
EOF
lines=$(grep -c . "$work/toy_driver.py")
((lines <= 10)) || fail "the driver is $lines lines, not ten"

cd "$work"
run() {
  set +e
  PYTHONPATH="$sdk" OMP_WAIT_POLICY=passive "$conformance" --backend-cmd "toy=$python toy_driver.py $1" \
    --jobs 2 >"$work/out.txt" 2>&1
  code=$?
  set -e
}
run 1
[[ $code -eq 0 ]] || { cat out.txt >&2; fail "the correct toy exited $code, expected 0"; }
grep -qE '^summary: .* [1-9][0-9]* PASS, 0 FAIL' out.txt ||
  { cat out.txt >&2; fail "no PASS result for the toy"; }
grep -q 'toy 0.1' out.txt || { cat out.txt >&2; fail "the report does not name the toy runtime"; }
run 1.5
[[ $code -eq 1 ]] || { cat out.txt >&2; fail "the wrong toy exited $code, expected 1"; }
grep -qE '^FAIL +.* toy ' out.txt || { cat out.txt >&2; fail "no FAIL of the wrong toy"; }
echo "ten_line_driver: a $lines-line driver judged: PASS as written, FAIL when wrong"
