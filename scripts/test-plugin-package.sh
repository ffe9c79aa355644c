#!/usr/bin/env bash
# Plugins from outside mm, as a user gets them: installs mm into build/install, builds the example
# plugin out of tree against that package (build/example-plugin), runs the installed harness on it
# (every case, --strict: nothing may be UNSUPPORTED), then runs every ```sh block of
# docs/plugins.md, in order, in one shell, with HOME in a temporary directory. Used by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
bash scripts/build.sh

rm -rf build/install build/example-plugin
cmake --install build --prefix build/install >/dev/null
cmake -S backends/plugin/example -B build/example-plugin -G Ninja \
  -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/example-plugin
args=(--backend-lib build/example-plugin/libmm_example_plugin.so --backend example --strict --quiet)
if [[ -n "${MM_ONNX_DATA:-}" ]]; then args+=(--require-official); fi
echo "plugin package: the out-of-tree example plugin on every case"
OMP_WAIT_POLICY=passive build/install/bin/mm-conformance "${args[@]}"

home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
awk '/^```sh$/ {in_block = 1; next} /^```$/ {in_block = 0} in_block' docs/plugins.md >"$home/guide.sh"
echo "plugin package: the commands of docs/plugins.md ($(grep -c '' "$home/guide.sh") lines)"
HOME="$home" OMP_WAIT_POLICY=passive bash -euo pipefail "$home/guide.sh"
echo "plugin package: OK"
