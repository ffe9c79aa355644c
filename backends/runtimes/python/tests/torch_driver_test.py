"""What the torch driver declares, per CPU, and computes (ctest runtime.torch.declaration):
bfloat16 and float16 accumulate in float32 on every CPU, as PyTorch promises; subnormals may be
flushed only where torch 1.13 can reach oneDNN's AVX512_BF16 kernels; Gemm is addmm, and
QLinearMatMul runs quantized linear where its form allows, the rest refused in torch's words.
Skipped (exit 77) without torch."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
except ImportError:
    print("torch_driver_test: skipped: the Python module torch is not installed")
    sys.exit(77)

import driver_testing  # noqa: E402
import mm_runtime  # noqa: E402
import numpy  # noqa: E402
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


def run(p):
    return driver_testing.run(torch_driver.DRIVER, p)


class TorchGemmTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch_driver.setup(1)

    def gemm(self, a, b, c=None, dtype="float", **attributes):
        numpy_dtype = mm_runtime.ELEMENT_DTYPES[dtype]
        inputs = {"A": numpy.array(a, numpy_dtype), "B": numpy.array(b, numpy_dtype)}
        if c is not None:
            inputs["C"] = numpy.array(c, numpy_dtype)
        rows = inputs["A"].shape[1 if attributes.get("transA") else 0]
        cols = inputs["B"].shape[0 if attributes.get("transB") else 1]
        return run(
            driver_testing.problem("Gemm", dtype, (rows, cols), attributes=attributes, **inputs)
        )

    def test_addmm_with_transposes_alpha_beta_and_a_broadcast_c(self):
        a = [[1, 2], [3, 4], [5, 6]]
        b = [[1, 0, 2], [0, 1, 3]]
        y = self.gemm(a, b, [10, 20], transA=1, transB=1, alpha=2.0, beta=0.5)
        expected = 2 * numpy.array(a).T @ numpy.array(b).T + 0.5 * numpy.array([10, 20])
        numpy.testing.assert_array_equal(y, expected)
        numpy.testing.assert_array_equal(self.gemm([[1], [2]], [[3, 4]]), [[3, 4], [6, 8]])

    def test_integer_alpha_and_beta_are_wrapped_to_the_dtype(self):
        # 2^40 + 2^17 (a float32 value) is 2^17 in int32: addmm takes only the dtype's range.
        y = self.gemm([[1]], [[3]], [[1]], dtype="int32", alpha=2.0**40 + 2.0**17, beta=-3.0)
        numpy.testing.assert_array_equal(y, [[2**17 * 3 - 3]])
        y = self.gemm([[1]], [[3]], dtype="int64", alpha=2.0**64 - 2.0**12)
        numpy.testing.assert_array_equal(y, [[-(2**12) * 3]])

    def test_declared_as_matmul_where_addmm_runs_refused_in_torch_words_elsewhere(self):
        hello = mm_runtime.hello(torch_driver.DRIVER, {"type": "hello", "protocol": 2})
        gemm = hello["operators"]["Gemm"]["types"]
        self.assertEqual(gemm["float"]["accumulation"], "float")
        self.assertEqual(gemm["bfloat16"]["accumulation"], "float")
        self.assertIn("addmm", gemm["float16"]["refused"])  # No CPU float16 addmm in 1.13.
        self.assertIn("no uint32", gemm["uint32"]["refused"])


def qlinear(a, a_scale, b, b_scale, y_scale, y_zero_point, a_zero_point=0, b_zero_point=0):
    a, b = numpy.array(a, numpy.uint8), numpy.array(b, numpy.int8)
    inputs = {
        "a": a,
        "a_scale": numpy.array(a_scale, numpy.float32),
        "a_zero_point": numpy.array(a_zero_point, numpy.uint8),
        "b": b,
        "b_scale": numpy.array(b_scale, numpy.float32),
        "b_zero_point": numpy.array(b_zero_point, numpy.int8),
        "y_scale": numpy.array(y_scale, numpy.float32),
        "y_zero_point": numpy.array(y_zero_point, numpy.uint8),
    }
    shape = numpy.matmul(a.astype(numpy.int64), b.astype(numpy.int64)).shape
    return run(driver_testing.problem("QLinearMatMul", "uint8", shape, version=10, **inputs))


class TorchQLinearMatMulTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch_driver.setup(1)

    def test_quantized_linear_per_tensor_and_per_column_of_b(self):
        # acc = (a - 3) @ b = [[7, -14], [27, -54]]; every shape new, so that no cached
        # primitive of another test's zero points answers (the declared stale zero point).
        a, b = [[10], [30]], [[1, -2]]
        numpy.testing.assert_array_equal(
            qlinear(a, 1.0, b, 1.0, 1.0, 100, 3), [[107, 86], [127, 46]]
        )
        y = qlinear(
            [[10, 0], [30, 0], [0, 0]], 1.0, [[1, -2], [0, 0]], [0.5, 2.0], 1.0, 100, 0, [0, 0]
        )
        numpy.testing.assert_array_equal(y, [[105, 60], [115, 0], [100, 100]])

    def test_a_one_dimensional_b_is_a_weight_of_one_row(self):
        y = qlinear([[1, 2, 3], [4, 5, 6]], 1.0, [1, 1, -1], 1.0, 1.0, 10)
        numpy.testing.assert_array_equal(y, [10, 13])

    def test_what_quantized_linear_cannot_take_is_refused_in_torch_words(self):
        cases = {
            "ONEDNN only supports symmetric quantization of weight": dict(b_zero_point=5),
            "should be 2-dimensional": dict(b=numpy.ones((2, 2, 1))),
            "kPerTensorAffine": dict(a_scale=[1.0, 2.0], a_zero_point=[0, 1]),
        }
        for words, change in cases.items():
            args = dict(
                a=[[1, 2], [3, 4]],
                a_scale=1.0,
                b=[[1], [1]],
                b_scale=1.0,
                y_scale=1.0,
                y_zero_point=0,
            )
            args.update(change)
            with self.assertRaisesRegex(torch_driver.Inexpressible, words):
                qlinear(**args)
        self.assertIn((torch_driver.Inexpressible, "shape"), torch_driver.DRIVER.rules)

    def test_declares_uint8_x_int8_to_uint8_and_refuses_the_rest_in_torch_words(self):
        hello = mm_runtime.hello(torch_driver.DRIVER, {"type": "hello", "protocol": 2})
        types = hello["operators"]["QLinearMatMul"]["types"]
        supported = sorted(k for k, v in types.items() if "refused" not in v)
        self.assertEqual(
            supported,
            ["uint8 x int8 -> uint8, %s scales" % s for s in ("bfloat16", "float", "float16")],
        )
        self.assertIn("should be QUint8", types["int8 x int8 -> uint8, float scales"]["refused"])
        self.assertIn("qint8", types["uint8 x uint8 -> uint8, float scales"]["refused"])
        self.assertIn("quint8", types["uint8 x int8 -> int8, float scales"]["refused"])
        self.assertIn("int32 output", hello["operators"]["MatMulInteger"]["refused"])


if __name__ == "__main__":
    unittest.main()
