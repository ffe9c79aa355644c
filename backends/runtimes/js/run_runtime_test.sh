#!/usr/bin/env bash
# One ctest of a JavaScript driver (runtime.<name>.conformance or .fuzz):
#   run_runtime_test.sh conformance MM_CONFORMANCE NAME EXPECTATIONS
#   run_runtime_test.sh fuzz MM_FUZZ NAME FUZZ_DECLARATIONS WORK_DIR
# conformance: the official and built-in cases, known deviations XFAIL by the expectations file.
# fuzz: a fixed-seed pass, every failure shrunk, each finding checked against the declared ones
# (check_fuzz.py). Where the runtime is not installed (mm says "is not available on this
# machine"), the test is skipped (exit 77) with mm's reason, except in CI (CI=true), where it
# fails: CI installs the packages with scripts/setup.sh.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode=$1 tool=$2 name=$3 declared=$4
if [[ $mode == conformance ]]; then
  out=$("$tool" --backend "$name" --expectations "$declared" --quiet 2>&1)
else
  report="$5/fuzz-$name.json"
  mkdir -p "$5"
  out=$("$tool" --backend "$name" --seed 1 --cases 2000 --max-findings 1000 --json "$report" \
        --quiet 2>&1)
fi
code=$?
printf '%s\n' "$out"
if [[ $code -ne 0 && "$out" == *"is not available on this machine"* ]]; then
  [[ "${CI:-}" == "true" ]] && exit "$code"
  echo "SKIPPED: the runtime is not installed here (scripts/setup.sh installs it)" >&2
  exit 77
fi
if [[ $mode == fuzz && $code -le 1 && -f "$report" ]]; then
  exec /usr/bin/python3 "$here/check_fuzz.py" "$report" "$declared"
fi
exit "$code"
