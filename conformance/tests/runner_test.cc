// Verdicts: PASS, FAIL with the worst element, UNSUPPORTED with the reason, ERROR for broken
// backends (including ones that throw), and the three-way comparison with the reference.
#include "conformance/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "conformance/tests/fake_backends.h"
#include "conformance/tests/onnx_fixtures.h"

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
