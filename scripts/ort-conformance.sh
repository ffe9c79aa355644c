#!/usr/bin/env bash
# ONNX Runtime judged by mm through its driver (backend onnxruntime: backends/runtimes/js/
# onnxruntime_driver.js over the runtime protocol, docs/runtimes.md), end to end:
#   1. installs the JavaScript runtimes (the versions backends/runtimes/js/package-lock.json pins)
#      from the npm registry into build/runtimes-npm (scripts/runtimes-npm.sh: once, again only
#      when the lock file changes; one install that every build folder of the checkout shares);
#   2. writes the generated corpus (mm-fuzz generate --cases 200 --seed 1) and, for the count
#      check, mm's built-in cases as node tests (mm-fuzz export-builtin: the ONNX page's examples
#      and the shape-class catalogue, whose sequences run in order through one session);
#   3. judges ONNX Runtime's CPU provider with mm-conformance --backend onnxruntime on the official
#      cases (MM_ONNX_DATA, or ../shared as scripts/onnx-data.sh finds it), the built-in ones and
#      the generated corpus, with the known deviations of
#      backends/runtimes/js/expectations/onnxruntime.json, writing BUILD/ort/report.{json,xml,md};
#   4. checks the verdicts (scripts/ort/check_report.py) and prints them per dtype.
# Usage: scripts/ort-conformance.sh [BUILD_DIR]   (default: build; the binaries in BUILD_DIR/bin)
# Needs Debian's nodejs and npm (scripts/setup.sh) and the npm registry the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
build="${1:-build}"
work="$build/ort"
bin="$build/bin"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "ort-conformance: '$tool' not found; install Debian's nodejs and npm (scripts/setup.sh)" >&2
    exit 1
  fi
done
for tool in mm-conformance mm-fuzz; do
  if [[ ! -x "$bin/$tool" ]]; then
    echo "ort-conformance: $bin/$tool not built (scripts/build.sh)" >&2
    exit 1
  fi
done
if [[ -z "${MM_ONNX_DATA:-}" ]]; then
  echo "ort-conformance: MM_ONNX_DATA names no data root with the official ONNX MatMul cases" >&2
  exit 1
fi

# 1. The npm packages, pinned by the committed lock file.
bash scripts/runtimes-npm.sh

# 2. The generated corpus, and the built-in cases as node tests (only counted).
IFS=: read -r -a official_roots <<< "$MM_ONNX_DATA"
rm -rf "$work/builtin" "$work/generated" "$work/outputs"
"$bin/mm-fuzz" export-builtin --out "$work/builtin" >&2
"$bin/mm-fuzz" generate --out "$work/generated" --cases 200 --seed 1 >&2

# 3. mm judges ONNX Runtime through its driver.
data_args=()
for root in "${official_roots[@]}"; do data_args+=(--data-dir "$root"); done
set +e
"$bin/mm-conformance" "${data_args[@]}" --data-dir "$work/generated" --backend onnxruntime \
  --expectations backends/runtimes/js/expectations/onnxruntime.json --require-official \
  --json "$work/report.json" --junit "$work/report.xml" --markdown "$work/report.md" -q
code=$?
set -e

# 4. The verdicts it should give.
/usr/bin/python3 scripts/ort/check_report.py "$work/report.json" --exit-code "$code" \
  --generated "$work/generated" --builtin "$work/builtin"
