#!/usr/bin/python3
"""Judges numpy's matmul on a corpus written by `mm-fuzz generate`, by ONNX's own rule.

Usage: numpy_check.py CORPUS_DIR [--min-cases N]

For every case (test_data_set_0 of each test_* directory) it reads the inputs and the expected
output with onnx.numpy_helper (Debian's python3-onnx), computes Y with numpy (Debian's
python3-numpy): float32 and float64 directly (numpy's matmul, which sums in the dtype in
whatever order its BLAS picks), float16 and bfloat16 widened to float32 and rounded back to the
dtype (bfloat16 to nearest even), integers in their own type (wraparound) - and compares it as
ONNX's backend test runner does (onnx/backend/test/runner: numpy.testing.assert_allclose with
rtol 1e-3, atol 1e-7, NaN equal to NaN, in the output's dtype; integers exactly). A fair corpus
(manifest.json "fair_under": "onnx") must pass everywhere. Exits 0 when every case passes and at
least --min-cases were judged, 1 otherwise (naming each failing case), 2 on a usage error.
"""
import json
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-7


def read_tensor(path):
    proto = onnx.TensorProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return proto.data_type, numpy_helper.to_array(proto)


def round_to_bfloat16(x):
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    x = np.asarray(x, dtype=np.float32)
    bits = np.ascontiguousarray(x).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32).reshape(x.shape)
    # NaN stays NaN (rounding its payload could carry into the exponent).
    return np.where(np.isnan(x), np.float32("nan"), out)


def numpy_matmul(onnx_type, a, b):
    if onnx_type == onnx.TensorProto.FLOAT16:
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    if onnx_type == onnx.TensorProto.BFLOAT16:
        return round_to_bfloat16(np.matmul(a.astype(np.float32), b.astype(np.float32)))
    return np.matmul(a, b)


def main(argv):
    args = argv[1:]
    min_cases = 0
    if len(args) == 3 and args[1] == "--min-cases":
        min_cases = int(args[2])
        args = args[:1]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0]
    manifest_path = os.path.join(root, "manifest.json")
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            fair_under = json.load(f).get("fair_under")
        print(f"numpy_check: {root}: fair under {fair_under!r} (manifest.json)")
    judged, failures = 0, []
    for name in sorted(os.listdir(root)):
        case = os.path.join(root, name, "test_data_set_0")
        if not name.startswith("test_") or not os.path.isdir(case):
            continue
        a_type, a = read_tensor(os.path.join(case, "input_0.pb"))
        _, b = read_tensor(os.path.join(case, "input_1.pb"))
        _, expected = read_tensor(os.path.join(case, "output_0.pb"))
        # Overflow and inf - inf in numpy's own arithmetic are what the rule judges, not errors.
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            got = numpy_matmul(a_type, a, b)
            try:
                if got.shape != expected.shape or got.dtype != expected.dtype:
                    raise AssertionError(
                        f"got {got.dtype}{list(got.shape)}, expected "
                        f"{expected.dtype}{list(expected.shape)}"
                    )
                if np.issubdtype(expected.dtype, np.integer):
                    np.testing.assert_array_equal(got, expected)
                else:
                    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
            except AssertionError as e:
                failures.append((name, " ".join(str(e).split())[:300]))
        judged += 1
    for name, message in failures:
        print(f"FAIL {name}: {message}")
    print(
        f"numpy_check: {judged} cases judged by ONNX's rule (rtol {RTOL}, atol {ATOL}), "
        f"{len(failures)} failing"
    )
    if judged < min_cases:
        print(f"numpy_check: expected at least {min_cases} cases in {root}", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
