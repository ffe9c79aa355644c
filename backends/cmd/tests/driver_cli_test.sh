#!/usr/bin/env bash
# Everything mm-conformance does, for a driver (--backend-cmd) too. The self-check's planted
# driver (conformance/self_check/planted_driver.py) on the built-in cases: "gap" refuses operands
# of rank above 2 on dtypes it declares, "correct" does not. Checks, in turn:
# - a conformance gap is an ERROR shown as such in every report format (console line and summary,
#   JSON summary's conformance_gaps, JUnit type "CONFORMANCE GAP", Markdown verdict and summary),
#   and fails the run;
# - isolation: the same verdicts in worker processes (the default) as with --no-isolate;
# - shards: --shard 1/2 and 2/2, merged, give the whole run's verdicts and exit code;
# - --resume: a report cut short is completed into the whole run's verdicts;
# - expectations: the gaps declared XFAIL, the run passes.
# Exit 77 (skipped) without python3 and numpy.
# Usage: driver_cli_test.sh BIN_DIR (holding mm-conformance) PLANTED_DRIVER SDK_DIR
set -euo pipefail
bin=$(cd "$1" && pwd)
driver=$(realpath "$2")
sdk=$(realpath "$3")
python=${MM_PYTHON:-/usr/bin/python3}
"$python" -c 'import numpy' 2>/dev/null || { echo "driver_cli_test: skipped: no numpy"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "driver_cli_test: $*" >&2; exit 1; }
conf() {
  set +e
  OMP_WAIT_POLICY=passive "$bin/mm-conformance" "$@" --jobs 2 >out.txt 2>&1
  code=$?
  set -e
}
# "case backend data_set verdict" per result of a JSON report, sorted.
verdicts() {
  "$python" -c 'import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["case"], r["backend"], r["data_set"], r["verdict"])' "$1" | sort
}
gap=(--backend-cmd "gap=$python $driver gap $sdk")

conf "${gap[@]}" --json gap.json --junit gap.xml --markdown gap.md
[[ $code == 1 ]] || { cat out.txt >&2; fail "a run with conformance gaps exited $code, not 1"; }
gaps=$("$python" -c 'import json, sys
r = json.load(open(sys.argv[1]))
n = sum(x["verdict"] == "ERROR" and x["message"].startswith("conformance gap: ") for x in r["results"])
assert r["summary"]["conformance_gaps"] == n, (r["summary"], n)
print(n)' gap.json)
((gaps > 0)) || fail "no conformance gap in gap.json"
plural=$([[ $gaps == 1 ]] && echo gap || echo gaps)
grep -qE "^ERROR .*conformance gap: driver 'gap'" out.txt || { cat out.txt >&2; fail "console"; }
grep -qE "^summary: .* ERROR \($gaps conformance $plural\)" out.txt ||
  { cat out.txt >&2; fail "the console summary does not count $gaps conformance $plural"; }
[[ $(grep -c 'type="CONFORMANCE GAP"' gap.xml) == "$gaps" ]] || fail "JUnit lacks the gaps"
grep -q "| ERROR (conformance gap) |" gap.md || fail "Markdown's results lack the gaps"
grep -qE "ERROR \($gaps conformance $plural\)" gap.md || fail "Markdown's summary lacks the gaps"
verdicts gap.json >whole.txt

conf "${gap[@]}" --no-isolate --json in_process.json
[[ $code == 1 ]] || fail "--no-isolate exited $code"
diff <(verdicts in_process.json) whole.txt || fail "--no-isolate gives other verdicts"

conf "${gap[@]}" --shard 1/2 --json s1.json
conf "${gap[@]}" --shard 2/2 --json s2.json
set +e
"$bin/mm-conformance" merge s1.json s2.json --json merged.json >merge.txt 2>&1
code=$?
set -e
[[ $code == 1 ]] || { cat merge.txt >&2; fail "the merged shards exit $code, not 1"; }
diff <(verdicts merged.json) whole.txt || fail "the merged shards give other verdicts"

"$python" -c 'import json, sys
r = json.load(open(sys.argv[1]))
r["results"] = r["results"][: len(r["results"]) // 2]
json.dump(r, open(sys.argv[2], "w"))' gap.json half.json
conf "${gap[@]}" --resume half.json --json resumed.json
[[ $code == 1 ]] || { cat out.txt >&2; fail "--resume exited $code"; }
grep -q "^resumed: [1-9][0-9]* results taken from half.json" out.txt ||
  { cat out.txt >&2; fail "--resume took nothing"; }
diff <(verdicts resumed.json) whole.txt || fail "--resume gives other verdicts"

"$python" -c 'import json, sys
entries = [{"case": x["case"], "data_set": x["data_set"], "backend": "gap", "expect": "XFAIL",
            "reason": "refuses rank > 2 operands", "link": "planted_driver.py"}
           for x in json.load(open(sys.argv[1]))["results"]
           if x["message"].startswith("conformance gap: ")]
json.dump({"expectations": entries}, open(sys.argv[2], "w"))' gap.json expect.json
conf "${gap[@]}" --expectations expect.json
[[ $code == 0 ]] || { cat out.txt >&2; fail "with the gaps declared the run exited $code"; }
grep -qE "^summary: .* $gaps XFAIL" out.txt || { cat out.txt >&2; fail "the $gaps gaps are not XFAIL"; }
echo "driver_cli_test: $gaps conformance $plural in every format; isolation, shards, resume and" \
  "expectations agree"
