// mm-fuzz end to end, in-process: exit codes, JSON, replay lines, export of minimal failing
// problems as node tests that mm-conformance and ONNX's checker accept, the generator's corpus,
// reproducibility, and --check-threads.
#include "mm/conformance/fuzz/fuzz_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/fuzz/problem.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/conformance/loader/tensor_proto.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/engine/testing/files.h"
#include "mm/engine/testing/temp_dir.h"
#include "onnx/checker.h"
#include "onnx/onnx_pb.h"

namespace mm::fuzz {
namespace {

namespace fs = std::filesystem;
using mm::testing::ReadFile;
using ::testing::HasSubstr;

using conformance::testing::ConformanceCli;
using mm::testing::CliRun;
using mm::testing::FuzzCli;
using mm::testing::TempDir;

TEST(FuzzCliTest, HelpAndUsageErrors) {
  const CliRun help = FuzzCli({"--help"});
  EXPECT_EQ(help.code, kExitClean);
  for (const char* text : {"--seed S", "--cases N", "--time SECONDS", "--dtype NAME",
                           "--tolerance bound|onnx", "--export-dir DIR", "--check-threads",
                           "--json FILE", "--shard I/N", "generate", "merge", "Exit codes:"}) {
    EXPECT_THAT(help.out, HasSubstr(text));
  }
  EXPECT_THAT(FuzzCli({"generate", "--help"}).out, HasSubstr("--out DIR"));
  EXPECT_THAT(FuzzCli({"generate", "--help"}).out, HasSubstr("--keep-unfair"));
  EXPECT_THAT(FuzzCli({"merge", "--help"}).out, HasSubstr("reports"));
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--frobnicate"},
                                             {"--backend", "nonesuch"},
                                             {"--dtype", "int8"},
                                             {"--tolerance", "loose"},
                                             {"--cases", "-3"},
                                             {"--check-threads=yes"},
                                             {"--shard", "0/2"},
                                             {"--shard", "x"},
                                             {"merge"},
                                             {"generate"}}) {
    const CliRun r = FuzzCli(args);
    EXPECT_EQ(r.code, kExitUsage) << ::testing::PrintToString(args);
    EXPECT_THAT(r.err, HasSubstr("mm-fuzz")) << ::testing::PrintToString(args);
  }
}

// A seed or index names a campaign and a replay line: one that would wrap, saturate or be read in
// another base (strtoull read "-1" as 2^64 - 1 and "010" as 8) is a usage error, never another
// number.
TEST(FuzzCliTest, SeedsAndIndicesOutOfRangeAreUsageErrorsNeverWrapped) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--seed", "-1"},
                                             {"--seed", "18446744073709551616"},
                                             {"--seed", "0x10"},
                                             {"--seed", "+5"},
                                             {"--seed", "1e3"},
                                             {"--first", "-1"},
                                             {"--first", "9223372036854775808"},
                                             {"--cases", "99999999999999999999"},
                                             {"--max-elements", "-1"},
                                             {"generate", "--out", "x", "--first", "-2"}}) {
    const CliRun r = FuzzCli(args);
    EXPECT_EQ(r.code, kExitUsage) << ::testing::PrintToString(args);
    EXPECT_THAT(r.err, HasSubstr("is not an integer from 0 to")) << ::testing::PrintToString(args);
  }
  const CliRun past = FuzzCli({"--first", "9223372036854775807", "--cases", "2"});
  EXPECT_EQ(past.code, kExitUsage);
  EXPECT_THAT(past.err, HasSubstr("--first 9223372036854775807 with --cases 2: the last "
                                  "problem's index would be past 9223372036854775807"));
  // A leading zero is decimal, as everywhere else in mm; the largest seed is a seed.
  TempDir dir;
  const fs::path json = dir.path() / "r.json";
  for (const auto& [given, seed] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"010", 10}, {"18446744073709551615", 18446744073709551615u}}) {
    const CliRun r = FuzzCli({"--seed", given, "--cases", "1", "--dtype", "int32", "--backend",
                              "reference", "--quiet", "--json", json.string()});
    ASSERT_EQ(r.code, kExitClean) << r.err;
    std::ifstream in(json);
    EXPECT_EQ(nlohmann::json::parse(in).at("options").at("seed").get<std::uint64_t>(), seed);
  }
}

TEST(FuzzCliTest, CleanRunExitsZeroAndWritesStatistics) {
  TempDir dir;
  const fs::path json = dir.path() / "fuzz.json";
  // Three backends named, so the counts do not depend on which BLAS libraries are installed.
  const CliRun r = FuzzCli({"--seed", "5", "--cases", "300", "--json", json.string(), "--backend",
                            "reference", "--backend", "onednn", "--backend", "eigen"});
  EXPECT_EQ(r.code, kExitClean) << r.out << r.err;
  // Each named backend runs every problem.
  const std::int64_t backends = 3;
  EXPECT_THAT(r.out, HasSubstr("summary: seed 5, 300 problems x " + std::to_string(backends) +
                               " backends = " + std::to_string(300 * backends) + " results"));
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["stats"]["problems"], 300);
  EXPECT_EQ(j["stats"]["results"], 300 * backends);
  EXPECT_EQ(j["exit_code"], 0);
  std::int64_t counted = 0;
  for (const auto& [backend, counts] : j["stats"]["backends"].items()) {
    for (const char* verdict : {"PASS", "FAIL", "BOUND", "IMPRECISE", "UNSUPPORTED", "ERROR"}) {
      counted += counts[verdict].get<std::int64_t>();
    }
    EXPECT_EQ(counts["FAIL"], 0) << backend;
    EXPECT_EQ(counts["ERROR"], 0) << backend;
  }
  EXPECT_EQ(counted, 300 * backends) << "every result is counted under exactly one verdict";
}

// A planted bug: exit 1, the finding names the worst element and the replay line, and its minimal
// problem is exported as a node test that mm-conformance loads: the buggy backend fails it, the
// reference passes it, and ONNX's checker accepts the model.
TEST(FuzzCliTest, FindingsReplayAndExportAsNodeTests) {
  TempDir dir;
  const self_check::PlantedBackend& bug =
      self_check::PlantedBackendOf(self_check::Fault::kTransposedB);
  BackendRegistry registry = self_check::PlantedRegistry(bug);
  const CliRun r = FuzzCli({"--seed", "1", "--cases", "50", "--dtype", "int32", "--max-findings",
                            "2", "--export-dir", dir.path().string()},
                           registry);
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  // The first finding's replay line: its problem index, one case, its dtype and backend.
  const std::string kReplay = "replay: mm-fuzz --seed 1 --first ";
  const std::size_t at = r.out.find(kReplay);
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string first =
      r.out.substr(at + kReplay.size(), r.out.find(' ', at + kReplay.size()) - at - kReplay.size());
  EXPECT_THAT(r.out,
              HasSubstr(kReplay + first + " --cases 1 --dtype int32 --backend transposed_b"));
  EXPECT_THAT(r.out, HasSubstr("worst at"));
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(dir.path())) cases.push_back(entry.path());
  ASSERT_EQ(cases.size(), 2u);
  for (const fs::path& c : cases) {
    onnx::ModelProto model = conformance::LoadModelFile(c / "model.onnx").value();
    EXPECT_NO_THROW(onnx::checker::check_model(model)) << c;
  }
  const CliRun buggy =
      ConformanceCli({"--data-dir", dir.path().string(), "--no-builtin"}, registry);
  EXPECT_EQ(buggy.code, conformance::kExitFailed) << buggy.out;
  const CliRun reference =
      ConformanceCli({"--data-dir", dir.path().string(), "--no-builtin", "--backend", "reference"},
                     BuiltinBackends());
  EXPECT_EQ(reference.code, conformance::kExitPassed) << reference.out;
  // The replay line reproduces the finding.
  const CliRun replay = FuzzCli({"--seed", "1", "--first", first, "--cases", "1", "--dtype",
                                 "int32", "--backend", "transposed_b"},
                                registry);
  EXPECT_EQ(replay.code, kExitFailed);
  EXPECT_THAT(replay.out, HasSubstr("FAIL transposed_b int32"));
}

// --large runs the large-shape family at the budget given; its findings replay with it.
TEST(FuzzCliTest, TheLargeFamilyFindsABugAndItsReplayLineNamesTheBudget) {
  BackendRegistry registry =
      self_check::PlantedRegistry(self_check::PlantedBackendOf(self_check::Fault::kTransposedB));
  const CliRun r = FuzzCli({"--large", "--large-products", "1048576", "--seed", "1", "--cases", "4",
                            "--dtype", "float", "--no-shrink", "--max-findings", "1"},
                           registry);
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("--large --large-products 1048576")) << r.out;
  const CliRun alone = FuzzCli({"--large-products", "1048576"});
  EXPECT_EQ(alone.code, kExitUsage);
  EXPECT_THAT(alone.err, HasSubstr("--large-products needs --large"));
}

TEST(FuzzCliTest, GenerateWritesValidNodeTestsEveryToolLoads) {
  TempDir dir;
  const CliRun r =
      FuzzCli({"generate", "--out", dir.path().string(), "--cases", "40", "--seed", "9"});
  ASSERT_EQ(r.code, kExitClean) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote 40 cases"));
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "README.md"));
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "manifest.json"));
  std::int64_t count = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    if (!entry.is_directory()) continue;  // README.md and manifest.json.
    ++count;
    onnx::ModelProto model = conformance::LoadModelFile(entry.path() / "model.onnx").value();
    EXPECT_NO_THROW(onnx::checker::check_model(model)) << entry.path();
  }
  EXPECT_EQ(count, 40);
  const CliRun conformance =
      ConformanceCli({"--data-dir", dir.path().string(), "--no-builtin", "--backend", "reference"},
                     BuiltinBackends());
  EXPECT_THAT(conformance.out, HasSubstr("40 results"));
  EXPECT_THAT(conformance.out, HasSubstr(", 0 ERROR"));
  // Same seed, same corpus: byte for byte.
  TempDir again;
  FuzzCli({"generate", "--out", again.path().string(), "--cases", "40", "--seed", "9"});
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    if (!entry.is_regular_file()) continue;
    const fs::path twin = again.path() / fs::relative(entry.path(), dir.path());
    std::ifstream x(entry.path(), std::ios::binary), y(twin, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(x), {}),
              std::string(std::istreambuf_iterator<char>(y), {}))
        << twin;
  }
}

// --cases-per-dtype balances a corpus: exactly N cases of each dtype selected (a random mix of
// 2,000 once gave 147 bfloat16 and 325 int32), each still problem I of the seed for its dtype.
TEST(FuzzCliTest, GenerateCasesPerDtypeWritesNOfEachDtype) {
  auto per_dtype = [](const fs::path& dir) {
    std::map<std::string, int> counts;
    std::ifstream in(dir / "manifest.json");
    const nlohmann::json manifest = nlohmann::json::parse(in);
    for (const auto& c : manifest.at("case_list")) ++counts[c.at("dtype").get<std::string>()];
    return std::pair(manifest.at("cases").get<int>(), counts);
  };
  TempDir all, some;
  const CliRun r =
      FuzzCli({"generate", "--out", all.path().string(), "--cases-per-dtype", "3", "--seed", "4"});
  ASSERT_EQ(r.code, kExitClean) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote 24 cases (3 per dtype, seed 4"));
  const auto [total, counts] = per_dtype(all.path());
  EXPECT_EQ(total, 24);
  ASSERT_EQ(counts.size(), kAllDTypes.size());
  for (DType d : kAllDTypes) EXPECT_EQ(counts.at(std::string(DTypeName(d))), 3) << DTypeName(d);
  EXPECT_THAT(ReadFile(all.path() / "README.md"), HasSubstr("--cases-per-dtype 3 --seed 4"));
  // --dtype restricts the set; each case is the problem its name says, as a replay makes it.
  ASSERT_EQ(FuzzCli({"generate", "--out", some.path().string(), "--cases-per-dtype", "2", "--seed",
                     "4", "--dtype", "bfloat16", "--dtype", "int32"})
                .code,
            kExitClean);
  EXPECT_EQ(per_dtype(some.path()),
            std::pair(4, std::map<std::string, int>{{"bfloat16", 2}, {"int32", 2}}));
  for (const auto& entry : fs::directory_iterator(some.path())) {
    if (!entry.is_directory()) continue;
    // The first two of a dtype are among its first three.
    const fs::path twin = all.path() / entry.path().filename();
    ASSERT_TRUE(fs::exists(twin)) << twin;
    EXPECT_EQ(ReadFile(entry.path() / "test_data_set_0" / "input_0.pb"),
              ReadFile(twin / "test_data_set_0" / "input_0.pb"))
        << twin;
  }
  // N < 1, or with --cases (which of the two counts?), is a usage error naming the option.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"generate", "--out", "x", "--cases-per-dtype", "0"},
           {"generate", "--out", "x", "--cases-per-dtype", "-1"},
           {"generate", "--out", "x", "--cases-per-dtype", "3", "--cases", "10"}}) {
    const CliRun bad = FuzzCli(args);
    EXPECT_EQ(bad.code, kExitUsage) << ::testing::PrintToString(args);
    EXPECT_THAT(bad.err, HasSubstr("--cases-per-dtype")) << ::testing::PrintToString(args);
  }
}

// export-builtin writes the built-in cases (the 9 examples, the shape-class catalogue and the
// family's catalogue) as node tests a runtime can run; their expected outputs, given back as an
// outputs tree, are exactly what mm-conformance's built-in cases expect, data set by data set.
// (The family's node tests are checked in conformance/tests/family/family_node_test_test.cc.)
// The built-in cases exported once for the tests that read them (each only reads the folder and
// the export's output): an export writes some 800 cases.
struct BuiltinExport {
  TempDir dir;
  CliRun run = FuzzCli({"export-builtin", "--out", dir.path().string()});
};

const BuiltinExport& ExportedBuiltins() {
  static const BuiltinExport exported;  // Its folder is removed at exit.
  return exported;
}

TEST(FuzzCliTest, ExportBuiltinWritesTheBuiltInCasesAsNodeTests) {
  TempDir tree, empty;
  const TempDir& dir = ExportedBuiltins().dir;
  const CliRun& r = ExportedBuiltins().run;
  ASSERT_EQ(r.code, kExitClean) << r.err;
  const std::size_t shape_cases = conformance::ShapeCases().size();
  std::size_t data_sets = 9;
  for (const conformance::ShapeCase& c : conformance::ShapeCases()) {
    data_sets += c.shape_class->problems.size();
  }
  const std::size_t family_cases = conformance::BuiltinFamilyCases().size();
  EXPECT_THAT(r.out, HasSubstr("wrote " + std::to_string(9 + shape_cases + family_cases) +
                               " cases (9 examples"));
  std::size_t count = 0, sets = 0, family = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    if (entry.path().filename().string().starts_with(conformance::kFamilyCasePrefix)) {
      family += fs::exists(entry.path() / "test_data_set_0" / "output_0.pb");
      continue;
    }
    ++count;
    onnx::ModelProto model = conformance::LoadModelFile(entry.path() / "model.onnx").value();
    EXPECT_NO_THROW(onnx::checker::check_model(model)) << entry.path();
    for (const auto& set : fs::directory_iterator(entry.path())) {
      if (!set.is_directory()) continue;
      ++sets;
      const fs::path y = set.path().filename() / "output_0.pb";
      fs::create_directories(tree.path() / entry.path().filename() / set.path().filename());
      fs::copy_file(entry.path() / y, tree.path() / entry.path().filename() / y);
    }
  }
  EXPECT_EQ(count, 9 + shape_cases);
  EXPECT_EQ(family, family_cases);
  EXPECT_EQ(sets, data_sets);
  const std::string results = std::to_string(data_sets) + " results (" +
                              std::to_string(9 + shape_cases) +
                              " case x backend): " + std::to_string(data_sets) + " PASS";
  const CliRun exported =
      ConformanceCli({"--data-dir", dir.path().string(), "--no-builtin", "--backend", "reference"},
                     BuiltinBackends());
  // The family's node tests are cases of the data root too: one data set each, judged exactly.
  const std::size_t with_family = data_sets + family_cases;
  EXPECT_THAT(exported.out,
              HasSubstr(std::to_string(with_family) + " results (" +
                        std::to_string(9 + shape_cases + family_cases) +
                        " case x backend): " + std::to_string(with_family) + " PASS"));
  // Judged against the built-ins themselves (no data root holds them): every output bit-identical.
  // MatMul's only: an outputs tree is judged for MatMul's cases (the family's would be
  // UNSUPPORTED).
  const CliRun builtin =
      ConformanceCli({"--data-dir", empty.path().string(), "--exclude", "^mm_family_", "--outputs",
                      "rt=" + tree.path().string(), "--backend", "rt"},
                     BuiltinBackends());
  EXPECT_THAT(builtin.out, HasSubstr(results));
  std::size_t exact = 0;
  for (std::size_t at = 0;
       (at = builtin.out.find("max abs 0, max rel 0;", at)) != std::string::npos; ++at) {
    ++exact;
  }
  EXPECT_EQ(exact, 9 + shape_cases) << "one line per case";
  EXPECT_EQ(builtin.code, conformance::kExitPassed) << builtin.out;
}

// A sequence case is one model with symbolic dims and its data sets in order; a runtime that
// answers its K = 0 problem with the previous problem's Y (a stale output buffer) fails there.
TEST(FuzzCliTest, ExportBuiltinWritesASequenceAsOneSymbolicModelAndItsKZeroBugFails) {
  TempDir tree, empty;
  const TempDir& dir = ExportedBuiltins().dir;
  ASSERT_EQ(ExportedBuiltins().run.code, kExitClean) << ExportedBuiltins().run.err;
  const std::string name = "mm_shape_seq_k0_after_nonempty_float";
  const fs::path case_dir = dir.path() / name;
  const onnx::ModelProto model = conformance::LoadModelFile(case_dir / "model.onnx").value();
  for (const auto& value :
       {model.graph().input(0), model.graph().input(1), model.graph().output(0)}) {
    for (const auto& dim : value.type().tensor_type().shape().dim()) {
      EXPECT_FALSE(dim.dim_param().empty()) << value.name() << " has a fixed dim";
    }
  }
  ASSERT_TRUE(fs::exists(case_dir / "test_data_set_1" / "output_0.pb"));
  EXPECT_FALSE(fs::exists(case_dir / "test_data_set_2"));
  // The stale answer: data set 0's Y (same [2,2] shape) where data set 1's zeros belong.
  for (const char* set : {"test_data_set_0", "test_data_set_1"}) {
    fs::create_directories(tree.path() / name / set);
    fs::copy_file(case_dir / "test_data_set_0" / "output_0.pb",
                  tree.path() / name / set / "output_0.pb");
  }
  const CliRun run = ConformanceCli({"--data-dir", empty.path().string(), "--case", name,
                                     "--outputs", "rt=" + tree.path().string(), "--backend", "rt"},
                                    BuiltinBackends());
  EXPECT_THAT(run.out, HasSubstr("2 results (1 case x backend): 1 PASS, 1 FAIL")) << run.out;
  EXPECT_EQ(run.code, conformance::kExitFailed) << run.out;
}

// Problem i of a seed does not depend on the other dtypes asked for, so a replay line with one
// --dtype finds exactly the problem of a run over all of them.
TEST(FuzzCliTest, AProblemDependsOnSeedIndexAndItsDtypeOnly) {
  GeneratorOptions all;
  for (std::int64_t i = 0; i < 300; ++i) {
    const Problem p = GenerateProblem(11, i, all);
    GeneratorOptions one;
    one.dtypes = {p.a.dtype()};
    const Problem q = GenerateProblem(11, i, one);
    ASSERT_EQ(p.a.dims(), q.a.dims()) << i;
    ASSERT_EQ(p.b.dims(), q.b.dims()) << i;
    ASSERT_EQ(0, std::memcmp(p.a.raw_data(), q.a.raw_data(), p.a.NumBytes())) << i;
    ASSERT_EQ(0, std::memcmp(p.b.raw_data(), q.b.raw_data(), p.b.NumBytes())) << i;
  }
}

// The generator covers what the issue lists: every form, zero-size dims, wide K, every family.
TEST(FuzzCliTest, GeneratorCoversFormsSizesAndValueFamilies) {
  std::set<std::string> forms, families;
  bool zero = false, wide_k = false, high_rank = false;
  for (std::int64_t i = 0; i < 3000; ++i) {
    const Problem p = GenerateProblem(1, i, {});
    forms.insert(p.form);
    families.insert(p.values);
    auto plan = PlanMatMul(p.desc()).value();
    zero |= plan.y_elements == 0 || plan.k == 0;
    wide_k |= plan.k >= 1000;
    high_rank |= p.a.dims().size() > 6 || p.b.dims().size() > 6;
  }
  EXPECT_EQ(forms.size(), 12u);  // The 11 numpy.matmul forms and the size-threshold family.
  EXPECT_TRUE(forms.count("size threshold"));
  for (const char* family : {"small-int", "uniform", "normal", "wide-exponent", "cancellation",
                             "extremes", "extremes+specials", "uniform-bits", "near-limits"}) {
    EXPECT_TRUE(families.count(family)) << family;
  }
  EXPECT_TRUE(zero && wide_k && high_rank);
}

// A correct float kernel whose summation order follows its thread count (as a parallel
// reduction's does): every result within the bound, but 1 thread and 2 differ in the last bits.
Status SumInThreadOrder(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  const bool reversed = omp_get_max_threads() > 1;
  for (std::int64_t i = 0; i < p.batch; ++i) {
    const auto [ao, bo] = p.BatchOffsets(i);
    for (std::int64_t r = 0; r < p.m; ++r) {
      for (std::int64_t c = 0; c < p.n; ++c) {
        float sum = 0;
        for (std::int64_t t = 0; t < p.k; ++t) {
          const std::int64_t kk = reversed ? p.k - 1 - t : t;
          sum += a.Data<float>()[ao + r * p.k + kk] * b.Data<float>()[bo + kk * p.n + c];
        }
        y.Data<float>()[(i * p.m + r) * p.n + c] = sum;
      }
    }
  }
  return OkStatus();
}

TEST(FuzzCliTest, CheckThreadsFindsAThreadCountDependentResult) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "needs 2 cores to compare 1 thread with more";
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register("order_by_threads", "sums in an order that follows the threads",
                            mm::testing::FakeBackend("order_by_threads")
                                .Supporting({DType::kFloat})
                                .Computing(SumInThreadOrder)
                                .Factory())
                  .ok());
  const std::vector<std::string> args = {"--seed",  "1",     "--cases",        "200",
                                         "--dtype", "float", "--check-threads"};
  const CliRun found = FuzzCli(args, registry);
  EXPECT_EQ(found.code, kExitClean) << found.out;  // A finding, not a failure...
  EXPECT_THAT(found.out, HasSubstr("NONDETERMINISTIC order_by_threads float"));
  EXPECT_THAT(found.out, HasSubstr("threads differ bit for bit"));
  std::vector<std::string> strict = args;
  strict.push_back("--require-deterministic");
  EXPECT_EQ(FuzzCli(strict, registry).code, kExitFailed);  // ...unless determinism is required.
}

TEST(FuzzCliTest, CheckThreadsComparesOneThreadWithAllCores) {
  const CliRun r = FuzzCli({"--seed", "3", "--cases", "60", "--check-threads", "--backend", "eigen",
                            "--backend", "onednn"});
  // Thread-count differences are findings, not failures, unless asked.
  EXPECT_EQ(r.code, kExitClean) << r.out;
  EXPECT_THAT(r.out, HasSubstr("NONDETERMINISTIC"));
}

// Writes a float case [1,K] x [K,1] whose pairs cancel exactly (expected 0), K = 4096.
void WriteCancellingCase(const fs::path& dir) {
  constexpr std::int64_t kK = 4096;
  Tensor a = Tensor::Create(DType::kFloat, {1, kK}).value();
  Tensor b = Tensor::Create(DType::kFloat, {kK, 1}).value();
  for (std::int64_t i = 0; i < kK / 2; ++i) {
    const float x = 0.5f + static_cast<float>((i * 7919) % 1000) / 1000.0f;
    const float y = 0.25f + static_cast<float>((i * 104729) % 1000) / 1500.0f;
    a.Data<float>()[i] = x;
    a.Data<float>()[kK / 2 + i] = -x;
    b.Data<float>()[i] = b.Data<float>()[kK / 2 + i] = y;
  }
  const Tensor y = Tensor::Create(DType::kFloat, {1, 1}).value();  // Exactly 0.
  ASSERT_TRUE(conformance::WriteMatMulNodeTest(dir, a, b, y, "mm-fuzz").ok());
}

// mm-conformance's exit code follows ONNX's rule by default (BOUND fails) and the bound under
// --tolerance bound (BOUND passes); the report shows the verdict either way.
TEST(ConformanceToleranceTest, BoundFailsUnderOnnxAndPassesUnderBound) {
  TempDir dir;
  WriteCancellingCase(dir.path() / "test_cancelling_k4096");
  int bound_seen = 0;
  for (const char* backend : {"eigen", "onednn"}) {
    const std::vector<std::string> base = {"--data-dir", dir.path().string(), "--no-builtin",
                                           "--backend", backend};
    const CliRun onnx = ConformanceCli(base, BuiltinBackends());
    if (onnx.out.find("PASS ") != std::string::npos) continue;  // Exact by luck of its order.
    ++bound_seen;
    EXPECT_EQ(onnx.code, conformance::kExitFailed) << onnx.out;
    EXPECT_THAT(onnx.out, HasSubstr("BOUND       test_cancelling_k4096"));
    EXPECT_THAT(onnx.out, HasSubstr("within the bound"));
    std::vector<std::string> bound = base;
    bound.insert(bound.end(), {"--tolerance", "bound"});
    const CliRun by_bound = ConformanceCli(bound, BuiltinBackends());
    EXPECT_EQ(by_bound.code, conformance::kExitPassed) << by_bound.out;
    EXPECT_THAT(by_bound.out, HasSubstr("1 BOUND"));
  }
  EXPECT_GE(bound_seen, 1) << "float32 summation of 4096 cancelling terms leaves a residue";
}

// A declared expected failure is judged by the rule in force: the BOUND result fails under
// ONNX's tolerance, so it is XFAIL (exit 0); under --tolerance bound it passes, so it is XPASS and
// fails the run (the entry has rotted for that rule).
TEST(ConformanceToleranceTest, XFailOfABoundResultFollowsTheRule) {
  TempDir dir;
  WriteCancellingCase(dir.path() / "test_cancelling_k4096");
  int bound_seen = 0;
  for (const char* backend : {"eigen", "onednn"}) {
    const fs::path expectations = dir.path() / (std::string(backend) + ".expectations.json");
    std::ofstream(expectations) << R"({"expectations": [{"case": "test_cancelling_k4096",
        "backend": ")" << backend
                                << R"(", "expect": "XFAIL", "reason": "cancellation",
        "link": "docs/conformance.md"}]})";
    const std::vector<std::string> base = {"--data-dir", dir.path().string(), "--no-builtin",
                                           "--backend", backend};
    if (ConformanceCli(base, BuiltinBackends()).out.find("PASS ") != std::string::npos) {
      continue;  // Exact by luck of its order: nothing to declare.
    }
    ++bound_seen;
    std::vector<std::string> declared = base;
    declared.insert(declared.end(), {"--expectations", expectations.string()});
    const CliRun onnx = ConformanceCli(declared, BuiltinBackends());
    EXPECT_EQ(onnx.code, conformance::kExitPassed) << onnx.out;
    EXPECT_THAT(onnx.out, HasSubstr("1 XFAIL"));
    declared.insert(declared.end(), {"--tolerance", "bound"});
    const CliRun by_bound = ConformanceCli(declared, BuiltinBackends());
    EXPECT_EQ(by_bound.code, conformance::kExitFailed) << by_bound.out;
    EXPECT_THAT(by_bound.out, HasSubstr("1 XPASS"));
    EXPECT_THAT(by_bound.out, HasSubstr("passed (BOUND), but declared an expected failure"));
  }
  EXPECT_GE(bound_seen, 1) << "float32 summation of 4096 cancelling terms leaves a residue";
}

// Three data sets, only the second's expected Y wrong: the report names that data set as suspect
// data; ONNX's rule fails the right answer there (BOUND, exit 1), the bound around the exact
// product holds (exit 0 under --tolerance bound).
TEST(ConformanceToleranceTest, AWrongExpectedYOnlyInDataSetTwoOfThreeIsFound) {
  TempDir dir;
  const fs::path c = dir.path() / "test_three_sets";
  const Tensor a = Tensor::FromValues<float>({2, 2}, std::vector<float>{1, 2, 3, 4}).value();
  const Tensor b = Tensor::FromValues<float>({2, 2}, std::vector<float>{5, 6, 7, 8}).value();
  const Tensor y = Tensor::FromValues<float>({2, 2}, std::vector<float>{19, 22, 43, 50}).value();
  const Tensor wrong =
      Tensor::FromValues<float>({2, 2}, std::vector<float>{19, 22, 43, 51}).value();
  ASSERT_TRUE(conformance::WriteMatMulNodeTest(c, a, b, y, "mm-fuzz").ok());
  TempDir scratch;
  ASSERT_TRUE(conformance::WriteMatMulNodeTest(scratch.path() / "x", a, b, wrong, "mm-fuzz").ok());
  fs::copy(scratch.path() / "x" / "test_data_set_0", c / "test_data_set_1");
  fs::copy(c / "test_data_set_0", c / "test_data_set_2");
  for (const char* rule : {"onnx", "bound"}) {
    const CliRun r = ConformanceCli({"--data-dir", dir.path().string(), "--no-builtin", "--backend",
                                     "reference", "--tolerance", rule},
                                    BuiltinBackends());
    EXPECT_EQ(r.code,
              std::string(rule) == "onnx" ? conformance::kExitFailed : conformance::kExitPassed)
        << r.out;
    EXPECT_THAT(r.out, HasSubstr("BOUND       test_three_sets"));
    EXPECT_THAT(r.out, HasSubstr("test_data_set_1: 1 of 4 elements differ; worst at [1,1]"));
    EXPECT_THAT(r.out, HasSubstr("suspect data: the expected Y of test_data_set_1 is not the "
                                 "product of its inputs computed in float: 1 of 4 elements "
                                 "outside; worst at [1,1]: exact 50, expected 51"));
    EXPECT_THAT(r.out, HasSubstr("summary: 3 results (1 case x backend): 2 PASS"));
  }
}

// A deviation declared in an expectations file is still found, shrunk and shown, as XFAIL, and no
// longer fails the run; without the file the same replay is a FAIL. BLIS 0.9.0's 0 * inf (seed 1,
// problem 9103: backends/blas/deviations) where BLIS is installed.
TEST(FuzzCliTest, ADeclaredDeviationIsShownAsXfailAndDoesNotFailTheRun) {
  const BackendRegistry registry = BuiltinBackends();
  if (!registry.Contains("blis")) GTEST_SKIP() << registry.UnavailableReason("blis");
  const std::vector<std::string> replay = {"--seed", "1",       "--first", "2427",      "--cases",
                                           "1",      "--dtype", "double",  "--backend", "blis"};
  const CliRun plain = FuzzCli(replay, registry);
  EXPECT_EQ(plain.code, 1) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("FAIL blis double"));

  TempDir dir;
  const fs::path file = dir.path() / "expectations.json";
  std::ofstream(file) << R"({"expectations": [{"case": "fuzz/double/*+specials",
      "backend": "blis", "expect": "XFAIL", "reason": "0 * inf gives 0", "link": "docs"}]})";
  std::vector<std::string> args = replay;
  args.insert(args.end(), {"--expectations", file.string()});
  const CliRun declared = FuzzCli(args, registry);
  EXPECT_EQ(declared.code, kExitClean) << declared.out;
  EXPECT_THAT(declared.out, HasSubstr("XFAIL blis double"));
  EXPECT_THAT(declared.out, HasSubstr("expected failure: 0 * inf gives 0 (docs)"));
  EXPECT_THAT(declared.out, HasSubstr("XFAIL 1 SKIP 0"));
  EXPECT_THAT(declared.out, HasSubstr("fuzz/double/*+specials on blis: XFAIL, seen 1 of 1"));
}

}  // namespace
}  // namespace mm::fuzz

namespace mm::fuzz {
namespace {

// The default corpus is fair and says so; every index it leaves out is listed with its reason,
// and --keep-unfair writes every index and says the corpus is fair under no fixed tolerance.
TEST(FuzzCliTest, GenerateReplacesUnfairProblemsAndSaysWhichRuleTheCorpusIsFairUnder) {
  TempDir fair, all;
  ASSERT_EQ(
      FuzzCli({"generate", "--out", fair.path().string(), "--cases", "100", "--seed", "5"}).code,
      kExitClean);
  ASSERT_EQ(FuzzCli({"generate", "--out", all.path().string(), "--cases", "100", "--seed", "5",
                     "--keep-unfair"})
                .code,
            kExitClean);
  const auto manifest = [](const fs::path& dir) {
    std::ifstream in(dir / "manifest.json");
    return nlohmann::json::parse(in);
  };
  const nlohmann::json m = manifest(fair.path());
  EXPECT_EQ(m["fair_under"], "onnx");
  EXPECT_THAT(m["rule"].get<std::string>(), HasSubstr("rtol 0.001, atol 1e-07"));
  EXPECT_EQ(m["case_list"].size(), 100u);
  ASSERT_FALSE(m["replaced"].empty()) << "seed 5's first 100 problems include unfair ones";
  std::set<std::int64_t> listed, replaced;
  for (const auto& c : m["case_list"]) {
    listed.insert(c["index"].get<std::int64_t>());
    EXPECT_TRUE(fs::is_directory(fair.path() / c["case"].get<std::string>())) << c;
  }
  for (const auto& r : m["replaced"]) {
    replaced.insert(r["index"].get<std::int64_t>());
    EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("element ")) << r;
  }
  // Indices 0, 1, ... each either written or replaced, never both, none skipped silently.
  const std::int64_t last = std::max(*listed.rbegin(), *replaced.rbegin());
  EXPECT_EQ(static_cast<std::int64_t>(listed.size() + replaced.size()), last + 1);
  for (std::int64_t i : replaced) EXPECT_FALSE(listed.count(i)) << i;
  std::ifstream readme(fair.path() / "README.md");
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(readme), {}),
              HasSubstr("Fair under: ONNX's rule"));

  const nlohmann::json u = manifest(all.path());
  EXPECT_EQ(u["fair_under"], "none");
  EXPECT_TRUE(u["replaced"].empty());
  EXPECT_EQ(u["case_list"].back()["index"], 99);
  // A fair corpus passes every built-in backend under the default rule; the unfair one does not
  // (its BOUND results are what the filter removes).
  EXPECT_EQ(ConformanceCli({"--data-dir", fair.path().string(), "--no-builtin", "--no-isolate"},
                           BuiltinBackends())
                .code,
            conformance::kExitPassed);
  const CliRun unfair = ConformanceCli(
      {"--data-dir", all.path().string(), "--no-builtin", "--no-isolate"}, BuiltinBackends());
  EXPECT_EQ(unfair.code, conformance::kExitFailed) << unfair.out;
  EXPECT_EQ(ConformanceCli({"--data-dir", all.path().string(), "--no-builtin", "--no-isolate",
                            "--tolerance", "bound"},
                           BuiltinBackends())
                .code,
            conformance::kExitPassed);
}

}  // namespace
}  // namespace mm::fuzz
