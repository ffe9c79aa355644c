"""The numpy driver's operators of MatMul's family (ctest runtime.numpy.driver), each computed as
the driver's docstring says and declared as numpy promises; through mm they are judged by
runtime.numpy.family and runtime.numpy.fuzz."""

import os
import sys
import unittest
import warnings

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import driver_testing  # noqa: E402
import mm_runtime  # noqa: E402
import numpy_driver  # noqa: E402


def run(p):
    return driver_testing.run(numpy_driver.DRIVER, p)


def gemm(a, b, c=None, dtype="float", **attributes):
    inputs = {
        "A": numpy.array(a, mm_runtime.ELEMENT_DTYPES[dtype]),
        "B": numpy.array(b, mm_runtime.ELEMENT_DTYPES[dtype]),
    }
    if c is not None:
        inputs["C"] = numpy.array(c, mm_runtime.ELEMENT_DTYPES[dtype])
    a_rows = inputs["A"].shape[1 if attributes.get("transA") else 0]
    b_cols = inputs["B"].shape[0 if attributes.get("transB") else 1]
    return run(
        driver_testing.problem("Gemm", dtype, (a_rows, b_cols), attributes=attributes, **inputs)
    )


class GemmTest(unittest.TestCase):
    def test_alpha_times_the_transposed_product_plus_beta_times_a_broadcast_c(self):
        a = [[1, 2], [3, 4], [5, 6]]  # A' = A^T: [2, 3]
        b = [[1, 0, 2], [0, 1, 3]]  # B' = B^T: [3, 2]
        y = gemm(a, b, [10, 20], transA=1, transB=1, alpha=2.0, beta=0.5)
        expected = 2 * numpy.array(a, float).T @ numpy.array(b, float).T + 0.5 * numpy.array(
            [10, 20]
        )
        numpy.testing.assert_array_equal(y, expected.astype(numpy.float32))

    def test_c_per_row_and_absent(self):
        y = gemm([[1], [2]], [[3, 4]], [[1], [-1]], beta=1.0)
        numpy.testing.assert_array_equal(y, [[4, 5], [5, 7]])
        numpy.testing.assert_array_equal(gemm([[1], [2]], [[3, 4]]), [[3, 4], [6, 8]])

    def test_integer_alpha_and_beta_wrap_modulo_2_to_the_bits(self):
        # 2^32 + 512 is 512 in int32 and uint32 arithmetic; -2 in uint32 is 2^32 - 2. Wrapped by
        # the driver, not by numpy's out-of-range conversion (deprecated in 1.24, an error in 2).
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = gemm([[1]], [[3]], [[1]], dtype="int32", alpha=2.0**32 + 512, beta=-3.0)
            numpy.testing.assert_array_equal(y, [[512 * 3 - 3]])
            y = gemm([[1]], [[3]], dtype="uint32", alpha=-2.0)
            numpy.testing.assert_array_equal(y, [[2**32 - 6]])

    def test_float16_runs_in_float16_alpha_rounded_to_it(self):
        # alpha = 1 + 2^-12 is 1 in float16: numpy's multiply of a float16 array.
        y = gemm([[1.0]], [[1.0]], dtype="float16", alpha=1 + 2.0**-12)
        self.assertEqual(y.dtype, numpy.float16)
        numpy.testing.assert_array_equal(y, [[1.0]])

    def test_the_unscaled_sum_overflows_before_alpha(self):
        # 2^125 exactly; mm's Gemm bound accepts inf, the float sum overflowing first
        # (docs/family.md).
        with numpy.errstate(over="ignore"):
            y = gemm([[2.0**127]], [[4.0]], alpha=2.0**-4)
        self.assertEqual(y[0, 0], numpy.inf)


def matmulinteger(a, b, a_zero_point=None, b_zero_point=None, a_type="uint8", b_type="int8"):
    inputs = {"A": numpy.array(a, a_type), "B": numpy.array(b, b_type)}
    if a_zero_point is not None:
        inputs["a_zero_point"] = numpy.array(a_zero_point, a_type)
    if b_zero_point is not None:
        inputs["b_zero_point"] = numpy.array(b_zero_point, b_type)
    shape = numpy.matmul(inputs["A"].astype(numpy.int64), inputs["B"].astype(numpy.int64)).shape
    return run(driver_testing.problem("MatMulInteger", "int32", shape, version=10, **inputs))


def loops(a, b, a_zp_rows, b_zp_cols):
    """Y[i, j] = sum_k (a[i, k] - a_zp[i]) (b[k, j] - b_zp[j]), 2-D, by loops."""
    m, k, n = len(a), len(b), len(b[0])
    return [
        [
            sum((a[i][t] - a_zp_rows[i]) * (b[t][j] - b_zp_cols[j]) for t in range(k))
            for j in range(n)
        ]
        for i in range(m)
    ]


class MatMulIntegerTest(unittest.TestCase):
    A = [[255, 0, 7], [128, 200, 1]]  # [M = 2, K = 3]
    B = [[127, -128, 5, 0], [-1, 3, 127, 9], [2, 2, -128, 127]]  # [K = 3, N = 4]

    def test_zero_points_per_row_of_a_as_m_or_m_1_and_per_column_of_b(self):
        expected = loops(self.A, self.B, [3, 250], [1, -2, 0, 127])
        for a_zp in ([3, 250], [[3], [250]]):
            for b_zp in ([1, -2, 0, 127], [[1, -2, 0, 127]]):
                y = matmulinteger(self.A, self.B, a_zp, b_zp)
                numpy.testing.assert_array_equal(y, expected, str((a_zp, b_zp)))

    def test_per_tensor_and_absent_zero_points_every_type_pair(self):
        for a_type, b_type in (("uint8", "int8"), ("int8", "int8"), ("uint8", "uint8")):
            a = numpy.array(self.A).astype(a_type)
            b = numpy.array(self.B).astype(b_type)
            ia, ib = a.astype(int).tolist(), b.astype(int).tolist()
            numpy.testing.assert_array_equal(
                matmulinteger(a, b, a_type=a_type, b_type=b_type), loops(ia, ib, [0, 0], [0] * 4)
            )
            numpy.testing.assert_array_equal(
                matmulinteger(a, b, [5], [7], a_type, b_type), loops(ia, ib, [5, 5], [7] * 4)
            )

    def test_int32_sums_wrap_where_the_standard_lets_them(self):
        # K = 65,794 products of 255 x -128: -2,147,516,160, past int32: wrapped modulo 2^32.
        k = 65794
        y = matmulinteger(numpy.full((1, k), 255), numpy.full((k, 1), -128))
        self.assertEqual(int(y[0, 0]), -2147516160 + 2**32)

    def test_saturating_pairs_are_summed_exactly(self):
        numpy.testing.assert_array_equal(matmulinteger([[255, 255]], [[127], [127]]), [[64770]])


def qlinear(
    a,
    a_scale,
    b,
    b_scale,
    y_scale,
    y_zero_point,
    a_zero_point=0,
    b_zero_point=0,
    scales=numpy.float32,
    types=("uint8", "int8", "uint8"),
    version=10,
):
    a, b = numpy.array(a, types[0]), numpy.array(b, types[1])
    inputs = {
        "a": a,
        "a_scale": numpy.array(a_scale, scales),
        "a_zero_point": numpy.array(a_zero_point, types[0]),
        "b": b,
        "b_scale": numpy.array(b_scale, scales),
        "b_zero_point": numpy.array(b_zero_point, types[1]),
        "y_scale": numpy.array(y_scale, scales),
        "y_zero_point": numpy.array(y_zero_point, types[2]),
    }
    shape = numpy.matmul(a.astype(numpy.int64), b.astype(numpy.int64)).shape
    return run(driver_testing.problem("QLinearMatMul", types[2], shape, version=version, **inputs))


class QLinearMatMulTest(unittest.TestCase):
    def test_requantizes_with_per_row_and_per_column_scales_and_saturates(self):
        # acc = [[10, -20], [30, -60]]; multiplier a_scale[i] * b_scale[j] / 0.5, y_zero_point 100.
        a = [[10], [30]]
        b = [[1, -2]]
        y = qlinear(a, [0.5, 2.0], b, [1.0, 0.25], 0.5, [100], types=("uint8", "int8", "uint8"))
        numpy.testing.assert_array_equal(y, [[110, 95], [220, 40]])
        y = qlinear(a, [0.5, 4.0], b, [1.0, 0.25], 0.5, [100])
        numpy.testing.assert_array_equal(y, [[110, 95], [255, 0]])

    def test_one_dimensional_operands_line_up_with_per_column_scales_of_a_batched_b(self):
        # a [K] x b [2, K, N]: Y [2, N]; b's scales per column are [2, 1, N].
        b = numpy.arange(12).reshape(2, 3, 2) - 6
        scale = numpy.array([1.0, 0.5, 2.0, 1.0], numpy.float32).reshape(2, 1, 2)
        y = qlinear(
            [1, 2, 3],
            1.0,
            b,
            scale,
            1.0,
            [0],
            b_zero_point=numpy.zeros((2, 1, 2)),
            types=("uint8", "int8", "int8"),
        )
        acc = numpy.array([1, 2, 3]) @ b
        numpy.testing.assert_array_equal(y, numpy.rint(acc * scale[:, 0, :]))

    def test_the_zero_point_is_added_before_rounding_as_onnx_reference_does(self):
        # The declared deviation: 0.5 + 1 rounds to 2; the standard says round(0.5) + 1 = 1.
        self.assertEqual(qlinear([[1]], 0.5, [[1]], 1.0, 1.0, 1)[0, 0], 2)
        self.assertEqual(qlinear([[5]], 0.5, [[1]], 1.0, 1.0, 0)[0, 0], 2)  # 2.5: to even

    def test_float16_scales_make_the_multiplier_in_float16(self):
        # The declared deviation: the float16 product of the scales is subnormal (41, not 42).
        y = qlinear(
            [[216]],
            2.0**-14,
            [[221]],
            0.0141,
            2.0**-10,
            0,
            scales=numpy.float16,
            types=("uint8", "uint8", "int8"),
            version=21,
        )
        self.assertEqual(y[0, 0], 41)


class DeclarationTest(unittest.TestCase):
    def test_hello_declares_each_operator_as_numpy_computes_it(self):
        hello = mm_runtime.hello(numpy_driver.DRIVER, {"type": "hello", "protocol": 2})
        operators = hello["operators"]
        gemm_types = operators["Gemm"]["types"]
        self.assertEqual(gemm_types["float"]["accumulation"], "float")
        self.assertEqual(gemm_types["float16"]["accumulation"], "float16")
        self.assertEqual(gemm_types["uint64"]["accumulation"], "uint64")
        self.assertIn("no bfloat16", gemm_types["bfloat16"]["refused"])
        pairs = operators["MatMulInteger"]["types"]
        self.assertEqual(len(pairs), 4)
        self.assertTrue(all(t["accumulation"] == "int32" for t in pairs.values()))
        qlinear_types = operators["QLinearMatMul"]["types"]
        self.assertEqual(len(qlinear_types), 24)
        self.assertEqual(
            qlinear_types["uint8 x int8 -> uint8, float16 scales"]["accumulation"], "int32"
        )
        self.assertIn(
            "no bfloat16", qlinear_types["int8 x int8 -> int8, bfloat16 scales"]["refused"]
        )


if __name__ == "__main__":
    unittest.main()
