"""A runtime-protocol driver that is wrong on purpose, for mm-fuzz's replay test.

Standard library only (no SDK, no numpy, so the test runs wherever python3 does). It computes
float (float32) MatMul with numpy.matmul's shapes (1-D operands, broadcast batch dimensions),
summing in double, and then adds 1 to Y's first element: a FAIL the fuzzer must find, print a
replay line for, and find again when that line runs. Every other dtype is refused at hello.
"""

import json
import math
import os
import struct
import sys
from array import array

DTYPES = ["double", "float16", "bfloat16", "int32", "int64", "uint32", "uint64"]


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


def read_frame():
    header_bytes, data_bytes = struct.unpack("<II", read_exact(8))
    return json.loads(read_exact(header_bytes)), read_exact(data_bytes)


def write_frame(header, data=b""):
    text = json.dumps(header).encode()
    os.write(1, struct.pack("<II", len(text), len(data)) + text + data)


def matrix_offsets(batch, shape):
    """For each index of `batch` (row-major), the matrix an operand of batch dims `shape` has
    there once broadcast."""
    shape = [1] * (len(batch) - len(shape)) + list(shape)
    offsets = []
    for flat in range(math.prod(batch)):
        offset, step, rest = 0, 1, flat
        for d in reversed(range(len(batch))):
            if shape[d] != 1:
                offset += (rest % batch[d]) * step
            rest //= batch[d]
            step *= shape[d]
        offsets.append(offset)
    return offsets


def product(request, data):
    a_shape, b_shape = request["a"], request["b"]
    a_shape = a_shape if len(a_shape) >= 2 else [1] + a_shape
    b_shape = b_shape if len(b_shape) >= 2 else b_shape + [1]
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    a_batch, b_batch = a_shape[:-2], b_shape[:-2]
    rank = max(len(a_batch), len(b_batch))
    padded = [[1] * (rank - len(s)) + s for s in (a_batch, b_batch)]
    batch = [x if y == 1 else y for x, y in zip(*padded)]
    count_a, count_b = math.prod(a_shape), math.prod(b_shape)
    a = array("f", data[: 4 * count_a])
    b = array("f", data[4 * count_a : 4 * (count_a + count_b)])
    y = []
    for a_at, b_at in zip(matrix_offsets(batch, a_batch), matrix_offsets(batch, b_batch)):
        a0, b0 = a_at * m * k, b_at * k * n
        for i in range(m):
            for j in range(n):
                y.append(sum(a[a0 + i * k + p] * b[b0 + p * n + j] for p in range(k)))
    if y:
        y[0] += 1.0
    return array("f", y).tobytes()


def main():
    request, _ = read_frame()
    declared = {"float": {"accumulation": "double"}}
    for name in DTYPES:
        declared[name] = {"refused": "this test driver computes float only"}
    write_frame(
        {
            "type": "hello",
            "protocol": request["protocol"],
            "runtime": "off_by_one",
            "version": "1",
            "dtypes": declared,
        }
    )
    while True:
        request, data = read_frame()
        answer = {"type": "y", "id": request["id"], "dtype": "float", "shape": request["y"]}
        write_frame(answer, product(request, data))


if __name__ == "__main__":
    main()
