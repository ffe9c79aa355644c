#!/usr/bin/env bash
# The format check: every tracked C/C++ file against .clang-format (clang-format 14: Google, 100
# columns), every tracked Python file against black (pyproject.toml: 100 columns) and flake8
# (.flake8: pyflakes' errors such as unused or undefined names, and pycodestyle's), every tracked
# JavaScript file against ESLint (eslint.config.js: its recommended rules and a few more). Tools
# are Debian's (scripts/setup.sh --for format), ESLint npm's at the version
# backends/runtimes/js/package-lock.json pins (scripts/runtimes-npm.sh).
#
# Usage: scripts/check-format.sh [--fix] [FILE...]
#   FILE...  check these files instead of every tracked one (any path; C/C++ by extension .c .cc
#            .cpp .h .hpp, Python by .py, JavaScript by .js; others are an error).
#   --fix    rewrite the files in place (clang-format -i, black); flake8's and ESLint's findings
#            are not rewritten and still fail the run.
# Exits 0 when every file conforms; otherwise 1, naming each file that differs and its first
# differing lines (a unified diff of at most 12 lines: "-" as it is, "+" as the formatter wants it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fix=0
files=()
for arg in "$@"; do
  case "$arg" in
    --fix) fix=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-format: unknown option $arg (see --help)" >&2; exit 2 ;;
    *) files+=("$arg") ;;
  esac
done
bash "$root/scripts/setup.sh" --for format

if [[ ${#files[@]} -eq 0 ]]; then
  cd "$root"
  mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.py' '*.js')
fi

cxx=()
py=()
js=()
for f in "${files[@]}"; do
  [[ -f "$f" ]] || { echo "check-format: $f: no such file" >&2; exit 2; }
  case "$f" in
    *.c|*.cc|*.cpp|*.h|*.hpp) cxx+=("$f") ;;
    *.py) py+=("$f") ;;
    *.js) js+=("$f") ;;
    *) echo "check-format: $f: neither C/C++, Python nor JavaScript (by its extension)" >&2
       exit 2 ;;
  esac
done

clang_format=clang-format-14
command -v "$clang_format" >/dev/null || clang_format=clang-format
black=(black --quiet --config "$root/pyproject.toml")
failed=()

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# check_one FILE KIND: compares FILE with its formatted text in $tmp/formatted; with --fix
# rewrites FILE, otherwise names it and shows its first differing lines.
check_one() {
  cmp -s "$1" "$tmp/formatted" && return 0
  if ((fix)); then
    cat "$tmp/formatted" > "$1"
    echo "check-format: reformatted $1"
    return 0
  fi
  echo "$1: differs from $2 (fix: scripts/check-format.sh --fix $1)"
  { diff -u --label "$1 (as it is)" --label "$1 (formatted)" "$1" "$tmp/formatted" || true; } |
    head -n 14 | sed 's/^/  /'
  failed+=("$1")
}

# ESLint over the JavaScript files, its findings shown; each file with one fails. ESLint applies
# eslint.config.js to the files below the folder it runs in, the repository's root: a file
# elsewhere is linted from stdin under a name inside it. A warning fails too (--max-warnings 0):
# ESLint warns, and would pass, when a file is left out by its configuration. The config's modules
# (@eslint/js, globals) come from the npm folder.
lint_js() {
  bash "$root/scripts/runtimes-npm.sh"
  local modules="$root/build/runtimes-npm/node_modules" f path out inside=() outside=()
  local eslint=(env "NODE_PATH=$modules" node "$modules/eslint/bin/eslint.js"
                --config "$root/eslint.config.js" --max-warnings 0)
  for f in "${js[@]}"; do
    path="$(realpath "$f")"
    case "$path" in
      "$root"/*) inside+=("$path") ;;
      *) outside+=("$f") ;;
    esac
  done
  if [[ ${#inside[@]} -gt 0 ]] && ! out="$(cd "$root" && "${eslint[@]}" "${inside[@]}")"; then
    report_eslint "$out" ""
  fi
  for f in "${outside[@]}"; do
    if ! out="$(cd "$root" && "${eslint[@]}" --stdin --stdin-filename "$root/${f##*/}" < "$f")"
    then
      report_eslint "$out" "$f"
    fi
  done
}

# report_eslint OUTPUT [FILE]: shows ESLint's findings (on FILE, when linted from stdin) and
# counts each file named as failed. ESLint names a file on a line of its own, unindented.
report_eslint() {
  local out="$1" file="$2" line
  [[ -n "$out" ]] || { echo "check-format: ESLint failed without a finding" >&2; exit 2; }
  if [[ -n "$file" ]]; then out="$(sed "s|^$root/${file##*/}\$|$file|" <<< "$out")"; fi
  echo "ESLint (not fixable by --fix):"
  # ESLint's own hint at its --fix: this check does not run it.
  sed '/^$/d; /potentially fixable with the `--fix` option/d; s/^/  /' <<< "$out"
  while IFS= read -r line; do
    if [[ "$line" == /* ]]; then
      failed+=("${file:-$line}")
    fi
  done <<< "$out"
}

# One formatter process checks every file; only the files it names are formatted one by one for
# their diffs (a process per file took most of a minute on the whole tree). The repository's
# .clang-format is named whatever the file's folder (a file list may name files outside the tree).
clang_style="--style=file:$root/.clang-format"
suspects=()
if [[ ${#cxx[@]} -gt 0 ]] &&
  ! "$clang_format" "$clang_style" --dry-run --Werror "${cxx[@]}" > /dev/null 2> "$tmp/dry-run"; then
  mapfile -t suspects < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
    "$tmp/dry-run" | sort -u)
  # Any other complaint (an unreadable file, say): every file is checked alone.
  [[ ${#suspects[@]} -gt 0 ]] || suspects=("${cxx[@]}")
fi
for f in "${suspects[@]}"; do
  "$clang_format" "$clang_style" "$f" > "$tmp/formatted"
  check_one "$f" .clang-format
done

suspects=()
if [[ ${#py[@]} -gt 0 ]] && ! "${black[@]}" --check "${py[@]}" 2> /dev/null; then
  suspects=("${py[@]}")
fi
for f in "${suspects[@]}"; do
  if ! "${black[@]}" - < "$f" > "$tmp/formatted" 2> "$tmp/error"; then
    echo "$f: black cannot parse it: $(head -n 1 "$tmp/error")"
    failed+=("$f")
    continue
  fi
  check_one "$f" black
done
if [[ ${#py[@]} -gt 0 ]]; then
  if ! findings="$(flake8 --config "$root/.flake8" "${py[@]}")"; then
    echo "flake8 (not fixable by --fix):"
    echo "$findings" | sed 's/^/  /'
    while IFS=: read -r f _; do failed+=("$f"); done <<< "$findings"
  fi
fi

if [[ ${#js[@]} -gt 0 ]]; then
  lint_js
fi

if [[ ${#failed[@]} -gt 0 ]]; then
  mapfile -t failed < <(printf '%s\n' "${failed[@]}" | sort -u)
  echo "check-format: ${#failed[@]} of ${#files[@]} files fail: ${failed[*]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files conform (${#cxx[@]} C/C++, ${#py[@]} Python," \
  "${#js[@]} JavaScript)"
