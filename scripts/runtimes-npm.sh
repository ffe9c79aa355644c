#!/usr/bin/env bash
# Installs the npm packages of mm's JavaScript drivers (backends/runtimes/js: onnxruntime-node,
# onnxruntime-web, TensorFlow.js's cpu and wasm backends; ESLint for scripts/check-format.sh, a
# development dependency) at the versions the committed
# backends/runtimes/js/package-lock.json pins, into build/runtimes-npm/node_modules: one install
# that every build folder of the checkout shares (mm finds it there; an installed mm in
# share/mm/runtimes/js/node_modules, or MM_NPM_DIR). Idempotent: nothing is done, and nothing
# printed, while the installed lock equals the committed one. `npm ci --ignore-scripts`: the
# packages' install scripts would fetch extras from outside the registry. Called by
# scripts/setup.sh; needs Debian's nodejs and npm and, the first time, the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=backends/runtimes/js/package-lock.json
npm_dir=build/runtimes-npm
mkdir -p "$npm_dir"
# Under a lock: two build folders' test runs may install at once.
exec 9> "$npm_dir.lock"
flock 9
if cmp -s "$lock" "$npm_dir/package-lock.json" &&
   [[ -f "$npm_dir/node_modules/.package-lock.json" ]]; then
  exit 0
fi
cp backends/runtimes/js/package.json "$lock" "$npm_dir/"
echo "runtimes-npm: installing the JavaScript runtimes from the npm registry into $npm_dir" >&2
if ! (cd "$npm_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then
  rm -f "$npm_dir/package-lock.json"  # So the next run tries again.
  echo "runtimes-npm: 'npm ci' of $lock into $npm_dir failed (npm's error above): the npm" \
       "registry (registry.npmjs.org, or npm's configured registry) must be reachable once, and" \
       "the disk hold the packages; free there now:" \
       "$(df -h --output=avail "$npm_dir" | tail -n 1 | tr -d ' ')" >&2
  exit 1
fi
