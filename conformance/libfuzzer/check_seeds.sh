#!/usr/bin/env bash
# ctest parser_fuzz.seeds: makes the parsers' seeds and runs each target once over its own
# (-runs=0: no fuzzing) with MM_PARSER_FUZZ_SEEDS_MUST_PARSE=1, so a target that crashes on a valid
# file, or a seed that no longer parses (a writer changed), fails.
# Usage: check_seeds.sh BIN_DIR SEEDS_DIR [EXPECTATIONS_FILE...]
set -euo pipefail
bin="$1"
seeds="$2"
shift 2
rm -rf "$seeds"
"$bin/mm-parser-fuzz-seeds" "$seeds" "$@"
for dir in "$seeds"/*/; do
  kind=$(basename "$dir")
  MM_PARSER_FUZZ_SEEDS_MUST_PARSE=1 "$bin/mm_${kind}_fuzzer" -runs=0 -artifact_prefix="$seeds/" "$dir"
done
