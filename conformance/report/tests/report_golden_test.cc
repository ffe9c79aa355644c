// Every report format, byte for byte, for fixed reports: one with every part of the header set
// (interruption, resumption, expectations, resource findings, the official corpus altered, data
// roots, shadowed and skipped models, backends not available here) and results of every verdict,
// one with nothing but the defaults, and the merge of two fixed shard reports (merge-shard-*.json,
// the JSON reports of `mm-conformance --shard I/2` over ONNX's MatMul node tests on reference and
// eigen, their data root renamed data/node). The golden files (report/tests/golden/) were written
// by the renderers and the merge as they were before the header became one model and the merge
// was split: a renderer that drops, reorders or rewords a byte of a report fails here.
//
// MM_WRITE_GOLDEN=1 rewrites the golden files instead of comparing (after a deliberate change of
// a format; the diff is then reviewed like code).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "mm/conformance/report/console_report.h"
#include "mm/conformance/report/json_report.h"
#include "mm/conformance/report/junit_report.h"
#include "mm/conformance/report/markdown_report.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::conformance {
namespace {

std::string GoldenPath(const std::string& name) {
  return std::string(MM_SOURCE_DIR) + "/conformance/report/tests/golden/" + name;
}

// The bytes of the file at `path`; empty when it cannot be read (which the comparison shows).
std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares `text` with golden file `name` (or writes it, under MM_WRITE_GOLDEN=1).
void ExpectGolden(const std::string& name, const std::string& text) {
  const std::string path = GoldenPath(name);
  if (const char* write = std::getenv("MM_WRITE_GOLDEN"); write && std::string(write) == "1") {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  EXPECT_EQ(text, ReadFile(path)) << "the report differs from " << path;
}

Result Sample(std::string case_name, int case_index, std::string data_set, std::string backend,
              Verdict verdict, std::string message) {
  Result r;
  r.case_name = std::move(case_name);
  r.case_index = case_index;
  r.data_set = std::move(data_set);
  r.backend = std::move(backend);
  r.source = "data/" + r.case_name;
  r.dtype = DType::kFloat;
  r.a_dims = {2, 3};
  r.b_dims = {3, 4};
  r.verdict = verdict;
  r.message = std::move(message);
  r.vs_reference = "agrees with reference";
  r.seconds = 0.125;
  return r;
}

// Results of every verdict, two data sets of one case, a suspect data set and a conformance gap.
std::vector<Result> EveryVerdict() {
  Result pass = Sample("test_a", 0, "test_data_set_0", "reference", Verdict::kPass, "exact");
  pass.vs_expected = Comparison{};
  pass.vs_expected->match = true;
  pass.vs_expected->elements = 8;
  pass.vs_expected->bitwise_equal = true;
  pass.implementation = "reference loops";
  Result fail = Sample("test_a", 0, "test_data_set_1", "fast", Verdict::kFail,
                       "1 of 8 elements differ; worst at [1]: expected <1>, got \"2\" | x");
  Comparison differs;
  differs.elements = 8;
  differs.differing = 1;
  differs.max_abs_error = 1;
  differs.max_rel_error = std::numeric_limits<double>::infinity();
  differs.worst = WorstElement{.flat_index = 1,
                               .index = {0, 1},
                               .expected = "1",
                               .actual = "2",
                               .expected_value = 1,
                               .actual_value = 2,
                               .abs_error = 1,
                               .rel_error = 1,
                               .allowed = 1e-4};
  fail.vs_expected = differs;
  fail.support_note = "bf16 via f32";
  fail.data_suspect = "expected Y of test_data_set_1 is not the exact product";
  Result pass_fast = pass;
  pass_fast.backend = "fast";
  pass_fast.data_set = "test_data_set_0";
  Result bound = Sample("test_b", 1, "test_data_set_0", "fast", Verdict::kBound, "outside");
  Result imprecise =
      Sample("test_b", 1, "test_data_set_0", "reference", Verdict::kImprecise, "rounds twice");
  Result xfail = Sample("test_c", 2, "test_data_set_0", "fast", Verdict::kXFail, "known: tracked");
  Result xpass = Sample("test_c", 2, "test_data_set_0", "reference", Verdict::kXPass, "passes");
  Result skip = Sample("test_d", 3, "", "fast", Verdict::kSkip, "skipped by expectation");
  Result unsupported = Sample("test_d", 3, "", "reference", Verdict::kUnsupported, "no f64");
  unsupported.dtype.reset();
  Result gap = Sample("test_e\x1b[31m", 4, "test_data_set_0", "fast", Verdict::kError,
                      "conformance gap: refuses float\tthough declared <supported> & \xFF");
  Result error = Sample("test_e\x1b[31m", 4, "test_data_set_0", "reference", Verdict::kError,
                        "crashed: SIGSEGV");
  return {pass, pass_fast, fail, bound, imprecise, xfail, xpass, skip, unsupported, gap, error};
}

// A report with every part of the header set.
Report FullReport() {
  Report report;
  report.version = "1.2.3";
  report.tolerance = {.rtol = 1e-4, .atol = 1e-5};
  report.rule = ToleranceRule::kBound;
  report.strict = true;
  report.require_official = true;
  report.backends = {"reference", "fast"};
  report.backend_info = {{"reference", "the oracle", "scalar loops"},
                         {"fast", "test", "AVX-512 | bf16 <fast>"}};
  report.unavailable_backends = {{"gpu", "no device: /dev/dri missing"}};
  report.machine = {.cpu_model = "AMD EPYC | Zen 4",
                    .logical_cpus = 2,
                    .cpu_features = "avx2 avx512f",
                    .omp_num_threads = "2",
                    .kernel_variables = {{"ONEDNN_MAX_CPU_ISA", "AVX512_CORE"}},
                    .os = "Linux 6.1 x86_64",
                    .compiler = "g++ 12.2",
                    .mm_kernels = "avx512"};
  report.loader_versions = "protobuf 3.21.12";
  report.roots = {{"data/node", "--data-dir"}, {"more_data", "MM_ONNX_DATA"}};
  report.skipped = {{"test_add", "data/node/test_add", "not a MatMul case: op Add"}};
  report.shadowed = {{"test_a", "more_data/test_a", "data/node/test_a"}};
  report.official.cases = {
      {"test_matmul_2d", OfficialStatus::State::kIntact, "data/node/test_matmul_2d", {}},
      {"test_matmul_3d", OfficialStatus::State::kMissing, {}, {}},
      {"test_matmul_4d",
       OfficialStatus::State::kAltered,
       "data/node/test_matmul_4d",
       {"model.onnx: SHA-256 differs", "input_0.pb: missing"}}};
  report.results = EveryVerdict();
  report.exit_code = 1;
  report.shard = {2, 3};
  report.selection = {.cases = 5, .results = 11, .fingerprint = "0123456789abcdef"};
  report.run_selection = {.cases = 15, .results = 33, .fingerprint = "fedcba9876543210"};
  Expectations expectations;
  expectations.source = "expectations/fast.json";
  expectations.entries = {
      {"test_c", "fast", Expectation::Kind::kXFail, "rounds | twice", "https://example/1", 1},
      {"test_z*", "*", Expectation::Kind::kSkip, "gone", "https://example/2", 0},
      {"test_y",
       "fast",
       Expectation::Kind::kXFail,
       "avx2 path",
       "https://example/3",
       0,
       "*",
       {"avx512f"},
       "this CPU has avx512f"}};
  expectations.entries[0].data_set_pattern = "test_data_set_0";
  report.expectations = expectations;
  report.resumed = Resumption{.files = {"r1.json", "r 2.json"}, .taken = 7, .rerun = 1};
  report.interrupted = Interruption{.signal = 15,
                                    .results = 11,
                                    .expected = 20,
                                    .not_run = {"test_f", "test_g"},
                                    .incomplete = {"test_e\x1b[31m"}};
  BackendResources leak{
      .backend = "fast",
      .calls = 40,
      .processes = 2,
      .calls_after_warm_up = 38,
      .rss_growth_bytes = 38 << 20,
      .fd_growth = 38,
      .thread_growth = 0,
      .peak_rss_bytes = 1 << 30,
      .look_outs = 3,
      .spinning_look_outs = 1,
      .spinning_threads = 2,
      .findings = {"resident memory grows by 1.0 MiB per call", "1 descriptor left open per call"}};
  BackendResources clean;
  clean.backend = "reference";
  clean.calls = 40;
  clean.processes = 1;
  clean.calls_after_warm_up = 39;
  report.resources = {clean, leak};
  return report;
}

// Nothing but the defaults: no results, no backends, no machine.
Report EmptyReport() {
  Report report;
  report.version = "1.2.3";
  report.exit_code = 2;
  return report;
}

std::string Console(const Report& report, bool quiet) {
  std::ostringstream out;
  WriteConsole(report, out, quiet);
  return out.str();
}

TEST(ReportGoldenTest, EveryFormatOfAReportWithEveryPartOfTheHeader) {
  const Report report = FullReport();
  ExpectGolden("full.txt", Console(report, /*quiet=*/false));
  ExpectGolden("full-quiet.txt", Console(report, /*quiet=*/true));
  ExpectGolden("full.json", ToJson(report));
  ExpectGolden("full.xml", ToJUnitXml(report));
  ExpectGolden("full.md", ToMarkdown(report));
}

// The other branch of every choice the header makes: the onnx rule, not strict, nothing resumed,
// interrupted or expected, an official corpus not required and complete.
TEST(ReportGoldenTest, EveryFormatOfAReportUnderTheOtherOptions) {
  Report report = FullReport();
  report.rule = ToleranceRule::kOnnx;
  report.strict = false;
  report.require_official = false;
  report.expectations.reset();
  report.resumed.reset();
  report.interrupted.reset();
  report.official.cases.resize(1);
  report.selection.fingerprint.clear();
  report.shadowed.clear();
  report.skipped.clear();
  report.resources.resize(1);
  report.exit_code = 0;
  ExpectGolden("options.txt", Console(report, /*quiet=*/false));
  ExpectGolden("options.json", ToJson(report));
  ExpectGolden("options.xml", ToJUnitXml(report));
  ExpectGolden("options.md", ToMarkdown(report));
}

TEST(ReportGoldenTest, EveryFormatOfAnEmptyReport) {
  const Report report = EmptyReport();
  ExpectGolden("empty.txt", Console(report, /*quiet=*/false));
  ExpectGolden("empty.json", ToJson(report));
  ExpectGolden("empty.xml", ToJUnitXml(report));
  ExpectGolden("empty.md", ToMarkdown(report));
}

TEST(ReportGoldenTest, EveryFormatOfTheMergeOfTwoShards) {
  const mm::testing::TempDir out("mm_report_golden");
  MergeOptions options;
  options.inputs = {GoldenPath("merge-shard-2.json"), GoldenPath("merge-shard-1.json")};
  options.json = (out.path() / "merged.json").string();
  options.junit = (out.path() / "merged.xml").string();
  options.markdown = (out.path() / "merged.md").string();
  std::ostringstream console;
  const StatusOr<int> code = MergeShardReports(options, console);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  ExpectGolden("merged.txt", console.str());
  ExpectGolden("merged.json", ReadFile(options.json));
  ExpectGolden("merged.xml", ReadFile(options.junit));
  ExpectGolden("merged.md", ReadFile(options.markdown));
}

}  // namespace
}  // namespace mm::conformance
