"""PyTorch's MatMul judged by mm: torch.matmul on the CPU into mm's Y buffer (out=), at the
thread count mm asks for, through mm_runtime.

Each dtype torch has is tried once at hello: one it cannot multiply (float16 on the CPU, in
torch 1.13) is refused in torch's own words. float and double accumulate in their own type;
bfloat16 in bfloat16: torch 1.13's CPU kernel rounds its partial sums to bfloat16 (measured: its
results fall outside the bound of float32 accumulation, inside that of bfloat16), and a oneDNN
AVX512-BF16 kernel flushes subnormals (declared for every CPU, as plugin ABI v2 asks); integers wrap
modulo 2^bits. torch has no uint32 or uint64.
"""

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
ARITHMETIC = {
    "float": "float",
    "double": "double",
    "float16": "float",
    "bfloat16": mm_runtime.Arithmetic("bfloat16", flushes_subnormals=True),
    "int32": "int32",
    "int64": "int64",
}

# mm's A and B are read-only; torch only reads them.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def to_torch(array, dtype):
    if dtype == "bfloat16":
        return torch.from_numpy(array.view(numpy.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def matmul(a, b, out, dtype):
    torch.matmul(to_torch(a, dtype), to_torch(b, dtype), out=to_torch(out, dtype))


def setup(threads):
    torch.set_num_threads(max(1, threads))
    for name, torch_dtype in TORCH_DTYPES.items():
        try:
            torch.matmul(torch.ones(2, 2, dtype=torch_dtype), torch.ones(2, 2, dtype=torch_dtype))
            DRIVER.dtypes[name] = ARITHMETIC[name]
        except Exception as e:  # noqa: B902 (torch's own words are the reason)
            DRIVER.refused[name] = "torch %s: %s: %s" % (torch.__version__, type(e).__name__, e)


DRIVER = mm_runtime.Driver(
    runtime="torch",
    version=torch.__version__,
    matmul=matmul,
    dtypes={},
    refused={
        "uint32": "torch %s has no uint32 dtype" % torch.__version__,
        "uint64": "torch %s has no uint64 dtype" % torch.__version__,
    },
    setup=setup,
    runs_on=lambda threads: "CPU, %d threads (%s); Python %s"
    % (
        torch.get_num_threads(),
        torch.__config__.parallel_info().splitlines()[-1].strip(),
        platform.python_version(),
    ),
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
