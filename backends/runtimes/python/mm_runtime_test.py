"""Tests of mm_runtime, the Python SDK of the runtime protocol, on its own: pytest discovers them
(pyproject.toml; ctest runtime.python_sdk runs pytest); through mm it is tested by
backends/cmd/tests/shipped_drivers_test.cc."""

import json
import os
import socket
import struct
import subprocess
import sys
import inspect
import threading
import typing
import unittest

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mm_runtime  # noqa: E402


def request(dtype, a, b, y, rid=1):
    return {"type": "matmul", "id": rid, "dtype": dtype, "a": a, "b": b, "y": y}


def data_of(*arrays):
    return bytearray(b"".join(numpy.ascontiguousarray(x).tobytes() for x in arrays))


def numpy_driver(**kwargs):
    def matmul(a, b, out, dtype):
        return numpy.matmul(a, b, out=out)

    fields = dict(runtime="t", version="1", matmul=matmul, dtypes={"float": "double"})
    fields.update(kwargs)
    return mm_runtime.Driver(**fields)


class PackageTest(unittest.TestCase):
    def test_is_a_typed_package(self):
        # A package (a folder with __init__.py) marked typed for type checkers (PEP 561).
        folder = os.path.dirname(mm_runtime.__file__)
        self.assertEqual(os.path.basename(mm_runtime.__file__), "__init__.py")
        self.assertTrue(os.path.isfile(os.path.join(folder, "py.typed")))

    def test_every_public_function_has_resolvable_type_hints(self):
        for name in ("hello", "answer", "answer_operator", "problem_of", "fit_header", "serve"):
            function = getattr(mm_runtime, name)
            hints = typing.get_type_hints(function)
            parameters = inspect.signature(function).parameters
            self.assertEqual(set(hints), set(parameters) | {"return"}, name)


class HelloTest(unittest.TestCase):
    def test_declares_every_dtype_supported_refused_or_undeclared(self):
        threads = []
        driver = numpy_driver(
            dtypes={
                "float": "float",
                "bfloat16": mm_runtime.Arithmetic("float", True, "bf16 via f32"),
            },
            refused={"uint64": "no uint64"},
            setup=threads.append,
            runs_on=lambda n: "%d threads" % n,
        )
        hello = mm_runtime.hello(driver, {"type": "hello", "protocol": 2, "threads": 3})
        self.assertEqual(threads, [3])
        self.assertEqual(hello["protocol"], 2)
        self.assertEqual(hello["runs_on"], "3 threads")
        self.assertEqual(set(hello["dtypes"]), set(mm_runtime.NUMPY_DTYPES))
        self.assertEqual(
            hello["dtypes"]["float"], {"accumulation": "float", "flushes_subnormals": False}
        )
        self.assertEqual(
            hello["dtypes"]["bfloat16"],
            {"accumulation": "float", "flushes_subnormals": True, "conversion": "bf16 via f32"},
        )
        self.assertEqual(hello["dtypes"]["uint64"], {"refused": "no uint64"})
        self.assertEqual(hello["dtypes"]["int32"], {"refused": "not declared by the driver"})

    def test_a_driver_naming_no_operator_declares_matmul_only(self):
        hello = mm_runtime.hello(numpy_driver(), {"type": "hello", "protocol": 2, "threads": 1})
        self.assertEqual(
            hello["operators"],
            {name: {"refused": "the driver declares MatMul only"} for name in mm_runtime.FAMILY},
        )

    def test_operators_are_declared_per_element_types_with_versions_or_refused(self):
        gemm = mm_runtime.Operator(
            compute=lambda problem: None,
            types={"float": "double", "float16": mm_runtime.Arithmetic("float", False, "f32")},
            refused={"bfloat16": "no bfloat16 Gemm"},
            versions=[11, 13],
        )
        integer = mm_runtime.Operator(
            compute=lambda problem: None, types={"uint8 x int8 -> int32": "int32"}
        )
        driver = numpy_driver(
            operators={"Gemm": gemm, "MatMulInteger": integer, "QLinearMatMul": "not yet"}
        )
        hello = mm_runtime.hello(driver, {"type": "hello", "protocol": 2, "threads": 1})
        self.assertEqual(
            hello["operators"],
            {
                "Gemm": {
                    "versions": [11, 13],
                    "types": {
                        "float": {"accumulation": "double", "flushes_subnormals": False},
                        "float16": {
                            "accumulation": "float",
                            "flushes_subnormals": False,
                            "conversion": "f32",
                        },
                        "bfloat16": {"refused": "no bfloat16 Gemm"},
                    },
                },
                "MatMulInteger": {
                    "types": {
                        "uint8 x int8 -> int32": {
                            "accumulation": "int32",
                            "flushes_subnormals": False,
                        }
                    }
                },
                "QLinearMatMul": {"refused": "not yet"},
            },
        )

    def test_an_mm_of_protocol_1_gets_a_hello_of_protocol_1_without_operators(self):
        hello = mm_runtime.hello(numpy_driver(), {"type": "hello", "protocol": 1, "threads": 1})
        self.assertEqual(hello["protocol"], 1)
        self.assertNotIn("operators", hello)


class AnswerTest(unittest.TestCase):
    def test_computes_into_out_and_sends_y_as_it_is(self):
        a = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
        b = numpy.arange(3, dtype=numpy.float32)
        poison = numpy.full(2, numpy.nan, numpy.float32)
        header, y = mm_runtime.answer(
            numpy_driver(), request("float", [2, 3], [3], [2]), data_of(a, b, poison)
        )
        self.assertEqual(header["type"], "y")
        self.assertEqual((header["dtype"], header["shape"]), ("float", [2]))
        self.assertGreaterEqual(header["seconds"], 0)
        self.assertEqual(y, numpy.matmul(a, b).tobytes())

    def test_a_scalar_y_and_empty_operands(self):
        a = numpy.array([1, 2, 3], numpy.int64)
        header, y = mm_runtime.answer(
            numpy_driver(dtypes={"int64": "int64"}),
            request("int64", [3], [3], []),
            data_of(a, a, numpy.zeros((), numpy.int64)),
        )
        self.assertEqual((header["dtype"], header["shape"]), ("int64", []))
        self.assertEqual(y, numpy.int64(14).tobytes())
        empty = numpy.zeros((2, 0), numpy.float32)
        header, y = mm_runtime.answer(
            numpy_driver(),
            request("float", [2, 0], [0, 3], [2, 3]),
            data_of(empty, empty.T, numpy.full((2, 3), numpy.nan, numpy.float32)),
        )
        self.assertEqual(header["shape"], [2, 3])
        self.assertEqual(y, numpy.zeros((2, 3), numpy.float32).tobytes())

    def test_bfloat16_is_its_bits_and_an_unwritten_element_keeps_the_poison(self):
        seen = []

        def lazy(a, b, out, dtype):
            seen.append((a.dtype, dtype))
            out[0] = 0x3F80  # 1.0; out[1] left as mm sent it.

        bits = numpy.array([0x3F80, 0x4000], numpy.uint16)
        poison = numpy.array([0xFFFF, 0xFFFF], numpy.uint16)
        header, y = mm_runtime.answer(
            numpy_driver(matmul=lazy),
            request("bfloat16", [2, 1], [1], [2]),
            data_of(bits, bits[:1], poison),
        )
        self.assertEqual(seen, [(numpy.dtype("uint16"), "bfloat16")])
        self.assertEqual(header["dtype"], "bfloat16")
        self.assertEqual(numpy.frombuffer(y, numpy.uint16).tolist(), [0x3F80, 0xFFFF])

    def test_a_y_of_another_dtype_goes_back_as_such_for_mm_to_judge(self):
        def widening(a, b, out, dtype):
            return numpy.matmul(a.astype(numpy.float64), b.astype(numpy.float64))

        ones = numpy.ones((1, 1), numpy.float32)
        header, y = mm_runtime.answer(
            numpy_driver(matmul=widening),
            request("float", [1, 1], [1, 1], [1, 1]),
            data_of(ones, ones, ones),
        )
        self.assertEqual(header["dtype"], "double")
        self.assertEqual(len(y), 8)

    def test_exceptions_are_refusals_by_the_drivers_rules_or_errors(self):
        def picky(a, b, out, dtype):
            if a.ndim < 2:
                raise ValueError("rank < 2")
            raise RuntimeError("boom")

        driver = numpy_driver(matmul=picky, rules=[(ValueError, "shape")])
        v = numpy.ones(2, numpy.float32)
        header, data = mm_runtime.answer(
            driver, request("float", [2], [2], []), data_of(v, v, v[:1])
        )
        self.assertEqual(
            header, {"type": "refused", "id": 1, "what": "shape", "why": "ValueError: rank < 2"}
        )
        self.assertEqual(data, b"")
        m = numpy.ones((1, 2), numpy.float32)
        header, _ = mm_runtime.answer(
            driver, request("float", [1, 2], [2, 1], [1, 1], rid=2), data_of(m, m.T, v[:1])
        )
        self.assertEqual(header, {"type": "error", "id": 2, "message": "RuntimeError: boom"})

    def test_a_message_too_long_for_a_frame_is_cut_to_fit_with_a_marker(self):
        # 40000 characters of 3 UTF-8 bytes each, escaped as 6 bytes of JSON: far over 64 KiB.
        long_text = "\u20ac" * 40000

        def verbose(a, b, out, dtype):
            raise RuntimeError(long_text)

        for rules, key in (([], "message"), ([(RuntimeError, "shape")], "why")):
            driver = numpy_driver(matmul=verbose, rules=rules)
            m = numpy.ones((1, 1), numpy.float32)
            header, _ = mm_runtime.answer(
                driver, request("float", [1, 1], [1, 1], [1, 1]), data_of(m, m, m)
            )
            encoded = json.dumps(header).encode()
            self.assertLessEqual(len(encoded), mm_runtime.MAX_HEADER_BYTES)
            self.assertGreater(len(encoded), mm_runtime.MAX_HEADER_BYTES - 64)
            text = header[key]
            self.assertTrue(text.startswith("RuntimeError: \u20ac\u20ac"))
            self.assertTrue(text.endswith("; 40014 characters in all]"), text[-80:])
            # Cut between characters: the text is whole characters of the message.
            kept = text[: text.index(" [... cut")]
            self.assertEqual(kept, ("RuntimeError: " + long_text)[: len(kept)])
        # A message that fits is sent as it is.
        short = {"type": "error", "id": 1, "message": "x" * 1000}
        self.assertEqual(mm_runtime.fit_header(short, "message"), short)

    def test_a_request_that_does_not_add_up_is_an_error(self):
        header, _ = mm_runtime.answer(numpy_driver(), request("float", [2], [2], []), bytearray(4))
        self.assertEqual(header["type"], "error")
        self.assertIn("4 data bytes for 20", header["message"])
        header, _ = mm_runtime.answer(numpy_driver(), request("complex", [1], [1], []), bytearray())
        self.assertIn("unknown dtype", header["message"])


# mm's name of each numpy dtype (bfloat16 aside: its bits are uint16).
MM_NAMES = {dtype: name for name, dtype in mm_runtime.ELEMENT_DTYPES.items() if name != "bfloat16"}


def operator_request(op, version, inputs, attributes, y, rid=1):
    """An operator request: `inputs` is [(name, array)], `y` (dtype, shape)."""
    return {
        "type": "operator",
        "id": rid,
        "op": op,
        "version": version,
        "inputs": [
            {"name": name, "dtype": MM_NAMES[array.dtype], "shape": list(array.shape)}
            for name, array in inputs
        ],
        "attributes": attributes,
        "y": {"dtype": y[0], "shape": list(y[1])},
    }


def exact_matmulinteger(problem):
    a = problem.inputs["A"].astype(numpy.int64) - problem.inputs.get("a_zero_point", 0)
    b = problem.inputs["B"].astype(numpy.int64) - problem.inputs.get("b_zero_point", 0)
    return numpy.matmul(a, b).astype(numpy.int32)


class OperatorTest(unittest.TestCase):
    def driver(self, compute=exact_matmulinteger, **kwargs):
        operator = mm_runtime.Operator(compute=compute, types={"uint8 x int8 -> int32": "int32"})
        return numpy_driver(operators={"MatMulInteger": operator}, **kwargs)

    def test_inputs_arrive_by_name_with_their_8_bit_types_read_only(self):
        seen = []

        def compute(problem):
            seen.append(problem)
            return exact_matmulinteger(problem)

        a = numpy.array([[255, 255]], numpy.uint8)
        b = numpy.array([[127], [127]], numpy.int8)
        zp = numpy.array(-1, numpy.int8)
        inputs = [("A", a), ("B", b), ("b_zero_point", zp)]
        header, y = mm_runtime.answer_operator(
            self.driver(compute),
            operator_request("MatMulInteger", 10, inputs, {}, ("int32", [1, 1]), rid=4),
            data_of(a, b, zp, numpy.full((1, 1), -1, numpy.int32)),
        )
        problem = seen[0]
        self.assertEqual(
            (problem.op, problem.version, problem.attributes), ("MatMulInteger", 10, {})
        )
        self.assertEqual(list(problem.inputs), ["A", "B", "b_zero_point"])
        self.assertEqual(problem.inputs["A"].dtype, numpy.uint8)
        self.assertEqual(problem.inputs["B"].dtype, numpy.int8)
        self.assertEqual(problem.inputs["b_zero_point"].shape, ())
        self.assertFalse(problem.inputs["A"].flags.writeable)
        self.assertEqual((problem.y_dtype, problem.y_shape), ("int32", (1, 1)))
        self.assertEqual(problem.out.tolist(), [[-1]])  # The buffer mm offers.
        self.assertEqual(
            {k: header[k] for k in ("type", "id", "dtype", "shape")},
            {"type": "y", "id": 4, "dtype": "int32", "shape": [1, 1]},
        )
        self.assertEqual(numpy.frombuffer(y, numpy.int32).tolist(), [255 * 128 * 2])

    def test_gemm_gets_its_attributes_and_may_compute_into_out(self):
        def gemm(problem):
            a, b = problem.inputs["A"], problem.inputs["B"]
            if problem.attributes["transB"]:
                b = b.T
            problem.out[...] = problem.attributes["alpha"] * (a @ b) + problem.inputs["C"]

        operator = mm_runtime.Operator(compute=gemm, types={"float": "float"})
        a = numpy.array([[1, 2]], numpy.float32)
        b = numpy.array([[3, 4]], numpy.float32)
        c = numpy.array([10], numpy.float32)
        attributes = {"transA": 0, "transB": 1, "alpha": 0.5, "beta": 1.0}
        header, y = mm_runtime.answer_operator(
            numpy_driver(operators={"Gemm": operator}),
            operator_request(
                "Gemm", 13, [("A", a), ("B", b), ("C", c)], attributes, ("float", [1, 1])
            ),
            data_of(a, b, c, numpy.zeros((1, 1), numpy.float32)),
        )
        self.assertEqual(header["type"], "y", header)
        self.assertEqual(numpy.frombuffer(y, numpy.float32).tolist(), [15.5])

    def test_an_undeclared_operator_a_bad_request_or_an_exception_is_an_error(self):
        a = numpy.zeros((1, 1), numpy.uint8)
        request_ = operator_request("Gemm", 13, [("A", a), ("B", a)], {}, ("uint8", [1, 1]))
        header, _ = mm_runtime.answer_operator(self.driver(), request_, data_of(a, a, a))
        self.assertEqual(header["type"], "error")
        self.assertIn("operator 'Gemm' is not declared by the driver", header["message"])
        request_ = operator_request("MatMulInteger", 10, [("A", a), ("B", a)], {}, ("int32", [1]))
        header, _ = mm_runtime.answer_operator(self.driver(), request_, bytearray(3))
        self.assertIn("3 data bytes for 6 in the inputs and Y", header["message"])

        def picky(problem):
            raise ValueError("no batches")

        request_ = operator_request(
            "MatMulInteger", 10, [("A", a), ("B", a)], {}, ("int32", [1, 1]), rid=5
        )
        data = data_of(a, a, numpy.zeros((1, 1), numpy.int32))
        header, _ = mm_runtime.answer_operator(
            self.driver(picky, rules=[(ValueError, "shape")]), request_, data
        )
        self.assertEqual(
            header, {"type": "refused", "id": 5, "what": "shape", "why": "ValueError: no batches"}
        )


def frame(header, data=b""):
    text = json.dumps(header).encode()
    return struct.pack("<II", len(text), len(data)) + text + bytes(data)


def read_frame(sock):
    def exact(n):
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    header_bytes, data_bytes = struct.unpack("<II", exact(8))
    return json.loads(exact(header_bytes)), exact(data_bytes)


class ServeTest(unittest.TestCase):
    def test_hello_then_requests_until_stdin_ends(self):
        mm_side, driver_side = socket.socketpair()
        # A daemon, its sockets closed at the end: a failed assertion never leaves it waiting.
        thread = threading.Thread(
            target=mm_runtime.serve,
            args=(numpy_driver(), driver_side.fileno(), driver_side.fileno()),
            daemon=True,
        )
        self.addCleanup(driver_side.close)
        self.addCleanup(mm_side.close)
        thread.start()
        mm_side.sendall(frame({"type": "hello", "protocol": 1, "threads": 1}))
        hello, _ = read_frame(mm_side)
        self.assertEqual((hello["type"], hello["runtime"]), ("hello", "t"))
        a = numpy.array([[2]], numpy.float32)
        mm_side.sendall(frame(request("float", [1, 1], [1, 1], [1, 1], rid=9), data_of(a, a, a)))
        header, y = read_frame(mm_side)
        self.assertEqual((header["type"], header["id"]), ("y", 9))
        self.assertEqual(numpy.frombuffer(y, numpy.float32).tolist(), [4.0])
        zero = numpy.zeros((1, 1), numpy.int8)
        inputs = [("A", zero.view(numpy.uint8)), ("B", zero)]
        operator = operator_request("MatMulInteger", 10, inputs, {}, ("int32", [1, 1]), rid=11)
        mm_side.sendall(frame(operator, data_of(zero, zero, numpy.zeros((1, 1), numpy.int32))))
        header, _ = read_frame(mm_side)
        self.assertEqual((header["type"], header["id"]), ("error", 11))
        self.assertIn("not declared by the driver", header["message"])
        mm_side.sendall(frame({"type": "goodbye", "id": 10}))
        self.assertEqual(read_frame(mm_side)[0]["type"], "error")
        mm_side.shutdown(socket.SHUT_WR)
        thread.join(10)
        self.assertFalse(thread.is_alive())

    def test_what_the_runtime_prints_goes_to_stderr_not_into_the_protocol(self):
        script = (
            "import sys; sys.path.insert(0, %r); import numpy, mm_runtime\n"
            "def noisy(a, b, out, dtype):\n"
            "    print('chatter'); return numpy.matmul(a, b, out=out)\n"
            "mm_runtime.serve(mm_runtime.Driver('t', '1', noisy, {'float': 'float'}))\n"
        ) % os.path.dirname(os.path.abspath(__file__))
        a = numpy.array([[3]], numpy.float32)
        stdin = frame({"type": "hello", "protocol": 1, "threads": 1}) + frame(
            request("float", [1, 1], [1, 1], [1, 1]), data_of(a, a, a)
        )
        done = subprocess.run([sys.executable, "-c", script], input=stdin, capture_output=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(b"chatter", done.stderr)
        self.assertNotIn(b"chatter", done.stdout)
        self.assertTrue(done.stdout.endswith(numpy.float32(9).tobytes()))


if __name__ == "__main__":
    unittest.main()
