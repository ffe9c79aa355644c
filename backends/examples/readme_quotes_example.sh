#!/usr/bin/env bash
# Fails unless README.md (argument 1) quotes, verbatim and as one block, the lines of the example
# (argument 2) between its "// [readme]" and "// [/readme]" markers, less their two-space indent:
# the README's example is then the code that is built and run.
set -euo pipefail
readme="$(cat "$1")"
quoted="$(sed -n '/\/\/ \[readme\]/,/\/\/ \[\/readme\]/p' "$2" | sed '1d;$d' | sed 's/^  //')"
[[ -n "$quoted" ]] || { echo "no // [readme] ... // [/readme] block in $2"; exit 1; }
if [[ "$readme" != *"$quoted"* ]]; then
  echo "$1 does not quote the example of $2; it should contain:"
  echo "$quoted"
  exit 1
fi
echo "$1 quotes the example's $(wc -l <<< "$quoted") lines"
