#!/usr/bin/env bash
# Issue 52's target, end to end through the tools, for a family operator: `mm-fuzz --op OP
# --backend-lib PLUGIN` on a plugin with a planted fault fails within the default budget of 10 s,
# shrinks to a problem of K <= 4, prints a replay line that finds the same finding again in a fresh
# shell in another directory, and exports the minimal problem as an ONNX node test
# (test_mm_fuzz_<kind>_<backend>_<op>_<dtype>_s<seed>_i<index>) that ONNX's checker accepts and
# whose README's mm-conformance command (--data-dir DIR --no-builtin --backend X) gives the same
# verdict.
# Usage: family_export_test.sh BIN_DIR (mm-fuzz, mm-conformance) PLUGIN_PATH OP [MM-FUZZ OPTIONS]
set -euo pipefail
bin_dir=$(cd "$1" && pwd)
plugin=$(realpath "$2")
op=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "family_export_test: $*" >&2; exit 1; }

mkdir -p "$work/first" "$work/elsewhere"
cd "$work/first"
set +e
"$bin_dir/mm-fuzz" --backend-lib "$plugin" --op "$op" --time 10 --max-findings 1 "$@" \
  --export-dir found --json report.json > first.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat first.txt >&2; fail "the run exited $code, expected 1"; }
finding=$(grep -m1 -E "^FAIL [^ ]+ $op " first.txt) || { cat first.txt >&2; fail "no FAIL of $op"; }
replay=$(grep -m1 '^  replay: ' first.txt | sed 's/^  replay: //') || fail "no replay line"

# K of the minimal problem: A's last dim, its first when transA=1 (Gemm).
read -r k exported < <(/usr/bin/python3 - report.json <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))["findings"][0]
a = f["minimal_a_shape"]
k = a[0] if "transA=1" in f["minimal_problem"] else a[-1]
print(k, f["exported"])
EOF
)
[[ $k -le 4 ]] || fail "the minimal problem has K = $k > 4: $(grep -m1 '  minimal: ' first.txt)"
name=$(basename "$exported")
lower_op=$(tr '[:upper:]' '[:lower:]' <<< "$op")
[[ $name == test_mm_fuzz_fail_*_${lower_op}_*_s*_i* ]] || fail "exported as '$exported'"

# The pasted replay line, from another directory, with only mm's tools on the PATH.
cd "$work/elsewhere"
set +e
PATH="$bin_dir:/usr/bin:/bin" bash -c "$replay" > again.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat again.txt >&2; fail "the replay exited $code, expected 1: $replay"; }
again=$(grep -m1 -E '^(FAIL|IMPRECISE|BOUND|ERROR) ' again.txt) || fail "the replay found nothing"
[[ "$again" == "$finding" ]] || fail "the replay found '$again', the run had '$finding'"

# The node test: ONNX's checker accepts it, and the README's command fails the same backend.
/usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]))' \
  "$work/first/$exported/model.onnx" || fail "ONNX's checker refuses $exported/model.onnx"
readme="$work/first/$exported/README.md"
grep -qF -- "$replay" "$readme" || fail "README.md lacks the replay line"
run_case=$(grep -m1 '^    mm-conformance ' "$readme" | sed 's/^    //') ||
  fail "README.md has no mm-conformance command"
[[ "$run_case" == *"--no-builtin --backend "* ]] || fail "README's command: $run_case"
set +e
PATH="$bin_dir:/usr/bin:/bin" bash -c "$run_case" > case.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat case.txt >&2; fail "the README's command exited $code: $run_case"; }
grep -qE "^FAIL +$name .* $op " case.txt ||
  { cat case.txt >&2; fail "the README's command shows no FAIL of $name"; }
# The node test's expected output is the exact answer (mm-conformance judges it against that too).
if grep -q "suspect data" case.txt; then cat case.txt >&2; fail "a wrong expected output"; fi
echo "family_export_test: '$finding' shrunk to K = $k, exported as $name, reproduced by: $replay"
