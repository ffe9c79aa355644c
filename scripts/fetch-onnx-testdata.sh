#!/usr/bin/env bash
# Fetches the 7 official ONNX MatMul node tests (onnx/backend/test/data/node/test_matmul_*) from
# ONNX's v1.22.0 release, the last release that ships them, into third_party/onnx-testdata/node
# (git-ignored), and verifies every file against the SHA-256 sums mm has built in
# (conformance/official/onnx_matmul_sha256sums.txt). mm-conformance then finds them as a default
# data root. Needs curl or wget and internet access; never run by CI or the tests.
# Usage: scripts/fetch-onnx-testdata.sh [DEST]   (default DEST: third_party/onnx-testdata/node)
set -euo pipefail
cd "$(dirname "$0")/.."
sums="$PWD/conformance/official/onnx_matmul_sha256sums.txt"
dest="${1:-third_party/onnx-testdata/node}"
# MM_ONNX_FETCH_BASE overrides the source (a mirror, or file:// for a local copy).
base="${MM_ONNX_FETCH_BASE:-https://raw.githubusercontent.com/onnx/onnx/v1.22.0/onnx/backend/test/data/node}"

if command -v curl >/dev/null; then
  fetch() { curl --fail --silent --show-error --location --retry 2 --connect-timeout 10 -o "$2" "$1"; }
elif command -v wget >/dev/null; then
  fetch() { wget --quiet --tries=2 --timeout=10 -O "$2" "$1"; }
else
  echo "fetch-onnx-testdata: need curl or wget" >&2
  exit 1
fi
command -v sha256sum >/dev/null || { echo "fetch-onnx-testdata: need sha256sum (coreutils)" >&2; exit 1; }

# Download into a scratch directory and move into place only when every checksum matches, so a
# failed or partial download never leaves files the harness would pick up.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
while read -r sum path; do
  [[ -z "$sum" || "$sum" == \#* ]] && continue
  path="${path#./}"
  mkdir -p "$scratch/$(dirname "$path")"
  if ! fetch "$base/$path" "$scratch/$path" 2>"$scratch/.error"; then
    echo "fetch-onnx-testdata: cannot download $base/$path" >&2
    sed 's/^/  /' "$scratch/.error" >&2
    echo "fetch-onnx-testdata: no network? The official cases are optional: mm-conformance runs" \
         "Debian's copies (2d, 3d, 4d) and its built-in cases without them." >&2
    exit 1
  fi
done <"$sums"
rm -f "$scratch/.error"
if ! (cd "$scratch" && sha256sum --check --quiet "$sums"); then
  echo "fetch-onnx-testdata: checksum mismatch; nothing installed" >&2
  exit 1
fi
mkdir -p "$dest"
for dir in "$scratch"/test_matmul_*; do
  rm -rf "${dest:?}/$(basename "$dir")"
  cp -R "$dir" "$dest/"
done
echo "fetch-onnx-testdata: $(ls -d "$scratch"/test_matmul_* | wc -l) official cases verified into $dest"
