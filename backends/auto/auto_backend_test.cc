// The auto backend: what it chooses and from where (a table made here, refused tables, defaults),
// what it never chooses (excluded, declared failing), what it declares, and that the chosen
// backend's result is what auto returns. (Every form and dtype against the reference is the
// cross-backend suite's, backends/tests, which runs auto like every registered backend.)
#include "backends/auto/auto_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backends/backend_list.h"
#include "backends/testing/matmul_tester.h"
#include "backends/testing/temp_dir.h"

namespace mm {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::MatMulTester;
using ::testing::Not;
using testing::TempDir;

void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::unique_ptr<AutoBackend> MakeAuto(const AutoOptions& options) {
  auto created = AutoBackend::Create(AutoCandidateBackends(), options);
  EXPECT_TRUE(created.ok()) << created.status();
  return std::unique_ptr<AutoBackend>(static_cast<AutoBackend*>(created->release()));
}

// A table made for this machine and these backends whose only float cell ranks `first` first.
std::string TableRanking(const std::string& first, const std::string& second) {
  AutoTable table;
  table.identity = CurrentAutoIdentity(AutoCandidateBackends());
  table.created = "2026-01-01T00:00:00Z";
  table.cells.push_back(
      {DType::kFloat, omp_get_max_threads(), {64, 64}, {64, 64}, {first, second}, {1e-5, 2e-5}});
  return table.ToJson().dump();
}

const MatMulDesc kFloat64Cube{DType::kFloat, {64, 64}, {64, 64}};

TEST(AutoBackendTest, FollowsTheRankingOfATableMadeHere) {
  TempDir dir;
  // Either order is followed: the choice is the table's, not a fixed preference.
  for (const auto& [first, second] : {std::pair{"reference", "eigen"}, {"eigen", "reference"}}) {
    Write(dir.path() / "auto.json", TableRanking(first, second));
    AutoOptions options;
    options.table_path = (dir.path() / "auto.json").string();
    auto backend = MakeAuto(options);
    ASSERT_TRUE(backend->UsesTable()) << backend->RunsOn();
    EXPECT_THAT(backend->RunsOn(), HasSubstr("calibration table " + options.table_path));
    auto choice = backend->Choose(kFloat64Cube, omp_get_max_threads());
    ASSERT_TRUE(choice.ok());
    EXPECT_EQ(choice->backend, first);
    EXPECT_THAT(choice->source, HasSubstr("table cell float"));
    // The nearest cell decides a shape that was not measured too.
    EXPECT_EQ(backend->Choose({DType::kFloat, {300, 70}, {70, 90}}, 1)->backend, first);
    auto plan = PlanMatMul(kFloat64Cube).value();
    auto primitive = backend->Prepare(plan);
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    EXPECT_THAT((*primitive)->implementation(), HasSubstr(std::string("auto -> ") + first));
  }
}

TEST(AutoBackendTest, TheChosenBackendComputesTheResult) {
  // Through the prepared primitive (checked once, then the inner Run): every element against the
  // reference, for a form with a batch and for a dtype computed by conversion.
  auto backend = MakeAuto(AutoOptions{});
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kInt32, DType::kDouble}) {
    MatMulTester().a_dims({3, 5, 7}).b_dims({7, 4}).dtype(dtype).iterations(2).Test(*backend);
  }
}

TEST(AutoBackendTest, AnExcludedBackendIsNeverChosen) {
  TempDir dir;
  Write(dir.path() / "auto.json", TableRanking("eigen", "reference"));
  AutoOptions options;
  options.table_path = (dir.path() / "auto.json").string();
  options.exclude = {"eigen"};
  auto backend = MakeAuto(options);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("eigen: excluded"));
  for (DType dtype : kAllDTypes) {
    for (const MatMulDesc& desc :
         {MatMulDesc{dtype, {3, 4}, {4, 3}}, MatMulDesc{dtype, {512, 512}, {512, 512}}}) {
      auto choice = backend->Choose(desc, 1);
      ASSERT_TRUE(choice.ok()) << desc.ToString();  // reference computes every dtype.
      EXPECT_NE(choice->backend, "eigen") << desc.ToString();
    }
  }
}

TEST(AutoBackendTest, ExcludingAnUnknownBackendIsAnError) {
  AutoOptions options;
  options.exclude = {"eigne"};
  auto created = AutoBackend::Create(AutoCandidateBackends(), options);
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(), HasSubstr("eigne"));
}

TEST(AutoBackendTest, ABackendDeclaredFailingForADtypeIsNotChosenForIt) {
  TempDir dir;
  Write(dir.path() / "expectations.json",
        R"({"expectations": [{"case": "test_*_float16_*", "backend": "eigen", "expect": "XFAIL",
            "reason": "a deviation", "link": "docs/conformance.md"}]})");
  AutoOptions options;
  options.expectations_path = (dir.path() / "expectations.json").string();
  auto backend = MakeAuto(options);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("declared XFAIL"));
  EXPECT_NE(backend->Choose({DType::kFloat16, {64, 64}, {64, 64}}, 1)->backend, "eigen");
  // Other dtypes still have eigen (the only non-reference integer backend).
  EXPECT_EQ(backend->Choose({DType::kInt32, {64, 64}, {64, 64}}, 1)->backend, "eigen");
}

TEST(AutoBackendTest, AnEntryNamingNoDtypeConcernsEveryDtype) {
  TempDir dir;
  Write(dir.path() / "expectations.json",
        R"({"expectations": [{"case": "test_matmul_*", "backend": "eig*", "expect": "SKIP",
            "reason": "crashes", "link": "docs/conformance.md"}]})");
  AutoOptions options;
  options.expectations_path = (dir.path() / "expectations.json").string();
  auto backend = MakeAuto(options);
  for (DType dtype : kAllDTypes) {
    EXPECT_NE(backend->Choose({dtype, {64, 64}, {64, 64}}, 1)->backend, "eigen")
        << DTypeName(dtype);
  }
}

TEST(AutoBackendTest, AnUnreadableExpectationsFileIsAnError) {
  AutoOptions options;
  options.expectations_path = "/nonexistent/expectations.json";
  auto created = AutoBackend::Create(AutoCandidateBackends(), options);
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(), HasSubstr("/nonexistent/expectations.json"));
}

struct Refused {
  const char* why;
  std::string (*make)();
  const char* message;
};

std::string OtherMachine() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["cpu_model"] = "Another CPU";
  return j.dump();
}
std::string OtherVersion() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["mm_version"] = "0.0.1";
  return j.dump();
}
std::string OtherBackendSet() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["backends"]["mkl"] = "a backend this build does not have";
  return j.dump();
}
std::string OtherBackendVersion() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["backends"]["eigen"] = "Eigen 9.9";
  return j.dump();
}
std::string NotJson() { return "{\"format\": \"mm-auto-table 1\", "; }
std::string EmptyRanking() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["ranking"] = nlohmann::json::array();
  j["cells"][0].erase("seconds");
  return j.dump();
}
std::string UnknownBackendRanked() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["ranking"][0] = "mkl";
  return j.dump();
}
std::string BadShape() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["b"] = {65, 64};
  return j.dump();
}

TEST(AutoBackendTest, ATableFromElsewhereOrMalformedIsRefusedSayingWhy) {
  const Refused kRefused[] = {
      {"another machine", OtherMachine, "cpu_model: the table has \"Another CPU\""},
      {"another mm version", OtherVersion, "mm_version: the table has \"0.0.1\""},
      {"another backend set", OtherBackendSet, "this run not"},
      {"another library version", OtherBackendVersion, "backends.eigen"},
      {"not JSON", NotJson, "not valid JSON"},
      {"an empty ranking", EmptyRanking, "empty ranking"},
      {"a backend auto does not have", UnknownBackendRanked, "mkl"},
      {"a cell that is not a MatMul", BadShape, "is not a MatMul"},
  };
  TempDir dir;
  for (const Refused& r : kRefused) {
    SCOPED_TRACE(r.why);
    Write(dir.path() / "auto.json", r.make());
    AutoOptions options;
    options.table_path = (dir.path() / "auto.json").string();
    auto backend = MakeAuto(options);
    EXPECT_FALSE(backend->UsesTable());
    EXPECT_THAT(backend->RunsOn(), HasSubstr("built-in defaults (calibration table refused"));
    EXPECT_THAT(backend->RunsOn(), HasSubstr(r.message));
    EXPECT_EQ(backend->Choose(kFloat64Cube, 1)->source, "built-in defaults");
  }
}

TEST(AutoBackendTest, NoTableMeansTheDefaultsAndSaysWhere) {
  AutoOptions options;
  options.table_path = "/nonexistent/auto.json";
  auto backend = MakeAuto(options);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("no calibration table at /nonexistent/auto.json"));
  EXPECT_THAT(backend->RunsOn(), HasSubstr("mm-bench --mm_calibrate="));
}

TEST(AutoBackendTest, DeclaresTheLoosestArithmeticOfItsCandidates) {
  auto all = MakeAuto(AutoOptions{});
  const BackendRegistry candidates = AutoCandidateBackends();
  for (DType dtype : kAllDTypes) {
    const Arithmetic declared = all->DeclaredArithmetic(dtype);
    // No candidate that computes this dtype promises more than auto declares.
    for (const std::string& name : candidates.Names()) {
      auto backend = candidates.Create(name);
      if (!backend.ok() || !(*backend)->Supports({dtype, {2, 2}, {2, 2}}).supported()) continue;
      const Arithmetic theirs = (*backend)->DeclaredArithmetic(dtype);
      if (theirs.flushes_subnormals) {
        EXPECT_TRUE(declared.flushes_subnormals) << name;
      }
      if (IsFloat(dtype)) {
        EXPECT_LE(DTypeSize(declared.accumulation), DTypeSize(theirs.accumulation)) << name;
      }
    }
  }
  // Without the candidates that flush (oneDNN's bfloat16), auto does not declare a flush.
  AutoOptions options;
  options.exclude = {"onednn"};
  EXPECT_FALSE(MakeAuto(options)->DeclaredArithmetic(DType::kBFloat16).flushes_subnormals);
  EXPECT_TRUE(all->DeclaredArithmetic(DType::kBFloat16).flushes_subnormals ||
              !candidates.Contains("onednn"));
}

TEST(AutoBackendTest, EnvironmentSetsTheOptions) {
  setenv("MM_AUTO_EXCLUDE", "onednn, eigen", 1);
  setenv("MM_AUTO_TABLE", "/some/table.json", 1);
  const AutoOptions options = AutoOptions::FromEnvironment();
  unsetenv("MM_AUTO_EXCLUDE");
  unsetenv("MM_AUTO_TABLE");
  EXPECT_EQ(options.exclude, (std::vector<std::string>{"onednn", "eigen"}));
  EXPECT_EQ(options.table_path, "/some/table.json");
  setenv("XDG_CACHE_HOME", "/cache", 1);
  EXPECT_EQ(AutoOptions::FromEnvironment().table_path, "/cache/mm/auto.json");
}

}  // namespace
}  // namespace mm
