#!/usr/bin/python3
"""Tests of the comparison report's renderer and of the browser check that guards it.

The browser check must catch each kind of broken page it promises to (each test below breaks one
thing in an otherwise good page); the renderer must put FAIL/ERROR first, in red, and give every
table rows and every plot data. Needs Debian's chromium and python3-matplotlib (scripts/setup.sh).
"""

import base64
import copy
import io
import json
import pathlib
import re
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import browser_check  # noqa: E402
import collect  # noqa: E402
import render  # noqa: E402  (the command line)
from rendering import data, emit, plots, shape_matrix, stability  # noqa: E402


def tiny_png():
    """A real 4x3 PNG, drawn by matplotlib like every plot of the report."""
    fig = plots.plt.figure(figsize=(0.04, 0.03), dpi=100)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plots.plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def page(extra="", plot=None, table_rows="<tr><td>1</td></tr>"):
    """A page that passes the check, plus `extra` markup, a replacement plot or table body."""
    if plot is None:
        plot = (
            f'<img class="plot" id="p" data-series="1" alt="p" '
            f'src="data:image/png;base64,{tiny_png()}">'
        )
    sections = "".join(f'<h2 id="{s}">{s}</h2>' for s in browser_check.SECTIONS)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head><body>"
        f"{sections}{plot}<table id='t'><tbody>{table_rows}</tbody></table>{extra}"
        "</body></html>"
    )


class BrowserCheckTest(unittest.TestCase):
    """Each check opens its page in a new tab of one Chromium (a start per test cost most of the
    suite's time); a tab sees only its own page's events."""

    @classmethod
    def setUpClass(cls):
        binary = browser_check.chromium_binary()
        if not binary:
            raise RuntimeError("chromium is not installed (scripts/setup.sh installs it)")
        cls.browser_context = browser_check.open_browser(binary)
        cls.browser = cls.browser_context.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.browser_context.__exit__(None, None, None)

    def check(self, html_text):
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "page.html"
            path.write_text(html_text)
            return browser_check.check(path, browser=self.browser)

    def test_a_broken_page_does_not_leak_into_the_next_check(self):
        self.assertTrue(self.check(page("<script>console.error('boom')</script>")))
        self.assertEqual(self.check(page()), [])

    def test_good_page_passes(self):
        self.assertEqual(self.check(page()), [])

    def test_console_error_fails(self):
        problems = self.check(page("<script>console.error('boom')</script>"))
        self.assertTrue(any("console error: boom" in p for p in problems), problems)

    def test_uncaught_exception_fails(self):
        problems = self.check(page("<script>undefinedFunction()</script>"))
        self.assertTrue(any("uncaught exception" in p for p in problems), problems)

    def test_request_outside_the_page_fails(self):
        # A page that needs the network (or any file beside it) does not open offline.
        problems = self.check(page('<img src="http://127.0.0.1:9/missing.png" alt="x">'))
        self.assertTrue(any("not self-contained" in p for p in problems), problems)

    def test_plot_that_does_not_decode_fails(self):
        broken = '<img class="plot" id="bad" data-series="1" src="data:image/png;base64,AAAA">'
        problems = self.check(page(plot=broken))
        self.assertTrue(any("plot bad did not render" in p for p in problems), problems)

    def test_plot_without_data_fails(self):
        empty = (
            f'<img class="plot" id="empty" data-series="0" '
            f'src="data:image/png;base64,{tiny_png()}">'
        )
        problems = self.check(page(plot=empty))
        self.assertTrue(any("plot empty is empty" in p for p in problems), problems)

    def test_page_without_plot_fails(self):
        problems = self.check(page(plot=""))
        self.assertIn("no plot on the page", problems)

    def test_table_without_rows_fails(self):
        problems = self.check(page(table_rows=""))
        self.assertTrue(any("table t" in p and "no rows" in p for p in problems), problems)


def bench_entry(name, real_time, gflops=None, unit="ns", threads=1, label=None):
    entry = {
        "name": name,
        "run_name": name,
        "run_type": "iteration",
        "threads": threads,
        "real_time": real_time,
        "cpu_time": real_time,
        "time_unit": unit,
    }
    if gflops is not None:
        entry["GFLOPS"] = gflops
    if label:
        entry["label"] = label
    return entry


def synthetic_report(verdict="PASS"):
    """A compare.json as collect.py writes it, small enough to read in one go."""
    support = {d: {"level": "native", "note": ""} for d in data.DTYPE_ORDER}
    benchmarks = [
        bench_entry("peak/float/threads:1", 1000, 100.0, label="avx512f vfmadd zmm (f32)"),
        bench_entry("matmul/alpha/float/64x64x64/real_time", 10000, 50.0),
        bench_entry("matmul/alpha/float/128x128x128/process_time/real_time", 60000, 70.0),
        bench_entry("matmul/beta/float/64x64x64/real_time", 20000, 25.0),
        bench_entry("matmul/beta/float/128x128x128/real_time", 100000, 40.0),
        bench_entry("raw_onednn/float/64x64x64/real_time", 9000, 55.0),
        bench_entry("matmul/alpha/float/tiny_3x4x3/real_time", 300),
        bench_entry("matmul/beta/float/tiny_3x4x3/real_time", 200),
        bench_entry("prepare/alpha/float/128x128x128/real_time", 40, unit="us"),
    ]
    return {
        "format": "mm-compare/1",
        "mode": "quick",
        "extra_args": [],
        "machine": {
            "cpu_model": "Test CPU",
            "logical_cpus": 1,
            "date": "2026-01-01T00:00:00+00:00",
            "backends": [
                {"name": "alpha", "description": "a", "supports": support},
                {"name": "beta", "description": "b", "supports": support},
            ],
            "libraries": {},
        },
        "conformance": {
            "summary": {
                "total": 2,
                "PASS": 1 if verdict != "PASS" else 2,
                verdict: 1 if verdict != "PASS" else 2,
            },
            "tolerance": {"rtol": 1e-3, "atol": 1e-7},
            "results": [
                {
                    "case": "test_matmul_2d",
                    "data_set": "test_data_set_0",
                    "backend": "alpha",
                    "dtype": "float",
                    "a_shape": "[3,4]",
                    "b_shape": "[4,3]",
                    "verdict": "PASS",
                    "message": "ok",
                },
                {
                    "case": "test_matmul_2d",
                    "data_set": "test_data_set_0",
                    "backend": "beta",
                    "dtype": "float",
                    "a_shape": "[3,4]",
                    "b_shape": "[4,3]",
                    "verdict": verdict,
                    "message": "worst at [0,1]: expected 1, got 2",
                },
            ],
        },
        "accuracy": {
            "report": {
                "problems": [
                    {
                        "backend": "alpha",
                        "dtype": "float",
                        "k": 16,
                        "max_ulp": 1.0,
                        "bound_fraction": 0.01,
                    },
                    {
                        "backend": "beta",
                        "dtype": "float",
                        "k": 16,
                        "max_ulp": 4.0,
                        "bound_fraction": 0.2,
                    },
                    {
                        "backend": "beta",
                        "dtype": "float",
                        "k": 256,
                        "max_ulp": 9.0,
                        "bound_fraction": 0.3,
                    },
                ]
            }
        },
        "speed": {
            "settings": {"set": "quick", "min_time": 0.01, "repetitions": 1},
            "runs": [{"threads": 1, "seconds": 1.0, "benchmark_json": {"benchmarks": benchmarks}}],
        },
        "timings_seconds": {"machine": 0.1, "conformance": 0.1, "accuracy": 0.1, "speed": 1.0},
    }


QUIET = {"other_cores": 0.0, "steal_cores": 0.0, "loadavg": [0.1, 0.1]}


def quiet(report, repetitions=3):
    """`report` (copied) as measured on a quiet machine: each benchmark entry is repeated
    `repetitions` times (the same time: no spread) and every run records no other load."""
    report = copy.deepcopy(report)
    for run in report["speed"]["runs"]:
        entries = run["benchmark_json"]["benchmarks"]
        run["benchmark_json"]["benchmarks"] = entries * repetitions
        run["load"] = {e.get("run_name", e["name"]): dict(QUIET) for e in entries}
    return report


# Every plot function is a function of its arguments alone; most tests render reports whose plotted
# data are the same. Each plot is drawn once per distinct arguments (matplotlib's drawing is most
# of a render's time); test_rendering_leaves_the_report_as_it_was draws every plot twice.
PLOTS_DRAWN = {}


def drawn_once(draw):
    def plot(*args):
        key = (draw.__name__, repr(args))
        if key not in PLOTS_DRAWN:
            PLOTS_DRAWN[key] = draw(*args)
        return PLOTS_DRAWN[key]

    return plot


ONCE = {
    name: drawn_once(getattr(plots, name))
    for name in ("plot_accuracy", "plot_scaling", "plot_sweep", "plot_tiny")
}


def render_once(report, *args, **kwargs):
    """emit.render of `report`, each distinct plot drawn once."""
    with mock.patch.multiple(emit, **ONCE):
        return emit.render(report, *args, **kwargs)


def render_quiet(report, *args, **kwargs):
    """render_once of `report` as measured on a quiet machine."""
    return render_once(quiet(report), *args, **kwargs)


def declared_entry(case, backend, reason, matched):
    """An entry of a conformance report's expectations, as mm-conformance writes it."""
    return {
        "case": case,
        "backend": backend,
        "expect": "XFAIL",
        "reason": reason,
        "link": "docs/runtimes.md",
        "matched": matched,
    }


def shape_result(backend, shape_class, dtype, verdict, data_set="test_data_set_0"):
    return {
        "case": f"mm_shape_{shape_class}_{dtype}",
        "data_set": data_set,
        "backend": backend,
        "dtype": dtype,
        "a_shape": "[2,1,2,3]",
        "b_shape": "[1,3,3,2]",
        "verdict": verdict,
        "message": "m",
    }


class ShapeMatrixTest(unittest.TestCase):
    """The shape-class matrix: rows backends, columns classes, cells counting dtypes by state."""

    def report(self):
        report = synthetic_report("PASS")
        report["conformance"]["results"] += [
            shape_result("alpha", "batch_broadcast_both", "float", "PASS"),
            shape_result("alpha", "batch_broadcast_both", "int32", "PASS"),
            shape_result("beta", "batch_broadcast_both", "float", "FAIL"),
            shape_result("beta", "batch_broadcast_both", "int32", "UNSUPPORTED"),
            shape_result("alpha", "seq_k0_after_nonempty", "float", "PASS"),
            shape_result("alpha", "seq_k0_after_nonempty", "float", "ERROR", "test_data_set_1"),
            shape_result("beta", "seq_k0_after_nonempty", "float", "XFAIL", "test_data_set_1"),
        ]
        return report

    def test_the_class_comes_from_the_name_rule(self):
        self.assertEqual(shape_matrix.shape_class_of("mm_shape_k0_1d_1d_uint64"), "k0_1d_1d")
        self.assertIsNone(shape_matrix.shape_class_of("test_matmul_2d"))
        self.assertIsNone(shape_matrix.shape_class_of("mm_shape_"))

    def test_a_cell_counts_dtypes_by_their_worst_data_set(self):
        caption, classes, rows = shape_matrix.shape_matrix(self.report()["conformance"]["results"])
        self.assertEqual([c for c, _ in classes], ["batch_broadcast_both", "seq_k0_after_nonempty"])
        self.assertEqual(classes[0][1], "[2,1,2,3] x [1,3,3,2]")
        cells = {backend: [c and c["text"] for c in cs] for backend, cs in rows}
        self.assertEqual(cells["alpha"], ["2 pass", "1 FAIL"])  # ERROR after a PASS: FAIL.
        self.assertEqual(cells["beta"], ["1 FAIL, 1 refused", "1 xfail"])
        self.assertEqual(rows[1][1][0]["title"], "FAIL: float; refused: int32")
        self.assertIsNone(shape_matrix.shape_matrix(synthetic_report()["conformance"]["results"]))

    def test_the_summary_shows_the_matrix_readable_without_colour(self):
        html_text, markdown, _ = render_quiet(self.report())
        summary = html_text.split('<h2 id="machine">', 1)[0]
        self.assertIn('id="shape-classes"', summary)
        self.assertIn(
            '<td class="s-FAIL" title="FAIL: float; refused: int32">1 FAIL<br>' "1 refused</td>",
            summary,
        )
        self.assertIn('<td class="s-pass" title="pass: float, int32">2 pass</td>', summary)
        self.assertIn("| beta | 1 FAIL, 1 refused | 1 xfail |", markdown.split("## Machine")[0])
        # Not repeated case by case in the conformance table.
        self.assertNotIn("mm_shape_", html_text.split('<h2 id="conformance">', 1)[1])
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "page.html"
            path.write_text(html_text)
            self.assertEqual(browser_check.check(path), [])


class DeclaredExpectationsTest(unittest.TestCase):
    """collect.py applies the project's declared deviations of the backends it compares."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        self.repo = self.root / "repo"
        js = self.repo / "backends/runtimes/js/expectations"
        js.mkdir(parents=True)
        (self.repo / "backends/blas/deviations").mkdir(parents=True)
        self.write(js / "rt.json", [declared_entry("mm_shape_k0_*", "rt", "rt drops K = 0", 0)])
        self.write(js / "other.json", [declared_entry("test_*", "other", "not judged here", 0)])
        (js / "rt.fuzz.json").write_text('{"runtime": "rt", "findings": []}')
        self.write(
            self.repo / "backends/blas/deviations/expectations.json",
            [declared_entry("test_mm_fuzz_fail_*", "blis", "0 * inf is 0", 0)],
        )

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def write(path, entries):
        path.write_text(json.dumps({"expectations": entries}))

    def apply(self, names, tool_args, environ=None):
        return collect.declared_expectations(
            names, self.root, tool_args, environ=environ or {}, repo=self.repo
        )

    def test_the_entries_of_the_compared_backends_go_to_both_tools(self):
        tool_args = collect.split_tool_args([])
        applied = self.apply(["reference", "rt", "blis"], tool_args)
        merged = self.root / "declared-expectations.json"
        self.assertEqual(tool_args["conformance"], ["--expectations", str(merged)])
        self.assertEqual(tool_args["fuzz"], ["--expectations", str(merged)])
        self.assertEqual(tool_args["bench"], [])
        backends = [e["backend"] for e in json.loads(merged.read_text())["expectations"]]
        self.assertEqual(sorted(backends), ["blis", "rt"])
        self.assertEqual(applied["entries"], 2)
        self.assertEqual(
            applied["files"],
            [
                "backends/blas/deviations/expectations.json",
                "backends/runtimes/js/expectations/rt.json",
            ],
        )

    def test_the_users_own_expectations_win(self):
        for extra, environ in (
            (["--expectations", "mine.json"], {}),
            (["--expectations=mine.json"], {}),
            ([], {"MM_EXPECTATIONS": "mine.json"}),
        ):
            tool_args = collect.split_tool_args(extra)
            applied = self.apply(["rt"], tool_args, environ)
            self.assertFalse(applied["applied"], (extra, environ))
            self.assertEqual(tool_args["conformance"], extra)

    def test_a_runtimes_declared_fuzz_finding_is_marked_and_no_other(self):
        declared = {
            "name": "K = 0 refused",
            "kind": "ERROR",
            "k_zero": True,
            "message": "cannot broadcast",
            "reason": "rt refuses K = 0",
        }
        (self.repo / "backends/runtimes/js/expectations/rt.fuzz.json").write_text(
            json.dumps({"runtime": "rt", "findings": [declared]})
        )
        (self.repo / "backends/runtimes/js/check_fuzz.py").write_text(
            (collect.REPO / "backends/runtimes/js/check_fuzz.py").read_text()
        )

        def finding(backend, k, message="rt: cannot broadcast on dim 0"):
            return {
                "kind": "ERROR",
                "backend": backend,
                "dtype": "float",
                "minimal_a_shape": [2, k],
                "minimal_b_shape": [k, 3],
                "message": message,
            }

        findings = [finding("rt", 0), finding("rt", 4), finding("rt", 0, "other"), finding("x", 0)]
        collect.mark_declared_findings(findings, repo=self.repo)
        self.assertEqual(
            findings[0]["declared"],
            {
                "name": "K = 0 refused",
                "reason": "rt refuses K = 0",
                "file": "backends/runtimes/js/expectations/rt.fuzz.json",
            },
        )
        self.assertEqual([("declared" in f) for f in findings], [True, False, False, False])

    def test_no_entry_for_the_compared_backends_adds_nothing(self):
        tool_args = collect.split_tool_args([])
        self.assertFalse(self.apply(["reference"], tool_args)["applied"])
        self.assertEqual(tool_args["conformance"], [])


class ReportPathsTest(unittest.TestCase):
    """The comparison report names no machine's absolute path: the tools, the declared
    expectations it writes and the repository are named relative to the working directory, and
    report files in temporary folders are left out of the commands it shows."""

    def test_commands_and_files_are_named_relative_to_the_working_directory(self):
        cwd = pathlib.Path.cwd()
        self.assertEqual(collect.shown(cwd / "build/bin/mm-fuzz"), "build/bin/mm-fuzz")
        self.assertEqual(collect.shown("/usr/bin/node"), "/usr/bin/node")
        self.assertEqual(collect.shown("build/bin"), "build/bin")
        driver = collect.REPO / "backends/runtimes/python/torch_driver.py"
        self.assertFalse(pathlib.Path(collect.shown(driver)).is_absolute())
        command = [
            str(cwd / "build/bin/mm-conformance"),
            "--json",
            "/tmp/mm-compare-x/conformance.json",
            "--benchmark_out=/tmp/mm-bench-y/bench.json",
            "--backend",
            "torch",
        ]
        text = collect.command_text(command, drop=("--json", "--benchmark_out"))
        self.assertEqual(text, "build/bin/mm-conformance --backend torch")

    def test_a_rendered_report_of_such_commands_names_no_working_directory(self):
        cwd = str(pathlib.Path.cwd())
        with tempfile.TemporaryDirectory(dir=cwd) as tmp:
            tool_args = collect.split_tool_args([])
            collect.declared_expectations(["torch"], pathlib.Path(tmp), tool_args, environ={})
            self.assertTrue(tool_args["conformance"], "torch's declared deviations are applied")
            self.assertNotIn(cwd, " ".join(tool_args["conformance"]))
            report = synthetic_report()
            report["conformance"]["command"] = collect.command_text(
                [f"{cwd}/build/bin/mm-conformance", *tool_args["conformance"]]
            )
            report["accuracy"]["command"] = collect.command_text(
                [f"{cwd}/build/bin/mm-fuzz", "--json", f"{tmp}/f.json", *tool_args["fuzz"]],
                drop=("--json",),
            )
            html_text, markdown, derived = render_quiet(report)
        for kind, text in (("html", html_text), ("md", markdown), ("json", json.dumps(report))):
            self.assertNotIn(cwd, text, kind)
        self.assertIn("build/bin/mm-fuzz --expectations", html_text)


class MergeFuzzTest(unittest.TestCase):
    def test_runs_per_backend_add_their_failures_and_keep_their_errors(self):
        runs = [
            {"stats": {"problems": 10, "failures": 3}, "findings": [{"kind": "FAIL"}]},
            {"stats": {"problems": 10, "failures": 0}, "error": "driver died"},
            {"stats": {"problems": 10, "failures": 2}, "findings": [{"kind": "ERROR"}]},
        ]
        merged = collect.merge_fuzz(runs)
        self.assertEqual(merged["stats"]["failures"], 5)
        self.assertEqual(merged["stats"]["problems"], 10, "the same problems for each backend")
        self.assertEqual(merged["errors"], ["driver died"])
        self.assertEqual([f["kind"] for f in merged["findings"]], ["FAIL", "ERROR"])


class RenderTest(unittest.TestCase):
    def test_fail_is_first_and_red(self):
        html_text, markdown, derived = render_quiet(synthetic_report("FAIL"))
        problems_at = html_text.index('class="problems"')
        self.assertLess(problems_at, html_text.index("<table"))
        self.assertIn("conformance FAIL: test_matmul_2d", html_text[problems_at:])
        self.assertTrue(markdown.split("## Summary", 1)[1].lstrip().startswith("**Problems"))
        self.assertEqual(len(derived["problems"]), 1)

    def test_a_declared_deviation_is_listed_with_its_reason_not_as_a_problem(self):
        report = synthetic_report("XFAIL")
        report["conformance"]["expectations"] = {
            "file": "build/reports/declared-expectations.json",
            "entries": [
                declared_entry("test_matmul_2d", "beta", "beta 1.0 drops the last row", 1),
                declared_entry("test_matmul_3d", "beta", "beta 1.0 refuses rank 3", 0),
                dict(
                    declared_entry("test_big", "beta", "beta's AVX2 path", 0),
                    not_here="this CPU has avx512bw",
                ),
            ],
        }
        report["declared_expectations"] = {
            "applied": True,
            "files": ["backends/runtimes/js/expectations/beta.json"],
            "entries": 2,
        }
        html_text, markdown, derived = render_quiet(report)
        self.assertEqual(derived["problems"], [])
        declared = markdown[markdown.index("Declared deviations") :]
        self.assertIn("backends/runtimes/js/expectations/beta.json", declared)
        self.assertIn("| beta | test_matmul_2d | XFAIL | 1 | beta 1.0 drops the last row", declared)
        self.assertNotIn("refuses rank 3", declared)
        self.assertIn("1 more entry matched no result here", declared)
        # An entry of a code path this CPU does not take is said to be so, not silently absent.
        self.assertIn("not for this CPU (this CPU has avx512bw): beta test_big", declared)
        self.assertIn("1 XFAIL (declared deviations)", markdown)
        self.assertIn("No FAIL and no ERROR beyond 1 declared deviation(s)", html_text)

    def test_a_fuzz_finding_a_runtime_declared_is_shown_but_not_a_problem(self):
        report = synthetic_report()
        finding = {
            "kind": "ERROR",
            "backend": "beta",
            "dtype": "float",
            "minimal_a_shape": [1, 0],
            "minimal_b_shape": [0, 1],
            "message": "refused K = 0",
            "replay": "mm-fuzz --seed 1 --first 3 --cases 1 --backend beta",
        }
        report["accuracy"]["report"]["findings"] = [finding]
        report["accuracy"]["report"]["stats"] = {"failures": 1}
        report["accuracy"]["exit_code"] = 1
        _, _, derived = render_quiet(report)
        self.assertEqual(len(derived["problems"]), 2, "the finding and mm-fuzz's exit code")
        finding["declared"] = {"name": "K = 0", "reason": "beta refuses K = 0", "file": "f.json"}
        _, markdown, derived = render_quiet(report)
        self.assertEqual(derived["problems"], [])
        self.assertIn("| ERROR (declared) | beta | float |", markdown)

    def declared_finding_report(self, failures, error=None):
        report = synthetic_report()
        report["accuracy"]["report"]["findings"] = [
            {
                "kind": "FAIL",
                "backend": "beta",
                "dtype": "float",
                "message": "wrong",
                "declared": {"name": "n", "reason": "r", "file": "f.json"},
            },
            {"kind": "XFAIL", "backend": "alpha", "dtype": "float", "message": "declared"},
        ]
        report["accuracy"]["report"]["stats"] = {"failures": failures}
        if error:
            report["accuracy"]["report"]["errors"] = [error]
        report["accuracy"]["exit_code"] = 1
        return report

    def test_failures_beyond_the_declared_findings_keep_the_exit_code_a_problem(self):
        _, _, derived = render_quiet(self.declared_finding_report(failures=1))
        self.assertEqual(derived["problems"], [])
        _, _, derived = render_quiet(self.declared_finding_report(failures=5))
        self.assertEqual(len(derived["problems"]), 1)
        self.assertIn("mm-fuzz exited 1: 5 failure(s), 1 of them declared", derived["problems"][0])
        self.assertIn("4 beyond the findings shown (raise --max-findings)", derived["problems"][0])

    def test_an_error_of_the_fuzzer_is_a_problem_even_with_every_finding_declared(self):
        report = self.declared_finding_report(failures=1, error="backend beta: driver died")
        _, _, derived = render_quiet(report)
        self.assertEqual(len(derived["problems"]), 1)
        self.assertIn("error: backend beta: driver died", derived["problems"][0])

    def test_a_report_without_a_failure_count_does_not_explain_an_exit_code(self):
        report = self.declared_finding_report(failures=1)
        del report["accuracy"]["report"]["stats"]
        _, _, derived = render_quiet(report)
        self.assertEqual(len(derived["problems"]), 1)
        self.assertIn("counts no failures", derived["problems"][0])

    def test_a_declared_deviation_that_did_not_occur_is_a_problem(self):
        _, _, derived = render_quiet(synthetic_report("XPASS"))
        self.assertEqual(len(derived["problems"]), 1)
        self.assertIn("conformance XPASS: test_matmul_2d", derived["problems"][0])

    def test_all_pass_says_so(self):
        html_text, _, derived = render_quiet(synthetic_report("PASS"))
        self.assertEqual(derived["problems"], [])
        self.assertIn("No FAIL and no ERROR anywhere.", html_text)

    def test_fastest_and_most_accurate_come_from_the_data(self):
        _, markdown, derived = render_quiet(synthetic_report())
        medium = [f for f in derived["fastest"] if f["sizes"].startswith("medium")]
        self.assertEqual(medium[0]["fastest"], "alpha")  # 70 GFLOP/s against beta's 40.
        tiny = [f for f in derived["fastest"] if f["sizes"].startswith("tiny")]
        self.assertEqual(tiny[0]["fastest"], "beta")  # 200 ns against alpha's 300.
        accuracy = {(r["backend"], r["dtype"]): r for r in derived["accuracy"]}
        self.assertEqual(accuracy[("beta", "float")]["worst_ulp"], 9.0)
        self.assertEqual(accuracy[("beta", "float")]["p99_bound_fraction"], 0.3)
        self.assertIn("| float | alpha | 1 |", markdown)  # Most accurate float backend.

    def test_percent_of_peak_uses_the_same_dtype_and_threads(self):
        _, _, derived = render_quiet(synthetic_report())
        alpha_128 = [
            r for r in derived["speed"] if r["name"].startswith("matmul/alpha/float/128x128x128")
        ][0]
        self.assertAlmostEqual(alpha_128["percent_of_peak"], 70.0)

    def test_one_thread_figures_count_cpu_time(self):
        # A machine busy with other work doubles the wall time, not the CPU time: the 1-thread
        # figure is the CPU-time rate.
        report = synthetic_report()
        entry = report["speed"]["runs"][0]["benchmark_json"]["benchmarks"][2]
        entry["real_time"], entry["GFLOPS"] = 120000, 35.0
        _, _, derived = render_quiet(report)
        alpha_128 = [
            r for r in derived["speed"] if r["name"].startswith("matmul/alpha/float/128x128x128")
        ][0]
        self.assertAlmostEqual(alpha_128["rate_gflops"], 70.0)
        self.assertAlmostEqual(alpha_128["gflops"], 35.0)

    def test_rendered_page_passes_the_browser_check(self):
        html_text, _, _ = render_quiet(synthetic_report("FAIL"))
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "compare.html"
            path.write_text(html_text)
            self.assertEqual(browser_check.check(path), [])

    def test_fuzzer_statistics_and_findings_without_error_figures(self):
        # mm-fuzz's report as it stands: verdict counts per backend and findings, no per-problem
        # ULPs. The section shows those, says what is missing, and a FAIL finding goes on top.
        report = synthetic_report()
        report["accuracy"] = {
            "exit_code": 1,
            "report": {
                "stats": {
                    "problems": 500,
                    "seconds": 5.0,
                    "backends": {
                        "alpha": {"PASS": 480, "FAIL": 0, "BOUND": 20},
                        "beta": {"PASS": 499, "FAIL": 1, "BOUND": 0},
                    },
                },
                "findings": [
                    {
                        "kind": "FAIL",
                        "backend": "beta",
                        "dtype": "bfloat16",
                        "minimal_a_shape": [1, 2],
                        "minimal_b_shape": [2, 1],
                        "message": "outside the bound",
                        "replay": "mm-fuzz --seed 1",
                        "worst": {"abs_error": 0.5, "bound": 0.25},
                    }
                ],
            },
        }
        html_text, markdown, derived = render_quiet(report)
        self.assertIn("| beta | 499 | 1 | 0 |", markdown)
        self.assertIn("| FAIL | beta | bfloat16 | [1, 2] x [2, 1] | 0.5 | 0.25 | 2 |", markdown)
        self.assertIn("no per-problem error figures", markdown)
        self.assertTrue(
            any(p.startswith("fuzzer FAIL: beta bfloat16") for p in derived["problems"])
        )
        self.assertLess(html_text.index("fuzzer FAIL"), html_text.index("<table"))

    def test_scoreboard_has_a_row_per_backend_and_dtype_from_every_tool(self):
        report = synthetic_report("FAIL")
        report["conformance"]["official"] = {
            "complete": False,
            "found": [{"case": "test_matmul_2d"}],
        }
        report["conformance"]["results"].append(
            {
                "case": "builtin_vector_vector",
                "source": "built-in",
                "backend": "alpha",
                "dtype": "float",
                "a_shape": "[3]",
                "b_shape": "[3]",
                "verdict": "BOUND",
                "message": "within the bound",
            }
        )
        report["accuracy"]["report"]["stats"] = {
            "by_dtype": {
                "alpha": {"float": {"PASS": 90, "BOUND": 3}},
                "beta": {"float": {"PASS": 80, "FAIL": 13}},
            }
        }
        report["accuracy"]["report"]["statistics"] = [
            {"backend": "alpha", "dtype": "float", "special_problems": 12, "special_wrong": 0},
            {"backend": "beta", "dtype": "float", "special_problems": 12, "special_wrong": 5},
        ]
        report["speed"]["runs"][0]["benchmark_json"]["benchmarks"].append(
            bench_entry("matmul/beta/float/256x256x256/real_time", 1000000, 33.5)
        )
        leak = "resident memory grows by 64.0 MiB per call (mean of 12 calls after warm-up)"
        report["conformance"]["resources"] = {
            "backends": {"alpha": {"findings": []}, "beta": {"findings": [leak]}}
        }
        _, markdown, derived = render_quiet(report)
        board = {(e["backend"], e["dtype"]): e for e in derived["scoreboard"]}
        self.assertEqual(board[("alpha", "float")]["official"], {"PASS": 1})
        self.assertEqual(board[("beta", "float")]["official"], {"FAIL": 1})
        self.assertEqual(board[("alpha", "float")]["built-in"], {"BOUND": 1})
        self.assertEqual(board[("beta", "float")]["gflops"]["256x256x256"], {"1": 33.5})
        self.assertAlmostEqual(board[("beta", "float")]["tiny_seconds"], 200e-9)
        self.assertEqual(board[("beta", "float")]["worst_bound_fraction"], 0.3)
        scoreboard = markdown.split("## Summary", 1)[1].split("## Machine", 1)[0]
        # One row per backend: verdict counts of each source, specials, bound, speed, tiny.
        self.assertIn(
            "| alpha | library | native | – | 1 PASS | 1 BOUND | none | 90 PASS, 3 BOUND | "
            "correct (12) | 0.01 |",
            scoreboard,
        )
        self.assertIn(
            "| beta | library | native | – | 1 FAIL | – | none | 80 PASS, 13 FAIL | "
            "WRONG in 5 of 12 | 0.3 | 33.5 [33.5–33.5], 3 reps, others 0.00 cores |",
            scoreboard,
        )
        # What the calls left behind: the finding with its figure, or none.
        self.assertIn(
            "200 ns [200 ns–200 ns], 3 reps, others 0.00 cores | FAIL under --strict: resident "
            "memory grows by 64.0 MiB per call: " + leak,
            scoreboard,
        )
        self.assertRegex(scoreboard, r"\| alpha \|.*\| none \|")
        # Every dtype a backend computes has its table, with every backend in it.
        self.assertEqual(scoreboard.count("**Scoreboard, "), len(data.DTYPE_ORDER))

    def test_scoreboard_marks_declared_arithmetic_looser_than_onnx(self):
        def declared(accumulation, flushes=False, text=None):
            return {
                "level": "native",
                "note": "",
                "arithmetic": {
                    "accumulation": accumulation,
                    "flushes_subnormals": flushes,
                    "text": text or f"accumulates in {accumulation}",
                },
            }

        report = synthetic_report()
        alpha, beta = report["machine"]["backends"]
        alpha["supports"] = {
            "float": declared("float", text="accumulates in float32"),
            "bfloat16": declared("float", flushes=True, text="accumulates in float32, flushes"),
            "float16": declared("float"),
            "int32": declared("int32", text="exact modulo 2^32"),
        }
        beta["supports"] = {
            "float": declared("float16"),
            "bfloat16": declared("bfloat16"),
            "float16": declared("float16"),
            "int32": declared("float"),
            "double": declared("double"),
        }
        _, markdown, derived = render_quiet(report)
        board = {(e["backend"], e["dtype"]): e for e in derived["scoreboard"]}
        # As ONNX's reference arithmetic: float32 for float16, exact integers. Not marked.
        for key in (("alpha", "float"), ("alpha", "float16"), ("alpha", "int32")):
            self.assertIsNone(board[key]["looser_than_onnx"], key)
        self.assertIsNone(board[("beta", "double")]["looser_than_onnx"])
        # Fewer bits, a float type for an integer, flushed subnormals: each marked, with why.
        self.assertIn("accumulates in bfloat16", board[("beta", "bfloat16")]["looser_than_onnx"])
        self.assertIn("accumulates in float16", board[("beta", "float16")]["looser_than_onnx"])
        self.assertIn("accumulates in float16", board[("beta", "float")]["looser_than_onnx"])
        self.assertIn("not exact", board[("beta", "int32")]["looser_than_onnx"])
        self.assertIn("flushes subnormals", board[("alpha", "bfloat16")]["looser_than_onnx"])
        # A dtype without a declaration (alpha's double here) is not called looser.
        self.assertIsNone(board[("alpha", "double")]["looser_than_onnx"])
        scoreboard = markdown.split("## Summary", 1)[1].split("## Machine", 1)[0]
        self.assertIn("| alpha | library | native | exact modulo 2^32 |", scoreboard)
        self.assertIn(
            "| beta | library | native | LOOSER than ONNX: accumulates in bfloat16: accumulates "
            "in bfloat16 where ONNX uses float |",
            scoreboard,
        )
        self.assertIn("| alpha | library | native | accumulates in float32 |", scoreboard)
        self.assertEqual(scoreboard.count("LOOSER than ONNX"), 5)

    def test_scoreboard_shows_a_runtimes_declared_fuzz_deviation_as_such(self):
        report = synthetic_report()
        report["accuracy"]["report"]["stats"] = {
            "by_dtype": {
                "alpha": {"bfloat16": {"PASS": 26, "FAIL": 12}},
                "beta": {"bfloat16": {"PASS": 30, "FAIL": 8}},
            }
        }
        declared = {"name": "bf16 summed in bf16", "reason": "torch 1.13", "file": "t.fuzz.json"}

        def finding(backend, marked):
            f = {"kind": "FAIL", "backend": backend, "dtype": "bfloat16", "message": "m"}
            return dict(f, declared=declared) if marked else f

        report["accuracy"]["report"]["findings"] = [
            finding("alpha", True),
            finding("alpha", True),
            finding("beta", True),
            finding("beta", False),  # Undeclared: beta's cell stays a plain, red FAIL.
        ]
        html_text, markdown, derived = render_quiet(report)
        board = {(e["backend"], e["dtype"]): e for e in derived["scoreboard"]}
        self.assertEqual(board[("alpha", "bfloat16")]["fuzz_declared"], [declared])
        self.assertEqual(board[("beta", "bfloat16")]["fuzz_declared"], [])
        scoreboard = markdown.split("## Summary", 1)[1].split("## Machine", 1)[0]
        self.assertIn(
            "declared deviation: 26 PASS, 12 FAIL: bf16 summed in bf16: torch 1.13 (t.fuzz.json)",
            scoreboard,
        )
        self.assertIn('<td class="v-FAIL">30 PASS, 8 FAIL</td>', html_text)

    def test_a_figure_whose_repetitions_disagree_is_unstable_not_a_speed(self):
        report = quiet(synthetic_report())
        entries = report["speed"]["runs"][0]["benchmark_json"]["benchmarks"]
        # alpha 128^3: 60, 60, then 90 us (50 % above the median, margin 15 %).
        slow = [e for e in entries if e["name"].startswith("matmul/alpha/float/128")][2]
        entries[entries.index(slow)] = dict(slow, real_time=90000, cpu_time=90000)
        html_text, markdown, derived = render_once(report)
        alpha = [r for r in derived["speed"] if r["name"].startswith("matmul/alpha/float/128")][0]
        self.assertNotIn("rate_gflops", alpha)  # Never the library's speed...
        self.assertIn("repetitions disagree: max - min is 50 %", alpha["unstable"][0])
        # ... nor ranked: beta's 40 GFLOP/s is the only stable medium figure.
        medium = [f for f in derived["fastest"] if f["sizes"].startswith("medium")]
        self.assertEqual(medium[0]["fastest"], "beta")
        self.assertIn('<summary class="v-unstable">unstable</summary>', html_text)
        # The Markdown twin gives the reason; every attempt's details stay in the page.
        self.assertIn(
            "| 128x128x128 | unstable: repetitions disagree: max - min is 50 % of the median "
            "(margin 15 %) (1 attempt(s)) |",
            markdown,
        )
        self.assertIn("not shown as the speed: repetitions disagree", html_text)
        self.assertIn("attempt 1: 3 repetition(s)", html_text)
        self.assertNotIn("attempt 1:", markdown)

    def test_a_figure_measured_under_load_is_unstable_and_a_quiet_retry_wins(self):
        report = quiet(synthetic_report())
        run = report["speed"]["runs"][0]
        name = "matmul/beta/float/128x128x128/real_time"
        run["load"][name] = dict(QUIET, other_cores=0.5)  # 1 CPU, 1 thread: nothing free.
        _, _, derived = render_once(report)
        beta = [r for r in derived["speed"] if r["name"] == name][0]
        self.assertIn("measured under load: other processes used 0.50 cores", beta["unstable"][0])
        # Measured again on a quiet machine (collect.py's retry): that attempt is the figure.
        again = [
            dict(e, real_time=50000, cpu_time=50000)
            for e in run["benchmark_json"]["benchmarks"]
            if e["name"] == name
        ]
        report["speed"]["runs"].append(
            {
                "threads": 1,
                "attempt": 1,
                "seconds": 0.1,
                "benchmark_json": {"benchmarks": again},
                "load": {name: dict(QUIET)},
            }
        )
        _, _, derived = render_once(report)
        beta = [r for r in derived["speed"] if r["name"] == name][0]
        self.assertEqual(beta["unstable"], [])
        self.assertAlmostEqual(beta["rate_seconds"], 50e-6)
        self.assertEqual(len(beta["attempts"]), 2)

    def test_the_stability_rule_and_its_margins(self):
        judge = stability.judge
        quiet_load = {"other_cores": 0.0, "steal_cores": 0.0}
        self.assertEqual(judge([1.0, 1.1, 1.15], quiet_load, 1, 2), [])
        self.assertTrue(judge([1.0, 1.2], quiet_load, 1, 2))  # Too few repetitions.
        self.assertTrue(judge([1.0, 1.1, 1.17], quiet_load, 1, 2))  # 15.5 % > 15 %.
        self.assertTrue(judge([1.0, 1.0, 1.0], None, 1, 2))  # Load unknown.
        # One thread on two CPUs leaves one free: another process on it is allowed.
        self.assertEqual(judge([1.0] * 3, {"other_cores": 1.2, "steal_cores": 0}, 1, 2), [])
        self.assertTrue(judge([1.0] * 3, {"other_cores": 0.3, "steal_cores": 0}, 2, 2))
        self.assertTrue(judge([1.0] * 3, {"other_cores": 0, "steal_cores": 0.2}, 1, 2))

    def test_runtimes_show_their_kind_and_refused_shape_classes(self):
        report = synthetic_report()
        report["machine"]["backends"][1]["runtime"] = True
        report["conformance"]["results"].append(
            shape_result("beta", "vector_matrix", "float", "ERROR", data_set="test_data_set_0")
            | {"message": "conformance gap: driver 'beta' refused the shape of ..."}
        )
        _, markdown, derived = render_quiet(report)
        board = {(e["backend"], e["dtype"]): e for e in derived["scoreboard"]}
        self.assertEqual(board[("beta", "float")]["kind"], "runtime")
        self.assertEqual(board[("beta", "float")]["gaps"], ["vector_matrix"])
        self.assertEqual(board[("alpha", "float")]["gaps"], [])
        self.assertIn("| beta | runtime | native |", markdown)
        self.assertIn("ERROR: 1 conformance gap(s): vector_matrix", markdown)

    def test_a_crash_of_the_fuzzer_is_a_problem_with_its_command(self):
        report = synthetic_report()
        report["accuracy"]["crashes"] = [
            {
                "backend": "beta",
                "dtype": "bfloat16",
                "error": "mm-fuzz killed by signal 4",
                "command": "mm-fuzz --quiet --json f.json --backend beta --dtype bfloat16",
            }
        ]
        html_text, _, derived = render_quiet(report)
        self.assertIn(
            "fuzzer crash: beta bfloat16: mm-fuzz killed by signal 4 (run again: "
            "mm-fuzz --quiet --json f.json --backend beta --dtype bfloat16)",
            derived["problems"],
        )
        self.assertLess(html_text.index("fuzzer crash"), html_text.index("<table"))

    def test_no_backend_is_known_by_name(self):
        # Colours, order and labels come from the data: no file of the renderer names a backend
        # mm registers (built-in, BLAS, the runtime judged from its outputs) or a baseline's
        # family. "auto" is not in the list: the section fed by --auto-table is about the backend
        # that reads that calibration table, and the word is English besides.
        here = pathlib.Path(__file__).resolve().parent
        files = [here / "render.py", *sorted((here / "rendering").glob("*.py"))]
        self.assertGreaterEqual(len(files), 5, files)
        names = ("reference", "onednn", "dnnl", "eigen", "openblas", "blis", "atlas", "netlib")
        for path in files:
            source = path.read_text().lower()
            for name in (*names, "onnxruntime", "raw"):
                self.assertIsNone(re.search(rf"\b{name}", source), f"{path.name} names {name}")

    def test_renamed_backends_change_nothing_but_the_names(self):
        # Every backend and baseline renamed (keeping their alphabetical order): the Markdown and
        # the derived JSON are the original ones with the names replaced, character for character.
        names = {"alpha": "my-GEMM_2", "beta": "zz9", "raw_onednn": "bare_lib"}

        def rename(text):
            for old, new in names.items():
                text = text.replace(old, new)
            return text

        for verdict in ("PASS", "FAIL"):
            original = synthetic_report(verdict)
            renamed = json.loads(rename(json.dumps(original)))
            _, original_md, original_derived = render_quiet(original)
            _, markdown, derived = render_quiet(renamed)
            self.assertEqual(markdown, rename(original_md))
            self.assertEqual(json.dumps(derived), rename(json.dumps(original_derived)))

    def test_a_plugin_named_anything_gets_the_same_page(self):
        # The synthetic report with its backends and baseline renamed, plus a baseline declared
        # by the data: every table, plot and colour follows the names.
        text = json.dumps(synthetic_report("PASS"))
        renamed = json.loads(
            text.replace("alpha", "my-GEMM_2")
            .replace("beta", "zz9")
            .replace("raw_onednn", "bare_lib")
        )
        renamed["machine"]["baselines"] = [
            {"name": "bare_lib", "label": "bare MyLib", "backend": "zz9"}
        ]
        original_html, original_md, _ = render_quiet(synthetic_report("PASS"))
        html_text, markdown, derived = render_quiet(renamed)
        self.assertIn("| my-GEMM_2 | library | native | – | – |", markdown)
        self.assertIn("bare MyLib", html_text)
        self.assertEqual(data.impl_colour("bare_lib"), data.impl_colour("zz9"))
        self.assertNotEqual(data.impl_colour("my-GEMM_2"), data.impl_colour("zz9"))
        self.assertEqual(markdown.count("| my-GEMM_2 |"), original_md.count("| alpha |"))
        self.assertEqual(
            html_text.count('<img class="plot"'), original_html.count('<img class="plot"')
        )
        self.assertEqual(len(derived["scoreboard"]), 2 * len(data.DTYPE_ORDER))

    def test_the_renderer_only_reads_its_input(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = pathlib.Path(tmp) / "compare.json"
            data.write_text(json.dumps(synthetic_report()))
            before = data.read_bytes()
            argv = sys.argv
            sys.argv = [
                "render.py",
                str(data),
                "--html",
                f"{tmp}/c.html",
                "--markdown",
                f"{tmp}/c.md",
                "--derived",
                f"{tmp}/d.json",
            ]
            try:
                render.main()
            finally:
                sys.argv = argv
            self.assertEqual(data.read_bytes(), before)
            self.assertIn("scoreboard", json.loads(pathlib.Path(f"{tmp}/d.json").read_text()))

    def test_rendering_leaves_the_report_as_it_was(self):
        # The page is derived from the data, never written into it: rendering twice from one
        # report object gives the same page, and the object is unchanged.
        report = synthetic_report("FAIL")
        report["accuracy"]["crashes"] = [{"backend": "beta", "dtype": "float", "error": "x"}]
        before = json.dumps(report, sort_keys=True)
        first = emit.render(quiet(report))
        self.assertEqual(json.dumps(report, sort_keys=True), before)
        self.assertEqual(emit.render(quiet(report)), first)

    def test_json_of_derived_tables_is_serialisable(self):
        _, _, derived = render_quiet(synthetic_report())
        self.assertIn("fastest", json.loads(json.dumps(derived)))


if __name__ == "__main__":
    unittest.main()
