"""What the torch driver declares, per CPU (ctest runtime.torch.declaration): bfloat16 and
float16 accumulate in float32 on every CPU, as PyTorch promises; subnormals may be flushed only
where torch 1.13 can reach oneDNN's AVX512_BF16 kernels. Skipped (exit 77) without torch."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
except ImportError:
    print("torch_driver_test: skipped: the Python module torch is not installed")
    sys.exit(77)

import torch_driver  # noqa: E402

AVX2 = {"sse4_2", "avx", "avx2", "fma", "f16c"}
SKYLAKE_X = AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}
ZEN4 = SKYLAKE_X | {"avx512_bf16", "avx512_vnni"}


def declared(flags, environ=None):
    """(accumulation, flushes) of bfloat16 on a CPU with `flags`."""
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(environ or {})
        bf16 = torch_driver.arithmetic(flags)["bfloat16"]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return bf16.accumulation, bf16.flushes_subnormals


class TorchDeclarationTest(unittest.TestCase):
    def test_sixteen_bit_floats_accumulate_in_float32_on_every_cpu(self):
        for flags in (set(), AVX2, SKYLAKE_X, ZEN4):
            arithmetic = torch_driver.arithmetic(flags)
            self.assertEqual(declared(flags)[0], "float", sorted(flags))
            self.assertEqual(arithmetic["float16"], "float")
            self.assertEqual(arithmetic["float"], "float")
            self.assertEqual(arithmetic["double"], "double")

    def test_subnormals_flush_only_where_onednn_avx512_bf16_kernels_can_run(self):
        self.assertFalse(declared(AVX2)[1])  # ATen's own GEMM: no oneDNN path at all.
        self.assertFalse(declared(SKYLAKE_X)[1])  # oneDNN, but no VDPBF16PS.
        self.assertEqual(declared(ZEN4)[1], torch.backends.mkldnn.is_available())
        # ONEDNN_MAX_CPU_ISA below avx512_core_bf16 takes the instruction away; at it, not.
        self.assertFalse(declared(ZEN4, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"})[1])
        self.assertFalse(declared(ZEN4, {"ONEDNN_MAX_CPU_ISA": "avx2"})[1])
        self.assertEqual(
            declared(ZEN4, {"ONEDNN_MAX_CPU_ISA": "avx512_core_bf16"})[1],
            torch.backends.mkldnn.is_available(),
        )

    def test_onednn_turned_off_in_torch_flushes_nothing(self):
        with torch.backends.mkldnn.flags(enabled=False):
            self.assertFalse(declared(ZEN4)[1])
            self.assertIn("ATen's own GEMM", torch_driver.bf16_path(ZEN4))

    def test_cpu_flags_are_read_from_proc_cpuinfo(self):
        flags = torch_driver.cpu_flags()
        self.assertIn("sse2", flags)  # Every x86-64 CPU.
        self.assertEqual(torch_driver.cpu_flags("/nonexistent"), set())


if __name__ == "__main__":
    unittest.main()
