#!/usr/bin/env bash
# Fails when a source file outside the tests is longer than MAX_FILE lines or a function (a body
# opened at the end of a line whose statement began in column 0, as Google style lays out every
# free function and out-of-class member) is longer than MAX_FUNCTION lines. Tests are exempt: a
# specification of many cases reads best in one file.
# Usage: scripts/check-sizes.sh [--max-file N] [--max-function N] [DIR...]   (default: the tree)
set -euo pipefail
cd "$(dirname "$0")/.."
max_file=500
max_function=80
dirs=()
while (($#)); do
  case "$1" in
    --max-file) max_file="$2"; shift 2 ;;
    --max-function) max_function="$2"; shift 2 ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
((${#dirs[@]})) || dirs=(engine backends conformance tools bench)
mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) \
  -not -path '*/tests/*' -not -path '*/testing/*' -not -name '*_test.cc' \
  -not -path '*/deviations/*' 2> /dev/null | sort)
((${#files[@]})) || { echo "check-sizes: no sources under ${dirs[*]}" >&2; exit 2; }
failures=0
for file in "${files[@]}"; do
  lines=$(wc -l < "$file")
  if ((lines > max_file)); then
    echo "$file: $lines lines (at most $max_file)"
    failures=$((failures + 1))
  fi
done
# A function starts on the line that ends with "{" where its statement began in column 0 (free
# functions, out-of-class members) or 2 (members defined in a class body), holds a "(" and is not
# a control statement or an initializer "= {"; it ends at the next "}" at that same indentation.
long=$(awk -v max="$max_function" '
  FNR == 1 { in_fn = 0; stmt = 0 }
  in_fn {
    if (substr($0, 1, length(indent) + 1) == indent "}") {
      if (FNR - start + 1 > max) printf "%s:%d: function of %d lines (at most %d)\n", FILENAME, start, FNR - start + 1, max
      in_fn = 0
    }
    next
  }
  /^(  )?[A-Za-z_~]/ && !/^(  )?(namespace|class|struct|enum|union|extern|typedef|using|if|for|while|switch|return|else|do|case|default|public|private|protected)[^A-Za-z0-9_]/ {
    stmt = 1; sline = FNR; text = ""; match($0, /^ */); indent = substr($0, 1, RLENGTH)
  }
  /^(  )?(class|struct|enum|union|namespace|extern)[^A-Za-z0-9_]/ { stmt = 0 }
  stmt { text = text $0 }
  stmt && /\{[[:space:]]*$/ {
    if (text ~ /\(/ && text !~ /=[[:space:]]*\{[[:space:]]*$/) { in_fn = 1; start = sline }
    stmt = 0; next
  }
  stmt && /[;}][[:space:]]*$/ { stmt = 0 }
' "${files[@]}")
if [[ -n "$long" ]]; then
  echo "$long"
  failures=$((failures + $(wc -l <<< "$long")))
fi
if ((failures)); then
  echo "check-sizes: $failures over the limits (files $max_file lines, functions $max_function)" >&2
  exit 1
fi
echo "check-sizes: ${#files[@]} files within $max_file lines, their functions within $max_function"
