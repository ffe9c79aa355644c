#!/usr/bin/env bash
# A replay line is a command a user pastes: it must find the same thing in a fresh shell, in
# another directory, with nothing but what the line says. Fuzzes a plugin backend that is wrong
# (named by a path relative to the working directory, so the line must carry an absolute one),
# takes the printed replay line of its first finding, runs it through `bash -c` from another
# directory, and checks the same finding comes back (kind, backend, dtype, problem index). Then
# runs the mm-conformance command of the exported README.md the same way: the minimal problem
# fails there too.
# Usage: replay_test.sh BIN_DIR (holding mm-fuzz and mm-conformance) PLUGIN_PATH
set -euo pipefail
bin_dir=$(cd "$1" && pwd)
plugin=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "replay_test: $*" >&2; exit 1; }

mkdir -p "$work/first" "$work/elsewhere"
relative=$(realpath --relative-to="$work/first" "$plugin")
cd "$work/first"
set +e
"$bin_dir/mm-fuzz" --backend-lib "$relative" --dtype float16 --seed 3 --cases 200 \
  --max-findings 1 --max-elements 4096 --tolerance onnx --export-dir found > first.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat first.txt >&2; fail "the first run exited $code, expected 1"; }
finding=$(grep -m1 -E '^(FAIL|IMPRECISE|BOUND|ERROR) ' first.txt) || fail "no finding printed"
replay=$(grep -m1 '^  replay: ' first.txt | sed 's/^  replay: //') || fail "no replay line"
[[ "$replay" == *"--backend-lib $(realpath "$plugin")"* ]] ||
  fail "the replay line lacks the plugin's absolute path: $replay"
for word in "--dtype float16" "--seed 3" "--first " "--max-elements 4096" "--tolerance onnx"; do
  [[ "$replay" == *"$word"* ]] || fail "the replay line lacks '$word': $replay"
done
index=$(sed -E 's/.*--first ([0-9]+).*/\1/' <<< "$replay")

# The pasted line, from another directory, with only mm's tools on the PATH.
cd "$work/elsewhere"
set +e
PATH="$bin_dir:/usr/bin:/bin" bash -c "$replay" > again.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat again.txt >&2; fail "the replay exited $code, expected 1: $replay"; }
again=$(grep -m1 -E '^(FAIL|IMPRECISE|BOUND|ERROR) ' again.txt) || fail "the replay found nothing"
# Same kind, backend, dtype and original problem (the first line names them all).
[[ "$again" == "$finding" ]] || fail "the replay found '$again', the run had '$finding'"
grep -q -- "--first $index " again.txt || fail "the replay's finding is not problem $index"

# The exported minimal problem's README: its mm-conformance command fails the same backend.
readme=$(find "$work/first/found" -name README.md | head -1)
[[ -n "$readme" ]] || fail "no README.md beside the exported node test"
grep -qF -- "$replay" "$readme" || fail "README.md lacks the replay line"
run_case=$(grep -m1 '^    mm-conformance ' "$readme" | sed 's/^    //') ||
  fail "README.md has no mm-conformance command"
set +e
PATH="$bin_dir:/usr/bin:/bin" bash -c "$run_case" > case.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat case.txt >&2; fail "the README's command exited $code: $run_case"; }
grep -q "FAIL" case.txt || { cat case.txt >&2; fail "the README's command shows no FAIL"; }
echo "replay_test: '$finding' reproduced by: $replay"
