"""numpy's MatMul and MatMul's family judged by mm: numpy.matmul into mm's Y buffer (out=),
through mm_runtime.

What is declared, with its source (numpy 1.24, numpy/core/src/umath/matmul.c.src): float and
double go to cblas_sgemm/cblas_dgemm of the BLAS numpy loads (Debian: the libblas.so.3
alternative; `USEBLAS` 1 for FLOAT and DOUBLE), a BLAS computing in the operands' type; float16 is
numpy's own loop, matmul_inner_noblas, which sums in float32 (`float sum`) and rounds once
(`npy_float_to_half`); integers go through the same loop in their own C type and wrap modulo
2^bits (numpy's documented integer overflow: "wraps around"). numpy has no bfloat16. The BLAS's
threads follow OMP_NUM_THREADS as mm's do.

MatMul's family, each as numpy computes it:
- Gemm is alpha * (A' @ B') + beta * C in the dtype: numpy.matmul as above, then alpha and beta
  converted to the dtype (integers wrapped modulo 2^bits) and numpy's multiply and add, each a
  ufunc of the dtype that rounds its result to the dtype (numpy's "Data type promotion": an
  operation on two arrays of one type gives that type). float and double therefore accumulate in
  their type; float16 is declared float16: after matmul's float32 sum the scaling, beta * C and the
  sum are each rounded to float16.
- MatMulInteger widens A, B and their zero points to int32, subtracts (every zero-point form by
  numpy broadcasting, a per-row [M] one as a column) and multiplies with numpy.matmul's int32
  loop, which sums in int32 and wraps modulo 2^32: the accumulation ONNX allows.
- QLinearMatMul is computed as ONNX's reference implementation computes it
  (onnx/reference/ops/op_qlinear_matmul.py at v1.22.0): MatMulInteger's int32 product C, then
  C * (a_scale * b_scale / y_scale) + y_zero_point, numpy.rint (round half to even), clipped to
  y's type. The multiplier is formed in the scales' own type (float32, or float16 for
  QLinearMatMul-21's float16 scales); C times it is float64 by numpy's promotion of int32 with a
  float. bfloat16 scales are refused: numpy has no bfloat16.
"""

import platform

import numpy

import mm_runtime

NO_BFLOAT16 = "numpy %s has no bfloat16 dtype" % numpy.__version__
GEMM_TYPES = ("float", "double", "float16", "int32", "int64", "uint32", "uint64")
EIGHT_BIT = ("uint8", "int8")


def blas_library():
    """The BLAS shared object numpy loaded, as the process's memory map names it."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "libblas" in path or "libopenblas" in path or "libblis" in path:
                    return path
    except OSError:
        pass
    return "unknown"


def matmul(a, b, out, dtype):
    return numpy.matmul(a, b, out=out)


def scalar(value, dtype):
    """Gemm's alpha or beta (a float32 value) as a numpy scalar of `dtype`: rounded to a float
    type, wrapped modulo 2^bits into an integer type (mm sends integer types integer values)."""
    if dtype.kind in "iu":
        unsigned = numpy.dtype("u%d" % dtype.itemsize)
        return numpy.array(int(value) % (1 << (8 * dtype.itemsize)), unsigned).view(dtype)[()]
    return dtype.type(value)


def gemm(problem):
    inputs, attributes = problem.inputs, problem.attributes
    dtype = mm_runtime.ELEMENT_DTYPES[problem.y_dtype]
    a = inputs["A"].T if attributes.get("transA", 0) else inputs["A"]
    b = inputs["B"].T if attributes.get("transB", 0) else inputs["B"]
    y = problem.out
    # An integer overflow wraps as Gemm's integer types do; 0 * inf is NaN as the formula says.
    with numpy.errstate(all="ignore"):
        numpy.matmul(a, b, out=y)
        numpy.multiply(y, scalar(attributes.get("alpha", 1.0), dtype), out=y)
        if "C" in inputs:
            numpy.add(y, scalar(attributes.get("beta", 1.0), dtype) * inputs["C"], out=y)


def centered(x, zero_point, per_row):
    """x - zero_point, both widened to int32; a per-row zero point [M] lines up with A's rows."""
    wide = x.astype(numpy.int32)
    if zero_point is None:
        return wide
    return wide - as_row_column(zero_point.astype(numpy.int32), per_row and x.ndim >= 2)


def as_row_column(param, per_row):
    """A zero point or scale of A given per row as [M], reshaped to the column [M, 1]."""
    return param.reshape(-1, 1) if per_row and param.ndim == 1 else param


def integer_product(inputs, a="A", b="B", out=None):
    """numpy.matmul of the centered operands: int32 sums, wrapped modulo 2^32."""
    a_zp, b_zp = inputs.get(a.lower() + "_zero_point"), inputs.get(b.lower() + "_zero_point")
    return numpy.matmul(centered(inputs[a], a_zp, True), centered(inputs[b], b_zp, False), out=out)


def matmulinteger(problem):
    integer_product(problem.inputs, out=problem.out)


def qlinearmatmul(problem):
    inputs = dict(problem.inputs)
    # A 1-D a or b is promoted as numpy.matmul does, so that scales per row or column line up
    # with C's rows and columns; the added dimension is removed from Y at the end.
    if inputs["a"].ndim == 1:
        inputs["a"] = inputs["a"][None, :]
    if inputs["b"].ndim == 1:
        inputs["b"] = inputs["b"][:, None]
    c = integer_product(inputs, "a", "b")
    a_scale = as_row_column(inputs["a_scale"], True)
    # ONNX's reference: D = C * (a_scale * b_scale / y_scale) + y_zero_point, in numpy's types.
    d = c * (a_scale * inputs["b_scale"] / inputs["y_scale"])
    d += inputs["y_zero_point"]
    info = numpy.iinfo(mm_runtime.ELEMENT_DTYPES[problem.y_dtype])
    problem.out[...] = numpy.clip(numpy.rint(d), info.min, info.max).reshape(problem.y_shape)


def qlinear_types():
    """QLinearMatMul's element types: every 8-bit triple with float and float16 scales."""
    keys = [
        "%s x %s -> %s, %%s scales" % (a, b, y)
        for a in EIGHT_BIT
        for b in EIGHT_BIT
        for y in EIGHT_BIT
    ]
    return (
        {key % s: "int32" for key in keys for s in ("float", "float16")},
        {key % "bfloat16": NO_BFLOAT16 for key in keys},
    )


QLINEAR_TYPES, QLINEAR_REFUSED = qlinear_types()

DRIVER = mm_runtime.Driver(
    runtime="numpy",
    version=numpy.__version__,
    matmul=matmul,
    dtypes={
        "float": "float",
        "double": "double",
        "float16": "float",
        "int32": "int32",
        "int64": "int64",
        "uint32": "uint32",
        "uint64": "uint64",
    },
    refused={"bfloat16": NO_BFLOAT16},
    runs_on=lambda threads: "BLAS %s; Python %s" % (blas_library(), platform.python_version()),
    operators={
        "Gemm": mm_runtime.Operator(
            compute=gemm,
            types={t: ("float16" if t == "float16" else t) for t in GEMM_TYPES},
            refused={"bfloat16": NO_BFLOAT16},
        ),
        "MatMulInteger": mm_runtime.Operator(
            compute=matmulinteger,
            types={"%s x %s -> int32" % (a, b): "int32" for a in EIGHT_BIT for b in EIGHT_BIT},
        ),
        "QLinearMatMul": mm_runtime.Operator(
            compute=qlinearmatmul, types=QLINEAR_TYPES, refused=QLINEAR_REFUSED
        ),
    },
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
