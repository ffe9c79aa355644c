#!/usr/bin/env bash
# The minimal build (CMake preset "minimal": every optional backend off, so neither oneDNN, the
# eigen and BLAS backends nor the shipped runtime drivers) configured, built and tested in build/minimal/, as CI checks it.
# Usage: scripts/test-minimal.sh [--all] [extra ctest arguments]
#   By default only what the options change: the backend list (mm_backends_test, each backend
#   left out listed with its option) and mm-conformance's tests over the backends left (reference,
#   auto among them; the node tests, the shape classes, the official corpus). Every other library
#   compiles as in the default tree, whose tests CI runs; this keeps the second tree to a fifth of
#   the build. That form compiles without optimisation, debug information or the AVX2 and AVX-512
#   copies of the kernels (-O0, MM_ISA_DISPATCH=OFF): its subject is which backends exist and the
#   verdicts of those left, never speed or dispatch (the default tree's), and its tests take
#   seconds either way, while the compiler takes a third less time. --all: the whole tree as the
#   preset configures it, and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
all=0
if [[ "${1:-}" == "--all" ]]; then
  all=1
  shift
fi
# A tree built once and not edited: every target in batches, as CI's default tree. Configured
# each time (seconds), so that the form asked for is the one built.
if ((all)); then
  form=(-UMM_TEST_COMPILE_OPTIONS -UMM_ISA_DISPATCH)
else
  form=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG"
        -DMM_TEST_COMPILE_OPTIONS=-O0 -DMM_ISA_DISPATCH=OFF)
fi
bash scripts/setup.sh --for build
cmake --preset minimal -DMM_UNITY_BUILD=ON "${form[@]}" >/dev/null
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
if ((all)); then
  cmake --build --preset minimal
  ctest --preset minimal "$@"
else
  cmake --build --preset minimal --target mm_backends_test mm-conformance
  ctest --preset minimal -R '^(BuiltinBackendsTest|conformance\.)' -LE isa "$@"
fi
