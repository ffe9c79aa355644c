// Node tests of MatMul's family (Gemm, MatMulInteger, QLinearMatMul) through mm-conformance exactly
// as MatMul's: discovered in a data root, run in this process and in workers, judged by
// mm::family, refused with a reason by a backend that computes MatMul only, failed on a wrong
// family backend (and the run with them), invalid with the file named, and every report naming
// the operator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../fake_backends.h"
#include "../onnx_fixtures.h"
#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/loader/tensor_proto.h"
#include "mm/conformance/official/official_corpus.h"
#include "mm/conformance/results/result_json.h"
#include "mm/conformance/session/run.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"
#include "nlohmann/json.hpp"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

// The official family cases: MM_FAMILY_DATA, else the shared folder beside the repository.
fs::path FamilyData() {
  const char* env = std::getenv("MM_FAMILY_DATA");
  if (env != nullptr && *env != '\0') return env;
  return fs::path(MM_SOURCE_DIR) / ".." / "shared" / "onnx-node-tests" / "matmul-family";
}

// The reference backend whose Gemm leaves C out (beta taken as 0): a wrong family backend.
class IgnoresBetaBackend : public Backend {
 public:
  std::string_view name() const override { return "ignores_beta"; }
  Support Supports(const MatMulDesc& desc) const override { return reference_.Supports(desc); }
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return reference_.Prepare(plan);
  }
  family::FamilyBackend* family() override { return &ignores_beta_; }

 private:
  class IgnoresBeta : public family::FamilyBackend {
   public:
    explicit IgnoresBeta(family::FamilyBackend& inner) : inner_(inner) {}
    Support SupportsOp(const family::OpDesc& desc) const override {
      return inner_.SupportsOp(desc);
    }
    Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override {
      return inner_.DeclaredArithmetic(desc);
    }
    Status Compute(const family::Plan& plan, MutableTensorView y) override {
      family::Plan wrong = plan;
      wrong.gemm.beta = 0;
      return inner_.Compute(wrong, y);
    }

   private:
    family::FamilyBackend& inner_;
  };
  ReferenceBackend reference_;
  IgnoresBeta ignores_beta_{*reference_.family()};
};

// The fakes (reference; "good": a correct backend of MatMul only) and "ignores_beta".
BackendRegistry FamilyRegistry() {
  BackendRegistry registry = testing::FakeRegistry();
  EXPECT_TRUE(registry
                  .Register("ignores_beta", "test",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(
                                  std::make_unique<IgnoresBetaBackend>());
                            })
                  .ok());
  return registry;
}

void DeclareFloat(onnx::ValueInfoProto* info, const std::string& name, const Dims& dims) {
  info->set_name(name);
  auto* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
}

// A Gemm-13 node test: Y = alpha A B + beta C with A [2,3], B [3,4] and a bias C [4], its expected
// Y mm's exact answer.
NodeTest GemmTest(float alpha, float beta) {
  const Tensor a = testing::FloatTensor({2, 3}, 1, 0.5);
  const Tensor b = testing::FloatTensor({3, 4}, -2, 0.25);
  const Tensor c = testing::FloatTensor({4}, 3, 1);
  family::Problem problem;
  problem.op = family::Op::kGemm;
  problem.version = 13;
  problem.inputs = {{"A", a.view()}, {"B", b.view()}, {"C", c.view()}};
  problem.attributes = {family::Attribute::Float("alpha", alpha),
                        family::Attribute::Float("beta", beta)};
  const family::Plan plan = family::PlanProblem(problem).value();
  const family::FamilyOracle exact =
      family::ExactFamily(plan, Arithmetic::OwnType(DType::kFloat)).value();

  NodeTest test;
  test.model.set_ir_version(7);
  test.model.add_opset_import()->set_version(13);
  onnx::GraphProto* graph = test.model.mutable_graph();
  graph->set_name("test_gemm_bias");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("Gemm");
  for (const char* input : {"a", "b", "c"}) node->add_input(input);
  node->add_output("y");
  for (const auto& [name, value] : {std::pair{"alpha", alpha}, {"beta", beta}}) {
    onnx::AttributeProto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::FLOAT);
    attribute->set_f(value);
  }
  DeclareFloat(graph->add_input(), "a", {2, 3});
  DeclareFloat(graph->add_input(), "b", {3, 4});
  DeclareFloat(graph->add_input(), "c", {4});
  DeclareFloat(graph->add_output(), "y", {2, 4});
  test.data_sets.push_back({{TensorToProto(a, "a"), TensorToProto(b, "b"), TensorToProto(c, "c")},
                            {TensorToProto(exact.y, "y")}});
  return test;
}

std::vector<Result> RunRoot(const fs::path& root, const std::vector<std::string>& backends,
                            bool isolate) {
  const Catalog catalog = Discover({{root, "--data-dir"}}, {.builtin = false, .select = {}});
  RunOptions options = testing::OnBackends(backends);
  options.isolate = isolate;
  return RunConformance(catalog, FamilyRegistry(), options);
}

class FamilyOfficialRunTest : public ::testing::TestWithParam<bool> {};

// The 20 official cases, in this process and in workers: every one a case of its operator, PASS
// on the reference backend, UNSUPPORTED with the reason on a backend of MatMul only.
TEST_P(FamilyOfficialRunTest, EveryOfficialCasePassesOnTheReferenceAndIsRefusedElsewhere) {
  const fs::path root = FamilyData();
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " is absent: no official family cases";
  const Catalog catalog = Discover({{root, "--data-dir"}}, {.builtin = false, .select = {}});
  EXPECT_EQ(catalog.cases.size(), 20u);
  EXPECT_TRUE(catalog.skipped.empty());
  const std::vector<Result> results = RunRoot(root, {"reference", "good"}, GetParam());
  ASSERT_EQ(results.size(), 40u);
  std::map<std::string, int> per_op;
  for (const Result& r : results) {
    SCOPED_TRACE(r.case_name + " on " + r.backend);
    const std::string op = r.case_name.starts_with("test_gemm")            ? "Gemm"
                           : r.case_name.starts_with("test_matmulinteger") ? "MatMulInteger"
                                                                           : "QLinearMatMul";
    EXPECT_EQ(r.op, op);
    if (r.backend == "reference") {
      EXPECT_EQ(r.verdict, Verdict::kPass) << r.message;
      EXPECT_THAT(r.message, HasSubstr(" PASS"));
      EXPECT_EQ(r.data_suspect, "");
      ++per_op[op];
    } else {
      EXPECT_EQ(r.verdict, Verdict::kUnsupported);
      EXPECT_EQ(r.message, "fake computes MatMul only, not " + op);
    }
  }
  EXPECT_EQ(per_op["Gemm"], 11);
  EXPECT_EQ(per_op["MatMulInteger"], 1);
  EXPECT_EQ(per_op["QLinearMatMul"], 8);
}

INSTANTIATE_TEST_SUITE_P(InProcessAndIsolated, FamilyOfficialRunTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Isolated" : "InProcess"; });

// The tripwire: an official family case a root holds is reported intact, or altered when a byte
// changed (failing --require-official's completeness); those it lacks are not listed, and the
// hint counts MatMul's 7 alone.
TEST(FamilyOfficialCorpusTest, AFamilyCaseFoundIsCheckedByteForByte) {
  const fs::path data = FamilyData();
  if (!fs::is_directory(data)) GTEST_SKIP() << data << " is absent: no official family cases";
  EXPECT_EQ(FamilyOfficialCases().size(), 20u);
  TempDir root;
  fs::copy(data / "test_gemm_beta", root.path() / "test_gemm_beta", fs::copy_options::recursive);
  OfficialReport report = CheckOfficialCorpora({{root.path(), "--data-dir"}});
  ASSERT_EQ(report.cases.size(), 8u);  // MatMul's 7 (missing) and the one found.
  EXPECT_EQ(report.cases.back().name, "test_gemm_beta");
  EXPECT_EQ(report.cases.back().state, OfficialStatus::State::kIntact);
  EXPECT_THAT(MissingOfficialHint(report), HasSubstr("7 of the 7 official ONNX MatMul"));
  const fs::path output = root.path() / "test_gemm_beta" / "test_data_set_0" / "output_0.pb";
  std::string bytes;
  {
    std::ifstream in(output, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.back() ^= 1;
  testing::WriteBytes(output, bytes);
  report = CheckOfficialCorpora({{root.path(), "--data-dir"}});
  EXPECT_EQ(report.cases.back().state, OfficialStatus::State::kAltered);
  EXPECT_THAT(report.cases.back().problems,
              ::testing::ElementsAre(HasSubstr("test_data_set_0/output_0.pb: SHA-256")));
}

// A planted Gemm that ignores beta FAILs (the worst element named) and fails the run; the
// reports name the operator; the results read back hold together.
TEST(FamilyRunTest, AGemmThatIgnoresBetaFailsAndFailsTheRun) {
  TempDir root;
  testing::WriteTest(root.path() / "test_gemm_bias", GemmTest(0.5f, 2.0f));
  const fs::path json = root.path() / "report.json";
  const fs::path md = root.path() / "report.md";
  const fs::path xml = root.path() / "report.xml";
  const auto run = testing::ConformanceCli(
      {"--data-dir", root.path().string(), "--no-builtin", "--backend", "reference", "--backend",
       "ignores_beta", "--json", json.string(), "--markdown", md.string(), "--junit", xml.string()},
      FamilyRegistry());
  EXPECT_EQ(run.code, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Gemm [2,3] x [3,4]"));
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report["results"].size(), 2u);
  for (const auto& result : report["results"]) {
    // Read back (--resume, merge), each result's verdict follows from its own fields.
    const StatusOr<Result> back = ResultFromJson(result);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(CheckResultConsistent(*back, {}).ok()) << CheckResultConsistent(*back, {});
    EXPECT_EQ(result["max_abs_error"], nullptr);
    EXPECT_EQ(result["op"], "Gemm");
    const bool planted = result["backend"] == "ignores_beta";
    EXPECT_EQ(result["verdict"], planted ? "FAIL" : "PASS") << result["message"];
    if (planted) {
      EXPECT_THAT(result["message"].get<std::string>(), HasSubstr("8 FAIL; worst at 0"));
    }
  }
  std::stringstream markdown, junit;
  markdown << std::ifstream(md).rdbuf();
  junit << std::ifstream(xml).rdbuf();
  EXPECT_THAT(markdown.str(), HasSubstr("| Gemm [2,3] x [3,4] | PASS | FAIL |"));
  EXPECT_THAT(junit.str(), HasSubstr("<property name=\"operator\" value=\"Gemm\" />"));
}

// ONNX's expected output is checked against mm's exact answer: a wrong one is suspect data on
// every result of it, never silently taken for either side.
TEST(FamilyRunTest, AnExpectedOutputThatIsNotTheExactAnswerIsSuspectData) {
  TempDir root;
  NodeTest test = GemmTest(1.0f, 1.0f);
  Tensor y = Tensor::Create(DType::kFloat, {2, 4}).value();
  std::memcpy(y.Data<float>(), test.data_sets[0].outputs[0].raw_data().data(), 8 * sizeof(float));
  y.Data<float>()[5] += 1;
  test.data_sets[0].outputs[0] = TensorToProto(y, "y");
  testing::WriteTest(root.path() / "test_gemm_wrong_expected", test);
  for (const Result& r : RunRoot(root.path(), {"reference", "good"}, false)) {
    EXPECT_THAT(r.data_suspect, HasSubstr("the expected Y of test_data_set_0 is not mm's exact "
                                          "answer (FAIL as a result computed in float): 8 "
                                          "elements: 7 PASS, 1 FAIL; worst at 5"))
        << r.backend;
    EXPECT_EQ(r.verdict, r.backend == "reference" ? Verdict::kPass : Verdict::kUnsupported);
  }
}

// A malformed family model or tensor, or a problem its operator refuses, is an ERROR of its case
// naming the file (or the input), never a crash and never a skipped model.
TEST(FamilyRunTest, MalformedFamilyCasesAreErrorsNamingTheFile) {
  TempDir root;
  NodeTest no_opset = GemmTest(1.0f, 1.0f);
  no_opset.model.clear_opset_import();
  testing::WriteTest(root.path() / "test_a_no_opset", no_opset);
  testing::WriteTest(root.path() / "test_b_truncated", GemmTest(1.0f, 1.0f));
  testing::WriteBytes(root.path() / "test_b_truncated" / "test_data_set_0" / "input_2.pb",
                      std::string("\x0a\x05", 2));
  NodeTest bad_c = GemmTest(1.0f, 1.0f);
  bad_c.model.mutable_graph()
      ->mutable_input(2)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(3);
  bad_c.data_sets[0].inputs[2] = TensorToProto(testing::FloatTensor({3}), "c");
  testing::WriteTest(root.path() / "test_c_bad_bias", bad_c);
  for (bool isolate : {false, true}) {
    const std::vector<Result> results = RunRoot(root.path(), {"reference"}, isolate);
    ASSERT_EQ(results.size(), 3u);
    for (const Result& r : results) {
      EXPECT_EQ(r.verdict, Verdict::kError) << r.case_name;
      EXPECT_EQ(r.op, "Gemm") << r.case_name;
    }
    const fs::path model = root.path() / "test_a_no_opset" / "model.onnx";
    EXPECT_THAT(results[0].message, HasSubstr(model.string() + ": model has no opset import"));
    const fs::path tensor = root.path() / "test_b_truncated" / "test_data_set_0" / "input_2.pb";
    EXPECT_THAT(results[1].message, HasSubstr(tensor.string()));
    EXPECT_THAT(results[2].message,
                HasSubstr((root.path() / "test_c_bad_bias" / "test_data_set_0").string() +
                          ": Gemm-13 C: [3] does not broadcast"));
  }
}

// An outputs tree is judged for MatMul's cases: a family case is UNSUPPORTED by it, and the files
// written for it are ERRORs saying so, never silently left unread.
TEST(FamilyRunTest, AnOutputsTreeRefusesAFamilyCaseAndNamesItsFiles) {
  TempDir root, outputs;
  const NodeTest test = GemmTest(0.5f, 2.0f);
  testing::WriteTest(root.path() / "test_gemm_bias", test);
  testing::WriteMessage(outputs.path() / "test_gemm_bias" / "test_data_set_0" / "output_0.pb",
                        test.data_sets[0].outputs[0]);
  const fs::path json = root.path() / "report.json";
  const auto run =
      testing::ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--outputs",
                               "rt=" + outputs.path().string(), "--json", json.string()},
                              FamilyRegistry());
  EXPECT_EQ(run.code, 1) << run.out << run.err;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report["results"].size(), 2u);
  EXPECT_EQ(report["results"][0]["verdict"], "UNSUPPORTED");
  EXPECT_EQ(report["results"][0]["message"], "rt computes MatMul only, not Gemm");
  EXPECT_EQ(report["results"][1]["verdict"], "ERROR");
  EXPECT_THAT(report["results"][1]["message"].get<std::string>(),
              HasSubstr("output_0.pb': it belongs to no case and data set of this run (an "
                        "outputs tree is judged for MatMul's cases only; 'test_gemm_bias' is a "
                        "Gemm case)"));
}

// A family case built in memory (as the built-in family catalogue's are) runs and is judged as one
// read from files, in this process and in forked workers.
TEST(FamilyRunTest, AnInMemoryFamilyCaseRunsInProcessAndInWorkers) {
  const NodeTest test = GemmTest(0.5f, 2.0f);
  auto make = [test](std::size_t) -> StatusOr<FamilyDataSet> {
    FamilyDataSet set;
    set.name = "example";
    set.op = family::Op::kGemm;
    set.version = 13;
    set.attributes = {family::Attribute::Float("alpha", 0.5f),
                      family::Attribute::Float("beta", 2.0f)};
    for (const char* role : {"A", "B", "C"}) {
      const auto& proto = test.data_sets[0].inputs[set.inputs.size()];
      MM_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto, role));
      set.inputs.emplace_back(role, std::move(t));
    }
    MM_ASSIGN_OR_RETURN(set.y, TensorFromProto(test.data_sets[0].outputs[0], "Y"));
    return set;
  };
  const FamilyDataSet first = make(0).value();
  Catalog catalog;
  catalog.cases.push_back(
      InMemoryFamilyCase("mm_family_gemm_bias", std::make_shared<const std::string>(kBuiltinSource),
                         FamilyModelOf(first.problem(), DType::kFloat, {2, 4}), {"example"}, make));
  for (bool isolate : {false, true}) {
    RunOptions options = testing::OnBackends({"reference", "ignores_beta"});
    options.isolate = isolate;
    const std::vector<Result> results = RunConformance(catalog, FamilyRegistry(), options);
    ASSERT_EQ(results.size(), 2u);
    for (const Result& r : results) {
      EXPECT_EQ(r.op, "Gemm");
      EXPECT_EQ(r.data_set, "example");
      EXPECT_EQ(r.a_dims, (Dims{2, 3}));
      EXPECT_EQ(r.verdict, r.backend == "reference" ? Verdict::kPass : Verdict::kFail)
          << r.backend << (isolate ? " isolated: " : ": ") << r.message;
    }
  }
}

// A result names its operator in JSON; a report from before the field reads as MatMul; a name that
// is no operator is refused.
TEST(FamilyRunTest, TheOperatorIsAFieldOfEveryResult) {
  Result r;
  r.case_name = "test_gemm_bias";
  r.backend = "reference";
  r.op = "QLinearMatMul";
  r.dtype = DType::kUInt8;
  r.a_dims = {2, 4};
  r.b_dims = {4, 3};
  nlohmann::json json = nlohmann::json::parse(ResultToJson(r).dump());
  EXPECT_EQ(json["op"], "QLinearMatMul");
  const StatusOr<Result> back = ResultFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->op, "QLinearMatMul");
  EXPECT_EQ(back->dtype, DType::kUInt8);
  json.erase("op");
  EXPECT_EQ(ResultFromJson(json).value().op, "MatMul");
  json["op"] = "Conv";
  EXPECT_THAT(ResultFromJson(json).status().message(), HasSubstr("'Conv' is not an operator"));
}

// A worker of a launcher holds no catalog: the family case travels in the task, whole.
TEST(FamilyRunTest, AFamilyCaseTravelsToAWorkerWhole) {
  TempDir root;
  testing::WriteTest(root.path() / "test_gemm_bias", GemmTest(0.5f, 2.0f));
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  ASSERT_EQ(catalog.cases.size(), 1u);
  const CaseEntry& sent = catalog.cases[0];
  ASSERT_NE(sent.family, nullptr);
  const auto task = DecodeTask(EncodeTask({0, {}, sent, 7}));
  ASSERT_TRUE(task.has_value());
  ASSERT_TRUE(task->entry.has_value());
  const CaseEntry& got = *task->entry;
  EXPECT_EQ(got.op, family::Op::kGemm);
  ASSERT_NE(got.family, nullptr);
  EXPECT_EQ(got.family->op, family::Op::kGemm);
  EXPECT_EQ(got.family->version, 13);
  EXPECT_EQ(got.family->opset, 13);
  ASSERT_EQ(got.family->attributes.size(), 2u);
  EXPECT_EQ(got.family->attributes[1].name, "beta");
  EXPECT_EQ(got.family->attributes[1].f, 2.0f);
  EXPECT_EQ(got.family->inputs, sent.family->inputs);
  EXPECT_EQ(got.family->y.dims, sent.family->y.dims);
  const auto loaded = LoadFamilyCaseDataSet(got, 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->problem().ToString(),
            LoadFamilyCaseDataSet(sent, 0).value().problem().ToString());
}

}  // namespace
}  // namespace mm::conformance
