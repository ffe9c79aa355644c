#!/usr/bin/python3
"""Writes the numpy and torch drivers' deviations in MatMul's family as ONNX node tests into
backends/runtimes/python/deviations/ (model.onnx, test_data_set_N/input_*.pb, output_0.pb; needs
Debian's python3-onnx). Each is the minimal problem of a finding (docs/runtimes.md), its expected
output the exact answer of the standard, computed here with rationals: a float value is a
rational, and QLinearMatMul's exact result is round half to even of acc * a_scale * b_scale /
y_scale, plus the zero point, saturated. mm-conformance judges these expected outputs against its
own exact oracle and marks a data set whose expected output disagrees (`data_suspect`), which none
of these may be.

    python3 backends/runtimes/python/tests/family_deviations.py [OUT_DIR]
"""

import os
import sys
from fractions import Fraction

import numpy
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
ONNX_TYPES = {
    numpy.dtype("float32"): TensorProto.FLOAT,
    numpy.dtype("float16"): TensorProto.FLOAT16,
    numpy.dtype("uint8"): TensorProto.UINT8,
    numpy.dtype("int8"): TensorProto.INT8,
}
# The IR version of the ONNX release that introduced each opset used here.
IR_VERSIONS = {10: 5, 13: 7, 21: 10}


def round_half_even(x):
    floor = x.numerator // x.denominator
    rest = x - floor
    return floor + 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2) else floor


def exact_qlinearmatmul(i):
    """y of 2-D a, b with per-tensor scales and zero points (the cases below)."""
    a = i["a"].astype(numpy.int64) - int(i["a_zero_point"].ravel()[0])
    b = i["b"].astype(numpy.int64) - int(i["b_zero_point"].ravel()[0])
    scale = [Fraction(float(i[k].ravel()[0])) for k in ("a_scale", "b_scale", "y_scale")]
    multiplier = scale[0] * scale[1] / scale[2]
    info = numpy.iinfo(i["y_zero_point"].dtype)
    y = numpy.zeros((a.shape[0], b.shape[1]), i["y_zero_point"].dtype)
    for r in range(a.shape[0]):
        for c in range(b.shape[1]):
            acc = int(numpy.dot(a[r], b[:, c]))
            q = round_half_even(acc * multiplier) + int(i["y_zero_point"].ravel()[0])
            y[r, c] = min(info.max, max(info.min, q))
    return y


def qlinear_inputs(
    a,
    a_scale,
    b,
    b_scale,
    y_scale,
    y_zero_point,
    scales=numpy.float32,
    a_zero_point=0,
    b_zero_point=0,
):
    a, b = numpy.array(a, numpy.uint8), numpy.array(b)
    return {
        "a": a,
        "a_scale": numpy.array(a_scale, scales),
        "a_zero_point": numpy.array(a_zero_point, a.dtype),
        "b": b,
        "b_scale": numpy.array(b_scale, scales),
        "b_zero_point": numpy.array(b_zero_point, b.dtype),
        "y_scale": numpy.array(y_scale, scales),
        "y_zero_point": y_zero_point,
    }


def write(out, name, op, opset, data_sets, attributes=None, readme=""):
    """One node test: `data_sets` a list of (inputs by name, expected y)."""
    inputs, y = data_sets[0]
    node = helper.make_node(op, list(inputs), ["y"], **(attributes or {}))
    graph = helper.make_graph(
        [node],
        name,
        [helper.make_tensor_value_info(k, ONNX_TYPES[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", ONNX_TYPES[y.dtype], y.shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSIONS[opset]
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    save(model, os.path.join(folder, "model.onnx"))
    for n, (values, expected) in enumerate(data_sets):
        data = os.path.join(folder, "test_data_set_%d" % n)
        os.makedirs(data, exist_ok=True)
        for k, (key, value) in enumerate(values.items()):
            tensor = numpy_helper.from_array(value, key)
            with open(os.path.join(data, "input_%d.pb" % k), "wb") as f:
                f.write(tensor.SerializeToString())
        with open(os.path.join(data, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(expected, "y").SerializeToString())
    with open(os.path.join(folder, "README.md"), "w") as f:
        f.write(readme.strip() + "\n")


def qlinear_case(out, name, opset, data_sets, readme):
    write(
        out,
        name,
        "QLinearMatMul",
        opset,
        [(i, exact_qlinearmatmul(i)) for i in data_sets],
        readme=readme,
    )


def main(out):
    u8, i8 = numpy.uint8, numpy.int8
    qlinear_case(
        out,
        "test_numpy_qlinearmatmul_float16_multiplier",
        21,
        [
            qlinear_inputs(
                [[216]],
                2.0**-14,
                numpy.array([[221]], u8),
                0.0141,
                2.0**-10,
                numpy.array(0, i8),
                scales=numpy.float16,
            )
        ],
        """
# QLinearMatMul-21, float16 scales: the multiplier formed in float16

a = 216, b = 221 (uint8), a_scale = 2^-14, b_scale = 0.0141 (its float16 value), y_scale = 2^-10:
acc * a_scale * b_scale / y_scale = 42.06..., y = 42. ONNX's reference implementation forms
a_scale * b_scale / y_scale in the scales' type: in float16, a_scale * b_scale is subnormal
(8.6e-7) and loses most of its digits, and y = 41 (the numpy driver, which computes as it does;
mm-fuzz --op QLinearMatMul --seed 1 --first 285 --cases 1 --backend numpy).

    mm-conformance --data-dir backends/runtimes/python/deviations \\
        --case test_numpy_qlinearmatmul_float16_multiplier \\
        --no-builtin --backend numpy
""",
    )
    qlinear_case(
        out,
        "test_torch_qlinearmatmul_saturating_pairs",
        10,
        [
            qlinear_inputs(
                [[255, 255]], 1.0, numpy.array([[127], [127]], i8), 1.0, 512.0, numpy.array(0, u8)
            )
        ],
        """
# QLinearMatMul-10, uint8 x int8: pair sums saturated to int16 (CPUs without VNNI)

a = [255, 255], b = [127, 127], K = 2: acc = 64770, y = round(64770 / 512) = 127. A kernel that adds
the two products in a saturating int16 (x86's vpmaddubsw) gets 32767 and y = 64: torch 1.13's
quantized linear on the onednn engine (oneDNN's int8 GEMM) on a CPU without AVX512_VNNI, or with
ONEDNN_MAX_CPU_ISA=AVX2 (or AVX512_CORE) on one that has it.

    ONEDNN_MAX_CPU_ISA=AVX2 mm-conformance --data-dir backends/runtimes/python/deviations \\
        --case test_torch_qlinearmatmul_saturating_pairs \\
        --no-builtin --backend torch
""",
    )
    qlinear_case(
        out,
        "test_torch_qlinearmatmul_scale_product_underflows",
        10,
        [
            qlinear_inputs(
                [[160]],
                2.0**-70,
                numpy.array([[1]], i8),
                2.0**-60,
                2.0**-126,
                numpy.array(0, u8),
            )
        ],
        """
# QLinearMatMul-10: a_scale * b_scale below float's normal range

a = 160, b = 1, a_scale = 2^-70, b_scale = 2^-60, y_scale = 2^-126: y = 160 * 2^-4 = 10. torch
1.13's quantized linear (onednn engine) gives 0: the product of the scales, 2^-130, is below
float's smallest normal value and is lost.

    mm-conformance --data-dir backends/runtimes/python/deviations \\
        --case test_torch_qlinearmatmul_scale_product_underflows \\
        --no-builtin --backend torch
""",
    )
    stale = [
        qlinear_inputs([[0]], 1.0, numpy.array([[5]], i8), 1.0, 1.0, numpy.array(z, u8))
        for z in (128, 0)
    ]
    qlinear_case(
        out,
        "test_torch_qlinearmatmul_stale_zero_point",
        10,
        stale,
        """
# QLinearMatMul-10: y_zero_point of an earlier call of the same shape

Two data sets of one shape, a = 0, b = 5, every scale 1: y = y_zero_point, 128 then 0. torch 1.13's
quantized linear (onednn engine) answers 128 to the second too: ideep caches the oneDNN primitive
without the zero points in its key (intel/ideep pull request 152, "add zero point into pd cache
key"), so a zero point of a or y changed between calls of one shape is ignored.

    mm-conformance --data-dir backends/runtimes/python/deviations \\
        --case test_torch_qlinearmatmul_stale_zero_point \\
        --no-builtin --backend torch
""",
    )
    empty = qlinear_inputs(
        numpy.zeros((1, 0), u8), 1.0, numpy.zeros((0, 1), i8), 1.0, 1.0, numpy.array(5, u8)
    )
    qlinear_case(
        out,
        "test_torch_qlinearmatmul_k0",
        10,
        [empty],
        """
# QLinearMatMul-10, K = 0

a [1,0], b [0,1]: acc = 0, y = y_zero_point = 5. torch 1.13's quantized linear (onednn engine)
crashes the process with SIGFPE (a division by the zero extent).

    mm-conformance --data-dir backends/runtimes/python/deviations \\
        --case test_torch_qlinearmatmul_k0 \\
        --no-builtin --backend torch
""",
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "deviations"))
