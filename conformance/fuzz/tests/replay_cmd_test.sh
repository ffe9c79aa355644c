#!/usr/bin/env bash
# A replay line of a --backend-cmd driver is a command a user pastes, as a plugin's is
# (replay_test.sh): it must carry the driver's `--backend-cmd NAME=COMMAND` and find the same FAIL
# in a fresh shell, in another directory. Fuzzes off_by_one_driver.py (wrong on purpose) given by
# --backend-cmd alone (no --backend: the driver is all that runs), named by a relative path and
# run by a relative interpreter (a link to python3, as a virtual environment's is), so the line
# must carry both absolute (the link kept a link); takes the printed replay line of its first
# finding, runs it through `bash -c` elsewhere and checks the same finding comes back (kind,
# backend, dtype, problem index). Exit 77 (skipped) without /usr/bin/python3 and numpy.
# Usage: replay_cmd_test.sh BIN_DIR (holding mm-fuzz) DRIVER_PATH
set -euo pipefail
bin_dir=$(cd "$1" && pwd)
driver=$(realpath "$2")
/usr/bin/python3 -c 'import numpy' 2>/dev/null ||
  { echo "replay_cmd_test: skipped: no /usr/bin/python3 with numpy"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "replay_cmd_test: $*" >&2; exit 1; }

mkdir -p "$work/first/env/bin" "$work/elsewhere"
ln -s /usr/bin/python3 "$work/first/env/bin/python3"
relative=$(realpath --relative-to="$work/first" "$driver")
cd "$work/first"
set +e
"$bin_dir/mm-fuzz" --backend-cmd "wrong=env/bin/python3 $relative" --dtype float --seed 3 \
  --cases 50 --max-findings 1 --max-elements 256 > first.txt 2>&1
code=$?
set -e
[[ $code -eq 1 ]] || { cat first.txt >&2; fail "the first run exited $code, expected 1"; }
grep -qE 'problems x 1 backends' first.txt ||
  { cat first.txt >&2; fail "the run fuzzed more than the driver it was given"; }
finding=$(grep -m1 -E '^(FAIL|IMPRECISE|BOUND|ERROR) ' first.txt) || fail "no finding printed"
[[ "$finding" == FAIL*wrong* ]] || fail "the finding is not the driver's FAIL: $finding"
replay=$(grep -m1 '^  replay: ' first.txt | sed 's/^  replay: //') || fail "no replay line"
[[ "$replay" == *"--backend-cmd 'wrong=$work/first/env/bin/python3 $driver'"* ]] ||
  fail "the replay line lacks the driver's --backend-cmd with absolute paths: $replay"
for word in "--dtype float" "--seed 3" "--first " "--backend wrong" "--max-elements 256"; do
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
[[ "$again" == "$finding" ]] || fail "the replay found '$again', the run had '$finding'"
grep -q -- "--first $index " again.txt || fail "the replay's finding is not problem $index"
echo "replay_cmd_test: '$finding' reproduced by: $replay"
