#!/usr/bin/env bash
# Set-up of what the build needs (scripts/setup.sh --for build, when something is missing), configure
# and incremental build. What runs the programs (scripts/test.sh, conformance.sh, ...) installs the
# rest itself.
# Usage: scripts/build.sh [PRESET [--target T...]]
# PRESET is a configure preset of CMakePresets.json: default (build/), minimal (build/minimal/) or
# asan (build/asan/); further arguments go to `cmake --build` (e.g. --target mm-bench to build only
# that).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
shift || true
bash scripts/setup.sh --for build
case "$preset" in
  default) dir=build ;;
  minimal) dir=build/minimal ;;
  asan) dir=build/asan ;;
  *) echo "build: unknown preset '$preset' (default, minimal, asan)" >&2; exit 2 ;;
esac
# Configure only when needed: CMake re-runs itself when a CMakeLists.txt changes, and we re-run it
# when MM_ONNX_DATA differs from what the last configure saw (the conformance tests are registered
# over it; conformance/cmake/ConformanceTests.cmake caches it as MM_CONFORMANCE_ONNX_DATA).
if [[ ! -f "$dir/build.ninja" ]] ||
   ! grep -qxF "MM_CONFORMANCE_ONNX_DATA:INTERNAL=${MM_ONNX_DATA:-<unset>}" "$dir/CMakeCache.txt"; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset" "$@"
