#!/usr/bin/env bash
# The portability check: one build runs on every x86-64 CPU, so no code outside mm's per-ISA
# kernels (cmake/IsaKernels.cmake) may hold an AVX, AVX2 or AVX-512 instruction. Disassembles
# (objdump, binutils) every object file and every linked program and shared library under the
# given build trees and fails on any such instruction: a VEX- or EVEX-encoded one (mnemonics
# v..., the BMI1/BMI2 ones andn, bextr, blsi, blsmsk, blsr, bzhi, mulx, pdep, pext, rorx, sarx,
# shlx, shrx), or one that names a ymm, zmm or mask (k0-k7) register.
#
# Allowed are only the AVX2 and AVX-512 copies of the kernels: in objects, the object files of
# the targets <target>_isa_avx2 / <target>_isa_avx512 and their private forms
# <target>.isa_avx2.o / .isa_avx512.o; in linked files, the functions those copies define, all
# named mm_isa_avx2.<symbol> / mm_isa_avx512.<symbol> (or mm_isa_<level>_<entry>). And the few
# single functions compiled for a set by a target attribute and called only after a run-time
# check of the CPU, named for their set: the last word of their name ends in Avx2 or Avx512
# (onednn's half conversions WidenAvx512, mm-bench's peak probes F32Avx2, ...). The baseline
# copy is checked like any other code. Trees nested in a tree (build/asan), node_modules and Python
# environments are skipped: they are not this build's code.
#
# --skip-tests leaves out the linked test programs (named *_test or *_test.<suffix>): their code
# is their own object files and the libraries the shipped programs link, all checked there; the
# linker cannot hand a test program a kernel's code instead, since no symbol of a copy but its entry
# is global (cmake/IsaKernels.cmake). Files of the same content (a program and its installed
# copy) are checked once.
#
# Usage: scripts/check-isa.sh [--skip-tests] [DIR...]   (default: build)
# Exits 0 when nothing outside the kernels holds an AVX instruction; 1 otherwise, printing
# "FILE: FUNCTION: INSTRUCTION" for the first offending instruction of each function (and the
# count of offending functions per file); 2 on a usage error or a missing tool.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
skip_tests=0
if [[ "${1:-}" == --skip-tests ]]; then
  skip_tests=1
  shift
fi
dirs=("$@")
if [[ ${#dirs[@]} -eq 0 ]]; then dirs=("$root/build"); fi
for dir in "${dirs[@]}"; do
  case "$dir" in
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-isa: unknown option $dir (see --help)" >&2; exit 2 ;;
  esac
  if [[ ! -d "$dir" ]]; then echo "check-isa: no directory $dir" >&2; exit 2; fi
done
command -v objdump > /dev/null || { echo "check-isa: objdump (binutils) is missing" >&2; exit 2; }

# The files to check, NUL-separated. In (or below) a Ninja tree, a target's object file (under
# CMakeFiles/) only when the build graph still makes it: one left from an earlier configuration (a
# file since moved to a per-ISA kernel, compiled for the build machine's CPU by the tree's old
# flags) is no part of this build.
list_files() {
  local dir="$1" prune=() nested
  local -A made=()
  local tree
  dir="$(cd "$dir" && pwd)"
  tree="$dir"
  while [[ "$tree" != / && ! -f "$tree/build.ninja" ]]; do tree="$(dirname "$tree")"; done
  if [[ -f "$tree/build.ninja" ]] && command -v ninja > /dev/null; then
    while IFS= read -r target; do made["$tree/${target%: *}"]=1; done \
      < <(ninja -C "$tree" -t targets all 2> /dev/null)
  fi
  # Nested build trees (their own CMakeCache.txt), npm's and Python's installed packages.
  while IFS= read -r nested; do
    prune+=(-path "$(dirname "$nested")" -prune -o)
  done < <(find "$dir" -mindepth 2 -name CMakeCache.txt -not -path '*/node_modules/*')
  find "$dir" "${prune[@]}" \( -name node_modules -o -name .venv -o -name venv \) -prune -o \
    -type f \( -name '*.o' -o -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0 |
    while IFS= read -r -d '' file; do
      # ELF files only (scripts and data may be executable too).
      [[ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
      if [[ ${#made[@]} -gt 0 && "$file" == */CMakeFiles/* && -z "${made[$file]:-}" ]]; then
        continue
      fi
      case "$file" in
        *_isa_avx2.dir/* | *_isa_avx512.dir/* | *.isa_avx2.o | *.isa_avx512.o) continue ;;
        *.o) ;;
        *_test | *_test.*) ((skip_tests)) && continue ;;
      esac
      printf '%s\0' "$file"
    done
}

# Reads objdump -d output; prints the offending instructions outside the kernels' functions.
scan='
BEGIN {
  split("rep repz repnz repe repne lock notrack bnd data16 addr32 cs ds es ss fs gs", p, " ")
  for (i in p) prefix[p[i]] = 1
  split("verr verw vmcall vmclear vmfunc vmlaunch vmptrld vmptrst vmread vmresume vmwrite " \
        "vmxoff vmxon vmrun vmload vmsave vmmcall", x, " ")
  for (i in x) vmx[x[i]] = 1
  split("andn bextr blsi blsmsk blsr bzhi mulx pdep pext rorx sarx shlx shrx", b, " ")
  for (i in b) bmi[b[i]] = 1
}
/^[0-9a-f]+ <.*>:$/ {
  fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn)
  allowed = fn ~ /^mm_isa_avx(2|512)[._]/ || fn ~ /Avx(2|512)(\(|<| \[clone|$)/
  reported = 0
  next
}
/^ *[0-9a-f]+:\t/ {
  if (allowed || reported) next
  line = $0; sub(/^ *[0-9a-f]+:\t/, "", line)
  n = split(line, w, /[ \t]+/)
  m = 1
  while (m < n && (w[m] in prefix)) m++
  op = w[m]; sub(/\..*$/, "", op)
  avx = (op ~ /^v/ && !(op in vmx)) || (op in bmi) || line ~ /%[yz]mm[0-9]|%k[0-7]([^0-9]|$)/
  if (avx) {
    printf "%s: %s: %s\n", file, fn, line
    reported = 1
  }
}
'

status=0
declare -A seen=()
for dir in "${dirs[@]}"; do
  while IFS= read -r -d '' file; do
    # An installed copy of a program is the program: checked once.
    sum=$(cksum < "$file")
    [[ -n "${seen[$sum]:-}" ]] && continue
    seen[$sum]=1
    if ! out=$(objdump -d -C --no-show-raw-insn "$file" 2> /dev/null | awk -v file="$file" "$scan");
    then
      echo "check-isa: objdump failed on $file" >&2
      status=1
      continue
    fi
    if [[ -n "$out" ]]; then
      echo "$out"
      echo "check-isa: $file: $(wc -l <<< "$out") function(s) outside the per-ISA kernels use AVX"
      status=1
    fi
  done < <(list_files "$dir")
done
if ((status == 0)); then
  echo "check-isa: no AVX, AVX2 or AVX-512 instruction outside the per-ISA kernels in ${dirs[*]}"
fi
exit "$status"
