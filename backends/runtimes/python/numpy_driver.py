"""numpy's MatMul judged by mm: numpy.matmul into mm's Y buffer (out=), through mm_runtime.

What is declared, with its source (numpy 1.24, numpy/core/src/umath/matmul.c.src): float and
double go to cblas_sgemm/cblas_dgemm of the BLAS numpy loads (Debian: the libblas.so.3
alternative; `USEBLAS` 1 for FLOAT and DOUBLE), a BLAS computing in the operands' type; float16 is
numpy's own loop, matmul_inner_noblas, which sums in float32 (`float sum`) and rounds once
(`npy_float_to_half`); integers go through the same loop in their own C type and wrap modulo
2^bits (numpy's documented integer overflow: "wraps around"). numpy has no bfloat16. The BLAS's
threads follow OMP_NUM_THREADS as mm's do.
"""

import platform

import numpy

import mm_runtime


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
    refused={"bfloat16": "numpy %s has no bfloat16 dtype" % numpy.__version__},
    runs_on=lambda threads: "BLAS %s; Python %s" % (blas_library(), platform.python_version()),
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
