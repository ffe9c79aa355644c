"""The self-check's runtime-protocol driver: one planted fault on request, through the Python SDK.

`planted_driver.py FAULT [SDK_DIR]` (SDK_DIR: where the package mm_runtime is, if not here)
computes every MatMul-13 dtype with numpy (bfloat16 through float32, rounded once), declares
what it computes, and plants FAULT, so that mm-conformance --self-check proves the gate can fail
on the runtime-protocol path too (conformance/self_check/self_check.cc says which verdict each
fault must get):

- none: the control, correct;
- off_by_one: 1 added to Y's first element;
- unwritten: Y's last element left as mm's poison in the offered buffer (Y of 2 or more);
- half_sum: float16/bfloat16 partial sums rounded to their own type, float32 declared;
- wrong_shape: Y answered flattened to 1-D when it has two dimensions or more;
- crash: SIGSEGV when Y has one element;
- hang: no answer for A of shape [3, 17];
- gap: operands of rank above 2 refused as a shape class (a conformance gap).
"""

import os
import signal
import sys
import time

if len(sys.argv) > 2:
    sys.path.insert(0, sys.argv[2])

import numpy  # noqa: E402

import mm_runtime  # noqa: E402

FAULT = sys.argv[1] if len(sys.argv) > 1 else "none"


class ShapeRefused(Exception):
    """This runtime's way to say it cannot do a shape class."""


def to_bfloat16_bits(x):
    """float32 values to bfloat16 bits, rounded to nearest even (NaN kept a quiet NaN)."""
    bits = numpy.atleast_1d(numpy.asarray(x, numpy.float32)).view(numpy.uint32).astype(numpy.uint64)
    one, half, shift = numpy.uint64(1), numpy.uint64(0x7FFF), numpy.uint64(16)
    rounded = ((bits + half + ((bits >> shift) & one)) >> shift).astype(numpy.uint16)
    rounded = rounded.reshape(numpy.shape(x))
    return numpy.where(numpy.isnan(x), numpy.uint16(0x7FC0), rounded)


def from_bfloat16_bits(bits):
    return (bits.astype(numpy.uint32) << 16).view(numpy.float32)


def in_own_type(x, dtype):
    """float32 values rounded to float16 or bfloat16 and back."""
    if dtype == "bfloat16":
        return from_bfloat16_bits(to_bfloat16_bits(x))
    return x.astype(numpy.float16).astype(numpy.float32)


def half_sum(a, b, dtype):
    """numpy.matmul of float32 values, each partial sum rounded to `dtype` (the fault)."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = numpy.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    acc = numpy.zeros(batch + (a2.shape[-2], b2.shape[-1]), numpy.float32)
    for k in range(a2.shape[-1]):
        acc = in_own_type(acc + a2[..., :, k : k + 1] * b2[..., k : k + 1, :], dtype)
    return acc.reshape(numpy.matmul(a, b).shape)


def compute(a, b, dtype):
    if dtype == "bfloat16":
        a, b = from_bfloat16_bits(a), from_bfloat16_bits(b)
    if FAULT == "half_sum" and dtype in ("float16", "bfloat16"):
        y = half_sum(a.astype(numpy.float32), b.astype(numpy.float32), dtype)
    else:
        y = numpy.matmul(a, b)
    if FAULT == "off_by_one" and y.size:
        y = numpy.array(y)
        y.flat[0] += y.dtype.type(1)
    return to_bfloat16_bits(y) if dtype == "bfloat16" else y


def matmul(a, b, out, dtype):
    if FAULT == "gap" and max(a.ndim, b.ndim) > 2:
        raise ShapeRefused("operands of rank above 2 are not supported")
    if FAULT == "crash" and out.size == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    if FAULT == "hang" and a.shape == (3, 17):
        time.sleep(3600)
    poison = out.reshape(-1)[-1:].copy()
    out[...] = compute(a, b, dtype)
    if FAULT == "unwritten" and out.size > 1:
        out.reshape(-1)[-1:] = poison
    if FAULT == "wrong_shape" and out.ndim >= 2:
        return out.reshape(-1)
    return None


DRIVER = mm_runtime.Driver(
    runtime="planted-" + FAULT,
    version=numpy.__version__,
    matmul=matmul,
    dtypes={
        "float": "float",
        "double": "double",
        "float16": "float",
        "bfloat16": "float",
        "int32": "int32",
        "int64": "int64",
        "uint32": "uint32",
        "uint64": "uint64",
    },
    rules=[(ShapeRefused, "shape")],
    runs_on="numpy %s, the self-check's planted fault '%s'" % (numpy.__version__, FAULT),
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
