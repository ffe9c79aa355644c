#!/usr/bin/env bash
# Set-up (when something is missing), configure and incremental build. Usage: scripts/build.sh [PRESET]
# PRESET is a configure preset of CMakePresets.json: default (build/) or asan (build/asan/).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
bash scripts/setup.sh
case "$preset" in
  default) dir=build ;;
  asan) dir=build/asan ;;
  *) echo "build: unknown preset '$preset' (default, asan)" >&2; exit 2 ;;
esac
# Configure only when needed: CMake re-runs itself when a CMakeLists.txt changes.
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset"
