#!/usr/bin/env bash
# Tests of scripts/check-format.sh on files written here (never on this tree, whose state is the
# check's business, not this test's): each misformatted file fails the check with its name and its
# first differing line shown; formatted files pass; --fix rewrites a file so that it passes; a
# Python error black accepts (an unused import) fails through flake8 and --fix does not hide it;
# a JavaScript file breaking ESLint's rules (eslint.config.js) fails, named with each finding;
# without a file list, a scratch repository's tracked files are checked, its untracked ones not.
set -euo pipefail
check="$(cd "$(dirname "$0")/.." && pwd)/check-format.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect RC NAME PATTERNS FILE...: the check exits RC and its output contains each line of PATTERNS.
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

# Google style, 100 columns: two-space indent, a space before "{", short function on one line.
cat > "$tmp/good.cc" <<'CC'
#include <cstdio>

int Twice(int x) { return 2 * x; }
CC
cat > "$tmp/good.h" <<'CC'
#ifndef GOOD_H_
#define GOOD_H_

// A line of exactly 100 columns is allowed: ....................................................
int Twice(int x);

#endif  // GOOD_H_
CC
cat > "$tmp/good.py" <<'PY'
import sys


def twice(x):
    return 2 * x


print(twice(len(sys.argv)))
PY
cat > "$tmp/good.js" <<'JS'
'use strict';

const twice = (x) => 2 * x;
module.exports = {twice};
JS
expect 0 "formatted files" "4 files conform (2 C/C++, 1 Python, 1 JavaScript)" \
  "$tmp/good.cc" "$tmp/good.h" "$tmp/good.py" "$tmp/good.js"

# Each kind of misformatted file, checked in one run beside formatted ones: each is named with its
# first differing lines, and exactly those fail.
# Four-space indent and the brace on its own line: not Google style.
printf 'int Twice(int x)\n{\n    return 2 * x;\n}\n' > "$tmp/bad.cc"
# A call past 100 columns must be wrapped.
{
  printf 'void F(int, int, int);\n'
  printf 'void G() { F(1111111111, 2222222222, 3333333333); F(4444444444, 5555555555, 6666666666); }\n'
} > "$tmp/long.cc"
# Single quotes and a missing blank line before a def: black's layout differs.
printf "import sys\ndef twice(x):\n    return x*2\nprint(twice(len(sys.argv)), 'x')\n" > "$tmp/bad.py"
# Well laid out, but an unused import and an undefined name: flake8's errors.
printf 'import os\n\n\ndef f():\n    return undefined_name\n' > "$tmp/unused.py"
expect 1 "misformatted files" "$tmp/bad.cc: differs from .clang-format
-{
+int Twice(int x) { return 2 * x; }
$tmp/long.cc: differs from .clang-format
$tmp/bad.py: differs from black
+    return x * 2
-print(twice(len(sys.argv)), 'x')
'os' imported but unused
undefined name 'undefined_name'
4 of 6 files fail: $tmp/bad.cc $tmp/bad.py $tmp/long.cc $tmp/unused.py" \
  "$tmp/good.cc" "$tmp/bad.cc" "$tmp/long.cc" "$tmp/good.py" "$tmp/bad.py" "$tmp/unused.py"

# --fix rewrites the layout (and says which files), after which the check passes.
expect 0 "--fix" "reformatted $tmp/bad.cc
reformatted $tmp/bad.py" --fix "$tmp/bad.cc" "$tmp/bad.py" "$tmp/good.cc"
cmp -s "$tmp/good.cc" <(printf '#include <cstdio>\n\nint Twice(int x) { return 2 * x; }\n') ||
  fail "--fix changed a formatted file"
expect 0 "after --fix" "2 files conform" "$tmp/bad.cc" "$tmp/bad.py"
grep -qxF 'int Twice(int x) { return 2 * x; }' "$tmp/bad.cc" || fail "--fix left bad.cc as it was"
# flake8's findings are not layout: --fix cannot make them pass.
expect 1 "--fix with a Python error" "'os' imported but unused" --fix "$tmp/unused.py"

# Bad arguments are errors, not a silent pass.
expect 2 "missing file" "$tmp/none.cc: no such file" "$tmp/none.cc"
printf 'x\n' > "$tmp/notes.txt"
expect 2 "unknown kind of file" "neither C/C++, Python nor JavaScript" "$tmp/notes.txt"

# ESLint's findings, on a file outside the repository (linted under the repository's config): an
# unused variable, `var`, and == are errors, each named with its rule; --fix does not hide them.
printf "'use strict';\n\nvar unused = 1;\nmodule.exports = (a) => a == 1;\n" > "$tmp/bad.js"
expect 1 "JavaScript" "  $tmp/bad.js
'unused' is assigned a value but never used
no-unused-vars
Unexpected var, use let or const instead
no-var
Expected '===' and instead saw '=='
eqeqeq
1 of 2 files fail: $tmp/bad.js" "$tmp/good.js" "$tmp/bad.js"
expect 1 "--fix with a JavaScript error" "no-unused-vars" --fix "$tmp/bad.js"

# Without a file list: every tracked C/C++ and Python file of the repository the script sits in,
# and nothing untracked. A scratch repository with the script and its configuration.
repo="$tmp/repo"
mkdir -p "$repo/scripts" "$repo/src/deep"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cp "$root/scripts/check-format.sh" "$root/scripts/setup.sh" "$repo/scripts/"
cp "$root/.clang-format" "$root/pyproject.toml" "$root/.flake8" "$repo/"
cp "$tmp/good.cc" "$repo/src/a.cc"
cp "$tmp/good.py" "$repo/src/deep/b.py"
printf 'int  Twice( int x );\n' > "$repo/src/deep/c.h"
printf "x = [ 1,2 ]\n" > "$repo/src/untracked.py"
git -C "$repo" init -q
git -C "$repo" add .clang-format .flake8 pyproject.toml scripts src/a.cc src/deep/b.py src/deep/c.h
check="$repo/scripts/check-format.sh"
expect 1 "tracked files" "src/deep/c.h: differs from .clang-format
1 of 3 files fail"
grep -q "untracked.py" "$tmp/out" && fail "an untracked file was checked"
# Run from another folder: the script checks its own repository.
(cd "$tmp" && bash "$check" --fix > /dev/null)
expect 0 "tracked files after --fix" "3 files conform (2 C/C++, 1 Python, 0 JavaScript)"
grep -qxF "x = [ 1,2 ]" "$repo/src/untracked.py" || fail "--fix rewrote an untracked file"

if ((failures)); then
  echo "check_format_test: $failures failure(s)"
  exit 1
fi
echo "check_format_test: all passed"
