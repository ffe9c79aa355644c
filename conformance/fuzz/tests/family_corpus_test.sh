#!/usr/bin/env bash
# mm-fuzz generate --op: a fair corpus of each family operator. With --cases-per-dtype N, every
# signature of the operator (version and types, FamilySignatures) has exactly N cases; ONNX's
# checker accepts every model; the reference backend passes every case under mm-conformance's
# default rule (ONNX's tolerance) and no expected output differs from the exact answer; the same
# seed writes the same bytes; the saturating-pairs
# plugin fails the MatMulInteger corpus; and Gemm's filter matters: the same problems with
# --keep-unfair give BOUND results under ONNX's rule on the reference, the fair corpus none.
# Usage: family_corpus_test.sh BIN_DIR SATURATING_PLUGIN
set -euo pipefail
bin_dir=$(cd "$1" && pwd)
plugin=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "family_corpus_test: $*" >&2; exit 1; }

declare -A signatures=([MatMulInteger]=4 [QLinearMatMul]=32 [Gemm]=31)
for op in MatMulInteger QLinearMatMul Gemm; do
  dir="$work/$op"
  "$bin_dir/mm-fuzz" generate --op "$op" --out "$dir" --cases-per-dtype 2 --seed 1 > /dev/null
  "$bin_dir/mm-fuzz" generate --op "$op" --out "$dir.again" --cases-per-dtype 2 --seed 1 \
    > /dev/null
  diff -r "$dir" "$dir.again" > /dev/null || fail "$op: the same seed wrote other bytes"
  /usr/bin/python3 - "$dir" "$op" "${signatures[$op]}" <<'EOF' || fail "$op: manifest or checker"
import glob, json, os, sys
import onnx
folder, op, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
manifest = json.load(open(os.path.join(folder, "manifest.json")))
per = manifest["signatures"]
assert len(per) == count and set(per.values()) == {2}, per
assert all(s.startswith(op + "-") for s in per), per
cases = [c["case"] for c in manifest["case_list"]]
assert sorted(cases) == sorted(os.path.basename(os.path.dirname(p))
                               for p in glob.glob(os.path.join(folder, "*/model.onnx")))
for case in cases:
    model = onnx.load(os.path.join(folder, case, "model.onnx"))
    # libonnx 1.12 reads IR versions up to its own: QLinearMatMul-21's IR 10 is checked as 8.
    model.ir_version = min(model.ir_version, onnx.IR_VERSION)
    onnx.checker.check_model(model)
EOF
  out=$("$bin_dir/mm-conformance" --data-dir "$dir" --no-builtin --backend reference --quiet 2>&1) ||
    { echo "$out" >&2; fail "$op: the reference does not pass its corpus"; }
  cases=$((2 * ${signatures[$op]}))
  grep -q "summary: $cases results .*: $cases PASS" <<< "$out" || { echo "$out" >&2; fail "$op"; }
  # mm-conformance judges the backend against the exact answer and each file's expected output
  # against it too: a wrong output_0.pb is "suspect data".
  if grep -q "suspect data" <<< "$out"; then echo "$out" >&2; fail "$op: a wrong expected output"; fi
done

set +e
out=$("$bin_dir/mm-conformance" --backend-lib "$plugin" --data-dir "$work/MatMulInteger" \
  --no-builtin --quiet 2>&1)
code=$?
set -e
[[ $code -eq 1 ]] && grep -qE "summary: .* [1-9][0-9]* FAIL" <<< "$out" ||
  { echo "$out" >&2; fail "the saturating plugin passes the MatMulInteger corpus"; }

for keep in "" --keep-unfair; do
  "$bin_dir/mm-fuzz" generate --op Gemm --out "$work/gemm$keep" --cases 600 --seed 1 $keep \
    > /dev/null
  set +e
  out=$("$bin_dir/mm-conformance" --data-dir "$work/gemm$keep" --no-builtin --backend reference \
    --quiet 2>&1)
  set -e
  bound=$(sed -nE 's/.* ([0-9]+) BOUND.*/\1/p' <<< "$out" | tail -1)
  if [[ -z "$keep" && "$bound" != 0 ]]; then fail "the fair Gemm corpus has $bound BOUND"; fi
  if [[ -n "$keep" && "$bound" == 0 ]]; then fail "--keep-unfair gave no BOUND: the filter is idle"; fi
done
echo "family_corpus_test: every signature of each operator twice, checker and reference pass"
