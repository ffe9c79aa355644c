#!/usr/bin/env bash
# One ctest of a JavaScript driver (runtime.<name>.conformance or .fuzz):
#   run_runtime_test.sh conformance MM_CONFORMANCE NAME EXPECTATIONS
#   run_runtime_test.sh fuzz MM_FUZZ NAME FUZZ_DECLARATIONS WORK_DIR
# conformance: the official and built-in cases, known deviations XFAIL by the expectations file;
# for a JavaScript runtime then MatMul's family (its official cases and deviations' node tests).
# fuzz: the fixed-seed passes the declarations list (their "passes", chosen to reach every declared
# finding), every failure shrunk, the findings of all passes checked against the declared ones
# (check_fuzz.py: none undeclared, each declared one reproduced). Where the runtime is not
# installed (mm says "is not available on this machine"), the test is skipped (exit 77) with mm's
# reason, except in CI (CI=true), where it fails: CI installs the packages with scripts/setup.sh.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode=$1 tool=$2 name=$3 declared=$4

# Prints the output of a failed run and exits: 77 where the runtime is missing outside CI.
stop() {
  local code=$1 out=$2
  if [[ "$out" == *"is not available on this machine"* && "${CI:-}" != "true" ]]; then
    echo "SKIPPED: the runtime is not installed here (scripts/setup.sh installs it)" >&2
    exit 77
  fi
  exit "$code"
}

if [[ $mode == conformance ]]; then
  out=$("$tool" --backend "$name" --expectations "$declared" --quiet 2>&1)
  code=$?
  printf '%s\n' "$out"
  [[ $code -ne 0 ]] && stop "$code" "$out"
  # A JavaScript runtime also runs MatMul's family: ONNX's official cases of it (MM_FAMILY_DATA,
  # when that folder exists) and the minimal problems of the family's deviations
  # (deviations/test_mm_family_*, family_node_tests.js), under the same declarations.
  [[ $declared == "$here"/expectations/* ]] || exit 0
  family=()
  if [[ -n "${MM_FAMILY_DATA:-}" && -d "$MM_FAMILY_DATA" ]]; then
    family+=(--data-dir "$MM_FAMILY_DATA")
  else
    echo "MatMul's family: no official cases (MM_FAMILY_DATA '${MM_FAMILY_DATA:-}' is no folder)"
  fi
  for dir in "$here"/deviations/test_mm_family_*/; do
    [[ -d $dir ]] && family+=(--data-dir "${dir%/}")
  done
  [[ ${#family[@]} -eq 0 ]] && exit 0
  echo "MatMul's family: mm-conformance --backend $name --no-builtin ${family[*]}"
  out=$("$tool" --backend "$name" --expectations "$declared" --no-builtin "${family[@]}" \
        --quiet 2>&1)
  code=$?
  printf '%s\n' "$out"
  [[ $code -ne 0 ]] && stop "$code" "$out"
  exit 0
fi

mkdir -p "$5"
passes=$(/usr/bin/python3 "$here/check_fuzz.py" --passes "$declared") || exit 1
reports=()
pass=0
while read -ra options; do
  pass=$((pass + 1))
  report="$5/fuzz-$name.$pass.json"
  rm -f "$report"
  echo "pass $pass: mm-fuzz --backend $name ${options[*]}"
  out=$("$tool" --backend "$name" "${options[@]}" --max-findings 1000 --json "$report" \
        --quiet 2>&1)
  code=$?
  printf '%s\n' "$out"
  # Exit 1 is a run with failures, which the declarations judge; anything else stops the test.
  [[ $code -gt 1 || ! -f "$report" ]] && stop "$((code > 0 ? code : 1))" "$out"
  reports+=("$report")
done <<< "$passes"
exec /usr/bin/python3 "$here/check_fuzz.py" "${reports[@]}" "$declared"
