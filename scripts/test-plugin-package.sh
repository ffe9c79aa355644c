#!/usr/bin/env bash
# Plugins from outside mm, as a user gets them: installs mm into build/install, builds the example
# plugin out of tree against that package (build/example-plugin), runs the installed harness on it
# (every case, --strict: nothing may be UNSUPPORTED, but the family operators it refuses, which
# must be UNSUPPORTED with its reason: backends/plugin/tests/example_family_test.sh), has the
# installed harness judge a ten-line Python driver written on the installed SDK (the package
# mm_runtime, under share/mm/ as the JavaScript one) and run its self-check (the planted driver
# installed beside the SDK), then runs every ```sh block of docs/plugins.md, in order, in one shell,
# with HOME in a temporary directory.
# Used by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
bash scripts/setup.sh
bash scripts/build.sh

rm -rf build/install build/example-plugin
cmake --install build --prefix build/install >/dev/null
cmake -S backends/plugin/example -B build/example-plugin -G Ninja \
  -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/example-plugin
# The example computes MatMul and MatMulInteger: Gemm and QLinearMatMul, which it refuses by design,
# are left to the family check below, which requires them UNSUPPORTED with its reason.
args=(--backend-lib build/example-plugin/libmm_example_plugin.so --backend example --strict --quiet
  --exclude '^(mm_family_(gemm|qlinearmatmul)|test_gemm|test_qlinearmatmul)')
if [[ -n "${MM_ONNX_DATA:-}" ]]; then args+=(--require-official); fi
echo "plugin package: the out-of-tree example plugin on every case"
OMP_WAIT_POLICY=passive build/install/bin/mm-conformance "${args[@]}"
echo "plugin package: the out-of-tree example plugin on MatMul's family"
bash backends/plugin/tests/example_family_test.sh build/install/bin/mm-conformance build/bin/mm-fuzz \
  build/example-plugin/libmm_example_plugin.so "${MM_FAMILY_DATA:-../shared/onnx-node-tests/matmul-family}"

echo "plugin package: a ten-line Python driver on the installed SDK, judged by the installed harness"
# The SDKs live under share/mm/ only, the Python one a typed package.
[[ -f build/install/share/mm/runtimes/python/mm_runtime/py.typed &&
   -f build/install/share/mm/runtimes/js/mm_runtime.js ]]
if ls build/install/include/mm/mm_runtime* 2>/dev/null; then
  echo "plugin package: an SDK installed among the C headers" >&2
  exit 1
fi
sdk_status=0
bash backends/runtimes/python/tests/ten_line_driver_test.sh build/install/bin/mm-conformance \
  build/install/share/mm/runtimes/python || sdk_status=$?
[[ $sdk_status == 0 || $sdk_status == 77 ]] || exit "$sdk_status"
echo "plugin package: the installed self-check, its runtime-protocol faults through the installed SDK"
self_check=$(OMP_WAIT_POLICY=passive build/install/bin/mm-conformance --self-check --quiet)
echo "$self_check"
if [[ $sdk_status == 0 && "$self_check" == *"NOT RUN"* ]]; then
  echo "plugin package: the installed self-check did not run its driver faults" >&2
  exit 1
fi

home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
awk '/^```sh$/ {in_block = 1; next} /^```$/ {in_block = 0} in_block' docs/plugins.md >"$home/guide.sh"
echo "plugin package: the commands of docs/plugins.md ($(grep -c '' "$home/guide.sh") lines)"
HOME="$home" OMP_WAIT_POLICY=passive bash -euo pipefail "$home/guide.sh"
echo "plugin package: OK"
