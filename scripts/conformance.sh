#!/usr/bin/env bash
# The main command: set-up, configure and incremental build (scripts/build.sh), then the harness's
# self-check (mm-conformance --self-check: deliberately wrong backends it must catch, each with the
# verdict it deserves; a miss is named and makes the exit code 1 when the corpus passed), then the
# conformance harness over its default data (MM_ONNX_DATA when set; else
# ../shared/onnx-node-tests/node when the project's shared folder is beside the repository; else
# Debian's libonnx-testdata and third_party/onnx-testdata/node; plus the built-in cases: the ONNX
# page's examples and the shape-class catalogue, every numpy.matmul shape class in every dtype,
# docs/conformance.md, and the family's catalogue of Gemm, MatMulInteger and QLinearMatMul cases,
# docs/family.md), and the official node tests of MatMul's family (MM_FAMILY_DATA when set;
# else ../shared/onnx-node-tests/matmul-family beside the repository; added to MM_ONNX_DATA's roots
# for the corpus run, docs/family.md). Writes
# build/reports/conformance.{json,xml,md}, prints one line per case and backend and a summary, and
# exits with mm-conformance's code (0 passed, 1 FAIL/ERROR, 2 usage or no case, 3 official corpus
# required and incomplete). Then a short fixed-seed differential fuzz pass (mm-fuzz, at most
# MM_FUZZ_SECONDS, default 10 s, a third of it on the large shapes; MM_FUZZ_SECONDS=0 skips it)
# writes build/reports/fuzz.json and build/reports/fuzz-large.json; a
# failure there makes the exit code 1 when the corpus passed; the known deviations of the BLAS
# libraries (backends/blas/deviations/expectations.json) are XFAIL in both. Extra arguments go to
# mm-conformance,
# e.g.
#   scripts/conformance.sh --backend reference --require-official
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
bash scripts/setup.sh
bash scripts/build.sh default
mkdir -p build/reports
# oneDNN and the Eigen backend use OpenMP, whose idle threads spin by default: on a busy machine that
# spinning, not the work, dominates a run of tiny node tests, for which passive waiting costs
# nothing. A caller's own setting wins.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
status=0
# Proof that this gate can fail, before its verdicts are believed (well under a second).
self_check_status=0
build/bin/mm-conformance --self-check || self_check_status=$?
# The family's official cases join the data roots of the corpus run (an empty MM_ONNX_DATA selects
# the defaults, whose Debian copy holds the family's cases too: left alone).
corpus_data="${MM_ONNX_DATA-}"
if [[ -n "$corpus_data" && -n "${MM_FAMILY_DATA-}" ]]; then
  corpus_data="$corpus_data:$MM_FAMILY_DATA"
fi
MM_ONNX_DATA="$corpus_data" build/bin/mm-conformance \
  --json build/reports/conformance.json \
  --junit build/reports/conformance.xml \
  --markdown build/reports/conformance.md \
  "$@" || status=$?
echo "reports: build/reports/conformance.json, conformance.xml, conformance.md"
# The known deviations of third-party libraries (BLAS backends), declared in a shipped expectations
# file with their minimal node tests: every backend runs them; a declared failure is XFAIL, a
# library that got fixed is XPASS (a failure of the gate, so the declaration cannot rot).
deviations=backends/blas/deviations
dev_status=0
build/bin/mm-conformance --data-dir "$deviations" --no-builtin --quiet \
  --expectations "$deviations/expectations.json" \
  --json build/reports/deviations.json --junit build/reports/deviations.xml || dev_status=$?
echo "reports: build/reports/deviations.json, deviations.xml"
if [[ "$status" == 0 && "$dev_status" != 0 ]]; then status=$dev_status; fi
if [[ "$self_check_status" != 0 ]]; then
  echo "self-check failed: the harness missed a planted fault (see the MISSED lines above)" >&2
  if [[ "$status" == 0 ]]; then status=1; fi
fi
# The 16 node tests are tiny float32 problems; the fuzz pass covers every dtype, form and size edge.
fuzz_seconds="${MM_FUZZ_SECONDS:-10}"
if [[ "$fuzz_seconds" != 0 ]]; then
  fuzz_status=0
  # A third of the time (whole seconds) goes to the large family: K up to 16384, batched and
  # broadcast forms of 2^26 products each, judged by the fast oracle.
  large_seconds=0
  if [[ "$fuzz_seconds" =~ ^[0-9]+$ ]]; then large_seconds=$((fuzz_seconds / 3)); fi
  small_seconds="$fuzz_seconds"
  if ((large_seconds > 0)); then small_seconds=$((fuzz_seconds - large_seconds)); fi
  build/bin/mm-fuzz --seed 1 --cases 50000 --time "$small_seconds" --quiet \
    --expectations "$deviations/expectations.json" \
    --json build/reports/fuzz.json --export-dir build/reports/fuzz-findings || fuzz_status=$?
  echo "reports: build/reports/fuzz.json (minimal failing problems: build/reports/fuzz-findings)"
  if ((large_seconds > 0)); then
    build/bin/mm-fuzz --seed 1 --large --large-products $((1 << 26)) --cases 1000 \
      --time "$large_seconds" --quiet --expectations "$deviations/expectations.json" \
      --json build/reports/fuzz-large.json --export-dir build/reports/fuzz-large-findings ||
      fuzz_status=$?
    echo "reports: build/reports/fuzz-large.json (build/reports/fuzz-large-findings)"
  fi
  if [[ "$status" == 0 && "$fuzz_status" != 0 ]]; then status=1; fi
fi
exit "$status"
