// Bugs a developer could plausibly make in the harness's checks, each caught by a test written
// against the definition rather than the implementation: --resume judges what it keeps again,
// merge recomputes resource findings and compares the data roots themselves, suspect data is
// judged by the expected Y's own type, and containment in a data root is by path components.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fake_backends.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/session/run.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/testing/fake_backend.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::ConformanceCli;
using ::testing::HasSubstr;
using testing::TempDir;

nlohmann::json ReadPlantedJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void WritePlantedJson(const fs::path& path, const nlohmann::json& report) {
  std::ofstream(path, std::ios::trunc) << report.dump(2);
}

// The fake registry plus "leaky", a correct backend that leaves one file descriptor open per call.
BackendRegistry RegistryWithLeak() {
  BackendRegistry registry = testing::FakeRegistry();
  ::mm::testing::FakeBackend leaky("leaky");
  leaky.Computing([](const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) {
    (void)dup(2);  // Never closed: the leak the tally must find.
    return ::mm::testing::ExactKernel(plan, a, b, y);
  });
  EXPECT_TRUE(registry.Register("leaky", "test", leaky.Factory()).ok());
  return registry;
}

// A folder of `count` float cases named test_case_<i>.
void WritePlantedCases(const fs::path& root, int count) {
  for (int i = 0; i < count; ++i) {
    testing::WriteFloatCase(root, "test_case_" + std::to_string(i), {2, i + 1}, {i + 1, 3});
  }
}

// --- --resume -------------------------------------------------------------------------------

// A kept result is judged again from its own values, not taken for its verdict: a PASS whose
// counts were forged to agree with it (match, nothing differing, nothing outside the bound) while
// its own worst element is 1 % off is run again, and fails as the uninterrupted run does.
TEST(PlantedResumeTest, AKeptResultWhoseValuesContradictItsVerdictIsJudgedAgain) {
  TempDir root, out;
  WritePlantedCases(root.path(), 3);
  const BackendRegistry registry = testing::FakeRegistry();
  auto run = [&](const fs::path& json, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "--data-dir", root.path().string(), "--no-builtin", "--backend",
        "nudge",      "--no-isolate",       "--quiet",      "--json",
        json.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return ConformanceCli(args, registry);
  };
  const fs::path first = out.path() / "first.json";
  ASSERT_EQ(run(first, {}).code, kExitFailed);
  nlohmann::json report = ReadPlantedJson(first);
  ASSERT_EQ(report["results"].size(), 3u);
  for (auto& r : report["results"]) {
    ASSERT_EQ(r["verdict"], "FAIL");
    ASSERT_TRUE(r["vs_expected"].contains("worst")) << r.dump();
    r["verdict"] = "PASS";
    r["message"] = "all 6 elements match";
    r["vs_expected"]["match"] = true;
    r["vs_expected"]["differing"] = 0;
    r["vs_bound"]["outside"] = 0;
  }
  report["exit_code"] = 0;
  WritePlantedJson(first, report);
  const fs::path resumed = out.path() / "resumed.json";
  const CliRun again = run(resumed, {"--resume", first.string()});
  EXPECT_EQ(again.code, kExitFailed) << again.out << again.err;
  EXPECT_THAT(again.err, HasSubstr("3 result(s) not consistent"));
  const nlohmann::json written = ReadPlantedJson(resumed);
  EXPECT_EQ(written["summary"]["FAIL"], 3);
  EXPECT_EQ(written["summary"]["PASS"], 0);
  EXPECT_EQ(written["resumed"]["taken"], 0);
}

// --- merge ----------------------------------------------------------------------------------

// Shards of `count` cases on "leaky" under --strict, merged; the shards' own resource sections are
// taken out first (as a forger or an older writer would leave them).
class PlantedMergeTest : public ::testing::Test {
 protected:
  PlantedMergeTest() { WritePlantedCases(root_.path(), 12); }

  fs::path RunShard(const fs::path& root, const std::string& shard, const std::string& name,
                    const std::string& backend) {
    const fs::path json = out_.path() / name;
    const CliRun run = ConformanceCli(
        {"--data-dir", root.string(), "--no-builtin", "--backend", backend, "--no-isolate",
         "--quiet", "--strict", "--shard", shard, "--json", json.string()},
        registry_);
    EXPECT_NE(run.code, kExitUsage) << run.err;
    return json;
  }
  CliRun Merge(const std::vector<fs::path>& shards) {
    std::vector<std::string> args = {"merge", "--quiet", "--json", merged_.string()};
    for (const fs::path& s : shards) args.push_back(s.string());
    return ConformanceCli(args, registry_);
  }

  TempDir root_, out_;
  fs::path merged_ = out_.path() / "merged.json";
  BackendRegistry registry_ = RegistryWithLeak();
};

TEST_F(PlantedMergeTest, ResourceFindingsAreRecomputedFromTheShardsResults) {
  std::vector<fs::path> shards;
  for (const std::string shard : {"1/2", "2/2"}) {
    shards.push_back(
        RunShard(root_.path(), shard, "shard" + shard.substr(0, 1) + ".json", "leaky"));
    nlohmann::json report = ReadPlantedJson(shards.back());
    // Every result carries its call's figures; the summary of them is dropped.
    for (const auto& r : report["results"]) ASSERT_TRUE(r.contains("resources")) << r.dump();
    report.erase("resources");
    report["exit_code"] = 0;
    WritePlantedJson(shards.back(), report);
  }
  const CliRun m = Merge(shards);
  // The descriptors the results say were left open are a finding again, and under --strict the
  // merged run fails as the shards did.
  EXPECT_EQ(m.code, kExitFailed) << m.out << m.err;
  const nlohmann::json merged = ReadPlantedJson(merged_);
  ASSERT_TRUE(merged.contains("resources")) << merged.dump(1);
  EXPECT_THAT(merged["resources"].dump(), HasSubstr("file descriptors left open"));
  EXPECT_EQ(merged["exit_code"], kExitFailed);
}

TEST_F(PlantedMergeTest, ShardsOfAnotherDataRootOfTheSameCountAreRefused) {
  // The same cases under another path: the same names, count and selection, another data root.
  TempDir copy;
  fs::copy(root_.path(), copy.path(), fs::copy_options::recursive);
  const fs::path a = RunShard(root_.path(), "1/2", "a.json", "good");
  const fs::path b = RunShard(copy.path(), "2/2", "b.json", "good");
  const CliRun m = Merge({a, b});
  EXPECT_EQ(m.code, kExitUsage) << m.out << m.err;
  EXPECT_THAT(m.err, HasSubstr("data roots differ"));
  EXPECT_FALSE(fs::exists(merged_));
  // The same root given to both merges.
  const CliRun same = Merge({a, RunShard(root_.path(), "2/2", "same.json", "good")});
  EXPECT_EQ(same.code, kExitPassed) << same.err;
}

// --- suspect data -----------------------------------------------------------------------------

// A backend declaring `arithmetic`, computing the exact product (rounded to Y's type).
BackendRegistry RegistryDeclaring(const std::string& name, Arithmetic arithmetic) {
  BackendRegistry registry;
  ::mm::testing::FakeBackend backend(name);
  backend.Declaring(arithmetic);
  EXPECT_TRUE(registry.Register(name, "test", backend.Factory()).ok());
  return registry;
}

std::string SuspectOf(const fs::path& root, const BackendRegistry& registry,
                      const std::string& backend) {
  const Catalog catalog = Discover({{root, "--data-dir"}}, {.builtin = false, .select = {}});
  const auto results = RunConformance(catalog, registry, testing::OnBackends({backend}));
  EXPECT_EQ(results.size(), 1u);
  return results.empty() ? "?" : results[0].data_suspect;
}

// Whether the expected Y is suspect depends on the expected Y's own type, never on the arithmetic
// the backend under test declares: a loose declaration does not excuse a wrong file, and a tight
// one does not condemn a file computed in the type itself.
TEST(PlantedSuspectDataTest, IsJudgedByTheExpectedYsOwnTypeNotByTheBackendsArithmetic) {
  {
    // float: 0.3 % off, far outside a float computation, inside a bfloat16 one's bound.
    TempDir root;
    NodeTest test = testing::FloatMatMulTest({2, 3}, {3, 2});
    Tensor y = testing::ExactFloatMatMul(testing::FloatTensor({2, 3}, 1, 0.5),
                                         testing::FloatTensor({3, 2}, -2, 0.25));
    y.Data<float>()[0] *= 1.003f;
    test.data_sets[0].outputs[0] = TensorToProto(y, "y");
    testing::WriteTest(root.path() / "test_wrong_expected", test);
    const BackendRegistry loose = RegistryDeclaring("loose", {DType::kBFloat16, false});
    EXPECT_THAT(SuspectOf(root.path(), loose, "loose"),
                HasSubstr("the expected Y of test_data_set_0 is not the product of its inputs "
                          "computed in float"));
  }
  {
    // float16: 1 + 4 x 2^-11 summed in float16 is 1 (each sum a tie to even), 2^-9 from the
    // exact 1 + 2^-9: within float16's own accumulation, outside float32's.
    TempDir root;
    const std::vector<float16> a_values = {float16(1.0f), float16(0x1p-11f), float16(0x1p-11f),
                                           float16(0x1p-11f), float16(0x1p-11f)};
    const std::vector<float16> b_values(5, float16(1.0f));
    const std::vector<float16> y_values = {float16(1.0f)};
    const Tensor a = Tensor::FromValues<float16>({1, 5}, a_values).value();
    const Tensor b = Tensor::FromValues<float16>({5, 1}, b_values).value();
    const Tensor y = Tensor::FromValues<float16>({1, 1}, y_values).value();
    ASSERT_TRUE(WriteMatMulNodeTest(root.path() / "test_half_sums", a, b, y).ok());
    const BackendRegistry tight = RegistryDeclaring("tight", {DType::kFloat, false});
    EXPECT_EQ(SuspectOf(root.path(), tight, "tight"), "");
    // The control: a float16 file that is not a float16 computation is suspect.
    const std::vector<float16> wrong = {float16(1.0f + 0x1p-7f)};
    ASSERT_TRUE(WriteMatMulNodeTest(root.path() / "test_half_sums", a, b,
                                    Tensor::FromValues<float16>({1, 1}, wrong).value())
                    .ok());
    EXPECT_THAT(SuspectOf(root.path(), tight, "tight"), HasSubstr("computed in float16"));
  }
}

// --- containment in a data root ---------------------------------------------------------------

// "Inside the data root" is decided by path components: ROOT-old/... shares ROOT's text as a
// prefix but is outside ROOT, so a case linked there is an ERROR, never a case read from there.
TEST(PlantedContainmentTest, ASiblingWhoseNameExtendsTheRootsIsOutsideIt) {
  TempDir dir;
  const fs::path root = dir.path() / "root", old = dir.path() / "root-old";
  fs::create_directories(root);
  const fs::path far = testing::WriteFloatCase(old, "test_far", {2, 3}, {3, 4});
  fs::create_directory_symlink(far, root / "test_far");
  const fs::path near = testing::WriteFloatCase(root, "test_near", {2, 3}, {3, 4});
  fs::rename(near / "test_data_set_0", old / "set");
  fs::create_directory_symlink(old / "set", near / "test_data_set_0");
  const CliRun r = ConformanceCli(
      {"--data-dir", root.string(), "--no-builtin", "--backend", "reference", "--no-isolate"},
      testing::FakeRegistry());
  EXPECT_EQ(r.code, kExitFailed) << r.out << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("'" + (root / "test_far").string() + "' leads outside the data root"));
  EXPECT_THAT(r.out, HasSubstr("'" + (near / "test_data_set_0").string() +
                               "' leads outside the data root"));
  EXPECT_THAT(r.out,
              HasSubstr("2 results (2 case x backend): 0 PASS, 0 FAIL, 0 UNSUPPORTED, 2 ERROR"));
}

}  // namespace
}  // namespace mm::conformance
