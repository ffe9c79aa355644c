#!/usr/bin/env bash
# ONNX Runtime judged by mm from the outputs it writes (docs/conformance.md, "Judging a runtime from
# its outputs"), end to end:
#   1. installs onnxruntime-node (the version scripts/ort/package-lock.json pins) from the npm
#      registry into build/ort-npm, one install that every build folder of the checkout shares
#      (the ASan build's too: a second copy had filled a CI machine's disk); once, again only
#      when the lock file changes;
#   2. writes the corpus: the official cases (MM_ONNX_DATA, or ../shared as scripts/onnx-data.sh
#      finds it), mm's built-in cases (mm-fuzz export-builtin: the ONNX page's examples and the
#      shape-class catalogue, whose sequences run in order through one session) and a generated
#      corpus (mm-fuzz generate --cases 200 --seed 1);
#   3. runs every case through ONNX Runtime's CPU provider (scripts/ort/run-node-tests.js) into an
#      outputs tree, BUILD/ort/outputs;
#   4. judges the tree with mm-conformance as backend "onnxruntime" (float32 accumulation declared,
#      ONNX's rule, the known deviations of scripts/ort/expectations.json), writing
#      BUILD/ort/report.{json,xml,md};
#   5. checks the verdicts (scripts/ort/check_report.py) and prints them per dtype.
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

# 1. onnxruntime-node, pinned by the committed lock file; --ignore-scripts: its install script
# would fetch extras from outside the registry. Under a lock, as two build folders' test runs may
# install at once.
npm_dir=build/ort-npm
mkdir -p "$npm_dir"
exec 9> "$npm_dir.lock"
flock 9
if ! cmp -s scripts/ort/package-lock.json "$npm_dir/package-lock.json" ||
   [[ ! -f "$npm_dir/node_modules/onnxruntime-node/package.json" ]]; then
  cp scripts/ort/package.json scripts/ort/package-lock.json "$npm_dir/"
  echo "ort-conformance: installing onnxruntime-node from the npm registry into $npm_dir" >&2
  if ! (cd "$npm_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then
    rm -f "$npm_dir/package-lock.json"  # So the next run tries again.
    echo "ort-conformance: 'npm ci' of scripts/ort/package-lock.json into $npm_dir failed" \
         "(npm's error above): the npm registry (registry.npmjs.org, or npm's configured" \
         "registry) must be reachable once, and the disk hold the package; free there now:" \
         "$(df -h --output=avail "$npm_dir" | tail -n 1 | tr -d ' ')" >&2
    exit 1
  fi
fi
exec 9>&-
export NODE_PATH="$(cd "$npm_dir/node_modules" && pwd)"

# 2. The corpus. The official roots are MM_ONNX_DATA's (colon-separated).
IFS=: read -r -a official_roots <<< "$MM_ONNX_DATA"
rm -rf "$work/builtin" "$work/generated" "$work/outputs"
"$bin/mm-fuzz" export-builtin --out "$work/builtin" >&2
"$bin/mm-fuzz" generate --out "$work/generated" --cases 200 --seed 1 >&2

# 3. ONNX Runtime writes its outputs; its own log (warnings for every failing node) goes to a file.
if ! node scripts/ort/run-node-tests.js --out "$work/outputs" "${official_roots[@]}" \
     "$work/builtin" "$work/generated" 2> "$work/onnxruntime.log" >&2; then
  tail -n 20 "$work/onnxruntime.log" >&2
  echo "ort-conformance: scripts/ort/run-node-tests.js failed (log: $work/onnxruntime.log)" >&2
  exit 1
fi

# 4. mm judges them. The built-in cases are mm's own (their outputs are where export-builtin put
# their data set); the official and generated ones come from their folders.
data_args=()
for root in "${official_roots[@]}"; do data_args+=(--data-dir "$root"); done
set +e
"$bin/mm-conformance" "${data_args[@]}" --data-dir "$work/generated" \
  --outputs "onnxruntime=$work/outputs" --outputs-arithmetic onnxruntime=float32 \
  --backend onnxruntime --expectations scripts/ort/expectations.json --require-official \
  --json "$work/report.json" --junit "$work/report.xml" --markdown "$work/report.md" -q
code=$?
set -e

# 5. The verdicts it should give.
/usr/bin/python3 scripts/ort/check_report.py "$work/report.json" --exit-code "$code" \
  --generated "$work/generated" --builtin "$work/builtin"
