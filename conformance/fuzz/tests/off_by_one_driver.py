"""A runtime-protocol driver that is wrong on purpose, for mm-fuzz's replay test, on the SDK.

numpy.matmul for float (float32) with numpy.matmul's shapes, then 1 added to Y's first element:
a FAIL the fuzzer must find, print a replay line for, and find again when that line runs. Every
other dtype is refused at hello. The SDK is found in the source tree beside this file's.
"""

import os
import sys

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../backends/runtimes/python"))
import mm_runtime  # noqa: E402


def matmul(a, b, out, dtype):
    numpy.matmul(a, b, out=out)
    out.reshape(-1)[:1] += 1


if __name__ == "__main__":
    mm_runtime.serve(
        mm_runtime.Driver(
            runtime="off_by_one", version="1", matmul=matmul, dtypes={"float": "float"}
        )
    )
