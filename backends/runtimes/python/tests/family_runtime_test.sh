#!/usr/bin/env bash
# One ctest of a Python driver over MatMul's family (runtime.<name>.family):
#   family_runtime_test.sh MM_CONFORMANCE NAME EXPECTATIONS DEVIATIONS_DIR
# runs the official family node tests (MM_FAMILY_DATA, default ../shared/onnx-node-tests/
# matmul-family beside the repository; without them the deviations alone, said on stderr) and the
# drivers' exported deviations (backends/runtimes/python/deviations) on the driver, its known
# deviations XFAIL by its expectations file. Where the runtime is not installed, the test is
# skipped (exit 77) with mm's reason, except in CI (CI=true), where it fails.
set -uo pipefail
tool=$1 name=$2 declared=$3 deviations=$4
here="$(cd "$(dirname "$0")" && pwd)"
family="${MM_FAMILY_DATA:-$here/../../../../../shared/onnx-node-tests/matmul-family}"
roots=(--data-dir "$deviations")
if [[ -d "$family" ]]; then
  roots+=(--data-dir "$family")
else
  echo "note: no official family node tests at $family (MM_FAMILY_DATA): deviations only" >&2
fi
out=$("$tool" --backend "$name" "${roots[@]}" --no-builtin --expectations "$declared" --quiet 2>&1)
code=$?
printf '%s\n' "$out"
if [[ $code -ne 0 && "$out" == *"is not available on this machine"* && "${CI:-}" != "true" ]]; then
  echo "SKIPPED: the runtime is not installed here (scripts/setup.sh installs it)" >&2
  exit 77
fi
exit "$code"
