#!/usr/bin/env bash
# The backend comparison report: builds mm-bench and mm-conformance (and mm-fuzz when the build has
# it), runs them over every registered backend and writes, in build/reports/,
#   compare.json  the data (every tool's JSON output, as it came),
#   compare-derived.json  what the page derives from it (scoreboard, fastest, accuracy, speed),
#   compare.html  one self-contained page: summary, machine, support, conformance, accuracy, speed,
#                 one section per operator of MatMul's family (Gemm, MatMulInteger, QLinearMatMul),
#   compare.md    the same tables without the plots.
# Progress (what runs, how far, time left) goes to stderr.
#
# Usage: scripts/compare.sh [--quick] [extra arguments for every tool, e.g. --backend-lib FILE]
#   --quick   a check, not a measurement: every section made from every tool, backend and
#             runtime, on a sample (the quick shape set, the shortest benchmark samples, a few
#             seconds of fuzzing); its figures are not a measurement to quote (the full report,
#             the whole sweep over every backend and runtime with 3 repetitions each and unstable
#             figures measured again, took 45 minutes on 2 idle cores).
# Exits non-zero when a tool cannot run; FAIL and ERROR verdicts are shown (in red, at the top of
# the page), not turned into an exit code: scripts/conformance.sh is the gate.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/onnx-data.sh
mode=full
extra=()
for arg in "$@"; do
  if [[ "$arg" == "--quick" ]]; then mode=quick; else extra+=("$arg"); fi
done

targets=(mm-bench mm-conformance)
bash scripts/setup.sh
bash scripts/build.sh default --target "${targets[@]}"
# The differential fuzzer feeds the accuracy section; older builds have none.
if cmake --build build --target help 2>/dev/null | grep -q '^mm-fuzz:'; then
  cmake --build build --target mm-fuzz
fi

# Idle OpenMP threads spin by default; on a machine shared with other work (2 cores here) that
# spinning, not the matmul, dominates multi-threaded timings. A caller's own setting wins, and the
# report records it.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
mkdir -p build/reports
# The runtimes (ONNX Runtime, numpy, torch, ...) are backends run only when named: collect.py
# finds them in mm-bench --mm_describe and names them to every tool.
conformance_args=()
start=$(date +%s)
# The family's official cases (Gemm, MatMulInteger, QLinearMatMul) join the conformance run's data
# roots, as in scripts/conformance.sh (an empty or unset MM_ONNX_DATA selects the defaults, whose
# Debian copy holds them too: left alone).
corpus_data="${MM_ONNX_DATA-}"
if [[ -n "$corpus_data" && -n "${MM_FAMILY_DATA-}" ]]; then
  corpus_data="$corpus_data:$MM_FAMILY_DATA"
fi
MM_ONNX_DATA="$corpus_data" /usr/bin/python3 scripts/compare/collect.py --mode "$mode" \
  --bin build/bin --out build/reports/compare.json "${conformance_args[@]}" -- "${extra[@]}"
# The auto backend's choice map comes from the table it reads (absent: it runs on its defaults).
# (auto's own tables are named per machine and environment, auto-KEY.json: the newest.)
auto_cache="${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/mm"
auto_newest="$(ls -t "$auto_cache"/auto-*.json 2>/dev/null | head -1 || true)"
auto_table="${MM_AUTO_TABLE:-${auto_newest:-$auto_cache/auto.json}}"
/usr/bin/python3 scripts/compare/render.py build/reports/compare.json \
  --html build/reports/compare.html --markdown build/reports/compare.md \
  --derived build/reports/compare-derived.json --auto-table "$auto_table"
echo "reports: build/reports/compare.html, compare.md, compare.json ($(( $(date +%s) - start )) s)" >&2
