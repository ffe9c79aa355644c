// The built-in family catalogue (family_cases.h) as built-in cases of mm-conformance, beside
// MatMul's: discovered with them and left out with them, found again by name in a worker that has
// no catalogue, run through the command line in workers, on every backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "../fake_backends.h"
#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/self_check/planted_family.h"
#include "mm/conformance/testing/cli_runs.h"
#include "nlohmann/json.hpp"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

std::vector<const CaseEntry*> BuiltinFamilyEntries(const Catalog& catalog) {
  std::vector<const CaseEntry*> out;
  for (const CaseEntry& c : catalog.cases) {
    if (c.name.starts_with(kFamilyCasePrefix)) out.push_back(&c);
  }
  return out;
}

TEST(BuiltinFamilyCasesTest, AreBuiltinCasesLeftOutWithMatMuls) {
  const Catalog catalog = Discover({}, {});
  const std::vector<const CaseEntry*> family = BuiltinFamilyEntries(catalog);
  ASSERT_EQ(family.size(), BuiltinFamilyCatalogue().size());
  std::map<family::Op, int> per_op;
  for (const CaseEntry* c : family) {
    EXPECT_TRUE(c->builtin()) << c->name;
    ASSERT_NE(c->family, nullptr) << c->name << ": " << c->error;
    EXPECT_EQ(c->op, c->family->op);
    ASSERT_EQ(c->data_sets.size(), 1u);
    EXPECT_EQ(c->data_sets.name(0), kFamilyCaseDataSet);
    ++per_op[c->op];
  }
  EXPECT_EQ(per_op[family::Op::kGemm], 386);
  EXPECT_EQ(per_op[family::Op::kMatMulInteger], 155);
  EXPECT_EQ(per_op[family::Op::kQLinearMatMul], 161);
  // --no-builtin, and without the shape-class catalogues (the self-check's MatMul run).
  EXPECT_TRUE(BuiltinFamilyEntries(Discover({}, {.builtin = false, .select = {}})).empty());
  EXPECT_TRUE(
      BuiltinFamilyEntries(Discover({}, {.builtin = true, .shape_classes = false, .select = {}}))
          .empty());
}

// A launcher's worker receives the entry without its maker: it builds the same data set from the
// name, and an unknown name is an error naming it.
TEST(BuiltinFamilyCasesTest, AWorkerFindsACaseAgainByItsName) {
  const Catalog catalog = Discover({}, {});
  const std::vector<const CaseEntry*> family = BuiltinFamilyEntries(catalog);
  for (const CaseEntry* sent : {family.front(), family[400], family.back()}) {
    EXPECT_TRUE(FoundByNameInWorkers(*sent));
    std::optional<TaskMessage> task = DecodeTask(EncodeTask({0, {}, *sent, 1}));
    ASSERT_TRUE(task.has_value() && task->entry.has_value());
    CaseEntry& got = *task->entry;
    EXPECT_EQ(got.make_family_data_set, nullptr);
    const StatusOr<FamilyDataSet> there = LoadFamilyCaseDataSet(got, 0);
    ASSERT_TRUE(there.ok()) << there.status();
    const FamilyDataSet here = LoadFamilyCaseDataSet(*sent, 0).value();
    EXPECT_EQ(there->problem().ToString(), here.problem().ToString()) << sent->name;
    ASSERT_EQ(there->y.NumBytes(), here.y.NumBytes());
    EXPECT_EQ(std::memcmp(there->y.raw_data(), here.y.raw_data(), here.y.NumBytes()), 0);

    got.name = sent->name + "_gone";
    EXPECT_FALSE(FoundByNameInWorkers(got));
    const StatusOr<FamilyDataSet> unknown = LoadFamilyCaseDataSet(got, 0);
    EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(unknown.status().message(),
                HasSubstr(got.name + ": no built-in family case of that name"));
  }
}

// "reference", the fakes (MatMul only) and the planted family backend that ignores beta.
BackendRegistry BuiltinFamilyRegistry() {
  BackendRegistry registry = testing::FakeRegistry();
  for (const self_check::PlantedFamilyBackend& planted : self_check::PlantedFamilyBackends()) {
    if (planted.fault != self_check::FamilyFault::kIgnoredBeta) continue;
    EXPECT_TRUE(registry
                    .Register(planted.name, "test",
                              [planted]() -> StatusOr<std::unique_ptr<Backend>> {
                                return self_check::MakePlantedFamilyBackend(planted);
                              })
                    .ok());
  }
  return registry;
}

// Through the command line, in workers of the launcher: the reference passes every Gemm-13 float
// case, a MatMul-only backend is UNSUPPORTED with its reason, the planted fault FAILs, nothing is
// an ERROR, and the exit code is the failure's.
TEST(BuiltinFamilyCasesTest, RunInWorkersOnEveryBackend) {
  TempDir dir;
  const fs::path json = dir.path() / "report.json";
  const auto run = testing::ConformanceCli(
      {"--filter", "^mm_family_gemm13_float_", "--backend", "reference", "--backend", "good",
       "--backend", "family_ignored_beta", "-j", "2", "--json", json.string()},
      BuiltinFamilyRegistry());
  EXPECT_EQ(run.code, kExitFailed) << run.out << run.err;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  std::map<std::string, std::map<std::string, int>> verdicts;  // Backend -> verdict -> count.
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["op"], "Gemm");
    ++verdicts[r["backend"].get<std::string>()][r["verdict"].get<std::string>()];
    if (r["backend"] == "good") {
      EXPECT_THAT(r["message"].get<std::string>(), HasSubstr("computes MatMul only, not Gemm"));
    }
  }
  int cases = 0;
  for (const FamilyCase& c : BuiltinFamilyCatalogue()) {
    cases += c.name.starts_with("mm_family_gemm13_float_") ? 1 : 0;
  }
  ASSERT_GT(cases, 40);
  EXPECT_EQ(verdicts["reference"], (std::map<std::string, int>{{"PASS", cases}}));
  EXPECT_EQ(verdicts["good"], (std::map<std::string, int>{{"UNSUPPORTED", cases}}));
  EXPECT_GT(verdicts["family_ignored_beta"]["FAIL"], 0);
  EXPECT_EQ(verdicts["family_ignored_beta"]["ERROR"], 0);
  EXPECT_EQ(verdicts["family_ignored_beta"]["FAIL"] + verdicts["family_ignored_beta"]["PASS"],
            cases);
}

}  // namespace
}  // namespace mm::conformance
