// The test-support library is what other tests stand on: a fake that is not wrong the way it is
// told to be, a TempDir that leaks, or a CLI run that loses output would make them pass blindly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mm/engine/testing/cli_run.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const MatMulPlan kPlan = PlanMatMul({DType::kInt32, {2, 3}, {3, 2}}).value();

// Runs `backend` on A = 1..6 (2x3) and B = 1..6 (3x2), whose product is {22, 28, 49, 64}.
StatusOr<Tensor> RunOnRamp(Backend& backend) {
  const Tensor a =
      Tensor::FromValues<std::int32_t>({2, 3}, std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}).value();
  const Tensor b =
      Tensor::FromValues<std::int32_t>({3, 2}, std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}).value();
  return MatMul(backend, a.view(), b.view());
}

TEST(FakeBackendTest, ComputesTheExactProductByDefault) {
  FakeBackend backend;
  auto y = RunOnRamp(backend);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(y->Values<std::int32_t>(), ElementsAre(22, 28, 49, 64));
  EXPECT_EQ(backend.calls().prepares, 1);
  EXPECT_EQ(backend.calls().runs, 1);
}

TEST(FakeBackendTest, IsOffByOneOnlyWhereItIsTold) {
  FakeBackend last = FakeBackend().OffByOneAt(-1);
  EXPECT_THAT(RunOnRamp(last)->Values<std::int32_t>(), ElementsAre(22, 28, 49, 65));
  FakeBackend first = FakeBackend().OffByOneAt(0);
  EXPECT_THAT(RunOnRamp(first)->Values<std::int32_t>(), ElementsAre(23, 28, 49, 64));
}

TEST(FakeBackendTest, RefusesTheDtypesItDoesNotSupportAndSaysWhich) {
  FakeBackend backend = FakeBackend("floats").Supporting({DType::kFloat, DType::kDouble});
  EXPECT_TRUE(backend.Supports(PlanMatMul({DType::kDouble, {2, 3}, {3, 2}})->desc).supported());
  const Support refused = backend.Supports(kPlan.desc);
  EXPECT_FALSE(refused.supported());
  EXPECT_EQ(refused.note, "float, double only");
  EXPECT_FALSE(RunOnRamp(backend).ok());
  EXPECT_EQ(backend.calls().prepares, 0) << "the engine keeps Supports' word";
}

TEST(FakeBackendTest, FailsWhereItIsToldAndDeclaresWhatItIsGiven) {
  FakeBackend prepare = FakeBackend().FailingToPrepare(InternalError("no kernel"));
  EXPECT_THAT(RunOnRamp(prepare).status().message(), HasSubstr("no kernel"));
  FakeBackend run = FakeBackend().FailingToRun(InternalError("device lost"));
  EXPECT_THAT(RunOnRamp(run).status().message(), HasSubstr("device lost"));
  EXPECT_EQ(run.calls().runs, 1);
  FakeBackend declares = FakeBackend().Declaring({DType::kFloat, true});
  EXPECT_EQ(declares.DeclaredArithmetic(DType::kFloat16), (Arithmetic{DType::kFloat, true}));
  EXPECT_EQ(FakeBackend().DeclaredArithmetic(DType::kFloat16),
            Arithmetic::OwnType(DType::kFloat16));
}

TEST(FakeBackendTest, FactoryCopiesTheConfigurationAndSharesTheCounts) {
  FakeBackend original = FakeBackend("copied").OffByOneAt(-1).Describing("planted");
  auto copy = original.Factory()();
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ((*copy)->name(), "copied");
  EXPECT_EQ(RunOnRamp(**copy)->Values<std::int32_t>().back(), 65);
  EXPECT_EQ(original.calls().runs, 1);
  EXPECT_EQ((*(*copy)->Prepare(kPlan))->implementation(), "planted");
}

TEST(FakeBackendDeathTest, CrashesWhenToldTo) {
  FakeBackend backend = FakeBackend().Crashing();
  EXPECT_DEATH((void)RunOnRamp(backend), "");
}

TEST(TempDirTest, IsEmptyAndGoesWithEverythingInItEvenReadOnly) {
  fs::path kept;
  {
    TempDir dir;
    kept = dir.path();
    EXPECT_TRUE(fs::is_directory(kept));
    EXPECT_TRUE(fs::is_empty(kept));
    fs::create_directories(kept / "sub");
    std::ofstream(kept / "sub" / "file") << "x";
    fs::permissions(kept / "sub", fs::perms::owner_read | fs::perms::owner_exec);
    TempDir other;
    EXPECT_NE(other.path(), kept);
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(RunCliTest, ReturnsTheExitCodeAndBothStreams) {
  const CliRun run = RunCli(
      [](const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
        out << "out:" << args.at(0);
        err << "err:" << args.at(1);
        return 7;
      },
      {"a", "b"});
  EXPECT_EQ(run.code, 7);
  EXPECT_EQ(run.out, "out:a");
  EXPECT_EQ(run.err, "err:b");
}

}  // namespace
}  // namespace mm::testing
