#!/usr/bin/env bash
# torch's quantized linear saturates uint8 x int8 pair sums on a CPU without AVX512_VNNI
# (ctest runtime.torch.saturating_pairs), shown on any CPU: oneDNN capped at AVX2
# (ONEDNN_MAX_CPU_ISA, read by the oneDNN inside torch) runs what such a CPU runs.
#   torch_saturation_test.sh MM_CONFORMANCE EXPECTATIONS DEVIATIONS_DIR
# 1. capped, undeclared: test_torch_qlinearmatmul_saturating_pairs FAILs (127 is 64);
# 2. capped, with torch.json's entry made unconditional (its unless_cpu_has removed): XFAIL;
# 3. uncapped, with torch.json as it is: exit 0 (PASS on a VNNI CPU, XFAIL on another).
# Skipped (exit 77) where torch is not installed, except in CI.
set -uo pipefail
tool=$1 declared=$2 deviations=$3
case_name=test_torch_qlinearmatmul_saturating_pairs
run() {
  "$tool" --backend torch --data-dir "$deviations" --case "$case_name" --no-builtin "$@" 2>&1
}
out=$(ONEDNN_MAX_CPU_ISA=AVX2 run)
code=$?
if [[ "$out" == *"is not available on this machine"* && "${CI:-}" != "true" ]]; then
  echo "SKIPPED: torch is not installed here (scripts/setup.sh installs it)" >&2
  exit 77
fi
if [[ $code -ne 1 || "$out" != *"FAIL        $case_name"*"exact 127, got 64"* ]]; then
  printf '%s\nexpected FAIL (exact 127, got 64) with oneDNN capped at AVX2 (exit %d)\n' "$out" "$code"
  exit 1
fi
unconditional=$(mktemp)
trap 'rm -f "$unconditional"' EXIT
/usr/bin/python3 -c '
import json, sys
data = json.load(open(sys.argv[1]))
for entry in data["expectations"]:
    entry.pop("unless_cpu_has", None)
json.dump(data, open(sys.argv[2], "w"))' "$declared" "$unconditional" || exit 1
out=$(ONEDNN_MAX_CPU_ISA=AVX2 run --expectations "$unconditional")
if [[ $? -ne 0 || "$out" != *"XFAIL       $case_name"* ]]; then
  printf '%s\nexpected XFAIL with the declaration made unconditional\n' "$out"
  exit 1
fi
out=$(run --expectations "$declared")
code=$?
printf '%s\n' "$out"
exit "$code"
