#!/usr/bin/env bash
# The layering check: builds the folder-level include graph of the tree (every `#include "mm/..."`
# an arrow from the including file's folder to the folder whose include/ holds the header; tests
# beside their code a folder of their own) and fails on an include loop among the folders of one
# floor or an include from a lower floor up to a higher one or across (engine < backends < bench,
# conformance < tools; bench and conformance side by side; docs/development.md). Each offending
# arrow is printed with its include lines (file:line). Rules: scripts/includes/include_graph.py.
#
# Usage: scripts/check-includes.sh [--graph] [--allow FROM:TO]... [ROOT]
#   ROOT     the tree to check (default: this repository)
#   --graph  print every arrow ("FROM -> TO  (N includes)") instead of checking
#   --allow  take the arrows FROM -> TO out of the loop rule (an entry no include matches fails)
# Exits 0 when the rules hold, 1 on a violation (listed), 2 on a usage error.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
args=()
tree=""
while (($#)); do
  case "$1" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --graph) args+=("$1") ;;
    --allow) [[ $# -ge 2 ]] || { echo "check-includes: --allow needs FROM:TO" >&2; exit 2; }
             args+=("$1" "$2"); shift ;;
    -*) echo "check-includes: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [[ -z "$tree" ]] || { echo "check-includes: one ROOT only" >&2; exit 2; }
       tree="$1" ;;
  esac
  shift
done
if [[ -z "$tree" ]]; then
  tree="$root"
fi
exec /usr/bin/python3 "$root/scripts/includes/include_graph.py" "${args[@]}" "$tree"
