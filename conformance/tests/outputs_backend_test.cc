// A runtime judged from the outputs it wrote (mm-conformance --outputs NAME=DIR), end to end
// through the command line: correct outputs pass, wrong ones fail, and every broken tree (a
// missing, extra, malformed, wrongly typed or shaped output; a manifest's error or refusal) is an
// ERROR or UNSUPPORTED naming the file, never a skipped or passed result. Fixtures are written with
// the protobuf classes the loader reads.
#include "mm/conformance/running/outputs_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mm/backends/backend_list.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/loader/tensor_proto.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

// A run of mm-conformance and its --json report.
struct OutputsRun : testing::CliRun {
  nlohmann::json report;  // The --json report, when one was written.
};

// Runs mm-conformance in-process with --json into `json_dir`, and reads the report back.
OutputsRun Judge(std::vector<std::string> args, const fs::path& json_dir) {
  const fs::path json = json_dir / "report.json";
  fs::remove(json);
  args.insert(args.end(), {"--json", json.string()});
  OutputsRun run{testing::ConformanceCli(args), {}};
  std::ifstream in(json);
  if (in) run.report = nlohmann::json::parse(in);
  return run;
}

// (case, data set) -> the result of backend `backend`.
std::map<std::pair<std::string, std::string>, nlohmann::json> ResultsOf(
    const OutputsRun& run, const std::string& backend) {
  std::map<std::pair<std::string, std::string>, nlohmann::json> results;
  for (const auto& r : run.report.at("results")) {
    if (r.at("backend") == backend) {
      results[{r.at("case").get<std::string>(), r.value("data_set", "")}] = r;
    }
  }
  return results;
}

Tensor ExpectedY(const fs::path& case_dir) {
  return LoadTensorFile(case_dir / "test_data_set_0" / "output_0.pb").value().tensor;
}

// A corpus of two float cases and an outputs tree "rt" that answers both exactly as expected.
class OutputsTreeTest : public ::testing::Test {
 public:
  void SetUp() override {
    // A matrix product and a 1-D dot product (rank-0 Y): shapes the tree must mirror exactly.
    matrix_ = testing::WriteFloatCase(corpus_.path(), "test_rt_matrix", {2, 3}, {3, 4});
    dot_ = testing::WriteFloatCase(corpus_.path(), "test_rt_dot", {3}, {3});
    WriteOutput("test_rt_matrix", ExpectedY(matrix_));
    WriteOutput("test_rt_dot", ExpectedY(dot_));
  }

  fs::path OutputPath(const std::string& case_name,
                      const std::string& data_set = "test_data_set_0") {
    return outputs_.path() / case_name / data_set / "output_0.pb";
  }
  void WriteOutput(const std::string& case_name, const Tensor& y) {
    testing::WriteMessage(OutputPath(case_name), testing::RawTensorProto(y, "y"));
  }
  void WriteManifest(const std::string& text) {
    testing::WriteBytes(outputs_.path() / "mm_outputs.json", text);
  }
  OutputsRun Run(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--data-dir",
                                     corpus_.path().string(),
                                     "--no-builtin",
                                     "--outputs",
                                     "rt=" + outputs_.path().string(),
                                     "--backend",
                                     "rt",
                                     "-j",
                                     "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Judge(args, work_.path());
  }

  TempDir corpus_, outputs_, work_;
  fs::path matrix_, dot_;
};

TEST_F(OutputsTreeTest, CorrectOutputsPassAndTheBackendSaysWhatItJudged) {
  const OutputsRun run = Run();
  ASSERT_EQ(run.code, kExitPassed) << run.out << run.err;
  const auto results = ResultsOf(run, "rt");
  ASSERT_EQ(results.size(), 2u);
  for (const auto& [key, r] : results) {
    EXPECT_EQ(r.at("verdict"), "PASS") << key.first;
    EXPECT_THAT(r.at("implementation").get<std::string>(),
                HasSubstr(OutputPath(key.first).string()));
    // Three-way: compared with the reference backend's result, which runs though not selected.
    EXPECT_THAT(r.at("vs_reference").get<std::string>(), Not(HasSubstr("n/a")));
  }
  EXPECT_THAT(run.out, HasSubstr("rt: outputs written by rt under " + outputs_.path().string()));
}

// --outputs without --backend judges the tree alone; built-in backends run when --backend names
// them.
TEST_F(OutputsTreeTest, WithoutBackendOnlyTheTreeIsJudged) {
  const std::vector<std::string> args = {"--data-dir", corpus_.path().string(), "--no-builtin",
                                         "--outputs", "rt=" + outputs_.path().string()};
  const OutputsRun alone = Judge(args, work_.path());
  EXPECT_EQ(alone.code, kExitPassed) << alone.out << alone.err;
  EXPECT_EQ(alone.report.at("backends"), nlohmann::json({"rt"}));
  EXPECT_EQ(alone.report.at("results").size(), 2u);
  std::vector<std::string> asked = args;
  asked.insert(asked.end(), {"--backend", "reference", "--backend", "rt"});
  const OutputsRun both = Judge(asked, work_.path());
  EXPECT_EQ(both.report.at("backends"), nlohmann::json({"reference", "rt"}));
  EXPECT_EQ(both.report.at("results").size(), 4u);
}

TEST_F(OutputsTreeTest, AWrongValueFails) {
  Tensor y = ExpectedY(matrix_);
  y.Data<float>()[5] *= 1.01f;  // 1 %: far outside ONNX's rtol of 1e-3.
  WriteOutput("test_rt_matrix", y);
  const OutputsRun run = Run();
  EXPECT_EQ(run.code, kExitFailed);
  const auto results = ResultsOf(run, "rt");
  EXPECT_EQ(results.at({"test_rt_matrix", "test_data_set_0"}).at("verdict"), "FAIL");
  EXPECT_EQ(results.at({"test_rt_dot", "test_data_set_0"}).at("verdict"), "PASS");
}

// A runtime that declares float32 accumulation but sums bfloat16 in bfloat16: 1 + 128 x 2^-8 is
// 1.5 exactly, and each 1 + 2^-8 is a tie that a bfloat16 sum rounds back to 1. Against the exact
// expected Y that is FAIL under both rules, not BOUND: the bound is the declared float32
// accumulation's around the exact product, with nothing added for the expected file.
TEST(OutputsJudgementTest, ABfloat16SumDeclaredAsFloat32FailsUnderBothRules) {
  TempDir corpus, outputs, work;
  std::vector<bfloat16> a(129, bfloat16(1.0f)), b(129, bfloat16(0x1p-8f));
  b[0] = bfloat16(1.0f);
  const std::vector<bfloat16> exact = {bfloat16(1.5f)}, summed = {bfloat16(1.0f)};
  const Tensor ta = Tensor::FromValues<bfloat16>({1, 129}, a).value();
  const Tensor tb = Tensor::FromValues<bfloat16>({129, 1}, b).value();
  ASSERT_TRUE(WriteMatMulNodeTest(corpus.path() / "test_rt_k129", ta, tb,
                                  Tensor::FromValues<bfloat16>({1, 1}, exact).value())
                  .ok());
  testing::WriteMessage(
      outputs.path() / "test_rt_k129" / "test_data_set_0" / "output_0.pb",
      testing::RawTensorProto(Tensor::FromValues<bfloat16>({1, 1}, summed).value(), "y"));
  for (const std::string rule : {"onnx", "bound"}) {
    const OutputsRun run = Judge({"--data-dir", corpus.path().string(), "--no-builtin", "--outputs",
                                  "rt=" + outputs.path().string(), "--outputs-arithmetic",
                                  "rt=float32", "--backend", "rt", "--tolerance", rule},
                                 work.path());
    EXPECT_EQ(run.code, kExitFailed) << rule << "\n" << run.out << run.err;
    const auto result = ResultsOf(run, "rt").at({"test_rt_k129", "test_data_set_0"});
    EXPECT_EQ(result.at("verdict"), "FAIL") << rule << ": " << result.dump();
    EXPECT_TRUE(result.at("data_suspect").is_null()) << result.dump();
  }
}

// Each broken output is an ERROR whose message names the file: never skipped, never passed.
struct BrokenOutput {
  std::string why;
  std::function<void(OutputsTreeTest&, const fs::path&)> make;  // Given the output's path.
  std::string says;                                             // Part of the message.
};

void PrintTo(const BrokenOutput& broken, std::ostream* os) { *os << broken.why; }

class BrokenOutputTest : public OutputsTreeTest,
                         public ::testing::WithParamInterface<BrokenOutput> {};

TEST_P(BrokenOutputTest, IsAnErrorNamingTheFile) {
  const fs::path file = OutputPath("test_rt_matrix");
  GetParam().make(*this, file);
  const OutputsRun run = Run();
  EXPECT_EQ(run.code, kExitFailed) << GetParam().why;
  const auto results = ResultsOf(run, "rt");
  const auto& r = results.at({"test_rt_matrix", "test_data_set_0"});
  EXPECT_EQ(r.at("verdict"), "ERROR") << GetParam().why;
  EXPECT_THAT(r.at("message").get<std::string>(), HasSubstr(file.string())) << GetParam().why;
  EXPECT_THAT(r.at("message").get<std::string>(), HasSubstr(GetParam().says)) << GetParam().why;
  // The other case is unaffected.
  EXPECT_EQ(results.at({"test_rt_dot", "test_data_set_0"}).at("verdict"), "PASS");
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, BrokenOutputTest,
    ::testing::Values(
        BrokenOutput{"the runtime wrote nothing and recorded nothing",
                     [](OutputsTreeTest&, const fs::path& f) { fs::remove(f); }, "missing output"},
        BrokenOutput{"bytes that are no TensorProto",
                     [](OutputsTreeTest&, const fs::path& f) {
                       testing::WriteBytes(f, "\xff\xff\xff not a tensor");
                     },
                     ""},
        BrokenOutput{"an empty file",
                     [](OutputsTreeTest&, const fs::path& f) { testing::WriteBytes(f, ""); },
                     "empty"},
        BrokenOutput{
            "raw_data one element short of the dims",
            [](OutputsTreeTest&, const fs::path& f) {
              onnx::TensorProto p = testing::RawTensorProto(testing::FloatTensor({2, 4}), "y");
              p.mutable_raw_data()->resize(p.raw_data().size() - 4);
              testing::WriteMessage(f, p);
            },
            "the runtime's output is wrong"},
        BrokenOutput{
            "the transposed shape, same element count",
            [](OutputsTreeTest&, const fs::path& f) {
              testing::WriteMessage(f, testing::RawTensorProto(testing::FloatTensor({4, 2}), "y"));
            },
            "shape [4,2], but MatMul of [2,3] and [3,4] gives [2,4]"},
        BrokenOutput{"a double Y for a float case",
                     [](OutputsTreeTest&, const fs::path& f) {
                       Tensor d = Tensor::Create(DType::kDouble, {2, 4}).value();
                       testing::WriteMessage(f, testing::RawTensorProto(d, "y"));
                     },
                     "dtype double, but the case's Y is float"},
        BrokenOutput{"an output and a manifest error record for the same data set",
                     [](OutputsTreeTest& t, const fs::path&) {
                       t.WriteManifest(R"({"records": [{"case": "test_rt_matrix",
                         "data_set": "test_data_set_0", "status": "error",
                         "message": "out of memory"}]})");
                     },
                     "also records"}),
    // Test names from the description (the default, the object's bytes, changed run to run).
    [](const ::testing::TestParamInfo<BrokenOutput>& info) {
      std::string name;
      for (char c : info.param.why) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

// A runtime's Y whose data disagrees with its shape is one message blaming the runtime's output,
// in the same words whichever field of the file holds the values and whatever the file calls Y.
TEST(OutputsJudgementTest, AYWhoseDataDisagreesWithItsShapeIsBlamedOnTheRuntimeInOneWording) {
  TempDir corpus, outputs, work;
  testing::WriteFloatCase(corpus.path(), "test_rt_4d", {3, 2, 3, 4}, {3, 2, 4, 2});
  const fs::path file = outputs.path() / "test_rt_4d" / "test_data_set_0" / "output_0.pb";
  const std::string says = "the runtime's output is wrong: " + file.string() +
                           ": Y has 18 values for shape [3,2,3,2] (36) in ";
  onnx::TensorProto raw = testing::RawTensorProto(testing::FloatTensor({3, 2, 3, 2}), "out");
  raw.mutable_raw_data()->resize(18 * sizeof(float));
  onnx::TensorProto typed = raw;
  typed.clear_raw_data();
  for (int i = 0; i < 18; ++i) typed.add_float_data(1.0f);
  for (const auto& [proto, field] : {std::pair(raw, "raw_data"), std::pair(typed, "float_data")}) {
    testing::WriteMessage(file, proto);
    const OutputsRun run = Judge({"--data-dir", corpus.path().string(), "--no-builtin", "--outputs",
                                  "rt=" + outputs.path().string(), "--backend", "rt"},
                                 work.path());
    EXPECT_EQ(run.code, kExitFailed) << run.out << run.err;
    const auto result = ResultsOf(run, "rt").at({"test_rt_4d", "test_data_set_0"});
    EXPECT_EQ(result.at("verdict"), "ERROR") << field;
    EXPECT_THAT(result.at("message").get<std::string>(), ::testing::EndsWith(says + field));
  }
}

TEST_F(OutputsTreeTest, TheRuntimesOwnErrorIsAnErrorAndItsRefusalUnsupported) {
  fs::remove(OutputPath("test_rt_matrix"));
  fs::remove(OutputPath("test_rt_dot"));
  WriteManifest(R"({"runtime": "RT 2.1, CPU", "records": [
      {"case": "test_rt_matrix", "data_set": "test_data_set_0", "status": "error",
       "message": "kernel crashed"},
      {"case": "test_rt_dot", "data_set": "test_data_set_0", "status": "unsupported",
       "message": "no kernel for this type"}]})");
  const OutputsRun run = Run();
  EXPECT_EQ(run.code, kExitFailed);
  const auto results = ResultsOf(run, "rt");
  const auto& error = results.at({"test_rt_matrix", "test_data_set_0"});
  EXPECT_EQ(error.at("verdict"), "ERROR");
  EXPECT_THAT(error.at("message").get<std::string>(), HasSubstr("kernel crashed"));
  const auto& refused = results.at({"test_rt_dot", "test_data_set_0"});
  EXPECT_EQ(refused.at("verdict"), "UNSUPPORTED");
  EXPECT_THAT(refused.at("message").get<std::string>(), HasSubstr("no kernel for this type"));
  EXPECT_THAT(refused.at("message").get<std::string>(), HasSubstr("mm_outputs.json"));
  // The manifest's runtime is part of what the backend runs on.
  EXPECT_THAT(run.out, HasSubstr("(RT 2.1, CPU)"));
  // A refusal alone passes unless --strict, as for any backend.
  fs::remove(outputs_.path() / "mm_outputs.json");
  WriteOutput("test_rt_matrix", ExpectedY(matrix_));
  WriteManifest(R"({"records": [{"case": "test_rt_dot", "data_set": "test_data_set_0",
      "status": "unsupported", "message": "no kernel"}]})");
  EXPECT_EQ(Run().code, kExitPassed);
  EXPECT_EQ(Run({"--strict"}).code, kExitFailed);
}

// Files that no case and data set of the run reads are ERRORs naming them.
TEST_F(OutputsTreeTest, ExtraFilesAndRecordsAreErrorsNamingThem) {
  const fs::path unknown_case =
      outputs_.path() / "test_rt_gone" / "test_data_set_0" / "output_0.pb";
  const fs::path extra_set = OutputPath("test_rt_matrix", "test_data_set_1");
  const fs::path extra_output = outputs_.path() / "test_rt_dot" / "test_data_set_0" / "output_1.pb";
  const fs::path stray = outputs_.path() / "notes.txt";
  for (const fs::path& f : {unknown_case, extra_set, extra_output}) {
    testing::WriteMessage(f, testing::RawTensorProto(ExpectedY(matrix_), "y"));
  }
  testing::WriteBytes(stray, "hello");
  WriteManifest(R"({"records": [{"case": "test_rt_matrix", "data_set": "test_data_set_7",
      "status": "error", "message": "x"}]})");
  const OutputsRun run = Run();
  EXPECT_EQ(run.code, kExitFailed);
  std::vector<std::string> errors;
  int passed = 0;
  for (const auto& r : run.report.at("results")) {
    if (r.at("verdict") == "ERROR") errors.push_back(r.at("message"));
    passed += r.at("verdict") == "PASS";
  }
  EXPECT_EQ(passed, 2);  // The real outputs are still judged.
  ASSERT_EQ(errors.size(), 5u) << run.out;
  const std::string all = nlohmann::json(errors).dump();
  for (const fs::path& f : {unknown_case, extra_set, extra_output, stray}) {
    EXPECT_THAT(all, HasSubstr("extra output file '" + f.string() + "'"));
  }
  EXPECT_THAT(all, HasSubstr("no case named 'test_rt_gone' is in the corpus; to judge only part "
                             "of a tree, narrow the run with --case NAME or --filter REGEX"));
  EXPECT_THAT(all, HasSubstr("extra record in"));
  EXPECT_THAT(all, HasSubstr("test_data_set_7"));
  // A case left out by --filter is not looked at: its outputs are not extra.
  const OutputsRun filtered = Run({"--filter", "matrix"});
  for (const auto& r : filtered.report.at("results")) {
    EXPECT_NE(r.at("case"), "test_rt_dot");
  }
}

// Links are followed only inside the tree: a case folder linked to a folder elsewhere is an ERROR
// per data set naming the link, and nothing under it is walked (a link to a system directory once
// gave tens of thousands of "extra output" results); a link of no case is one extra file.
TEST_F(OutputsTreeTest, LinksLeadingOutsideTheTreeAreErrorsAndAreNeverWalked) {
  TempDir elsewhere;
  fs::rename(outputs_.path() / "test_rt_dot", elsewhere.path() / "dot");
  testing::WriteBytes(elsewhere.path() / "dot" / "stray" / "x.pb", "x");
  fs::create_directory_symlink(elsewhere.path() / "dot", outputs_.path() / "test_rt_dot");
  fs::create_directory_symlink("/usr", outputs_.path() / "test_rt_usr");
  const OutputsRun run = Run();
  EXPECT_EQ(run.code, kExitFailed);
  // In catalog order, the name the catalog does not have last.
  const nlohmann::json& results = run.report.at("results");
  ASSERT_EQ(results.size(), 3u) << run.report.dump(1);
  EXPECT_EQ(results[0].at("case"), "test_rt_dot");
  EXPECT_EQ(results[0].at("verdict"), "ERROR");
  EXPECT_THAT(results[0].at("message").get<std::string>(),
              HasSubstr("leads outside the outputs tree '" + outputs_.path().string() +
                        "' through a symbolic link"));
  EXPECT_EQ(results[1].at("case"), "test_rt_matrix");
  EXPECT_EQ(results[1].at("verdict"), "PASS");
  EXPECT_EQ(results[2].at("case"), "test_rt_usr");
  EXPECT_THAT(results[2].at("message").get<std::string>(),
              HasSubstr("extra output file '" + (outputs_.path() / "test_rt_usr").string() + "'"));
}

TEST_F(OutputsTreeTest, ShardsMergeIntoTheUnshardedReportExtrasIncluded) {
  testing::WriteFloatCase(corpus_.path(), "test_rt_third", {1, 2}, {2, 1});
  WriteOutput("test_rt_third", ExpectedY(corpus_.path() / "test_rt_third"));
  testing::WriteBytes(outputs_.path() / "test_rt_zz_unknown" / "test_data_set_0" / "output_0.pb",
                      "x");
  testing::WriteBytes(outputs_.path() / "test_rt_aa_unknown" / "x.pb", "x");
  const OutputsRun whole = Run();
  std::vector<std::string> merge = {"merge"};
  for (const char* shard : {"1/2", "2/2"}) {
    const OutputsRun part = Run({"--shard", shard});
    const fs::path file = work_.path() / (std::string("shard") + shard[0] + ".json");
    std::ofstream(file) << part.report.dump();
    merge.push_back(file.string());
  }
  const OutputsRun merged = Judge(merge, work_.path());
  ASSERT_EQ(merged.code, whole.code) << merged.err;
  // Equal but for the wall times and what the calls left behind (measured afresh in every run).
  auto untimed = [](nlohmann::json results) {
    for (auto& r : results) {
      r.erase("seconds");
      r.erase("resources");
    }
    return results;
  };
  EXPECT_EQ(untimed(merged.report.at("results")), untimed(whole.report.at("results")));
  EXPECT_EQ(whole.report.at("results").size(), 5u);
}

TEST_F(OutputsTreeTest, InProcessAndIsolatedRunsAgree) {
  fs::remove(OutputPath("test_rt_dot"));
  const OutputsRun isolated = Run();
  const OutputsRun in_process = Run({"--no-isolate"});
  auto verdicts = [](const OutputsRun& run) {
    std::vector<std::string> v;
    for (const auto& r : run.report.at("results")) v.push_back(r.at("verdict"));
    return v;
  };
  // In catalog (name) order: test_rt_dot, then test_rt_matrix.
  EXPECT_EQ(verdicts(isolated), (std::vector<std::string>{"ERROR", "PASS"}));
  EXPECT_EQ(verdicts(in_process), verdicts(isolated));
}

TEST_F(OutputsTreeTest, ExpectationsApplyAsToAnyBackend) {
  fs::remove(OutputPath("test_rt_dot"));
  const fs::path file = work_.path() / "expect.json";
  testing::WriteBytes(file, R"({"expectations": [{"case": "test_rt_dot", "backend": "rt",
      "expect": "XFAIL", "reason": "the runtime drops rank-0 outputs", "link": "https://x/1"}]})");
  const OutputsRun run = Run({"--expectations", file.string()});
  EXPECT_EQ(run.code, kExitPassed) << run.out;
  EXPECT_EQ(ResultsOf(run, "rt").at({"test_rt_dot", "test_data_set_0"}).at("verdict"), "XFAIL");
}

// An extra file's ERROR is decided by the expectations like every result (in the one place they
// apply), in-process and isolated.
TEST_F(OutputsTreeTest, ExpectationsDecideAnExtraFilesErrorToo) {
  testing::WriteMessage(outputs_.path() / "test_rt_gone" / "test_data_set_0" / "output_0.pb",
                        testing::RawTensorProto(ExpectedY(matrix_), "y"));
  const fs::path file = work_.path() / "expect.json";
  testing::WriteBytes(file, R"({"expectations": [{"case": "test_rt_gone", "backend": "rt",
      "expect": "XFAIL", "reason": "a case removed since", "link": "https://x/2"}]})");
  for (const char* isolation : {"--no-isolate", "--jobs=1"}) {
    const OutputsRun run = Run({"--expectations", file.string(), isolation});
    EXPECT_EQ(run.code, kExitPassed) << isolation << "\n" << run.out << run.err;
    std::vector<nlohmann::json> gone;
    for (const auto& r : run.report.at("results")) {
      if (r.at("case") == "test_rt_gone") gone.push_back(r);
    }
    ASSERT_EQ(gone.size(), 1u) << isolation;
    EXPECT_EQ(gone[0].at("verdict"), "XFAIL") << isolation;
    EXPECT_THAT(gone[0].at("message").get<std::string>(),
                HasSubstr("expected failure (a case removed since (https://x/2)): extra output "
                          "file"));
  }
}

TEST_F(OutputsTreeTest, ABuiltInCaseIsLookedForWhereExportBuiltinWritesIt) {
  const std::vector<std::string> args = {
      "--data-dir", corpus_.path().string(),          "--case",    "test_cc_matmul_2d",
      "--outputs",  "rt=" + outputs_.path().string(), "--backend", "rt"};
  const OutputsRun missing = Judge(args, work_.path());
  const nlohmann::json r = ResultsOf(missing, "rt").at({"test_cc_matmul_2d", "example"});
  EXPECT_EQ(r.at("verdict"), "ERROR");
  EXPECT_THAT(r.at("message").get<std::string>(),
              HasSubstr(OutputPath("test_cc_matmul_2d").string()));
  // Its expected Y, written where the built-in's one data set goes, passes.
  DiscoverOptions discover;
  discover.select = [](const std::string& n) { return n == "test_cc_matmul_2d"; };
  const Catalog builtins = Discover({}, discover);
  ASSERT_EQ(builtins.cases.size(), 1u);
  WriteOutput("test_cc_matmul_2d", LoadCaseDataSet(builtins.cases[0], 0).value().y);
  const OutputsRun found = Judge(args, work_.path());
  EXPECT_EQ(found.code, kExitPassed) << found.out;
}

TEST(OutputsCliTest, BadTreesAndDeclarationsAreUsageErrors) {
  TempDir dir;
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--outputs", "rt"}, "expected NAME=VALUE"},
      {{"--outputs", "rt=" + (dir.path() / "nope").string()}, "is not a directory"},
      {{"--outputs", "reference=" + dir.path().string()}, "reference"},
      {{"--outputs", "rt=" + dir.path().string(), "--outputs-arithmetic", "rt=int32"},
       "not a float dtype"},
      {{"--outputs-arithmetic", "rt=float32"}, "no --outputs rt=DIR"},
      // A name is printed on console lines: a newline in it would forge one.
      {{"--outputs", "rt\nPASS=" + dir.path().string()},
       "--outputs NAME 'rt?PASS' has a character outside [A-Za-z0-9_-]"},
      {{"--outputs", std::string(65, 'r') + "=" + dir.path().string()},
       "is longer than 64 characters"},
  };
  for (const auto& [args, says] : cases) {
    const OutputsRun run = Judge(args, dir.path());
    EXPECT_EQ(run.code, kExitUsage) << says;
    EXPECT_THAT(run.err, HasSubstr(says));
  }
  testing::WriteBytes(dir.path() / "mm_outputs.json", R"({"records": [{"case": "c",
      "data_set": "d", "status": "maybe", "message": ""}]})");
  const OutputsRun bad = Judge({"--outputs", "rt=" + dir.path().string()}, dir.path());
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("mm_outputs.json"));
  EXPECT_THAT(bad.err, HasSubstr("'maybe'"));
  testing::WriteBytes(dir.path() / "mm_outputs.json", R"({"runtime": 7})");
  EXPECT_THAT(Judge({"--outputs", "rt=" + dir.path().string()}, dir.path()).err,
              HasSubstr("mm_outputs.json': runtime: expected a string, found a number"));
}

// The manifest is read by the rule for every file: a FIFO or device is refused at once (it used to
// block, or read until memory ran out), and so is a link leading out of the tree.
TEST(OutputsCliTest, AManifestThatIsNotARegularFileIsRefusedAtOnce) {
  TempDir dir;
  const fs::path manifest = dir.path() / "mm_outputs.json";
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const OutputsRun fifo = Judge({"--outputs", "rt=" + dir.path().string()}, dir.path());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(fifo.code, kExitUsage);
  EXPECT_THAT(fifo.err, HasSubstr("outputs manifest '" + manifest.string() +
                                  "': a FIFO (named pipe), not a regular file"));
  fs::remove(manifest);
  fs::create_symlink("/dev/zero", manifest);
  const OutputsRun zero = Judge({"--outputs", "rt=" + dir.path().string()}, dir.path());
  EXPECT_EQ(zero.code, kExitUsage);
  EXPECT_THAT(zero.err, HasSubstr("leads outside the outputs tree"));
  fs::remove(manifest);
  testing::WriteBytes(manifest, std::string(100, '[') + std::string(100, ']'));
  EXPECT_THAT(Judge({"--outputs", "rt=" + dir.path().string()}, dir.path()).err,
              HasSubstr("JSON nested deeper than 64 levels at byte 64"));
}

TEST(OutputsArithmeticTest, OneTypeWidensTheNarrowerOnesAndItemsOverride) {
  std::map<DType, Arithmetic> declared;
  ASSERT_TRUE(ParseArithmeticSpec("float32", declared).ok());
  EXPECT_EQ(declared.at(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(declared.at(DType::kBFloat16), (Arithmetic{DType::kFloat, false}));
  EXPECT_EQ(declared.at(DType::kFloat), (Arithmetic{DType::kFloat, false}));
  // Never narrowed by a one-type declaration.
  EXPECT_EQ(declared.at(DType::kDouble), (Arithmetic{DType::kDouble, false}));
  ASSERT_TRUE(ParseArithmeticSpec("float32,float16:float16", declared).ok());
  EXPECT_EQ(declared.at(DType::kFloat16).accumulation, DType::kFloat16);
  EXPECT_FALSE(ParseArithmeticSpec("float32,", declared).ok());
  EXPECT_FALSE(ParseArithmeticSpec("int64:float32", declared).ok());
}

// "+flush" declares what plugin ABI v2's flushes_subnormals does, for the dtypes of its item.
TEST(OutputsArithmeticTest, FlushIsDeclaredPerItemAsPluginsDeclareIt) {
  std::map<DType, Arithmetic> declared;
  ASSERT_TRUE(ParseArithmeticSpec("float32,bfloat16:float32+flush", declared).ok());
  EXPECT_EQ(declared.at(DType::kBFloat16), (Arithmetic{DType::kFloat, true}));
  EXPECT_EQ(declared.at(DType::kFloat16), (Arithmetic{DType::kFloat, false}));
  ASSERT_TRUE(ParseArithmeticSpec("float32+flush", declared).ok());
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat, DType::kDouble}) {
    EXPECT_TRUE(declared.at(d).flushes_subnormals) << DTypeName(d);
  }
  for (const char* bad : {"+flush", "float32+flushes", "bfloat16:+flush", "float32+flush+flush"}) {
    const Status status = ParseArithmeticSpec(bad, declared);
    EXPECT_FALSE(status.ok()) << bad;
    EXPECT_THAT(status.message(), HasSubstr(std::string("'") + bad + "'")) << bad;
  }
}

// What the bound of each dtype is computed from: the declaration, else the dtype itself.
TEST(OutputsArithmeticTest, TheDeclarationDecidesTheBound) {
  OutputsTree tree;
  tree.spec.name = "rt";
  tree.spec.arithmetic[DType::kFloat16] = {DType::kFloat, true};
  OutputsBackend declared(std::make_shared<OutputsTree>(tree));
  EXPECT_EQ(declared.DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat, true}));
  EXPECT_EQ(declared.DeclaredArithmetic(DType::kDouble), (Arithmetic{DType::kDouble, false}));
  OutputsBackend own(std::make_shared<OutputsTree>(OutputsTree{{"rt", {}, {}}, {}}));
  EXPECT_EQ(own.DeclaredArithmetic(DType::kFloat16).accumulation, DType::kFloat16);
  EXPECT_EQ(own.DeclaredArithmetic(DType::kBFloat16).accumulation, DType::kBFloat16);
  EXPECT_EQ(own.DeclaredArithmetic(DType::kInt32).accumulation, DType::kInt32);
}

// A runtime that reads subnormal inputs as zero (as AVX512-BF16's dot product does): 2^-130 x
// 2^100 = 2^-30, written as 0. Within ONNX's atol, far outside the bound of a float32
// accumulation that keeps subnormals, so it passes the bound rule only when the flush is declared.
TEST(OutputsArithmeticTest, AFlushingRuntimePassesOnlyWhenItDeclaresTheFlush) {
  TempDir corpus, outputs, work;
  const Tensor a =
      Tensor::FromValues<bfloat16>({1, 2}, std::vector{bfloat16(0x1p-130f), bfloat16(1.0f)})
          .value();
  const Tensor b =
      Tensor::FromValues<bfloat16>({2, 1}, std::vector{bfloat16(0x1p100f), bfloat16(0.0f)}).value();
  ASSERT_TRUE(WriteMatMulNodeTest(
                  corpus.path() / "test_rt_flush", a, b,
                  Tensor::FromValues<bfloat16>({1, 1}, std::vector{bfloat16(0x1p-30f)}).value())
                  .ok());
  testing::WriteMessage(
      outputs.path() / "test_rt_flush" / "test_data_set_0" / "output_0.pb",
      testing::RawTensorProto(
          Tensor::FromValues<bfloat16>({1, 1}, std::vector{bfloat16(0.0f)}).value(), "y"));
  auto verdict = [&](const std::string& declaration) {
    const OutputsRun run = Judge({"--data-dir", corpus.path().string(), "--no-builtin", "--outputs",
                                  "rt=" + outputs.path().string(), "--outputs-arithmetic",
                                  "rt=" + declaration, "--backend", "rt", "--tolerance", "bound"},
                                 work.path());
    const auto result = ResultsOf(run, "rt").at({"test_rt_flush", "test_data_set_0"});
    return std::pair(run.code, result.at("verdict").get<std::string>());
  };
  EXPECT_EQ(verdict("float32"), std::pair(kExitFailed, std::string("IMPRECISE")));
  EXPECT_EQ(verdict("bfloat16:float32+flush"), std::pair(kExitPassed, std::string("PASS")));
  // The flush of another dtype does not cover this one.
  EXPECT_EQ(verdict("float32,float16:float32+flush"),
            std::pair(kExitFailed, std::string("IMPRECISE")));
}

}  // namespace
}  // namespace mm::conformance
