// A deviations file is data a backends-level reader takes: its entries in file order with every
// field, a malformed one refused with the entry named, and auto's exclusions drawn from it.
#include "mm/backends/deviations/deviations_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mm/backends/auto/auto_deviations.h"

namespace mm {
namespace {

using ::testing::HasSubstr;

TEST(DeviationsFileTest, ReadsEveryEntryInFileOrderWithItsFields) {
  const auto file = ParseDeviationsFile(
      R"({"expectations": [
           {"case": "test_*_float16_*", "backend": "eigen", "expect": "XFAIL",
            "reason": "rounds twice", "link": "l1"},
           {"case": "fuzz/*", "backend": "one*", "data_set": "d2", "expect": "SKIP",
            "reason": "hangs", "link": "l2"}]})",
      "e.json");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->source, "e.json");
  ASSERT_EQ(file->entries.size(), 2u);
  const DeclaredDeviation& first = file->entries[0];
  EXPECT_EQ(first.case_pattern, "test_*_float16_*");
  EXPECT_EQ(first.backend_pattern, "eigen");
  EXPECT_EQ(first.data_set_pattern, "*") << "no data_set: every data set";
  EXPECT_EQ(first.kind, DeclaredDeviation::Kind::kXFail);
  EXPECT_EQ(first.reason, "rounds twice");
  EXPECT_EQ(first.link, "l1");
  const DeclaredDeviation& second = file->entries[1];
  EXPECT_EQ(second.data_set_pattern, "d2");
  EXPECT_EQ(second.kind, DeclaredDeviation::Kind::kSkip);
  EXPECT_EQ(DeclaredDeviationKindName(second.kind), "SKIP");
}

TEST(DeviationsFileTest, AMalformedEntryIsRefusedWithItsIndexAndCase) {
  const auto typo = ParseDeviationsFile(
      R"({"expectations": [{"case": "test_a", "backend": "*", "expect": "SKIP",
           "reason": "r", "link": "l", "bakend": "x"}]})",
      "e.json");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(typo.status().message(),
              HasSubstr("e.json: entry 0 (case \"test_a\"): unknown key \"bakend\""));
  const auto no_link = ParseDeviationsFile(
      R"({"expectations": [{"case": "test_a", "backend": "*", "expect": "XFAIL", "reason": "r"}]})",
      "e.json");
  ASSERT_FALSE(no_link.ok());
  EXPECT_THAT(no_link.status().message(), HasSubstr("\"link\" must be a non-empty string"));
}

TEST(DeviationsFileTest, ACpuConditionAppliesWhereTheCpuLacksOneOfItsFeatures) {
  const auto file = ParseDeviationsFile(
      R"({"expectations": [{"case": "test_k129", "backend": "torch", "expect": "XFAIL",
           "reason": "r", "link": "l", "unless_cpu_has": ["avx512bw", "avx512dq"]}]})",
      "e.json");
  ASSERT_TRUE(file.ok()) << file.status();
  const DeclaredDeviation& all = file->entries[0];
  EXPECT_EQ(all.NotApplicableOn({"avx2"}), "");
  EXPECT_EQ(all.NotApplicableOn({"avx2", "avx512bw"}), "") << "avx512dq is missing";
  EXPECT_EQ(all.NotApplicableOn({"avx512bw", "avx512dq", "avx512vl"}),
            "this CPU has avx512bw, avx512dq");
}

TEST(DeviationsFileTest, AnItemNamingAlternativesIsHadWithAnyOfThem) {
  const auto file = ParseDeviationsFile(
      R"({"expectations": [{"case": "test_u8s8", "backend": "onnxruntime", "expect": "XFAIL",
           "reason": "r", "link": "l", "unless_cpu_has": ["avx512_vnni|avx_vnni"]},
          {"case": "test_both", "backend": "x", "expect": "XFAIL", "reason": "r", "link": "l",
           "unless_cpu_has": ["avx2", "avx512_vnni|avx_vnni"]}]})",
      "e.json");
  ASSERT_TRUE(file.ok()) << file.status();
  const DeclaredDeviation& any = file->entries[0];
  EXPECT_EQ(any.NotApplicableOn({"avx2", "avx512bw"}), "") << "no VNNI: the entry applies";
  EXPECT_EQ(any.NotApplicableOn({"avx2", "avx512_vnni"}), "this CPU has avx512_vnni");
  EXPECT_EQ(any.NotApplicableOn({"avx2", "avx_vnni"}), "this CPU has avx_vnni");
  const DeclaredDeviation& both = file->entries[1];
  EXPECT_EQ(both.NotApplicableOn({"avx_vnni"}), "") << "avx2 is missing";
  EXPECT_EQ(both.NotApplicableOn({"avx2", "avx_vnni"}), "this CPU has avx2, avx_vnni");
  for (const char* bad : {R"(["avx512_vnni|"])", R"(["|avx_vnni"])", R"(["a||b"])"}) {
    const auto refused = ParseDeviationsFile(
        std::string(R"({"expectations": [{"case": "c", "backend": "b", "expect": "XFAIL",
             "reason": "r", "link": "l", "unless_cpu_has": )") +
            bad + "}]}",
        "e.json");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("alternatives as")) << bad;
  }
}

TEST(DeviationsFileTest, LoadNamesTheFileWhenItIsMissing) {
  const auto missing = LoadDeviationsFile("/nonexistent-mm-folder/none.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent-mm-folder/none.json"));
}

TEST(AutoDeviationsTest, EachEntryExcludesItsBackendForTheDtypesItsCasePatternNames) {
  const auto file = ParseDeviationsFile(R"({"expectations": [
      {"case": "test_*_float16_*", "backend": "eigen", "expect": "XFAIL", "reason": "r1",
       "link": "l"},
      {"case": "test_matmul_*", "backend": "blis", "expect": "SKIP", "reason": "r2", "link": "l"}]})",
                                        "e.json");
  ASSERT_TRUE(file.ok()) << file.status();
  const std::vector<AutoDeviation> deviations = AutoDeviationsOf(*file);
  ASSERT_EQ(deviations.size(), 2u);
  EXPECT_EQ(deviations[0].backend_pattern, "eigen");
  EXPECT_EQ(deviations[0].dtypes, std::vector<DType>{DType::kFloat16});
  EXPECT_EQ(deviations[0].declared, "declared XFAIL in e.json (r1)");
  EXPECT_EQ(deviations[1].backend_pattern, "blis");
  EXPECT_TRUE(deviations[1].dtypes.empty()) << "a pattern naming no dtype concerns every dtype";
  EXPECT_EQ(deviations[1].declared, "declared SKIP in e.json (r2)");
}

}  // namespace
}  // namespace mm
