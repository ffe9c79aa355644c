"""mm's runtime protocol for Python: a MatMul of any Python runtime judged by mm.

A driver is a function from (A, B) to Y plus a declaration; serve() speaks the protocol of
docs/runtime-protocol.md over stdin and stdout (python3 and numpy only):

    import numpy
    import mm_runtime

    def matmul(a, b, out, dtype):  # numpy arrays; bfloat16 as uint16 bits
        return numpy.matmul(a, b, out=out)

    mm_runtime.serve(mm_runtime.Driver(
        runtime="numpy", version=numpy.__version__, matmul=matmul,
        dtypes={"float": "float", "double": "double"},  # dtype: its accumulation
        refused={"bfloat16": "numpy has no bfloat16"}))

Then `mm-conformance --backend-cmd mine="python3 my_driver.py" --backend mine`.

- A and B are read-only numpy arrays of the request's shapes (0-d and empty ones included); `out`
  is a writable array of Y's shape holding the bytes mm offers (poisoned by the harness, so an
  element the runtime leaves unwritten shows), or None when the driver sets accepts_out=False.
  Return Y (an array or a numpy scalar), or None when the runtime wrote `out`. Y goes back as it
  is: its dtype and shape are the runtime's, and mm judges them.
- dtypes are mm's names: float, double, float16, bfloat16, int32, int64, uint32, uint64; a
  bfloat16 tensor is a numpy uint16 array of its bits. A dtype neither declared nor refused is
  refused for the driver ("not declared").
- Exceptions become answers by the driver's rules: `rules` is a list of (exception class, what),
  what being "shape" or "dtype", the first match refusing that (in the exception's words); any other
  exception is an error ("TypeName: message"). mm shows a refusal of a dtype the hello declares
  supported as a conformance gap, never as UNSUPPORTED: refuse unsupported dtypes in the hello.
- Anything the runtime prints to stdout goes to stderr instead (the protocol keeps stdout).
"""

import json
import math
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple, Union

import numpy

PROTOCOL = 1
# A frame header: one JSON object.
Header = Dict[str, Any]
# The largest frame header mm accepts (docs/runtime-protocol.md): a longer one is refused whole.
MAX_HEADER_BYTES = 64 * 1024

# mm's dtype names and the numpy dtype that holds each (bfloat16: its bits).
NUMPY_DTYPES = {
    "float": numpy.dtype("<f4"),
    "double": numpy.dtype("<f8"),
    "float16": numpy.dtype("<f2"),
    "bfloat16": numpy.dtype("<u2"),
    "int32": numpy.dtype("<i4"),
    "int64": numpy.dtype("<i8"),
    "uint32": numpy.dtype("<u4"),
    "uint64": numpy.dtype("<u8"),
}


@dataclass
class Arithmetic:
    """What a dtype's products and sums are formed in (plugin ABI v2's declaration)."""

    accumulation: str
    flushes_subnormals: bool = False
    conversion: Optional[str] = None  # How, when computed through another type.


@dataclass
class Driver:
    """A runtime's MatMul and what it declares about itself."""

    runtime: str
    version: str
    # (a, b, out, dtype) -> Y, or None when the runtime wrote `out`.
    matmul: Callable[[numpy.ndarray, numpy.ndarray, Optional[numpy.ndarray], str], Any]
    dtypes: Dict[str, Union[str, Arithmetic]]
    refused: Dict[str, str] = field(default_factory=dict)
    rules: List[Tuple[type, str]] = field(default_factory=list)  # (exception class, what)
    runs_on: Union[str, Callable[[int], str]] = ""
    setup: Optional[Callable[[int], None]] = None  # Called with mm's thread count at hello.
    accepts_out: bool = True


class ProtocolError(Exception):
    """mm sent something this module does not understand."""


def _declarations(driver: Driver) -> Dict[str, Dict[str, Any]]:
    declared: Dict[str, Dict[str, Any]] = {}
    for name in NUMPY_DTYPES:
        if name in driver.refused:
            declared[name] = {"refused": str(driver.refused[name])}
        elif name in driver.dtypes:
            arithmetic = driver.dtypes[name]
            if isinstance(arithmetic, str):
                arithmetic = Arithmetic(arithmetic)
            entry: Dict[str, Any] = {
                "accumulation": arithmetic.accumulation,
                "flushes_subnormals": arithmetic.flushes_subnormals,
            }
            if arithmetic.conversion:
                entry["conversion"] = arithmetic.conversion
            declared[name] = entry
        else:
            declared[name] = {"refused": "not declared by the driver"}
    return declared


def hello(driver: Driver, request: Header) -> Header:
    """The hello header answering mm's `request`; runs the driver's setup with mm's threads."""
    threads = int(request.get("threads", 1))
    if driver.setup is not None:
        driver.setup(threads)
    runs_on = driver.runs_on(threads) if callable(driver.runs_on) else driver.runs_on
    return {
        "type": "hello",
        "protocol": PROTOCOL,
        "runtime": driver.runtime,
        "version": driver.version,
        "runs_on": runs_on,
        "dtypes": _declarations(driver),
    }


def _name_of(array: numpy.ndarray, requested: str) -> str:
    dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
    for name, numpy_dtype in NUMPY_DTYPES.items():
        if dtype == numpy_dtype and (name != "bfloat16" or requested == "bfloat16"):
            return name
    return str(array.dtype)


def _operands(request: Header, data: bytearray) -> Tuple[str, List[numpy.ndarray]]:
    name = request["dtype"]
    if name not in NUMPY_DTYPES:
        raise ProtocolError("unknown dtype %r" % name)
    dtype = NUMPY_DTYPES[name]
    shapes = [tuple(request[key]) for key in ("a", "b", "y")]
    counts = [math.prod(shape) for shape in shapes]
    if sum(counts) * dtype.itemsize != len(data):
        raise ProtocolError(
            "%d data bytes for %d in A, B and Y" % (len(data), sum(counts) * dtype.itemsize)
        )
    arrays, offset = [], 0
    for shape, count in zip(shapes, counts):
        arrays.append(numpy.frombuffer(data, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    return name, arrays


def fit_header(header: Header, key: str) -> Header:
    """`header` as it is when its JSON fits MAX_HEADER_BYTES; else with its text `key` (an
    exception's message, say) cut at a character and ended by a marker saying its whole length,
    so that the cut header fits."""
    if len(json.dumps(header).encode()) <= MAX_HEADER_BYTES:
        return header
    whole = str(header[key])
    marker = " [... cut to fit mm's 64 KiB frame header; %d characters in all]" % len(whole)

    def cut(n: int) -> Header:
        return dict(header, **{key: whole[:n] + marker})

    # The longest prefix that fits: escapes make a character 1 to 12 bytes of JSON.
    low, high = 0, len(whole)
    while low < high:
        middle = (low + high + 1) // 2
        if len(json.dumps(cut(middle)).encode()) <= MAX_HEADER_BYTES:
            low = middle
        else:
            high = middle - 1
    return cut(low)


def answer(driver: Driver, request: Header, data: bytearray) -> Tuple[Header, bytes]:
    """The reply to one matmul request: (header, Y's bytes). `data` must be writable (Y's part
    becomes `out`)."""
    rid = request.get("id", 0)
    try:
        name, (a, b, y) = _operands(request, data)
        a.flags.writeable = False
        b.flags.writeable = False
        out = y if driver.accepts_out else None
        start = time.perf_counter()
        result = driver.matmul(a, b, out, name)
        seconds = time.perf_counter() - start
        result = numpy.asarray(y if result is None else result)
    except Exception as e:  # noqa: B902 (every exception is an answer)
        for kind, what in driver.rules:
            if isinstance(e, kind):
                why = "%s: %s" % (type(e).__name__, e)
                refusal = {"type": "refused", "id": rid, "what": what, "why": why}
                return fit_header(refusal, "why"), b""
        error = {"type": "error", "id": rid, "message": "%s: %s" % (type(e).__name__, e)}
        return fit_header(error, "message"), b""
    header = {
        "type": "y",
        "id": rid,
        "dtype": _name_of(result, name),
        "shape": list(result.shape),
        "seconds": seconds,
    }
    # tobytes() is row-major whatever the array's strides; little-endian as the protocol says.
    return header, result.astype(result.dtype.newbyteorder("<"), copy=False).tobytes()


class _Channel:
    """Frames over two file descriptors."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.reader: BinaryIO = os.fdopen(read_fd, "rb", buffering=1 << 16, closefd=False)
        self.write_fd = write_fd

    def read_exact(self, n: int) -> Optional[bytearray]:
        buffer = bytearray(n)
        view, got = memoryview(buffer), 0
        while got < n:
            k = self.reader.readinto(view[got:])
            if not k:
                return None
            got += k
        return buffer

    def read(self) -> Optional[Tuple[Header, bytearray]]:
        """The next (header, data), or None at the end of stdin."""
        prefix = self.read_exact(8)
        if prefix is None:
            return None
        header_bytes, data_bytes = struct.unpack("<II", prefix)
        header = self.read_exact(header_bytes)
        data = self.read_exact(data_bytes)
        if header is None or data is None:
            return None
        return json.loads(header), data

    def write(self, header: Header, data: bytes = b"") -> None:
        text = json.dumps(header).encode()
        self._write_all(struct.pack("<II", len(text), len(data)) + text)
        self._write_all(data)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while len(view):
            view = view[os.write(self.write_fd, view) :]


def serve(driver: Driver, read_fd: int = 0, write_fd: Optional[int] = None) -> None:
    """Answers mm until stdin ends. The protocol keeps stdout: what else writes to it (print(),
    a C library) goes to stderr."""
    if write_fd is None:
        write_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    channel = _Channel(read_fd, write_fd)
    first = channel.read()
    if first is None:
        return
    channel.write(hello(driver, first[0]))
    while True:
        message = channel.read()
        if message is None:
            return
        request, data = message
        if request.get("type") != "matmul":
            header = {"type": "error", "id": request.get("id", 0), "message": "unknown request"}
            channel.write(header)
            continue
        channel.write(*answer(driver, request, data))
