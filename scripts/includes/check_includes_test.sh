#!/usr/bin/env bash
# Tests of scripts/check-includes.sh on small trees written here (never on this repository, whose
# state is the check's business, not this test's): a layered tree passes; a loop between two
# folders of a floor fails, naming each arrow of the loop with its include lines (file:line); an
# include from a lower floor up to a higher one fails, naming it, as does one between bench/ and
# conformance/, the floors side by side above the backends; so do an include no folder's
# include/ holds and a top-level folder that is no floor; a test beside its code is a leaf, never
# part of a loop; --allow takes an arrow out of the loop rule, and an --allow that matches nothing
# fails.
set -euo pipefail
check="$(cd "$(dirname "$0")/.." && pwd)/check-includes.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect RC NAME PATTERNS ARGS...: the check exits RC and its output contains each line of PATTERNS.
expect() {
  local want_rc="$1" name="$2" patterns="$3"
  shift 3
  local rc=0
  bash "$check" "$@" > "$tmp/out" 2>&1 || rc=$?
  [[ "$rc" == "$want_rc" ]] || fail "$name: exit $rc, expected $want_rc; output:" "$(cat "$tmp/out")"
  while IFS= read -r pattern; do
    [[ -z "$pattern" ]] && continue
    grep -qF -- "$pattern" "$tmp/out" || fail "$name: output lacks '$pattern':" "$(cat "$tmp/out")"
  done <<< "$patterns"
}

# header TREE FOLDER NAME [INCLUDES...]: FOLDER/include/mm/FOLDER/NAME.h including each header.
header() {
  local tree="$1" folder="$2" name="$3"
  shift 3
  mkdir -p "$tree/$folder/include/mm/$folder"
  {
    for h in "$@"; do echo "#include \"mm/$h\""; done
  } > "$tree/$folder/include/mm/$folder/$name.h"
}

# A layered tree: engine <- backends (two folders, one including the other) <- conformance.
good="$tmp/good"
header "$good" engine tensor
header "$good" engine/io text engine/tensor.h
header "$good" backends/reference reference engine/tensor.h engine/io/text.h
header "$good" backends/auto auto backends/reference/reference.h
header "$good" conformance/judging verdict backends/auto/auto.h
printf '#include "mm/conformance/judging/verdict.h"\n#include "mm/version.h"\n' \
  > "$good/conformance/judging/verdict.cc"
# A test beside the code it tests, using a folder above it: a leaf, no loop.
printf '#include "mm/backends/auto/auto.h"\n' > "$good/backends/reference/reference_test.cc"
expect 0 "a layered tree" "no loop inside a floor, none upward" "$good"
expect 0 "the graph" "backends/auto -> backends/reference  (1 includes)
backends/reference (tests) -> backends/auto  (1 includes)" --graph "$good"

# The planted loop: backends/reference includes backends/auto, which includes it.
cp -r "$good" "$tmp/loop"
printf '#include "mm/backends/reference/reference.h"\n\n#include "mm/backends/auto/auto.h"\n' \
  > "$tmp/loop/backends/reference/reference.cc"
expect 1 "a loop" "include loop among backends/auto, backends/reference; its arrows:
  backends/auto -> backends/reference
    backends/auto/include/mm/backends/auto/auto.h:1
  backends/reference -> backends/auto
    backends/reference/reference.cc:3" "$tmp/loop"
# The loop's closing arrow allowed: it passes; an allowed arrow no include makes fails.
expect 0 "a loop allowed" "no loop inside a floor" --allow backends/reference:backends/auto \
  "$tmp/loop"
expect 1 "a stale allowance" "--allow engine:backends/auto matches no include: remove it" \
  --allow engine:backends/auto "$good"

# The planted upward include: the engine's io includes a backend.
cp -r "$good" "$tmp/up"
printf '#include "mm/engine/io/text.h"\n#include "mm/backends/auto/auto.h"\n' \
  > "$tmp/up/engine/io/text.cc"
expect 1 "an upward include" "upward include: engine/io -> backends/auto (engine is below backends):
  engine/io/text.cc:2" "$tmp/up"
# A test is held to the floors too.
cp -r "$good" "$tmp/uptest"
printf '#include "mm/conformance/judging/verdict.h"\n' > "$tmp/uptest/engine/io/text_test.cc"
expect 1 "an upward include in a test" "upward include: engine/io (tests) -> conformance/judging
  engine/io/text_test.cc:1" "$tmp/uptest"

# bench/ is a floor above the backends, beside conformance/: it includes the backends, but a
# backend including it goes up, and bench and conformance include neither the other.
cp -r "$good" "$tmp/bench"
header "$tmp/bench" bench shapes backends/auto/auto.h
expect 0 "bench above the backends" "no loop inside a floor" "$tmp/bench"
cp -r "$tmp/bench" "$tmp/benchup"
printf '#include "mm/bench/shapes.h"\n' > "$tmp/benchup/backends/auto/auto_bench.cc"
expect 1 "a backend including bench" "upward include: backends/auto -> bench (backends is below bench):
  backends/auto/auto_bench.cc:1" "$tmp/benchup"
cp -r "$tmp/bench" "$tmp/across"
printf '#include "mm/conformance/judging/verdict.h"\n' > "$tmp/across/bench/shapes.cc"
expect 1 "bench including conformance" \
  "include across floors: bench -> conformance/judging (bench and conformance side by side):
  bench/shapes.cc:1" "$tmp/across"

# An include no include/ folder holds, and a top-level folder that is no floor.
cp -r "$good" "$tmp/unknown"
printf '#include "mm/engine/missing.h"\n' > "$tmp/unknown/engine/io/text.cc"
mkdir -p "$tmp/unknown/misc"
printf '#include "mm/engine/tensor.h"\n' > "$tmp/unknown/misc/main.cc"
expect 1 "an unknown header and a floorless folder" \
  "engine/io/text.cc:1: \"mm/engine/missing.h\" is in no folder's include/
misc/ holds C/C++ files but is no floor" "$tmp/unknown"

# Usage errors.
expect 2 "no such tree" "no directory" "$tmp/none"
expect 2 "a bad --allow" "expected FROM:TO" --allow engine "$good"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "check-includes.sh: all cases as expected"
