#!/usr/bin/env bash
# Installs every dependency of mm from Debian's packages (bookworm). Idempotent: when everything is
# present it prints nothing and exits 0 within a second. Uses sudo when not run as root.
# Options: --verbose (say so when everything is present); --packages-only (Debian's packages
# without the JavaScript npm step); --for GROUP (only the packages of GROUP, no npm step):
#   format  what scripts/check-format.sh runs: clang-format, black, flake8, Node.js and npm (ESLint
#           itself comes from the npm step, scripts/runtimes-npm.sh)
#   build   what configuring and building the default and asan trees needs (scripts/build.sh)
# The rest (the runtimes, the BLAS libraries, the report's and the tests' tools) are needed only to
# run: CI installs them beside the build (.ci/run).
set -euo pipefail

verbose=0
npm_step=1
group=all
while [[ $# -gt 0 ]]; do
  case "$1" in
    --verbose) verbose=1 ;;
    --packages-only) npm_step=0 ;;
    --for)
      [[ "${2:-}" == format || "${2:-}" == build ]] ||
        { echo "setup: --for takes format or build, not '${2:-}'" >&2; exit 2; }
      group=$2 npm_step=0
      shift ;;
    *) echo "setup: unknown option '$1' (--verbose, --packages-only, --for format|build)" >&2
       exit 2 ;;
  esac
  shift
done
# The npm packages of the JavaScript drivers and of the format check's ESLint, pinned by
# backends/runtimes/js/package-lock.json.
npm_runtimes() {
  [[ $npm_step -eq 0 ]] || bash "$(dirname "$0")/runtimes-npm.sh"
}

format_packages=(
  # C/C++ by .clang-format, Python by black and flake8, JavaScript by ESLint (run by Node.js).
  clang-format-14 black flake8 git nodejs
)
build_packages=(
  g++ cmake ninja-build pkg-config git
  libdnnl-dev
  # libdnnl-dev only recommends it, but its CMake config (dnnl-config.cmake) requires OpenCL.
  ocl-icd-opencl-dev
  libonnx-dev
  libprotobuf-dev protobuf-compiler
  libeigen3-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libssl-dev
  nlohmann-json3-dev libpugixml-dev
  libcli11-dev
  # mm-conformance's --filter/--exclude: regular expressions matched in linear time.
  libre2-dev
  # The sanitizer tree and its libFuzzer targets: clang with libFuzzer (CMake preset "asan").
  clang-14 libclang-rt-14-dev
)
run_packages=(
  # The official ONNX MatMul node tests of ONNX 1.12 (the built-in data's second source).
  libonnx-testdata
  # The comparison report (scripts/compare.sh): plots, and the headless browser its test opens.
  python3 python3-matplotlib chromium
  # The JavaScript runtimes' drivers (backends/runtimes/js): ONNX Runtime and TensorFlow.js from
  # the npm registry (scripts/runtimes-npm.sh, below), run by Node.js.
  nodejs
  # The fair-corpus check against numpy as ONNX's runner judges (conformance/fuzz/tests); the
  # runtimes mm ships drivers for (backends/runtimes/python: numpy, torch; the Python SDK).
  python3-numpy python3-onnx python3-torch
  # The Python SDK's tests (backends/runtimes/python/tests, discovered by pytest).
  python3-pytest
  # Campaigns on Slurm (scripts/slurm/): its test brings up a single-node cluster.
  slurmctld slurmd slurm-client munge
  # The BLAS backends (openblas, blis, atlas, netlib): loaded at run time, each from its own
  # directory below the multiarch lib dir; mm builds and runs without them.
  libopenblas0-pthread libblis4-openmp libatlas3-base libblas3
)
case "$group" in
  format) packages=("${format_packages[@]}") ;;
  build) packages=("${build_packages[@]}") ;;
  all) packages=("${format_packages[@]}" "${build_packages[@]}" "${run_packages[@]}") ;;
esac
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')
# Debian's npm is a package of its own; a Node.js that ships its own npm needs (and conflicts
# with) it. Only where Node.js is wanted: it runs npm.
if [[ $group != build ]] && ! command -v npm >/dev/null; then
  packages+=(npm)
fi

# One query for every package (a process per package took over a second): the installed ones.
declare -A installed=()
while read -r name status; do
  [[ "$status" == "installed" ]] && installed["$name"]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
missing=()
for p in "${packages[@]}"; do
  [[ -n "${installed[$p]:-}" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  [[ $verbose -eq 1 ]] && echo "setup: all ${#packages[@]} packages present"
  npm_runtimes
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_runtimes
echo "setup: done"
