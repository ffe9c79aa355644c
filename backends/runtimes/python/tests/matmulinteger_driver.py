"""A driver of MatMulInteger on the SDK, for mm's tests of the runtime protocol's operators
(backends/cmd/tests/cmd_family_test.cc); not a runtime's driver.

It computes MatMulInteger-10 exactly: the sum of (a - a_zero_point)(b - b_zero_point) in int64 with
numpy, wrapped to int32 where the standard lets the accumulation overflow, for every type pair and
every zero-point form (per tensor, per row of A, per column of B); MatMul float32 by numpy.matmul.
It refuses Gemm in its own words and leaves QLinearMatMul to the SDK's default (MatMul only).
`matmulinteger_driver.py FAULT` misbehaves on operator requests whose K (A's last dim) is 7:
  saturate     adds the products in pairs saturated to int16, as x86's vpmaddubsw does (2-D
               operands; on every request, not only K = 7): a wrong answer mm must FAIL
  crash        dies with SIGSEGV
  hang         sleeps past any timeout
  wrong_shape  answers Y flattened to one dimension
  refuse       raises NotImplementedError, which the driver's rules make a refusal of the shape
"""

import os
import signal
import sys
import time

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mm_runtime  # noqa: E402

FAULT = sys.argv[1] if len(sys.argv) > 1 else "none"


def centered(x, zero_point, row):
    """x - zero_point in int64; a zero point per row of a 2-D (or N-D) A given as [M] lines up
    with A's rows."""
    wide = x.astype(numpy.int64)
    if zero_point is None:
        return wide
    zp = zero_point.astype(numpy.int64)
    if row and x.ndim >= 2 and zp.ndim == 1:
        zp = zp.reshape(-1, 1)
    return wide - zp


def saturating_pairs(a, b):
    """Y of 2-D a, b with each pair of products along K added in saturating int16."""
    products = a[:, :, None] * b[None, :, :]  # [M, K, N]
    if products.shape[1] % 2:
        products = numpy.concatenate([products, numpy.zeros_like(products[:, :1])], axis=1)
    pairs = numpy.clip(products[:, 0::2] + products[:, 1::2], -32768, 32767)
    return pairs.sum(axis=1)


def matmulinteger(problem):
    inputs = problem.inputs
    a = centered(inputs["A"], inputs.get("a_zero_point"), row=True)
    b = centered(inputs["B"], inputs.get("b_zero_point"), row=False)
    if FAULT == "saturate":
        return saturating_pairs(a, b).astype(numpy.int32)
    if inputs["A"].shape[-1] == 7:
        if FAULT == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif FAULT == "hang":
            time.sleep(1000)
        elif FAULT == "wrong_shape":
            return numpy.matmul(a, b).astype(numpy.int32).reshape(-1)
        elif FAULT == "refuse":
            raise NotImplementedError("K = 7 is unlucky")
    # int64 holds any sum of fewer than 2^47 products; astype wraps modulo 2^32 as the standard's
    # "the accumulation may overflow if and only if in 32 bits" allows.
    return numpy.matmul(a, b).astype(numpy.int32)


PAIRS = ["uint8 x int8", "int8 x int8", "uint8 x uint8", "int8 x uint8"]
DRIVER = mm_runtime.Driver(
    runtime="matmulinteger-test",
    version="1",
    matmul=lambda a, b, out, dtype: numpy.matmul(a, b, out=out),
    dtypes={"float": "float"},
    operators={
        "MatMulInteger": mm_runtime.Operator(
            compute=matmulinteger, types={pair + " -> int32": "int32" for pair in PAIRS}
        ),
        "Gemm": "this test driver computes MatMulInteger only",
    },
    rules=[(NotImplementedError, "shape")],
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
