#!/usr/bin/env bash
# ONNX Runtime's MatMulInteger uint8 x int8 on an x86-64 CPU without VNNI, shown on any x86-64 host
# by presenting such a CPU through qemu-user (docs/runtimes.md, "ONNX Runtime's U8S8 saturation
# under qemu"; issue 54). ONNX Runtime's MLAS picks its int8 kernels from CPUID: run under
# `qemu-x86_64 -cpu Haswell` (AVX2, no AVX-512, no VNNI), the onnxruntime driver takes the AVX2
# U8S8 kernel (VPMADDUBSW, pair sums saturated to 16 bits) whatever the host has. mm reads the CPU
# of a declaration's "unless_cpu_has" from /proc/cpuinfo, which qemu-user passes through from the
# host, so the checks that judge the declaration run in a private mount namespace
# (`unshare --map-root-user --mount`) where /proc/cpuinfo carries the emulated CPU's SIMD flags,
# read from CPUID inside qemu by a small probe compiled here.
#
# Checks, each failing the script (exit 1) when it is not as stated:
#   1. the emulated CPU, as CPUID says inside qemu: AVX2, no avx512_vnni, no avx_vnni;
#   2. undeclared: the hand-written node test (A = [255, 255] uint8, B = [127, 127] int8, K = 2,
#      backends/runtimes/js/deviations/test_mm_family_onnxruntime_matmulinteger_u8s8_saturation_k2)
#      is FAIL, exact 64770, got 32767;
#   3. undeclared: mm-fuzz --op MatMulInteger --backend onnxruntime, default budget, finds a
#      uint8 x int8 FAIL answered with a saturated int16 (32767 or -32768), shrunk to K <= 4, and
#      prints its replay line;
#   4. declared (expectations/onnxruntime.json, the CPU the emulated one): the node test is XFAIL
#      and mm-conformance exits 0; with avx512_vnni added to the presented flags it is FAIL again
#      (the declaration is not for a VNNI CPU);
#   5. declared (expectations/onnxruntime.fuzz.json, group "U8S8 saturation"): check_fuzz.py
#      matches every uint8 x int8 FAIL finding of step 3 on the emulated CPU, and calls them
#      undeclared on the same CPU with avx512_vnni.
# Each step prints its wall and CPU time.
#
# Usage: scripts/check-no-vnni.sh [--bin DIR] [--cpu MODEL]
#   --bin DIR    where mm-fuzz and mm-conformance are (default: build/bin of this checkout)
#   --cpu MODEL  qemu's -cpu (default: Haswell without the system and TSX features TCG cannot
#                provide, which qemu would drop with a warning each; the same CPUID otherwise)
# Needs Debian's qemu-user (qemu-x86_64), a C compiler, nodejs and the npm packages
# (scripts/runtimes-npm.sh), and a kernel that lets unshare make a mount namespace. Exit 0: all
# as stated; 1: a check failed; 77: it cannot run here (qemu-user, the namespace or the packages
# missing), with the reason. Nothing else needs qemu-user: scripts/setup.sh does not install it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
bin=$root/build/bin
cpu=Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-no-vnni: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

js=backends/runtimes/js
case_name=test_mm_family_onnxruntime_matmulinteger_u8s8_saturation_k2
case_dir=$js/deviations/$case_name
node=${MM_NODE:-/usr/bin/node}

cannot() { echo "check-no-vnni: SKIPPED: $*" >&2; exit 77; }
fail() { printf 'check-no-vnni: FAILED: %s\n' "$*" >&2; exit 1; }

command -v qemu-x86_64 > /dev/null ||
  cannot "qemu-x86_64 not found: install Debian's qemu-user (apt-get install qemu-user)"
for tool in mm-fuzz mm-conformance; do
  if [[ ! -x $bin/$tool ]]; then
    echo "check-no-vnni: $bin/$tool not found (build it, or --bin)" >&2
    exit 2
  fi
done
[[ -x $node ]] || cannot "$node not found (Debian package nodejs; or set MM_NODE)"
unshare --map-root-user --mount true 2> /dev/null ||
  cannot "this kernel refuses 'unshare --map-root-user --mount' (user namespaces), which" \
         "presents the emulated CPU's /proc/cpuinfo to mm"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TIMEFORMAT="   step time: %R s wall, %U s user, %S s sys"

# Step 1: what CPUID says inside qemu, flag names as /proc/cpuinfo spells them.
cat > "$work/probe.c" << 'EOF'
#include <cpuid.h>
#include <stdio.h>
struct Flag { const char* name; unsigned leaf, subleaf, reg, bit; };  // reg: eax ebx ecx edx
int main(void) {
  static const struct Flag flags[] = {
      {"fma", 1, 0, 2, 12},          {"avx", 1, 0, 2, 28},           {"f16c", 1, 0, 2, 29},
      {"avx2", 7, 0, 1, 5},          {"avx512f", 7, 0, 1, 16},       {"avx512dq", 7, 0, 1, 17},
      {"avx512ifma", 7, 0, 1, 21},   {"avx512cd", 7, 0, 1, 28},      {"avx512bw", 7, 0, 1, 30},
      {"avx512vl", 7, 0, 1, 31},     {"avx512vbmi", 7, 0, 2, 1},     {"avx512_vbmi2", 7, 0, 2, 6},
      {"avx512_vnni", 7, 0, 2, 11},  {"avx512_bitalg", 7, 0, 2, 12},
      {"avx512_vpopcntdq", 7, 0, 2, 14},                             {"amx_bf16", 7, 0, 3, 22},
      {"avx512_fp16", 7, 0, 3, 23},  {"amx_tile", 7, 0, 3, 24},      {"amx_int8", 7, 0, 3, 25},
      {"avx_vnni", 7, 1, 0, 4},      {"avx512_bf16", 7, 1, 0, 5}};
  const unsigned max_leaf = __get_cpuid_max(0, 0);
  for (unsigned i = 0; i < sizeof flags / sizeof flags[0]; ++i) {
    unsigned r[4] = {0, 0, 0, 0};
    const struct Flag* f = &flags[i];
    if (f->leaf <= max_leaf) __cpuid_count(f->leaf, f->subleaf, r[0], r[1], r[2], r[3]);
    printf("%s %u\n", f->name, (r[f->reg] >> f->bit) & 1u);
  }
  return 0;
}
EOF
"${CC:-cc}" -O1 -o "$work/probe" "$work/probe.c" ||
  cannot "no C compiler to build the CPUID probe (Debian's build-essential; or set CC)"
host_flags=" $(grep -m 1 '^flags' /proc/cpuinfo | cut -d: -f2) "
# The probe's table against the kernel's names for this host: a wrong bit would present a wrong CPU.
while read -r name has; do
  if { [[ $has == 1 ]] && [[ $host_flags != *" $name "* ]]; } ||
     { [[ $has == 0 ]] && [[ $host_flags == *" $name "* ]]; }; then
    fail "the CPUID probe says $name=$has on this host, /proc/cpuinfo disagrees"
  fi
done < <("$work/probe")
echo "1. the emulated CPU: qemu-x86_64 -cpu $cpu"
qemu-x86_64 -cpu "$cpu" "$work/probe" > "$work/emulated.txt" ||
  fail "qemu-x86_64 -cpu $cpu could not run the probe"
emulated=$(awk '$2 == 1 { printf "%s ", $1 }' "$work/emulated.txt")
echo "   CPUID inside qemu: ${emulated:-none of the probed flags}"
grep -qx 'avx2 1' "$work/emulated.txt" || fail "-cpu $cpu has no AVX2"
for flag in avx512_vnni avx_vnni; do
  grep -qx "$flag 0" "$work/emulated.txt" || fail "-cpu $cpu has $flag: not a CPU without VNNI"
done

# /proc/cpuinfo as the emulated CPU would show it: the host's, with each probed flag as CPUID says
# inside qemu (flags outside the probe's list, none of them SIMD, are the host's). A second one
# adds avx512_vnni, a CPU the declarations exempt.
write_cpuinfo() {  # OUT [EXTRA_FLAG]
  /usr/bin/python3 - "$work/emulated.txt" "$1" "${2:-}" << 'EOF'
import sys
emulated = dict(line.split() for line in open(sys.argv[1]))
extra = [sys.argv[3]] if sys.argv[3] else []
out = []
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        head, flags = line.split(":", 1)
        names = [f for f in flags.split() if emulated.get(f, "1") == "1"]
        names += [f for f, v in emulated.items() if v == "1" and f not in names] + extra
        line = head + ": " + " ".join(names) + "\n"
    out.append(line)
open(sys.argv[2], "w").write("".join(out))
EOF
}
write_cpuinfo "$work/cpuinfo"
write_cpuinfo "$work/cpuinfo-vnni" avx512_vnni
# mm starts the driver as `env NODE_PATH=... $MM_NODE script`: the driver's node under qemu.
printf '#!/bin/sh\nexec qemu-x86_64 -cpu %s %s "$@"\n' "$cpu" "$node" > "$work/node"
chmod +x "$work/node"
export MM_NODE=$work/node
# CMD... with /proc/cpuinfo replaced by CPUINFO, in a mount namespace of its own.
with_cpuinfo() {  # CPUINFO CMD...
  # shellcheck disable=SC2016  # $1 and $@ are the inner shell's.
  unshare --map-root-user --mount sh -c 'mount --bind "$1" /proc/cpuinfo && shift && exec "$@"' \
    sh "$@"
}
# mm-conformance on the node test alone.
node_test=("$bin/mm-conformance" --backend onnxruntime --data-dir "$case_dir" --no-builtin)
declared=(--expectations "$js/expectations/onnxruntime.json")

echo "2. undeclared: the hand-written node test, $case_dir"
time out=$("${node_test[@]}" 2>&1)
code=$?
printf '%s\n' "$out" | sed -n 's/^/   /; /^   FAIL\|^   PASS\|^   ERROR/p'
[[ "$out" == *"is not available on this machine"* ]] &&
  cannot "the onnxruntime driver cannot run (scripts/runtimes-npm.sh installs its packages):
$out"
[[ $code -eq 1 && "$out" == *"FAIL        $case_name"*"exact 64770, got 32767"* ]] ||
  fail "expected FAIL, exact 64770, got 32767, exit 1 (exit $code):
$out"

echo "3. undeclared: mm-fuzz --op MatMulInteger --backend onnxruntime (default budget)"
report=$work/fuzz.json
time out=$("$bin/mm-fuzz" --op MatMulInteger --backend onnxruntime --json "$report" 2>&1)
code=$?
printf '%s\n' "$out" | grep '^summary' | sed 's/^/   /'
[[ $code -eq 1 && -f $report ]] || fail "expected exit 1 (failures) and a report (exit $code):
$out"
# The uint8 x int8 FAIL findings, each answered with a saturated int16, shrunk to K <= 4.
/usr/bin/python3 - "$report" "$work/u8s8.json" "$work/replay.txt" << 'EOF' || exit 1
import json, re, sys
report = json.load(open(sys.argv[1]))
u8s8 = [f for f in report["findings"] if f["kind"] == "FAIL"
        and f["types"].get("A") == "uint8" and f["types"].get("B") == "int8"]
saturated = [f for f in u8s8 if re.search(r"got (32767|-32768)\b", f["message"])]
small = [f for f in saturated if f["minimal_a_shape"] and f["minimal_a_shape"][-1] <= 4]
if not small:
    sys.exit(f"check-no-vnni: FAILED: no uint8 x int8 finding saturated at 16 bits with K <= 4 "
             f"({len(u8s8)} uint8 x int8 FAIL findings of {len(report['findings'])})")
first = small[0]
print(f"   {len(u8s8)} uint8 x int8 FAIL findings, {len(saturated)} saturated; first: "
      f"{first['minimal_problem']} (K = {first['minimal_a_shape'][-1]}): "
      f"{first['message'].strip()}\n   replay: {first['replay']}")
json.dump({"stats": {"failures": len(u8s8)}, "findings": u8s8}, open(sys.argv[2], "w"))
open(sys.argv[3], "w").write(first["replay"])
EOF
replay=$(< "$work/replay.txt")
[[ "$out" == *"replay: $replay"* ]] || fail "mm-fuzz did not print the replay line '$replay'"

echo "4. declared: the node test with $js/expectations/onnxruntime.json"
time out=$(with_cpuinfo "$work/cpuinfo" "${node_test[@]}" "${declared[@]}" 2>&1)
code=$?
printf '%s\n' "$out" | sed -n 's/^/   /; /^   XFAIL\|^   FAIL\|^   PASS\|^   machine/p'
[[ $code -eq 0 && "$out" == *"XFAIL       $case_name"* ]] ||
  fail "expected XFAIL and exit 0 on the emulated CPU (exit $code):
$out"
time out=$(with_cpuinfo "$work/cpuinfo-vnni" "${node_test[@]}" "${declared[@]}" 2>&1)
code=$?
echo "   with avx512_vnni presented: exit $code"
[[ $code -eq 1 && "$out" == *"FAIL        $case_name"* ]] ||
  fail "expected FAIL (the declaration not for a VNNI CPU), exit 1 (exit $code):
$out"

echo "5. declared: the findings of step 3 with $js/expectations/onnxruntime.fuzz.json"
if ! /usr/bin/python3 - "$js/expectations/onnxruntime.fuzz.json" "$work/declared.json" << 'EOF'
import json, sys
declared = json.load(open(sys.argv[1]))
group = [d for d in declared["findings"] if d.get("group") == "U8S8 saturation"]
if not group:
    sys.exit("check-no-vnni: FAILED: no declaration of group 'U8S8 saturation' in " + sys.argv[1])
json.dump({"findings": group}, open(sys.argv[2], "w"))
EOF
then
  exit 1
fi
time out=$(/usr/bin/python3 "$js/check_fuzz.py" --cpuinfo "$work/cpuinfo" "$work/u8s8.json" \
  "$work/declared.json" 2>&1)
code=$?
printf '%s\n' "$out" | sed 's/^/   /'
[[ $code -eq 0 ]] || fail "check_fuzz.py did not match them on the emulated CPU (exit $code)"
out=$(/usr/bin/python3 "$js/check_fuzz.py" --cpuinfo "$work/cpuinfo-vnni" "$work/u8s8.json" \
  "$work/declared.json" 2>&1)
code=$?
echo "   with avx512_vnni presented: exit $code"
[[ $code -eq 1 && "$out" == *"undeclared FAIL"* ]] ||
  fail "expected the findings undeclared on a VNNI CPU (exit $code):
$out"
echo "check-no-vnni: OK: ONNX Runtime saturates uint8 x int8 on -cpu $cpu, found, shrunk and" \
     "declared as stated"
