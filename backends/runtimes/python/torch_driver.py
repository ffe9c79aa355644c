"""PyTorch's MatMul judged by mm: torch.matmul on the CPU into mm's Y buffer (out=), at the
thread count mm asks for, through mm_runtime.

Each dtype torch has is tried once at hello: one it cannot multiply (float16 on the CPU, in
torch 1.13) is refused in torch's own words. torch has no uint32 or uint64.

What is declared is what PyTorch promises, with its source:
- float and double accumulate in their own type, integers wrap modulo 2^bits (torch.matmul's
  documentation: the product of the dtypes given, numpy.matmul's semantics).
- float16 and bfloat16 accumulate in float32: PyTorch's accumulation type for both is float
  (`at::opmath_type<at::BFloat16>` and `<at::Half>`, aten/src/ATen/OpMathType.h at v1.13.1).
  torch 1.13's own CPU GEMM (at::native::cpublas::gemm, aten/src/ATen/native/BlasKernel.cpp at
  v1.13.1) sums bfloat16 in bfloat16 instead: a deviation PyTorch's tracker calls a silent
  correctness bug (pytorch/pytorch issues 83863 and 95125; PR 96074, "use accumulate type in BF16
  gemm(include dot, mv) ref path", fixed it after 1.13). It is declared in
  expectations/torch.json, never folded into the declaration.
- Subnormals: torch 1.13 hands a bfloat16 product to oneDNN only on a CPU with AVX512BW, VL and
  DQ (`mkldnn_bf16_device_check`, aten/src/ATen/native/mkldnn/Utils.h at v1.13.1) and only above
  16^3 multiply-adds (`use_mkldnn_bf16_matmul`, aten/src/ATen/native/mkldnn/Matmul.cpp); oneDNN's
  kernels for a CPU with AVX512_BF16 use VDPBF16PS, which reads subnormal inputs as zero and
  flushes subnormal results (Intel SDM, VDPBF16PS). The flush is declared exactly where that path
  can run: such a CPU, oneDNN enabled in torch and not capped below avx512_core_bf16
  (ONEDNN_MAX_CPU_ISA). Which problems take it depends on their size, so it is declared for the
  dtype: an allowance, never a requirement.

MatMul's family (runtime protocol 2), as PyTorch runs it:
- Gemm is torch.addmm(C, A', B', beta=beta, alpha=alpha) into mm's Y, in the dtypes whose addmm
  runs here (tried at hello like matmul), declared as MatMul's: addmm is "beta * input + alpha *
  (mat1 @ mat2)" (torch.addmm's documentation at 1.13) on the same GEMM. Its documentation also
  says "If beta is 0, then input will be ignored, and nan and inf in it will not be propagated":
  the BLAS reading of ONNX's ambiguity, which mm accepts. Integer alpha and beta are wrapped to the
  dtype's range (addmm takes them as integers of the dtype).
- QLinearMatMul runs PyTorch's quantized linear (torch.ops.quantized.linear, what
  torch.ao.nn.quantized.Linear calls) on its x86 quantized engine: `x86` or `fbgemm` where the
  build has them, else `onednn` (Debian's torch 1.13 is built without FBGEMM: its engines are
  qnnpack and onednn). a is the quantized input (quint8, per tensor), b transposed the weight
  (qint8, per tensor or per output channel = per column of b), y the quint8 output at y_scale and
  y_zero_point. What that cannot express is refused in PyTorch's words: other element types at
  hello; at a request (a conformance gap, declared in expectations/torch.json) a per-row a, a b
  with a zero point other than 0 or with batch dimensions, each by the error torch raises.
- MatMulInteger is refused: PyTorch's quantized linear returns a requantized 8-bit tensor and
  torch 1.13 has no integer matmul with an int32 output.
"""

import itertools
import math
import os
import platform
import warnings

import numpy
import torch

import mm_runtime

TORCH_DTYPES = {
    "float": torch.float32,
    "double": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
}
# torch 1.13's mkldnn_bf16_device_check: the CPU features its oneDNN bfloat16 path needs.
ONEDNN_BF16_FEATURES = ("avx512bw", "avx512vl", "avx512dq")
# ONEDNN_MAX_CPU_ISA values that leave oneDNN 2.6 its AVX512_BF16 kernels.
ISA_CAPS_WITH_BF16 = ("AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "ALL")

# mm's A and B are read-only; torch only reads them.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def cpu_flags(path="/proc/cpuinfo"):
    """The running CPU's feature flags as the kernel names them (empty if unreadable)."""
    try:
        with open(path) as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def onednn_bf16_path(flags):
    """Whether torch 1.13 may hand a bfloat16 product to oneDNN on this CPU."""
    return (
        torch.backends.mkldnn.is_available()
        and torch._C._get_mkldnn_enabled()
        and all(f in flags for f in ONEDNN_BF16_FEATURES)
    )


def flushes_bf16_subnormals(flags, environ=os.environ):
    """Whether a bfloat16 product may run on oneDNN's VDPBF16PS kernels here."""
    cap = environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    return onednn_bf16_path(flags) and "avx512_bf16" in flags and cap in ISA_CAPS_WITH_BF16


def arithmetic(flags):
    """Each dtype's declared arithmetic on a CPU with `flags` (see the module's docstring)."""
    return {
        "float": "float",
        "double": "double",
        "float16": "float",
        "bfloat16": mm_runtime.Arithmetic(
            "float", flushes_subnormals=flushes_bf16_subnormals(flags)
        ),
        "int32": "int32",
        "int64": "int64",
    }


def bf16_path(flags):
    """Which code computes bfloat16 here, for runs_on."""
    if not onednn_bf16_path(flags):
        return "bfloat16: ATen's own GEMM (no oneDNN path on this CPU or oneDNN disabled)"
    kernels = "VDPBF16PS" if flushes_bf16_subnormals(flags) else "no AVX512_BF16"
    return "bfloat16: oneDNN (%s) above 16^3 multiply-adds, ATen's own GEMM below" % kernels


def to_torch(array, dtype):
    if dtype == "bfloat16":
        return torch.from_numpy(array.view(numpy.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def matmul(a, b, out, dtype):
    torch.matmul(to_torch(a, dtype), to_torch(b, dtype), out=to_torch(out, dtype))


class Inexpressible(Exception):
    """A problem PyTorch's quantized linear cannot express: torch's own error, as a refusal."""


def coefficient(value, dtype):
    """Gemm's alpha or beta for addmm: a float, or an integer wrapped to the dtype's range."""
    if dtype not in ("int32", "int64"):
        return float(value)
    bits = 32 if dtype == "int32" else 64
    wrapped = int(value) % (1 << bits)
    return wrapped - (1 << bits) if wrapped >= 1 << (bits - 1) else wrapped


def gemm(problem):
    inputs, attributes, dtype = problem.inputs, problem.attributes, problem.y_dtype
    a = to_torch(inputs["A"], dtype)
    b = to_torch(inputs["B"], dtype)
    a = a.t() if attributes.get("transA", 0) else a
    b = b.t() if attributes.get("transB", 0) else b
    c = to_torch(inputs["C"], dtype) if "C" in inputs else torch.zeros((), dtype=a.dtype)
    torch.addmm(
        c,
        a,
        b,
        beta=coefficient(attributes.get("beta", 1.0), dtype),
        alpha=coefficient(attributes.get("alpha", 1.0), dtype),
        out=to_torch(problem.out, dtype),
    )


def scale_values(array):
    """A scale's values as float64 (exact for float, float16 and bfloat16's bits)."""
    if array.dtype == numpy.uint16:  # bfloat16, as its bits
        bits = array.astype(numpy.uint32).reshape(-1) << numpy.uint32(16)
        return bits.view(numpy.float32).astype(numpy.float64).reshape(array.shape)
    return array.astype(numpy.float64)


def quantized_input(a, scale, zero_point):
    """a as torch's quantized input: per tensor, or per row (which quantized linear refuses)."""
    data = torch.from_numpy(numpy.ascontiguousarray(a))
    if scale.size == 1:
        return torch._make_per_tensor_quantized_tensor(
            data, float(scale.ravel()[0]), int(zero_point.ravel()[0])
        )
    # Per row: [M] or [..., M, 1], one (scale, zero point) per row of a.
    rows = a.shape[:-1] + (1,)
    per_row = [
        numpy.broadcast_to(x.reshape(-1, 1) if x.ndim == 1 else x, rows)
        for x in (scale, zero_point)
    ]
    return torch._make_per_channel_quantized_tensor(
        data.reshape(math.prod(a.shape[:-1]), a.shape[-1]),
        torch.from_numpy(per_row[0].reshape(-1).copy()),
        torch.from_numpy(per_row[1].reshape(-1).astype(numpy.int64)),
        0,
    )


def packed_weight(b, scale, zero_point):
    """b transposed as torch's packed qint8 weight [N, K], per tensor or per output channel."""
    weight = torch.from_numpy(numpy.ascontiguousarray(numpy.swapaxes(b, -1, -2)))
    if scale.size == 1:
        quantized = torch._make_per_tensor_quantized_tensor(
            weight, float(scale.ravel()[0]), int(zero_point.ravel()[0])
        )
    else:
        quantized = torch._make_per_channel_quantized_tensor(
            weight,
            torch.from_numpy(scale.reshape(-1).copy()),
            torch.from_numpy(zero_point.reshape(-1).astype(numpy.int64)),
            0,
        )
    return torch.ops.quantized.linear_prepack(quantized, None)


def qlinearmatmul(problem):
    p = problem.inputs
    b = p["b"][:, None] if p["b"].ndim == 1 else p["b"]
    try:
        x = quantized_input(p["a"], scale_values(p["a_scale"]), p["a_zero_point"])
        weight = packed_weight(b, scale_values(p["b_scale"]), p["b_zero_point"])
        if x.qscheme() != torch.per_tensor_affine:
            # What torch.ops.quantized.linear raises for such an input.
            torch.ops.quantized.linear(x, weight, 1.0, 0)
    except RuntimeError as e:
        raise Inexpressible(str(e).splitlines()[0]) from None
    y = torch.ops.quantized.linear(
        x, weight, float(scale_values(p["y_scale"]).ravel()[0]), int(p["y_zero_point"].ravel()[0])
    )
    return y.int_repr().numpy().reshape(problem.y_shape)


def quantized_engine():
    """PyTorch's x86 quantized engine in this build: x86, fbgemm, else onednn."""
    engines = torch.backends.quantized.supported_engines
    return next((e for e in ("x86", "fbgemm", "onednn") if e in engines), None)


def input_type_refusal():
    """torch's words for a qint8 input to quantized linear (None if it takes one)."""
    x = torch._make_per_tensor_quantized_tensor(torch.ones(1, 1, dtype=torch.int8), 1.0, 0)
    w = torch._make_per_tensor_quantized_tensor(torch.ones(1, 1, dtype=torch.int8), 1.0, 0)
    try:
        torch.ops.quantized.linear(x, torch.ops.quantized.linear_prepack(w, None), 1.0, 0)
    except RuntimeError as e:
        return "torch %s: %s" % (torch.__version__, str(e).splitlines()[0])
    return None


def qlinear_declaration():
    """QLinearMatMul's types: (declared, refused), on the engine's quantized linear."""
    engine = quantized_engine()
    keys = ["%s x %s -> %s" % t for t in itertools.product(("uint8", "int8"), repeat=3)]
    scales = ("float", "float16", "bfloat16")
    if engine is None:
        why = "torch %s has no x86 quantized engine (engines: %s)" % (
            torch.__version__,
            ", ".join(torch.backends.quantized.supported_engines),
        )
        return {}, {"%s, %s scales" % (k, s): why for k in keys for s in scales}
    torch.backends.quantized.engine = engine
    why_a = input_type_refusal() or "torch.ops.quantized.linear takes a quint8 input"
    reasons = {
        "int8 x": why_a,
        "x uint8": "torch.ao.nn.quantized.functional.linear: the weight is of type torch.qint8",
        "-> int8": "torch.ops.quantized.linear returns its input's type, quint8",
    }
    declared, refused = {}, {}
    for key, scale in itertools.product(keys, scales):
        name = "%s, %s scales" % (key, scale)
        why = [r for pattern, r in reasons.items() if matches(key, pattern)]
        if why:
            refused[name] = why[0]
        else:
            via = "scales as PyTorch's float64 scale (exact)" if scale != "float" else None
            declared[name] = mm_runtime.Arithmetic("int32", conversion=via)
    return declared, refused


def matches(key, pattern):
    """Whether the element types `key` ("uint8 x int8 -> uint8") have the a, b or y of
    `pattern` ("int8 x", "x uint8", "-> int8")."""
    a, rest = key.split(" x ")
    b, y = rest.split(" -> ")
    return {"int8 x": a == "int8", "x uint8": b == "uint8", "-> int8": y == "int8"}[pattern]


def setup(threads):
    torch.set_num_threads(max(1, threads))
    declared = arithmetic(cpu_flags())
    for name, torch_dtype in TORCH_DTYPES.items():
        ones = torch.ones(2, 2, dtype=torch_dtype)
        try:
            torch.matmul(ones, ones)
            DRIVER.dtypes[name] = declared[name]
        except Exception as e:  # noqa: B902 (torch's own words are the reason)
            DRIVER.refused[name] = "torch %s: %s: %s" % (torch.__version__, type(e).__name__, e)
        try:
            torch.addmm(ones, ones, ones)
            GEMM.types[name] = declared[name]
        except Exception as e:  # noqa: B902 (torch's own words are the reason)
            GEMM.refused[name] = "torch %s: addmm: %s: %s" % (
                torch.__version__,
                type(e).__name__,
                e,
            )
    QLINEAR.types, QLINEAR.refused = qlinear_declaration()


NO_UNSIGNED = {
    "uint32": "torch %s has no uint32 dtype" % torch.__version__,
    "uint64": "torch %s has no uint64 dtype" % torch.__version__,
}
GEMM = mm_runtime.Operator(compute=gemm, types={}, refused=dict(NO_UNSIGNED))
QLINEAR = mm_runtime.Operator(compute=qlinearmatmul, types={})


def runs_on(threads):
    return "CPU, %d threads (%s); %s; quantized engine %s; Python %s" % (
        torch.get_num_threads(),
        torch.__config__.parallel_info().splitlines()[-1].strip(),
        bf16_path(cpu_flags()),
        torch.backends.quantized.engine,
        platform.python_version(),
    )


DRIVER = mm_runtime.Driver(
    runtime="torch",
    version=torch.__version__,
    matmul=matmul,
    dtypes={},
    refused=dict(NO_UNSIGNED),
    setup=setup,
    runs_on=runs_on,
    rules=[(Inexpressible, "shape")],
    operators={
        "Gemm": GEMM,
        "MatMulInteger": "torch %s: PyTorch's quantized linear (torch.ops.quantized.linear) returns"
        " a requantized 8-bit tensor, and torch has no integer matmul with an int32 output"
        % torch.__version__,
        "QLinearMatMul": QLINEAR,
    },
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
