// Verdicts: PASS, FAIL with the worst element, UNSUPPORTED with the reason, ERROR for broken
// backends (including ones that throw), and the three-way comparison with the reference.
#include "mm/conformance/running/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_backends.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/session/run.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

class RunnerTest : public ::testing::Test {
 protected:
  RunnerTest() {
    testing::WriteFloatCase(root_.path(), "test_case", {2, 3, 4}, {4, 5});
    catalog_ = Discover({{root_.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  }
  Result RunOne(const std::string& backend) {
    auto results = RunConformance(catalog_, registry_, testing::OnBackends({backend}));
    EXPECT_EQ(results.size(), 1u);
    return results.at(0);
  }
  TempDir root_;
  Catalog catalog_;
  BackendRegistry registry_ = testing::FakeRegistry();
};

TEST_F(RunnerTest, CorrectBackendPassesAndIsComparedWithTheReference) {
  Result r = RunOne("good");
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.message;
  EXPECT_EQ(r.case_name, "test_case");
  EXPECT_EQ(r.data_set, "test_data_set_0");
  EXPECT_EQ(r.dtype, DType::kFloat);
  EXPECT_EQ(r.vs_reference, "bit-identical");
  EXPECT_EQ(RunOne("reference").vs_reference, "is reference");
}

TEST_F(RunnerTest, WrongValueFailsWithTheWorstElement) {
  Result r = RunOne("nudge");
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_THAT(r.message, HasSubstr("1 of 30 elements differ; worst at [0,0,0]"));
  ASSERT_TRUE(r.vs_expected.has_value());
  EXPECT_NEAR(r.vs_expected->max_rel_error, 0.01, 1e-4);
  EXPECT_THAT(r.vs_reference, HasSubstr("differs: 1 of 30 elements differ"));
}

TEST_F(RunnerTest, DeclaredUnsupportedIsNotAPassNorAFailure) {
  Result r = RunOne("unsupported");
  EXPECT_EQ(r.verdict, Verdict::kUnsupported);
  EXPECT_EQ(r.message, "fake has no such kernel");
}

// The bound rule is centred on the exact product of the data set's own A and B, never on the
// expected file: a wrong expected Y fails a correct backend only under ONNX's rule (BOUND), and
// the data set is reported as suspect.
TEST(NodeTestJudgementTest, AWrongExpectedYIsSuspectDataAndCannotMoveTheBound) {
  TempDir root;
  NodeTest test = testing::FloatMatMulTest({2, 3}, {3, 2});
  Tensor y = testing::ExactFloatMatMul(testing::FloatTensor({2, 3}, 1, 0.5),
                                       testing::FloatTensor({3, 2}, -2, 0.25));
  y.Data<float>()[0] *= 1.01f;  // 1 %: far outside a float computation's bound.
  test.data_sets[0].outputs[0] = TensorToProto(y, "y");
  testing::WriteTest(root.path() / "test_wrong_expected", test);
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  const auto results =
      RunConformance(catalog, testing::FakeRegistry(), testing::OnBackends({"good", "reference"}));
  ASSERT_EQ(results.size(), 2u);
  for (const Result& r : results) {
    EXPECT_EQ(r.verdict, Verdict::kBound) << r.backend << ": " << r.message;
    ASSERT_TRUE(r.vs_bound.has_value());
    EXPECT_EQ(r.vs_bound->outside, 0) << r.backend;
    EXPECT_THAT(r.data_suspect, HasSubstr("the expected Y of test_data_set_0 is not the product "
                                          "of its inputs computed in float: 1 of 4 elements "
                                          "outside; worst at [0,0]"));
    EXPECT_THAT(r.data_suspect, HasSubstr("the case's data is suspect, not the backend"));
  }
}

TEST(NodeTestJudgementTest, AnExactExpectedYIsNotSuspect) {
  TempDir root;
  testing::WriteFloatCase(root.path(), "test_exact", {2, 3, 4}, {4, 5});
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  const auto results =
      RunConformance(catalog, testing::FakeRegistry(), testing::OnBackends({"good"}));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kPass) << results[0].message;
  EXPECT_EQ(results[0].data_suspect, "");
}

// Integers: the bound rule compares with the exact product, ONNX's with the expected file.
TEST(NodeTestJudgementTest, AnIntegerExpectedYOffByOneIsSuspectAndTheRightAnswerMeetsTheBound) {
  TempDir root;
  const std::vector<std::int32_t> a_values = {1, 2, 3, 4}, b_values = {5, 6, 7, 8};
  const Tensor a = Tensor::FromValues<std::int32_t>({2, 2}, a_values).value();
  const Tensor b = Tensor::FromValues<std::int32_t>({2, 2}, b_values).value();
  const std::vector<std::int32_t> wrong = {19, 22, 43, 51};  // 50 is right.
  const Tensor y = Tensor::FromValues<std::int32_t>({2, 2}, wrong).value();
  ASSERT_TRUE(WriteMatMulNodeTest(root.path() / "test_int_wrong", a, b, y).ok());
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  const auto results =
      RunConformance(catalog, testing::FakeRegistry(), testing::OnBackends({"reference"}));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kBound) << results[0].message;
  EXPECT_THAT(results[0].data_suspect, HasSubstr("1 of 4 elements outside; worst at [1,1]: exact "
                                                 "50, expected 51"));
}

TEST_F(RunnerTest, ByConversionRunsAndReportsTheNote) {
  Result r = RunOne("converting");
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.support_note, "f32 via f64");
}

TEST_F(RunnerTest, BackendFailuresAreErrors) {
  Result prepare = RunOne("prepare_fails");
  EXPECT_EQ(prepare.verdict, Verdict::kError);
  EXPECT_THAT(prepare.message, HasSubstr("out of primitives"));
  Result thrown = RunOne("throws");
  EXPECT_EQ(thrown.verdict, Verdict::kError);
  EXPECT_THAT(thrown.message, HasSubstr("backend threw an exception: kaboom"));
  Result start = RunOne("cannot_start");
  EXPECT_EQ(start.verdict, Verdict::kError);
  EXPECT_THAT(start.message, HasSubstr("backend failed to start: no device"));
}

TEST_F(RunnerTest, OneResultPerDataSetAndBackend) {
  std::filesystem::copy(root_.path() / "test_case" / "test_data_set_0",
                        root_.path() / "test_case" / "test_data_set_1");
  catalog_ = Discover({{root_.path(), "--data-dir"}}, {.builtin = false, .select = {}});
  auto results = RunConformance(catalog_, registry_,
                                testing::OnBackends({"reference", "good", "unsupported"}));
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[3].data_set, "test_data_set_1");
  EXPECT_EQ(results[5].backend, "unsupported");
}

}  // namespace
}  // namespace mm::conformance
