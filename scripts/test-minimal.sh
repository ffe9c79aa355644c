#!/usr/bin/env bash
# The minimal build (CMake preset "minimal": every optional backend off, so neither oneDNN, the
# eigen and BLAS backends nor the shipped runtime drivers) configured, built and tested in build/minimal/, as CI checks it.
# Usage: scripts/test-minimal.sh [--all] [extra ctest arguments]
#   By default only what the options change: the backend list (mm_backends_test, each backend
#   left out listed with its option) and mm-conformance's tests over the backends left (reference,
#   auto among them; the node tests, the shape classes, the official corpus). Every other library
#   compiles as in the default tree, whose tests CI runs; this keeps the second tree to a fifth of
#   the build. --all: the whole tree and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
all=0
if [[ "${1:-}" == "--all" ]]; then
  all=1
  shift
fi
# A tree built once and not edited: every target in batches, as CI's default tree.
if [[ ! -f build/minimal/build.ninja ]]; then
  bash scripts/setup.sh --for build
  cmake --preset minimal -DMM_UNITY_BUILD=ON >/dev/null
fi
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
if ((all)); then
  bash scripts/build.sh minimal
  ctest --preset minimal "$@"
else
  bash scripts/build.sh minimal --target mm_backends_test mm-conformance
  ctest --preset minimal -R '^(BuiltinBackendsTest|conformance\.)' -LE isa "$@"
fi
