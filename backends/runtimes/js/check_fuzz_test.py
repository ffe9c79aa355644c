#!/usr/bin/python3
"""check_fuzz.py judges fuzz runs of a driver against its declarations: an undeclared finding, a
failure left unshrunk and a declared finding not reproduced each fail the check."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_fuzz.py")

K_ZERO = {"name": "K = 0 refused", "kind": "ERROR", "k_zero": True, "message": "refused"}
BROADCAST = {"name": "broadcast wrong", "kind": "FAIL", "batch_broadcast": True, "message": ""}
NOT_ZEROED_FAIL = {"name": "not zeroed (FAIL)", "kind": "FAIL", "group": "not zeroed"}
NOT_ZEROED_IMPRECISE = {
    "name": "not zeroed (IMPRECISE)",
    "kind": "IMPRECISE",
    "group": "not zeroed",
}

# ONNX Runtime's MatMulInteger on x86 without VNNI: uint8 x int8 pair sums saturated to int16.
SATURATION = {
    "name": "uint8 x int8 pair sums saturate",
    "kind": "FAIL",
    "op": "MatMulInteger",
    "types": {"A": "uint8", "B": "int8"},
    "outside_standard_range": False,
    "unless_cpu_has": ["avx512_vnni"],
}


def family_finding(op, types, outside=False, kind="FAIL"):
    """A finding of an mm-fuzz --op report, its minimal problem's inputs of element types
    `types`."""
    found = finding(kind, [1, 2], [2, 1], "1 elements: 0 PASS, 1 FAIL", types.get("A", "float"))
    found.update({"op": op, "types": types, "outside_standard_range": outside})
    return found


def finding(kind, a, b, message="", dtype="float", op=None, problem=None):
    """A finding of an mm-fuzz --json report, shrunk to A of shape `a` and B of shape `b` (of
    operator `op`, MatMul when None, and minimal problem `problem`)."""
    extra = {} if op is None else {"op": op, "minimal_problem": problem or ""}
    return {
        **extra,
        "kind": kind,
        "dtype": dtype,
        "message": message,
        "minimal_a_shape": a,
        "minimal_b_shape": b,
        "replay": "mm-fuzz --seed 1 --first 7 --cases 1",
    }


class CheckFuzzTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.count = 0

    def tearDown(self):
        self.dir.cleanup()

    def write(self, value):
        self.count += 1
        path = os.path.join(self.dir.name, f"{self.count}.json")
        with open(path, "w") as f:
            json.dump(value, f)
        return path

    def report(self, *findings, failures=None):
        count = len(findings) if failures is None else failures
        return self.write({"stats": {"failures": count}, "findings": list(findings)})

    def run_check(self, declared, *reports, flags=None):
        path = self.write({"runtime": "x", "passes": ["--seed 1 --cases 9"], "findings": declared})
        cpu = []
        if flags is not None:
            cpuinfo = os.path.join(self.dir.name, "cpuinfo")
            with open(cpuinfo, "w") as f:
                f.write("processor\t: 0\nflags\t\t: " + " ".join(flags) + "\n")
            cpu = ["--cpuinfo", cpuinfo]
        return subprocess.run(
            [sys.executable, CHECK, *cpu, *reports, path], capture_output=True, text=True
        )

    def test_a_family_finding_matches_only_its_operator_and_problem(self):
        zp = {
            "name": "per-row zero point refused",
            "kind": "ERROR",
            "op": "MatMulInteger",
            "problem": r"a_zero_point uint8\[1,1\]",
            "message": "zero point must be a scalar",
        }
        got = finding(
            "ERROR",
            [1, 1],
            [1, 1],
            "zero point must be a scalar",
            "uint8",
            "MatMulInteger",
            "MatMulInteger-10 A uint8[1,1] B uint8[1,1] a_zero_point uint8[1,1]",
        )
        self.assertEqual(self.run_check([zp], self.report(got)).returncode, 0)
        as_matmul = {k: v for k, v in got.items() if k != "op"}
        self.assertEqual(self.run_check([zp], self.report(as_matmul)).returncode, 1)
        per_tensor = dict(got, minimal_problem="MatMulInteger-10 A uint8[1,1] B uint8[1,1]")
        result = self.run_check([zp], self.report(per_tensor))
        self.assertEqual(result.returncode, 1)
        self.assertIn("undeclared ERROR", result.stderr)

    def test_a_cpu_conditioned_declaration_applies_where_the_cpu_lacks_its_features(self):
        saturation = {
            "name": "U8S8 pair sums saturate",
            "kind": "FAIL",
            "op": "MatMulInteger",
            "unless_cpu_has": ["avx512_vnni|avx_vnni"],
        }
        got = finding("FAIL", [1, 2], [2, 1], "", "uint8", "MatMulInteger", "")
        for flags in (["avx2"], ["avx2", "avx512bw"]):
            self.assertEqual(
                self.run_check([saturation], self.report(got), flags=flags).returncode, 0
            )
            absent = self.run_check([saturation], self.report(), flags=flags)
            self.assertEqual(absent.returncode, 1, "a fixed deviation fails, never passes silently")
            self.assertIn("not reproduced", absent.stderr)
        for flags in (["avx2", "avx512_vnni"], ["avx2", "avx_vnni"]):
            exact = self.run_check([saturation], self.report(), flags=flags)
            self.assertEqual(exact.returncode, 0, exact.stderr)
            self.assertIn("not for this CPU (this CPU has " + flags[1], exact.stdout)
            found = self.run_check([saturation], self.report(got), flags=flags)
            self.assertEqual(found.returncode, 1, "where it cannot be, a finding is undeclared")

    def test_a_family_finding_is_declared_by_its_operator_and_types(self):
        uint8_int8 = {"A": "uint8", "B": "int8", "a_zero_point": "uint8", "b_zero_point": "int8"}
        run = self.run_check(
            [SATURATION], self.report(family_finding("MatMulInteger", uint8_int8)), flags=["avx2"]
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("declared (1 findings): uint8 x int8 pair sums saturate", run.stdout)
        # Another pair of types, another operator, a problem outside int32: each a new deviation.
        for other in (
            family_finding("MatMulInteger", {"A": "uint8", "B": "uint8"}),
            family_finding("QLinearMatMul", uint8_int8),
            family_finding("MatMulInteger", uint8_int8, outside=True),
        ):
            run = self.run_check([SATURATION], self.report(other), flags=["avx2"])
            self.assertEqual(run.returncode, 1, other)
            self.assertIn("undeclared FAIL", run.stderr)

    def test_a_matmul_declaration_never_covers_another_operator(self):
        any_fail = {"name": "any float FAIL", "kind": "FAIL", "dtype": "float"}
        run = self.run_check([any_fail], self.report(family_finding("Gemm", {"A": "float"})))
        self.assertEqual(run.returncode, 1)
        self.assertIn("undeclared FAIL float", run.stderr)
        matmul = self.run_check([any_fail], self.report(finding("FAIL", [1, 1], [1, 1])))
        self.assertEqual(matmul.returncode, 0, matmul.stderr)

    def test_a_declaration_unless_the_cpu_has_its_features_does_not_apply_there(self):
        # On a VNNI CPU: not found is no failure, and a finding of it is undeclared.
        run = self.run_check([SATURATION], self.report(), flags=["avx2", "avx512_vnni"])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("not for this CPU (this CPU has avx512_vnni)", run.stdout)
        found = family_finding("MatMulInteger", {"A": "uint8", "B": "int8"})
        run = self.run_check([SATURATION], self.report(found), flags=["avx2", "avx512_vnni"])
        self.assertEqual(run.returncode, 1)
        self.assertIn("undeclared FAIL uint8", run.stderr)
        # Without the features it applies: not reproduced fails.
        run = self.run_check([SATURATION], self.report(), flags=["avx2"])
        self.assertEqual(run.returncode, 1)
        self.assertIn("not reproduced (fixed? or not reached): uint8 x int8", run.stderr)

    def test_every_declared_finding_found_passes(self):
        run = self.run_check(
            [K_ZERO, BROADCAST],
            self.report(
                finding("ERROR", [1, 0], [0, 1], "K was refused"),
                finding("FAIL", [2, 1, 1], [1, 1, 1]),
            ),
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("2 findings, each a declared deviation, every declared one found", run.stdout)

    def test_a_declared_finding_not_reproduced_fails(self):
        run = self.run_check(
            [K_ZERO, BROADCAST], self.report(finding("ERROR", [1, 0], [0, 1], "refused"))
        )
        self.assertEqual(run.returncode, 1)
        self.assertIn(
            "declared, not reproduced (fixed? or not reached): broadcast wrong", run.stderr
        )

    def test_a_finding_outside_the_declared_shape_class_is_undeclared(self):
        # K = 1, not 0: the same message is a new deviation.
        run = self.run_check([K_ZERO], self.report(finding("ERROR", [1, 1], [1, 1], "refused")))
        self.assertEqual(run.returncode, 1)
        self.assertIn("undeclared ERROR float [1, 1] x [1, 1]: refused", run.stderr)

    def test_a_failure_left_unshrunk_fails(self):
        run = self.run_check(
            [K_ZERO], self.report(finding("ERROR", [1, 0], [0, 1], "refused"), failures=2)
        )
        self.assertEqual(run.returncode, 1)
        self.assertIn("2 failures but 1 findings: raise --max-findings", run.stderr)

    def test_one_symptom_of_a_group_reproduces_the_group(self):
        both = [NOT_ZEROED_FAIL, NOT_ZEROED_IMPRECISE]
        imprecise = self.run_check(both, self.report(finding("IMPRECISE", [0], [2, 0, 9])))
        self.assertEqual(imprecise.returncode, 0, imprecise.stderr)
        self.assertIn("declared, not found in this run: not zeroed (FAIL)", imprecise.stdout)
        neither = self.run_check(both, self.report())
        self.assertEqual(neither.returncode, 1)
        self.assertIn("not zeroed (FAIL) / not zeroed (IMPRECISE)", neither.stderr)

    def test_the_findings_of_every_pass_count_together(self):
        first = self.report(finding("ERROR", [1, 0], [0, 1], "refused"))
        second = self.report(finding("FAIL", [0], [2, 0, 9]), failures=1)
        run = self.run_check([K_ZERO, NOT_ZEROED_FAIL], first, second)
        self.assertEqual(run.returncode, 0, run.stderr)
        # A second pass cannot hide the first's unshrunk failures.
        unshrunk = self.report(failures=3)
        run = self.run_check([K_ZERO, NOT_ZEROED_FAIL], first, second, unshrunk)
        self.assertIn("5 failures but 2 findings", run.stderr)

    def test_a_report_without_findings_is_named(self):
        path = self.write({"stats": {}})
        run = self.run_check([K_ZERO], path)
        self.assertEqual(run.returncode, 2)
        self.assertIn(f"{path}: not an mm-fuzz report", run.stderr)
        partial = self.write({"stats": {"failures": 1}, "findings": [{"kind": "FAIL"}]})
        run = self.run_check([K_ZERO], partial)
        self.assertEqual(run.returncode, 2)
        self.assertIn("findings[0] has no dtype, message, minimal_a_shape", run.stderr)

    def test_passes_prints_the_declared_options_one_pass_a_line(self):
        path = self.write({"passes": ["--seed 1 --cases 9", "--seed 2 --first 5 --cases 1"]})
        run = subprocess.run(
            [sys.executable, CHECK, "--passes", path], capture_output=True, text=True
        )
        self.assertEqual(run.stdout, "--seed 1 --cases 9\n--seed 2 --first 5 --cases 1\n")

    def test_every_shipped_declaration_file_lists_its_passes(self):
        folder = os.path.join(HERE, "expectations")
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".fuzz.json"):
                continue
            with open(os.path.join(folder, name)) as f:
                declared = json.load(f)
            self.assertTrue(declared["passes"], name)
            for options in declared["passes"]:
                self.assertRegex(
                    options,
                    r"^(--op (Gemm|MatMulInteger|QLinearMatMul) )?--seed [0-9]+( --first [0-9]+)?"
                    r" --cases [0-9]+",
                    name,
                )
            self.assertEqual(
                len({d["name"] for d in declared["findings"]}), len(declared["findings"])
            )


if __name__ == "__main__":
    unittest.main()
