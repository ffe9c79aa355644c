#!/usr/bin/python3
"""Tests of the report's sections of MatMul's family (one per operator) and of the summary's list of
the operators each backend gets wrong, on fixture reports with family results as collect.py writes
them; and of collect_family.py's choice of what mm-fuzz --op runs."""

import copy
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import collect_family  # noqa: E402  (after putting this folder on the path)
from report_test import bench_entry, render_quiet, synthetic_report  # noqa: E402


def family_result(case, backend, op, dtype, verdict, source="official"):
    """A result of mm-conformance naming its operator."""
    return {
        "case": case,
        "data_set": "test_data_set_0",
        "backend": backend,
        "op": op,
        "dtype": dtype,
        "a_shape": "[3,4]",
        "b_shape": "[4,3]",
        "verdict": verdict,
        "message": f"{verdict.lower()} on {backend}",
        "source": source,
    }


def operators(refused_by=None):
    """mm-bench --mm_describe's `operators` of a backend: every description supported, or each
    refused with a reason naming `refused_by`."""
    descs = [
        ("Gemm", "float", "Gemm-13 float"),
        ("MatMulInteger", "uint8xint8", "MatMulInteger-10 uint8 x int8 -> int32"),
        ("QLinearMatMul", "uint8xint8", "QLinearMatMul-10 uint8 x int8 -> uint8, float scales"),
    ]
    out = []
    for op, types, desc in descs:
        entry = {"op": op, "types": types, "desc": desc, "level": "native", "note": ""}
        if refused_by:
            entry.update(level="no", note=f"{refused_by} computes MatMul only, not {op}")
        else:
            entry["arithmetic"] = {"accumulation": "float", "text": "accumulates in float"}
        out.append(entry)
    return out


def family_report(matmulinteger_verdict="PASS", gemm_findings=()):
    """The synthetic report with the family: alpha computes every operator, beta MatMulInteger
    only (its verdict given), both judged on the official cases; Gemm fuzzed on alpha; family
    benchmarks of alpha."""
    report = synthetic_report()
    backends = report["machine"]["backends"]
    backends[0]["operators"] = operators()
    backends[1]["operators"] = operators(refused_by="beta")
    backends[1]["operators"][1].update(level="native", note="")
    results = report["conformance"]["results"]
    official = [{"case": "test_gemm_alpha"}, {"case": "test_matmulinteger"}]
    report["conformance"]["official"] = {"found": official, "missing": [], "altered": []}
    results += [
        family_result("test_gemm_alpha", "alpha", "Gemm", "float", "PASS"),
        family_result("test_gemm_alpha", "beta", "Gemm", "float", "UNSUPPORTED"),
        family_result("test_matmulinteger", "alpha", "MatMulInteger", "uint8", "PASS"),
        family_result(
            "test_matmulinteger", "beta", "MatMulInteger", "uint8", matmulinteger_verdict
        ),
        family_result("mm_family_gemm13_float_x", "alpha", "Gemm", "float", "PASS", "built-in"),
    ]
    fuzz = {
        "stats": {"backends": {"alpha": {"PASS": 10, "BOUND": 2}, "beta": {"UNSUPPORTED": 12}}},
        "findings": list(gemm_findings),
        "statistics": [
            {"backend": "alpha", "dtype": "float", "problems": 12, "worst_bound_fraction": 0.25}
        ],
    }
    report["family"] = {
        "ops": ["Gemm", "MatMulInteger", "QLinearMatMul"],
        "accuracy": {"Gemm": {"command": "mm-fuzz --op Gemm", "exit_code": 0, "report": fuzz}},
    }
    entries = report["speed"]["runs"][0]["benchmark_json"]["benchmarks"]
    gemm = bench_entry("gemm/alpha/float/256x256x256/process_time/real_time", 4e6, 8.4)
    gemm["cpu_time"] = 2e6  # Half the wall time: the 1-thread figure is the CPU time's.
    entries += [
        gemm,
        bench_entry("matmulinteger/alpha/uint8xint8/tiny_3x4x3/process_time/real_time", 500),
        # A bare library timed on the operator's element types (an operator's baseline).
        bench_entry("raw_lib/uint8xint8/256x256x256/real_time", 1e6, 33.5),
        bench_entry("raw_lib/uint8xint8/tiny_3x4x3/real_time", 90),
    ]
    return report


RENDERED = {}


def rendered(name):
    """The rendering of a fixture (each drawn once: matplotlib makes a render take seconds)."""
    if name not in RENDERED:
        RENDERED[name] = render_quiet(FIXTURES[name]())
    return RENDERED[name]


def _finding(**fields):
    return dict({"kind": "FAIL", "backend": "alpha", "dtype": "float", "message": "m"}, **fields)


def _crashed():
    report = family_report()
    crash = {"backend": "beta", "error": "mm-fuzz killed by signal 11", "command": "c"}
    report["family"]["accuracy"]["MatMulInteger"] = {"crashes": [crash]}
    return report


def _gemm_fail_on_beta():
    report = family_report()
    report["conformance"]["results"].append(
        family_result("test_gemm_alpha", "beta", "Gemm", "float", "FAIL")
    )
    return report


FIXTURES = {
    "passing": family_report,
    "matmulinteger fails": lambda: family_report(matmulinteger_verdict="FAIL"),
    "gemm findings": lambda: family_report(
        gemm_findings=[
            _finding(),
            _finding(backend="beta", declared={"name": "d", "reason": "r"}),
        ]
    ),
    "crashed": _crashed,
    "gemm fails on beta": _gemm_fail_on_beta,
    "matmul fails": lambda: synthetic_report("FAIL"),
    "matmul alone": synthetic_report,
}


def table_rows(markdown, caption_start):
    """The rows of the Markdown table whose caption starts with `caption_start`."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"**{caption_start}"))
    rows = []
    for line in lines[start + 4 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


class OperatorsWrongTest(unittest.TestCase):
    def test_a_backend_failing_one_operator_is_named_in_the_summary(self):
        _, markdown, derived = rendered("matmulinteger fails")
        summary = markdown.split("## Machine")[0]
        rows = {r[0]: r for r in table_rows(summary, "Operators each backend gets wrong")}
        self.assertTrue(rows["beta"][2].startswith("WRONG: MatMulInteger:"), rows["beta"])
        self.assertNotIn("Gemm", rows["beta"][2])
        self.assertEqual(rows["alpha"][2], "none")
        self.assertEqual(
            derived["operators_wrong"], {"beta": {"MatMulInteger": ["1 conformance FAIL"]}}
        )

    def test_every_backend_passing_names_no_operator(self):
        _, markdown, derived = rendered("passing")
        rows = table_rows(markdown, "Operators each backend gets wrong")
        self.assertEqual([(r[0], r[2]) for r in rows], [("alpha", "none"), ("beta", "none")])
        self.assertEqual(derived["operators_wrong"], {})

    def test_matmuls_own_failure_is_named_matmul(self):
        # beta fails test_matmul_2d, a result naming no operator.
        _, _, derived = rendered("matmul fails")
        self.assertEqual(derived["operators_wrong"], {"beta": {"MatMul": ["1 conformance FAIL"]}})

    def test_an_undeclared_fuzzer_finding_names_its_operator_and_is_a_problem(self):
        # alpha's finding is undeclared, beta's declared (collect.py marked it).
        _, _, derived = rendered("gemm findings")
        self.assertEqual(derived["operators_wrong"], {"alpha": {"Gemm": ["1 fuzzer FAIL"]}})
        self.assertTrue(
            any(p.startswith("fuzzer FAIL: Gemm on alpha") for p in derived["problems"]),
            derived["problems"],
        )

    def test_a_crash_of_the_family_fuzzer_names_the_operator_and_backend(self):
        _, _, derived = rendered("crashed")
        self.assertEqual(
            derived["operators_wrong"], {"beta": {"MatMulInteger": ["1 fuzzer crash"]}}
        )
        self.assertIn("fuzzer crash: MatMulInteger on beta", " ".join(derived["problems"]))


class OperatorSectionTest(unittest.TestCase):
    def test_each_operator_has_its_section(self):
        html_text, markdown, _ = rendered("passing")
        for op in ("Gemm", "MatMulInteger", "QLinearMatMul"):
            self.assertIn(f"\n## {op}\n", markdown)
            self.assertIn(f'<h2 id="{op.lower()}">{op}</h2>', html_text)

    def test_the_scoreboard_row_has_support_conformance_fuzz_bound_and_speed(self):
        _, markdown, derived = rendered("passing")
        section = markdown.split("\n## Gemm\n")[1].split("\n## ")[0]
        header = next(line for line in section.splitlines() if line.startswith("| backend"))
        columns = [c.strip() for c in header.strip("|").split(" | ")]
        rows = {r[0]: dict(zip(columns, r)) for r in table_rows(section, "Gemm: each backend")}
        alpha, beta = rows["alpha"], rows["beta"]
        self.assertEqual(alpha["official"], "1 PASS")
        self.assertEqual(alpha["built-in"], "1 PASS")
        self.assertEqual(alpha["fuzz"], "10 PASS, 2 BOUND")
        self.assertEqual(alpha["worst / bound"], "0.25")
        self.assertTrue(alpha["support"].startswith("float: native"), alpha["support"])
        # 8.4 GFLOP/s by wall time (4 ms), twice that by CPU time (2 ms).
        self.assertTrue(alpha["float 256³ GFLOP/s, 1t"].startswith("16.8 "), alpha)
        self.assertEqual(beta["official"], "1 UNSUPPORTED")
        self.assertEqual(beta["support"], "no: beta computes MatMul only, not Gemm")
        self.assertEqual(alpha["wrong"], "none")
        gemm = [e for e in derived["family"] if e["op"] == "Gemm" and e["backend"] == "alpha"]
        # The wall-time rate (8.4) at half the time.
        self.assertAlmostEqual(gemm[0]["speed"]["float"]["256x256x256@1"]["rate_gflops"], 16.8)

    def test_the_integer_operators_speed_is_in_gop_and_the_tiny_call_per_call(self):
        _, markdown, _ = rendered("passing")
        section = markdown.split("\n## MatMulInteger\n")[1].split("\n## ")[0]
        self.assertIn("uint8xint8 256³ GOP/s, 1t", section)
        self.assertIn("uint8xint8 tiny_3x4x3 per call, 1t", section)
        self.assertIn("| 500 ns [500 ns–500 ns]", section)

    def test_the_catalogue_matrix_lists_official_cases_and_the_built_in_ones_by_dtype(self):
        _, markdown, _ = rendered("matmulinteger fails")
        section = markdown.split("\n## MatMulInteger\n")[1].split("\n## ")[0]
        rows = table_rows(section, "MatMulInteger: catalogue matrix")
        self.assertEqual(rows[0][:2], ["test_matmulinteger", "1 PASS"])
        self.assertTrue(rows[0][2].startswith("1 FAIL: test_matmulinteger"), rows[0])
        gemm = markdown.split("\n## Gemm\n")[1].split("\n## ")[0]
        labels = [r[0] for r in table_rows(gemm, "Gemm: catalogue matrix")]
        self.assertEqual(labels, ["test_gemm_alpha", "built-in, float"])

    def test_family_results_stay_out_of_matmuls_scoreboard_and_speed(self):
        _, markdown, derived = rendered("gemm fails on beta")
        beta = [
            e for e in derived["scoreboard"] if e["dtype"] == "float" and e["backend"] == "beta"
        ]
        self.assertEqual(beta[0]["official"], {})  # test_matmul_2d is not an official case here.
        self.assertEqual(beta[0]["other"], {"PASS": 1})
        speed = markdown.split("\n## Speed\n")[1].split("\n## Gemm")[0]
        self.assertNotIn("gemm", speed.lower().replace("gemm.", ""))
        self.assertNotIn("matmulinteger", speed)

    def test_a_bare_library_on_the_operators_types_is_its_yardstick_not_matmuls(self):
        _, markdown, _ = rendered("passing")
        section = markdown.split("\n## MatMulInteger\n")[1].split("\n## ")[0]
        rows = {r[0]: r for r in table_rows(section, "MatMulInteger: each backend")}
        self.assertEqual(rows["raw_lib"][1], "bare library")
        self.assertIn("33.5 [33.5–33.5], 3 reps, others 0.00 cores", rows["raw_lib"])
        self.assertIn("90 ns [90 ns–90 ns], 3 reps, others 0.00 cores", rows["raw_lib"])
        gemm = markdown.split("\n## Gemm\n")[1].split("\n## ")[0]
        self.assertNotIn("raw_lib", gemm)  # Timed on uint8 x int8, not on Gemm's float.
        speed = markdown.split("\n## Speed\n")[1].split("\n## Gemm")[0]
        self.assertNotIn("uint8xint8", speed)

    def test_a_report_without_family_data_still_has_the_sections(self):
        _, markdown, derived = rendered("matmul alone")
        self.assertIn("no Gemm result in this report's conformance run", markdown)
        self.assertEqual(derived["operators_wrong"], {})


class CollectFamilyTest(unittest.TestCase):
    BACKENDS = [
        {"name": "lib", "operators": operators(refused_by="lib")},
        {"name": "rt", "runtime": True, "operators": operators(refused_by="rt")},
        {"name": "rt2", "runtime": True, "operators": operators()},
        {"name": "gone", "error": "library not found"},
    ]

    def test_a_runtime_refusing_every_description_is_not_fuzzed_and_says_why(self):
        names, not_fuzzed = collect_family.fuzzed_backends("Gemm", self.BACKENDS)
        self.assertEqual(names, ["lib", "rt2"])
        self.assertEqual(not_fuzzed["rt"], "refuses Gemm: rt computes MatMul only, not Gemm")
        self.assertEqual(not_fuzzed["gone"], "not available: library not found")

    def test_a_crashing_run_is_repeated_per_backend_and_the_crasher_named(self):
        calls = []

        def run_fuzz(fuzz, out, seconds, cases, args):
            calls.append(args)
            run = {"command": " ".join(args), "exit_code": -11, "seconds": 1.0}
            if "lib" in args:
                return None, dict(run, error="mm-fuzz killed by signal 11")
            return {"stats": {"backends": {"rt2": {"PASS": 1}}}}, dict(run, exit_code=0)

        result = collect_family.fuzz_operator(
            run_fuzz, "mm-fuzz", "out", "quick", {"fuzz": []}, "Gemm", copy.deepcopy(self.BACKENDS)
        )
        self.assertEqual(
            calls,
            [
                ["--op", "Gemm", "--backend", "lib", "--backend", "rt2"],
                ["--op", "Gemm", "--backend", "lib"],
                ["--op", "Gemm", "--backend", "rt2"],
            ],
        )
        self.assertEqual([c["backend"] for c in result["crashes"]], ["lib, rt2", "lib"])
        self.assertEqual(len(result["reports"]), 1)

    def test_mm_bench_times_matmul_and_every_operator_in_one_run(self):
        self.assertEqual(
            collect_family.BENCH_OP_ARGS,
            ["--op", "MatMul", "--op", "Gemm", "--op", "MatMulInteger", "--op", "QLinearMatMul"],
        )
        self.assertEqual(collect_family.BENCH_KINDS, "matmul|gemm|matmulinteger|qlinearmatmul")


if __name__ == "__main__":
    unittest.main()
