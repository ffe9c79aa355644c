#!/usr/bin/env bash
# The C blocks of a page that say they are excerpts of a source file (an HTML comment
# "<!-- verbatim: PATH -->" right before the block, PATH from the repository root) are: every line
# of the block is a line of PATH, but blank lines and "/* ... */" elisions. A page that shows code
# the file no longer has fails here, naming the line.
#
#   docs_excerpt_test.sh REPOSITORY PAGE.md
set -euo pipefail
root=$1 page=$2
blocks=0
source_file=""
in_block=0
while IFS= read -r line; do
  if [[ $line =~ ^\<!--\ verbatim:\ ([^ ]+)\ --\>$ ]]; then
    source_file="$root/${BASH_REMATCH[1]}"
    [[ -f "$source_file" ]] || { echo "$page: $source_file does not exist" >&2; exit 1; }
    continue
  fi
  if [[ -n "$source_file" && $in_block == 0 && $line == '```c' ]]; then
    in_block=1 blocks=$((blocks + 1))
    continue
  fi
  if [[ $in_block == 1 && $line == '```' ]]; then
    in_block=0 source_file=""
    continue
  fi
  if [[ $in_block == 1 && -n "$line" && ! $line =~ ^[[:space:]]*/\*\ \.\.\. ]]; then
    if ! grep -qxF -- "$line" "$source_file"; then
      echo "$page: a line of its excerpt of $source_file is not in the file: $line" >&2
      exit 1
    fi
  fi
done <"$page"
if [[ $blocks == 0 ]]; then
  echo "$page: no verbatim excerpt found" >&2
  exit 1
fi
echo "$page: $blocks excerpt(s) match their source"
