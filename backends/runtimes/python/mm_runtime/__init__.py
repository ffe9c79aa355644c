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

The operators of MatMul's family beyond MatMul (protocol 2: Gemm, MatMulInteger, QLinearMatMul)
are declared and computed per operator; a driver that names none declares MatMul only, and mm
refuses the others for it with the words of `operators` (a string: the reason) or this module's:

    def gemm(problem):  # a Problem: inputs by ONNX name, attributes, out
        p = problem.inputs
        a = p["A"].T if problem.attributes["transA"] else p["A"]
        ...
    mm_runtime.Driver(..., operators={
        "Gemm": mm_runtime.Operator(compute=gemm, types={"float": "float"}, versions=[11, 13]),
        "QLinearMatMul": "mine has no quantized kernels"})

Operator.types are keyed by mm's description of the element types: "float" (Gemm's T),
"uint8 x int8 -> int32" (MatMulInteger), "uint8 x int8 -> uint8, float scales" (QLinearMatMul);
the value is the accumulation as for `dtypes` ("int32" for the integer operators). int8 and uint8
arrive as numpy int8 and uint8 arrays.
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

# The newest protocol version this module speaks; it answers mm's hello in the older of mm's and
# its own (an mm of version 1 gets a version 1 hello: MatMul only).
PROTOCOL = 2
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
# The element types of the family's operators: MatMul's and int8, uint8 (for data and zero points).
ELEMENT_DTYPES = dict(NUMPY_DTYPES, int8=numpy.dtype("i1"), uint8=numpy.dtype("u1"))
# The operators of MatMul's family a driver may declare beside MatMul.
FAMILY = ("Gemm", "MatMulInteger", "QLinearMatMul")
# Why an operator a driver does not name is refused.
MATMUL_ONLY = "the driver declares MatMul only"


@dataclass
class Arithmetic:
    """What a dtype's products and sums are formed in (plugin ABI v2's declaration)."""

    accumulation: str
    flushes_subnormals: bool = False
    conversion: Optional[str] = None  # How, when computed through another type.


@dataclass
class Problem:
    """A problem of one of the family's operators, as mm sends it."""

    op: str  # "Gemm", "MatMulInteger", "QLinearMatMul"
    version: int
    # By ONNX input name ("A", "B", "C", "a_zero_point", "a_scale", ...), read-only, in the node's
    # order; an absent optional input is not there.
    inputs: Dict[str, numpy.ndarray]
    # Gemm's transA, transB (ints), alpha, beta (floats), and broadcast for versions 1 and 6; {}
    # for the integer operators.
    attributes: Dict[str, Any]
    y_dtype: str
    y_shape: Tuple[int, ...]
    # Y's writable buffer holding the bytes mm offers, or None when the driver sets
    # accepts_out=False.
    out: Optional[numpy.ndarray]


@dataclass
class Operator:
    """One operator of the family a driver computes, and what it declares about it."""

    # (problem) -> Y, or None when the runtime wrote problem.out.
    compute: Callable[[Problem], Any]
    # Element types (mm's description: "float", "uint8 x int8 -> int32") -> accumulation.
    types: Dict[str, Union[str, Arithmetic]]
    refused: Dict[str, str] = field(default_factory=dict)  # Element types -> why not.
    versions: Optional[List[int]] = None  # The versions it computes; None: every one.


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
    # Operator name -> an Operator, or a string: why it is refused. Unnamed: MATMUL_ONLY.
    operators: Dict[str, Union[Operator, str]] = field(default_factory=dict)


class ProtocolError(Exception):
    """mm sent something this module does not understand."""


def _entry(arithmetic: Union[str, Arithmetic]) -> Dict[str, Any]:
    if isinstance(arithmetic, str):
        arithmetic = Arithmetic(arithmetic)
    entry: Dict[str, Any] = {
        "accumulation": arithmetic.accumulation,
        "flushes_subnormals": arithmetic.flushes_subnormals,
    }
    if arithmetic.conversion:
        entry["conversion"] = arithmetic.conversion
    return entry


def _declarations(driver: Driver) -> Dict[str, Dict[str, Any]]:
    declared: Dict[str, Dict[str, Any]] = {}
    for name in NUMPY_DTYPES:
        if name in driver.refused:
            declared[name] = {"refused": str(driver.refused[name])}
        elif name in driver.dtypes:
            declared[name] = _entry(driver.dtypes[name])
        else:
            declared[name] = {"refused": "not declared by the driver"}
    return declared


def _operator_declarations(driver: Driver) -> Dict[str, Dict[str, Any]]:
    declared: Dict[str, Dict[str, Any]] = {}
    for name in list(FAMILY) + [n for n in driver.operators if n not in FAMILY]:
        operator = driver.operators.get(name, MATMUL_ONLY)
        if not isinstance(operator, Operator):
            declared[name] = {"refused": str(operator)}
            continue
        types = {key: _entry(arithmetic) for key, arithmetic in operator.types.items()}
        types.update({key: {"refused": str(why)} for key, why in operator.refused.items()})
        declared[name] = {"types": types}
        if operator.versions is not None:
            declared[name]["versions"] = list(operator.versions)
    return declared


def hello(driver: Driver, request: Header) -> Header:
    """The hello header answering mm's `request`; runs the driver's setup with mm's threads."""
    threads = int(request.get("threads", 1))
    if driver.setup is not None:
        driver.setup(threads)
    runs_on = driver.runs_on(threads) if callable(driver.runs_on) else driver.runs_on
    protocol = min(PROTOCOL, int(request.get("protocol", 1)))
    header = {
        "type": "hello",
        "protocol": protocol,
        "runtime": driver.runtime,
        "version": driver.version,
        "runs_on": runs_on,
        "dtypes": _declarations(driver),
    }
    if protocol >= 2:
        header["operators"] = _operator_declarations(driver)
    return header


def _name_of(array: numpy.ndarray, requested: str) -> str:
    dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
    for name, numpy_dtype in ELEMENT_DTYPES.items():
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


def _reply(
    driver: Driver, rid: Any, run: Callable[[], Tuple[numpy.ndarray, str, float]]
) -> Tuple[Header, bytes]:
    """The reply to request `rid` whose computation `run` does, giving (Y, the requested dtype's
    name, the call's seconds): Y, or its exception as a refusal or error by the driver's rules."""
    try:
        result, name, seconds = run()
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


def answer(driver: Driver, request: Header, data: bytearray) -> Tuple[Header, bytes]:
    """The reply to one matmul request: (header, Y's bytes). `data` must be writable (Y's part
    becomes `out`)."""

    def run() -> Tuple[numpy.ndarray, str, float]:
        name, (a, b, y) = _operands(request, data)
        a.flags.writeable = False
        b.flags.writeable = False
        out = y if driver.accepts_out else None
        start = time.perf_counter()
        result = driver.matmul(a, b, out, name)
        seconds = time.perf_counter() - start
        return numpy.asarray(y if result is None else result), name, seconds

    return _reply(driver, request.get("id", 0), run)


def _tensors(specs: List[Header], data: bytearray) -> List[numpy.ndarray]:
    """The tensors {"dtype", "shape"} of `specs`, back to back in `data` (exactly their bytes)."""
    dtypes, shapes = [], []
    for spec in specs:
        if spec["dtype"] not in ELEMENT_DTYPES:
            raise ProtocolError("unknown dtype %r" % spec["dtype"])
        dtypes.append(ELEMENT_DTYPES[spec["dtype"]])
        shapes.append(tuple(spec["shape"]))
    counts = [math.prod(shape) for shape in shapes]
    total = sum(count * dtype.itemsize for count, dtype in zip(counts, dtypes))
    if total != len(data):
        raise ProtocolError("%d data bytes for %d in the inputs and Y" % (len(data), total))
    arrays, offset = [], 0
    for dtype, shape, count in zip(dtypes, shapes, counts):
        arrays.append(numpy.frombuffer(data, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    return arrays


def problem_of(request: Header, data: bytearray, accepts_out: bool = True) -> Problem:
    """The Problem of an operator request: its inputs read-only, Y's buffer `out` (or None)."""
    specs = list(request["inputs"]) + [request["y"]]
    arrays = _tensors(specs, data)
    inputs = {}
    for spec, array in zip(request["inputs"], arrays):
        array.flags.writeable = False
        inputs[spec["name"]] = array
    return Problem(
        op=request["op"],
        version=int(request["version"]),
        inputs=inputs,
        attributes=dict(request.get("attributes", {})),
        y_dtype=request["y"]["dtype"],
        y_shape=tuple(request["y"]["shape"]),
        out=arrays[-1] if accepts_out else None,
    )


def answer_operator(driver: Driver, request: Header, data: bytearray) -> Tuple[Header, bytes]:
    """The reply to one operator request (Gemm, MatMulInteger, QLinearMatMul): (header, Y's
    bytes), computed by the driver's Operator of that name. `data` must be writable."""

    def run() -> Tuple[numpy.ndarray, str, float]:
        operator = driver.operators.get(str(request.get("op")))
        if not isinstance(operator, Operator):
            raise ProtocolError("operator %r is not declared by the driver" % request.get("op"))
        problem = problem_of(request, data, driver.accepts_out)
        start = time.perf_counter()
        result = operator.compute(problem)
        seconds = time.perf_counter() - start
        y = problem.out if result is None else result
        if y is None:
            raise ProtocolError("compute returned no Y and the driver accepts no out")
        return numpy.asarray(y), problem.y_dtype, seconds

    return _reply(driver, request.get("id", 0), run)


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
        if request.get("type") == "matmul":
            channel.write(*answer(driver, request, data))
        elif request.get("type") == "operator":
            channel.write(*answer_operator(driver, request, data))
        else:
            header = {"type": "error", "id": request.get("id", 0), "message": "unknown request"}
            channel.write(header)
