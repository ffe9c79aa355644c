// The auto backend on MatMul's family: it chooses per operator and types among the candidates
// that accept the description and are not declared deviating for that operator, follows its
// table's family cells, says what it chose, refuses with every candidate's reason when none
// computes a description, and reads its tables of both formats. The candidates are fakes
// computing as the reference does (backends/testing), since today only the reference computes
// the family.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <fstream>
#include <string>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/auto/auto_deviations.h"
#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/family_fakes.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/testing/problem_builder.h"

namespace mm {
namespace {

using family::Op;
using family::OpDesc;
using family::testing::ProblemBuilder;
using testing::FakeFamilyFactory;
using testing::FakeFamilySpec;
using ::testing::HasSubstr;
using ::testing::Not;

const OpDesc kU8S8{Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32};
const OpDesc kU8U8{Op::kMatMulInteger, 10, DType::kUInt8, DType::kUInt8, DType::kInt32};
const OpDesc kGemmFloat{Op::kGemm, 13, DType::kFloat, DType::kFloat, DType::kFloat};
const std::array<double, 4> k64Cube = {1, 64, 64, 64};

// "fast" computes MatMul, Gemm and MatMulInteger but refuses uint8 x int8 (as a library whose
// kernel would saturate pairs); "slow" computes both family operators and every type.
BackendRegistry FakeCandidates() {
  BackendRegistry registry;
  FakeFamilySpec fast{"fast", {Op::kMatMul, Op::kGemm, Op::kMatMulInteger}};
  fast.accepts = [](const OpDesc& desc) {
    if (desc.a_dtype == DType::kUInt8 && desc.b_dtype == DType::kInt8) {
      return Support::No("fast does not do uint8 x int8: its pairs would saturate");
    }
    return Support::Native();
  };
  EXPECT_TRUE(registry.Register("fast", "a fast fake", FakeFamilyFactory(fast)).ok());
  EXPECT_TRUE(registry
                  .Register("slow", "a slow fake",
                            FakeFamilyFactory({"slow", {Op::kGemm, Op::kMatMulInteger}}))
                  .ok());
  return registry;
}

// A table of `registry` whose family cells, one per description, rank fast, then slow.
AutoTable FastFirstTable(const BackendRegistry& registry) {
  AutoTable table;
  table.identity = CurrentAutoIdentity(registry);
  table.created = "2026-01-01T00:00:00Z";
  for (const OpDesc& desc : {kU8S8, kU8U8, kGemmFloat}) {
    AutoCell cell{DType::kFloat, omp_get_max_threads(), {64, 64},
                  {64, 64},      {"fast", "slow"},      {1e-5, 3e-5}};
    cell.op = desc;
    table.cells.push_back(cell);
  }
  return table;
}

std::unique_ptr<AutoBackend> MakeAuto(const BackendRegistry& registry, const AutoTable& table,
                                      AutoOptions options = {}) {
  const std::string path = ::testing::TempDir() + "/auto_family_table.json";
  std::ofstream(path) << table.ToJson().dump();
  options.table_path = path;
  options.calibrate = false;
  auto created = AutoBackend::Create(registry, options);
  EXPECT_TRUE(created.ok()) << created.status();
  return std::unique_ptr<AutoBackend>(static_cast<AutoBackend*>(created->release()));
}

// A uint8 x int8 MatMulInteger whose pairs of products saturate in int16 (255 * 127 twice).
ProblemBuilder SaturatingPairs(DType b_dtype) {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Filled("A", DType::kUInt8, {64, 64}, 255);
  p.Filled("B", b_dtype, {64, 64}, 127);
  return p;
}

TEST(AutoFamilyTest, AFasterCandidateThatRefusesADescIsNeverChosenForIt) {
  const BackendRegistry registry = FakeCandidates();
  auto backend = MakeAuto(registry, FastFirstTable(registry));
  ASSERT_TRUE(backend->UsesTable()) << backend->RunsOn();
  auto u8u8 = backend->ChooseOp(kU8U8, k64Cube, omp_get_max_threads());
  ASSERT_TRUE(u8u8.ok()) << u8u8.status();
  EXPECT_EQ(u8u8->backend, "fast");
  EXPECT_THAT(u8u8->source, HasSubstr("table cell MatMulInteger-10 uint8 x uint8 -> int32"));
  auto u8s8 = backend->ChooseOp(kU8S8, k64Cube, omp_get_max_threads());
  ASSERT_TRUE(u8s8.ok()) << u8s8.status();
  EXPECT_EQ(u8s8->backend, "slow");
  EXPECT_EQ(backend->family()->Implementation(kU8S8),
            "auto -> slow (calibration table): fake slow: reference loops");
  EXPECT_EQ(backend->family()->Implementation(kU8U8),
            "auto -> fast (calibration table): fake fast: reference loops");
}

TEST(AutoFamilyTest, ComputesThroughTheChosenCandidateExactly) {
  const BackendRegistry registry = FakeCandidates();
  auto backend = MakeAuto(registry, FastFirstTable(registry));
  for (DType b_dtype : {DType::kInt8, DType::kUInt8}) {
    const ProblemBuilder p = SaturatingPairs(b_dtype);
    const family::Plan plan = family::PlanProblem(p.problem()).value();
    auto y = family::ComputeOp(*backend, plan);
    ASSERT_TRUE(y.ok()) << y.status();
    // 64 products of 255 * 127, never a saturated pair.
    for (std::int32_t v : y->Values<std::int32_t>()) ASSERT_EQ(v, 64 * 255 * 127);
  }
}

TEST(AutoFamilyTest, ADeclaredDeviationExcludesACandidateForThatOperatorOnly) {
  const BackendRegistry registry = FakeCandidates();
  AutoOptions options;
  options.deviations = {{"fast", {}, "declared XFAIL in e.json (ignores beta)", {Op::kGemm}}};
  auto backend = MakeAuto(registry, FastFirstTable(registry), options);
  EXPECT_EQ(backend->ChooseOp(kGemmFloat, k64Cube, 1)->backend, "slow");
  EXPECT_EQ(backend->ChooseOp(kU8U8, k64Cube, 1)->backend, "fast");
  EXPECT_EQ(backend->Choose({DType::kFloat, {64, 64}, {64, 64}}, 1)->backend, "fast");
  EXPECT_THAT(backend->RunsOn(), HasSubstr("fast for Gemm, every dtype: declared XFAIL in e.json"));
  // A deviation naming no operator concerns every operator, MatMul's too.
  options.deviations = {{"fast", {DType::kUInt8}, "declared XFAIL in e.json", {}}};
  backend = MakeAuto(registry, FastFirstTable(registry), options);
  EXPECT_EQ(backend->ChooseOp(kU8U8, k64Cube, 1)->backend, "slow");
  EXPECT_EQ(backend->ChooseOp(kGemmFloat, k64Cube, 1)->backend, "fast");
}

TEST(AutoFamilyTest, WhenEveryCandidateRefusesAutoRefusesWithEachReason) {
  const BackendRegistry registry = FakeCandidates();
  auto backend = MakeAuto(registry, FastFirstTable(registry));
  const OpDesc qlinear{Op::kQLinearMatMul, 10, DType::kUInt8, DType::kInt8, DType::kUInt8};
  const Support support = family::SupportOf(*backend, qlinear);
  EXPECT_FALSE(support.supported());
  EXPECT_THAT(support.note, HasSubstr("fast: fast does not compute QLinearMatMul"));
  EXPECT_THAT(support.note, HasSubstr("slow: slow does not compute QLinearMatMul"));
  // A refusal by one candidate and a declared deviation of the other are both named.
  AutoOptions options;
  options.deviations = {{"slow", {}, "declared XFAIL in e.json (wraps)", {Op::kMatMulInteger}}};
  backend = MakeAuto(registry, FastFirstTable(registry), options);
  const ProblemBuilder p = SaturatingPairs(DType::kInt8);
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  auto y = family::ComputeOp(*backend, plan);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(y.status().message(), HasSubstr("fast: fast does not do uint8 x int8"));
  EXPECT_THAT(y.status().message(), HasSubstr("slow: declared XFAIL in e.json (wraps)"));
}

TEST(AutoFamilyTest, WithoutFamilyCellsTheDefaultsThenTheFirstCandidateChoose) {
  const BackendRegistry registry = FakeCandidates();
  AutoTable table = FastFirstTable(registry);
  table.cells.clear();
  auto backend = MakeAuto(registry, table);
  auto choice = backend->ChooseOp(kU8U8, k64Cube, 1);
  ASSERT_TRUE(choice.ok());
  // Neither fake is in the defaults' ranking (onednn, eigen): the first candidate that takes it.
  EXPECT_EQ(choice->backend, "fast");
  EXPECT_EQ(choice->source, "first candidate");
  EXPECT_EQ(DefaultAutoFamilyRanking(kU8S8, 1, 2e6, {}),
            (std::vector<std::string>{"onednn", "eigen"}));
  EXPECT_EQ(DefaultAutoFamilyRanking(kGemmFloat, 1, 2e6, {}),
            DefaultAutoRanking(DType::kFloat, 1, 2e6, {}));
}

TEST(AutoFamilyTest, DeclaresTheLoosestArithmeticOfTheCandidatesForADesc) {
  BackendRegistry registry;
  FakeFamilySpec half{"half", {Op::kGemm}};
  half.arithmetic = [](const OpDesc&) { return Arithmetic{DType::kFloat16, true}; };
  ASSERT_TRUE(registry.Register("half", "", FakeFamilyFactory(half)).ok());
  FakeFamilySpec wide{"wide", {Op::kGemm}};
  wide.arithmetic = [](const OpDesc&) { return Arithmetic{DType::kDouble, false}; };
  ASSERT_TRUE(registry.Register("wide", "", FakeFamilyFactory(wide)).ok());
  AutoTable table;
  table.identity = CurrentAutoIdentity(registry);
  auto backend = MakeAuto(registry, table);
  const Arithmetic declared = backend->family()->DeclaredArithmetic(kGemmFloat);
  EXPECT_EQ(declared.accumulation, DType::kFloat16);
  EXPECT_TRUE(declared.flushes_subnormals);
  // Declared deviating for Gemm, "half" no longer counts.
  AutoOptions options;
  options.deviations = {{"half", {}, "declared XFAIL in e.json", {Op::kGemm}}};
  backend = MakeAuto(registry, table, options);
  EXPECT_EQ(backend->family()->DeclaredArithmetic(kGemmFloat).accumulation, DType::kDouble);
}

TEST(AutoFamilyTableTest, FamilyCellsAreWrittenAndReadBack) {
  const BackendRegistry registry = FakeCandidates();
  const AutoTable table = FastFirstTable(registry);
  const std::string text = table.ToJson().dump();
  EXPECT_THAT(text, HasSubstr("\"format\":\"mm-auto-table 2\""));
  auto parsed = ParseAutoTable(text, "t.json", table.identity);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->cells.size(), 3u);
  ASSERT_TRUE(parsed->cells[0].op.has_value());
  EXPECT_EQ(*parsed->cells[0].op, kU8S8);
  EXPECT_EQ(parsed->cells[0].ranking, (std::vector<std::string>{"fast", "slow"}));
}

TEST(AutoFamilyTableTest, AFormatOneTableIsReadAndAFamilyCellInItRefused) {
  const BackendRegistry registry = FakeCandidates();
  AutoTable table = FastFirstTable(registry);
  nlohmann::json j = table.ToJson();
  j["format"] = "mm-auto-table 1";
  auto refused = ParseAutoTable(j.dump(), "old.json", table.identity);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("a family cell in a table of format"));
  // MatMul's cells alone: read, and the family's choices come from the defaults.
  j["cells"] = nlohmann::json::array(
      {{{"dtype", "float"}, {"threads", 1}, {"a", {4, 4}}, {"b", {4, 4}}, {"ranking", {"slow"}}}});
  auto old = ParseAutoTable(j.dump(), "old.json", table.identity);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->cells[0].op.has_value());
  j["format"] = "mm-auto-table 3";
  auto unknown = ParseAutoTable(j.dump(), "new.json", table.identity);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("format \"mm-auto-table 3\" is not one this mm reads"));
}

TEST(AutoFamilyTableTest, AMalformedFamilyCellIsRefusedNamingWhatIsWrong) {
  const BackendRegistry registry = FakeCandidates();
  const AutoTable table = FastFirstTable(registry);
  const nlohmann::json good = table.ToJson();
  auto refusal = [&](auto change) {
    nlohmann::json j = good;
    change(j["cells"][0]);
    auto parsed = ParseAutoTable(j.dump(), "t.json", table.identity);
    EXPECT_FALSE(parsed.ok());
    return std::string(parsed.status().message());
  };
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["desc"]["op"] = "Conv"; }), HasSubstr("Conv"));
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["desc"]["op"] = "MatMul"; }),
              HasSubstr("MatMul's cells name a \"dtype\""));
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["desc"]["version"] = 11; }),
              HasSubstr("no version 11"));
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["desc"]["a_dtype"] = "int4"; }), HasSubstr("int4"));
  EXPECT_THAT(refusal([](nlohmann::json& c) {
                c["a"] = {2, 64, 64};
              }),
              HasSubstr("is not a product [M,K] x [K,N]"));
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["ranking"] = {"nobody"}; }),
              HasSubstr("not a candidate backend"));
}

TEST(AutoFamilyDeviationsTest, ACasePatternNamesItsOperatorsAsMmsCaseNamesSpellThem) {
  auto file = ParseDeviationsFile(R"({"expectations": [
      {"case": "test_gemm_*", "backend": "a", "expect": "XFAIL", "reason": "r", "link": "l"},
      {"case": "mm_family_matmulinteger10_*", "backend": "b", "expect": "XFAIL", "reason": "r",
       "link": "l"},
      {"case": "fuzz/QLinearMatMul/uint8/*", "backend": "c", "expect": "XFAIL", "reason": "r",
       "link": "l"},
      {"case": "mm_family_*", "backend": "d", "expect": "SKIP", "reason": "r", "link": "l"},
      {"case": "test_matmul_*", "backend": "e", "expect": "XFAIL", "reason": "r", "link": "l"},
      {"case": "*", "backend": "f", "expect": "XFAIL", "reason": "r", "link": "l"}]})",
                                  "e.json");
  ASSERT_TRUE(file.ok()) << file.status();
  const std::vector<AutoDeviation> d = AutoDeviationsOf(*file);
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d[0].ops, (std::vector<Op>{Op::kGemm}));
  EXPECT_EQ(d[1].ops, (std::vector<Op>{Op::kMatMulInteger}));
  EXPECT_EQ(d[2].ops, (std::vector<Op>{Op::kQLinearMatMul}));
  EXPECT_EQ(d[2].dtypes, (std::vector<DType>{DType::kUInt8}));
  EXPECT_EQ(d[3].ops, (std::vector<Op>{Op::kGemm, Op::kMatMulInteger, Op::kQLinearMatMul}));
  EXPECT_EQ(d[4].ops, (std::vector<Op>{Op::kMatMul}));
  EXPECT_TRUE(d[5].ops.empty());
  // What each covers: its operators' problems of its types.
  EXPECT_TRUE(d[0].Covers(kGemmFloat));
  EXPECT_FALSE(d[0].Covers(DType::kFloat));
  EXPECT_FALSE(d[4].Covers(kGemmFloat));
  EXPECT_TRUE(d[4].Covers(DType::kFloat));
  EXPECT_TRUE(d[5].Covers(kU8S8));
  EXPECT_FALSE(d[2].Covers(kU8S8));  // Another operator.
  const OpDesc qlinear{Op::kQLinearMatMul, 10, DType::kInt8, DType::kInt8, DType::kUInt8};
  EXPECT_TRUE(d[2].Covers(qlinear));  // Its Y is uint8.
  const OpDesc qlinear_int8{Op::kQLinearMatMul, 10, DType::kInt8, DType::kInt8, DType::kInt8};
  EXPECT_FALSE(d[2].Covers(qlinear_int8));
}

}  // namespace
}  // namespace mm
