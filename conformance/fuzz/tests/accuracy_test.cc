// The fuzzer measures how far each float result is from the exact product (in ULPs of the output
// dtype and as a fraction of what the K-aware bound accepts) and reports it per problem and per
// (backend, dtype) in --json, for the comparison report's accuracy section (docs/benchmarks.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/fuzz/shrink.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::fuzz {
namespace {

namespace fs = std::filesystem;
using mm::testing::CliRun;
using mm::testing::FuzzCli;
using mm::testing::TempDir;

const ErrorStats* Find(const FuzzReport& report, const std::string& backend, DType dtype) {
  for (const ErrorStats& e : report.error_stats) {
    if (e.backend == backend && e.dtype == dtype) return &e;
  }
  return nullptr;
}

OracleResult Oracle(const Tensor& a, const Tensor& b) {
  auto plan = PlanMatMul({a.dtype(), a.dims(), b.dims()});
  EXPECT_TRUE(plan.ok());
  auto oracle = ExactMatMul(*plan, a.view(), b.view());
  EXPECT_TRUE(oracle.ok());
  return std::move(*oracle);
}

// The correctly rounded result has no error; one ulp off a product of exact small integers (whose
// bound is tiny: every partial sum is exact) is 1 ULP and far outside the bound.
TEST(AccuracyTest, CorrectlyRoundedIsZeroAndOneUlpOffIsOneUlp) {
  const std::vector<float> a_values = {1, 2, 3}, b_values = {4, 5, 6};
  auto a = Tensor::FromValues<float>({1, 3}, a_values);
  auto b = Tensor::FromValues<float>({3, 1}, b_values);
  ASSERT_TRUE(a.ok() && b.ok());
  const OracleResult oracle = Oracle(*a, *b);
  const auto bounds = OracleBounds(oracle, Arithmetic{DType::kDouble, false}, 3);

  const ResultError exact = MeasureError(oracle.y.view(), oracle, bounds);
  EXPECT_EQ(exact.max_ulp, 0);
  ASSERT_TRUE(exact.bound_fraction.has_value());
  EXPECT_EQ(*exact.bound_fraction, 0);

  Tensor off = Clone(oracle.y);
  off.mutable_view().Data<float>()[0] = std::nextafter(32.0f, 100.0f);  // 32 + 2^-18.
  const ResultError error = MeasureError(off.view(), oracle, bounds);
  EXPECT_DOUBLE_EQ(error.max_ulp, 1.0);
  EXPECT_GT(*error.bound_fraction, 1.0);
}

// The p99 of a run and of a merge of its shards is the nearest-rank percentile: the smallest value
// with at least 99% of the values at or below it, so one outlier among 100 is not the p99.
TEST(AccuracyTest, PercentileIsTheNearestRank) {
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);  // Unsorted on purpose.
  EXPECT_EQ(Percentile(hundred, 0.99), 99);
  EXPECT_EQ(Percentile(hundred, 1.0), 100);
  std::vector<double> three = {5, 1, 3};
  EXPECT_EQ(Percentile(three, 0.5), 3);
  EXPECT_EQ(Percentile(three, 0), 1);
  std::vector<double> none;
  EXPECT_EQ(Percentile(none, 0.99), 0) << "no values: 0";
}

// A backend computing double in float is imprecise: its worst ULP error is far above 0 and its
// error far outside the bound; the reference (correct) backend stays within the bound.
TEST(AccuracyTest, PlantedImpreciseBackendIsOutsideTheBoundAndTheReferenceWithin) {
  const self_check::PlantedBackend& bug =
      self_check::PlantedBackendOf(self_check::Fault::kDoubleInFloat);
  BackendRegistry registry = BuiltinBackends();
  ASSERT_TRUE(registry
                  .Register(bug.name, "planted: double in float",
                            [bug]() -> StatusOr<std::unique_ptr<Backend>> {
                              return self_check::MakePlantedBackend(bug);
                            })
                  .ok());
  FuzzOptions options;
  options.seed = 1;
  options.cases = 300;
  options.backends = {"reference", bug.name};
  options.generator.dtypes = {DType::kFloat, DType::kDouble};
  options.shrink = false;
  const FuzzReport report = RunFuzz(options, registry, nullptr);
  ASSERT_TRUE(report.error.empty()) << report.error;

  const ErrorStats* planted = Find(report, bug.name, DType::kDouble);
  ASSERT_NE(planted, nullptr);
  EXPECT_GT(planted->worst_ulp, 1e6) << "double rounded to float loses 29 bits";
  ASSERT_TRUE(planted->worst_bound_fraction.has_value());
  EXPECT_GT(*planted->worst_bound_fraction, 1.0);
  for (DType dtype : {DType::kFloat, DType::kDouble}) {
    const ErrorStats* reference = Find(report, "reference", dtype);
    ASSERT_NE(reference, nullptr) << DTypeName(dtype);
    EXPECT_GT(reference->problems, 50) << DTypeName(dtype);
    ASSERT_TRUE(reference->worst_bound_fraction.has_value());
    EXPECT_LE(*reference->worst_bound_fraction, 1.0) << DTypeName(dtype);
    EXPECT_LE(reference->p99_ulp, reference->worst_ulp);
    EXPECT_EQ(reference->p99_bound_fraction.has_value(), true);
  }
  EXPECT_EQ(Find(report, "reference", DType::kInt32), nullptr) << "integers are exact";
  // Every judged float result is a record: 300 problems x 2 backends (none UNSUPPORTED here).
  EXPECT_EQ(report.errors.size(), 600u);
  EXPECT_FALSE(report.errors_capped);
}

TEST(AccuracyTest, PerProblemRecordsAreCappedAndSaySo) {
  FuzzOptions options;
  options.cases = 200;
  options.backends = {"reference"};
  options.generator.dtypes = {DType::kFloat};
  options.max_error_records = 50;
  const FuzzReport report = RunFuzz(options, BuiltinBackends(), nullptr);
  EXPECT_EQ(report.errors.size(), 50u);
  EXPECT_TRUE(report.errors_capped);
  const ErrorStats* stats = Find(report, "reference", DType::kFloat);
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->problems, 200) << "statistics count every result, not only the records";
}

// A float MatMul that skips the terms whose A element is zero (a shortcut some GEMMs take): then
// 0 * inf and 0 * NaN never make the NaN IEEE (and numpy) give.
Status SkipZeroTerms(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  for (std::int64_t i = 0; i < p.batch; ++i) {
    const auto [ao, bo] = p.BatchOffsets(i);
    for (std::int64_t r = 0; r < p.m; ++r) {
      for (std::int64_t c = 0; c < p.n; ++c) {
        double sum = 0;
        for (std::int64_t t = 0; t < p.k; ++t) {
          const float x = a.Data<float>()[ao + r * p.k + t];
          if (x != 0) sum += static_cast<double>(x) * b.Data<float>()[bo + t * p.n + c];
        }
        y.Data<float>()[(i * p.m + r) * p.n + c] = static_cast<float>(sum);
      }
    }
  }
  return OkStatus();
}

// The IEEE-specials counts of the JSON: results with NaN/inf inputs reaching Y, and those with a
// wrong special. The reference gets every one right; a backend skipping zero terms does not.
TEST(AccuracyTest, SpecialValueResultsAreCountedAndWrongOnesFound) {
  BackendRegistry registry = BuiltinBackends();
  ASSERT_TRUE(registry
                  .Register("skips_zero_terms", "skips terms whose A element is 0",
                            mm::testing::FakeBackend("skips_zero_terms")
                                .Supporting({DType::kFloat})
                                .Computing(SkipZeroTerms)
                                .Factory())
                  .ok());
  FuzzOptions options;
  options.seed = 5;
  options.cases = 1500;
  options.backends = {"reference", "skips_zero_terms"};
  options.generator.dtypes = {DType::kFloat};
  options.shrink = false;
  const FuzzReport report = RunFuzz(options, registry, nullptr);
  const ErrorStats* reference = Find(report, "reference", DType::kFloat);
  const ErrorStats* skips = Find(report, "skips_zero_terms", DType::kFloat);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(skips, nullptr);
  EXPECT_GT(reference->special_problems, 0) << "the generator sprinkles NaN and inf";
  EXPECT_EQ(reference->special_wrong, 0);
  EXPECT_EQ(skips->special_problems, reference->special_problems) << "the same problems";
  EXPECT_GT(skips->special_wrong, 0);
  EXPECT_LE(skips->special_wrong, skips->special_problems);
}

// The fields the comparison report reads (scripts/compare/render.py, docs/benchmarks.md).
TEST(AccuracyTest, JsonHasStatisticsAndProblemRecords) {
  const TempDir dir;
  const fs::path json = dir.path() / "accuracy.json";
  const CliRun run = FuzzCli({"--seed", "3", "--cases", "200", "--dtype", "float", "--dtype",
                              "int32", "--json", json.string()});
  ASSERT_EQ(run.code, kExitClean) << run.out << run.err;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_TRUE(j["statistics"].is_array());
  ASSERT_FALSE(j["statistics"].empty());
  std::set<std::string> backends;
  for (const auto& s : j["statistics"]) {
    EXPECT_EQ(s["dtype"], "float") << "integers are exact: no accuracy rows";
    backends.insert(s["backend"].get<std::string>());
    EXPECT_TRUE(s["problems"].is_number_integer());
    for (const char* field : {"worst_ulp", "p99_ulp", "worst_bound_fraction", "p99_bound_fraction",
                              "special_problems", "special_wrong"}) {
      EXPECT_TRUE(s[field].is_number()) << field << " of " << s["backend"];
    }
    EXPECT_LE(s["worst_bound_fraction"].get<double>(), 1.0) << s["backend"];
  }
  EXPECT_EQ(backends.size(), j["stats"]["backends"].size());
  // Verdicts per backend and dtype add up to the backend's totals.
  for (const auto& [backend, counts] : j["stats"]["backends"].items()) {
    const auto& per_dtype = j["stats"]["by_dtype"][backend];
    EXPECT_EQ(per_dtype.size(), 2u) << backend << ": float and int32";
    std::int64_t pass = 0;
    for (const auto& [dtype, verdicts] : per_dtype.items()) pass += verdicts.value("PASS", 0);
    EXPECT_EQ(pass, counts["PASS"].get<std::int64_t>()) << backend;
  }
  ASSERT_TRUE(j["problems"].is_array());
  EXPECT_FALSE(j["problems_capped"].get<bool>());
  EXPECT_EQ(j["problems_limit"], 20000);
  for (const auto& p : j["problems"]) {
    EXPECT_EQ(p["dtype"], "float");
    EXPECT_TRUE(p["backend"].is_string());
    EXPECT_GE(p["k"].get<std::int64_t>(), 0);
    EXPECT_GE(p["max_ulp"].get<double>(), 0);
    // null when no element has a finite bound (an empty Y, or overflow possible everywhere).
    if (!p["bound_fraction"].is_null()) {
      EXPECT_GE(p["bound_fraction"].get<double>(), 0);
    }
  }
}

// --backend-lib: a plugin is fuzzed and measured like a built-in backend.
TEST(FuzzBackendLibTest, ThePluginIsFuzzedLikeABuiltinBackend) {
  const CliRun run = FuzzCli({"--backend-lib", MM_EXAMPLE_PLUGIN, "--backend", "example", "--seed",
                              "2", "--cases", "100"});
  EXPECT_EQ(run.code, kExitClean) << run.out << run.err;
  EXPECT_THAT(run.out, ::testing::HasSubstr("100 problems x 1 backends = 100 results"));
}

// The backends a run fuzzed: the keys of its JSON report's per-backend counts.
std::vector<std::string> FuzzedBackends(const std::vector<std::string>& args, int& code) {
  const TempDir dir;
  const fs::path json = dir.path() / "fuzzed.json";
  std::vector<std::string> all = args;
  all.insert(all.end(), {"--seed", "2", "--cases", "20", "--json", json.string()});
  code = FuzzCli(all).code;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> names;
  if (j.is_discarded()) return names;
  for (const auto& [name, counts] : j["stats"]["backends"].items()) names.push_back(name);
  EXPECT_THAT(j["options"]["backends"].get<std::vector<std::string>>(),
              ::testing::UnorderedElementsAreArray(names))
      << "the report's options name what ran";
  return names;
}

// As mm-conformance judges a plugin alone: --backend-lib without --backend fuzzes only the
// backend it names; a built-in runs beside it only when asked for.
TEST(FuzzBackendLibTest, WithoutBackendOnlyThePluginIsFuzzed) {
  int code = -1;
  EXPECT_THAT(FuzzedBackends({"--backend-lib", MM_EXAMPLE_PLUGIN}, code),
              ::testing::ElementsAre("example"));
  EXPECT_EQ(code, kExitClean);
  EXPECT_THAT(FuzzedBackends({"--backend-lib", MM_EXAMPLE_PLUGIN, "--backend", "reference"}, code),
              ::testing::ElementsAre("reference"));
  EXPECT_THAT(FuzzedBackends({"--backend-lib", MM_EXAMPLE_PLUGIN, "--backend", "example",
                              "--backend", "reference"},
                             code),
              ::testing::UnorderedElementsAre("example", "reference"));
  EXPECT_EQ(code, kExitClean);
}

// Likewise --backend-cmd: the numpy driver given as any driver is (named np, numpy being the
// shipped one's name) is all that runs.
TEST(FuzzBackendCmdTest, WithoutBackendOnlyTheDriverIsFuzzed) {
  if (const std::string why = BuiltinBackends().UnavailableReason("numpy"); !why.empty()) {
    GTEST_SKIP() << "the numpy driver cannot run: " << why;
  }
  int code = -1;
  EXPECT_THAT(
      FuzzedBackends({"--backend-cmd", "np=/usr/bin/python3 " MM_NUMPY_DRIVER, "--dtype", "float"},
                     code),
      ::testing::ElementsAre("np"));
  EXPECT_EQ(code, kExitClean);
}

// The point of a plugin's arithmetic declaration: a float16 kernel meant to accumulate in float32
// that slipped into float16 accumulation. Judged by its own type (a plugin that declares nothing,
// as every version-1 plugin) its errors are within float16 accumulation's bound: no failure. Once
// it declares float32 accumulation, the same results are judged by float32's bound: caught.
TEST(FuzzBackendLibTest, AFloat16KernelDeclaringFloat32ButSummingInFloat16IsCaught) {
  auto run = [](const char* path, const std::string& name) {
    const TempDir dir;
    const fs::path json = dir.path() / (name + ".json");
    const int code =
        FuzzCli({"--backend-lib", path, "--backend", name, "--dtype", "float16", "--seed", "3",
                 "--cases", "300", "--max-findings", "1", "--no-shrink", "--json", json.string()})
            .code;
    std::ifstream in(json);
    nlohmann::json j = nlohmann::json::parse(in);
    return std::pair{code, j["stats"]["backends"][name]};
  };
  const auto [undeclared_code, undeclared] =
      run(MM_HALF_SUM_PLUGIN_UNDECLARED, "half_sum_undeclared");
  EXPECT_EQ(undeclared_code, kExitClean);
  EXPECT_EQ(undeclared["FAIL"], 0);
  EXPECT_EQ(undeclared["IMPRECISE"], 0);
  EXPECT_GT(undeclared["BOUND"], 0) << "float16 sums miss ONNX's tolerance, within their bound";

  const auto [declared_code, declared] =
      run(MM_HALF_SUM_PLUGIN_DECLARES_FLOAT32, "half_sum_declares_float32");
  EXPECT_EQ(declared_code, kExitFailed);
  EXPECT_GT(declared["FAIL"].get<int>() + declared["IMPRECISE"].get<int>(), 0);
  EXPECT_EQ(declared["BOUND"], 0) << "nothing float16 summing does is within float32's bound";
}

// A file that is not a plugin is a usage error naming it, before any problem runs.
TEST(FuzzBackendLibTest, ARefusedPluginIsAUsageErrorNamingTheFile) {
  const CliRun run = FuzzCli({"--backend-lib", MM_NOT_A_PLUGIN, "--cases", "10"});
  EXPECT_EQ(run.code, kExitUsage);
  EXPECT_THAT(run.err, ::testing::HasSubstr(MM_NOT_A_PLUGIN));
  EXPECT_EQ(run.out, "");
}

}  // namespace
}  // namespace mm::fuzz
