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
"""

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


def setup(threads):
    torch.set_num_threads(max(1, threads))
    declared = arithmetic(cpu_flags())
    for name, torch_dtype in TORCH_DTYPES.items():
        try:
            torch.matmul(torch.ones(2, 2, dtype=torch_dtype), torch.ones(2, 2, dtype=torch_dtype))
            DRIVER.dtypes[name] = declared[name]
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
    runs_on=lambda threads: "CPU, %d threads (%s); %s; Python %s"
    % (
        torch.get_num_threads(),
        torch.__config__.parallel_info().splitlines()[-1].strip(),
        bf16_path(cpu_flags()),
        platform.python_version(),
    ),
)

if __name__ == "__main__":
    mm_runtime.serve(DRIVER)
