// Data roots and discovery: precedence, shadowing, skipped models, built-ins, name selection.
#include "conformance/loader/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "conformance/tests/onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteFloatCase;

std::vector<std::string> Paths(const std::vector<DataRoot>& roots) {
  std::vector<std::string> out;
  for (const auto& r : roots) out.push_back(r.path.string() + "|" + r.origin);
  return out;
}

TEST(ResolveDataRootsTest, CommandLineWinsOverEnvironmentAndDefaults) {
  TempDir a, b, c;
  auto roots =
      ResolveDataRoots({a.path().string(), b.path().string()}, c.path().c_str(), {c.path()});
  ASSERT_TRUE(roots.ok()) << roots.status();
  EXPECT_THAT(Paths(*roots),
              ElementsAre(a.path().string() + "|--data-dir", b.path().string() + "|--data-dir"));
}

TEST(ResolveDataRootsTest, EnvironmentIsColonSeparatedAndWinsOverDefaults) {
  TempDir a, b, c;
  const std::string env = a.path().string() + "::" + b.path().string() + ":";
  auto roots = ResolveDataRoots({}, env.c_str(), {c.path()});
  ASSERT_TRUE(roots.ok()) << roots.status();
  EXPECT_THAT(Paths(*roots), ElementsAre(a.path().string() + "|MM_ONNX_DATA",
                                         b.path().string() + "|MM_ONNX_DATA"));
}

TEST(ResolveDataRootsTest, DefaultsOnlyWhenPresent) {
  TempDir a;
  auto roots = ResolveDataRoots({}, nullptr, {a.path() / "absent", a.path()});
  ASSERT_TRUE(roots.ok()) << roots.status();
  EXPECT_THAT(Paths(*roots), ElementsAre(a.path().string() + "|default"));
  // An empty MM_ONNX_DATA is as good as unset.
  auto empty_env = ResolveDataRoots({}, "", {a.path()});
  ASSERT_TRUE(empty_env.ok());
  EXPECT_EQ(empty_env->size(), 1u);
}

TEST(ResolveDataRootsTest, MissingExplicitDirectoryIsAnError) {
  TempDir a;
  auto cli = ResolveDataRoots({(a.path() / "typo").string()}, nullptr, {});
  ASSERT_FALSE(cli.ok());
  EXPECT_THAT(cli.status().message(), HasSubstr("--data-dir " + (a.path() / "typo").string()));
  const std::string env = (a.path() / "typo").string();
  auto from_env = ResolveDataRoots({}, env.c_str(), {});
  ASSERT_FALSE(from_env.ok());
  EXPECT_THAT(from_env.status().message(), HasSubstr("MM_ONNX_DATA"));
}

TEST(DiscoverTest, FirstSourceWinsAndTheOtherIsShadowed) {
  TempDir first, second;
  WriteFloatCase(first.path(), "test_same", {2, 3}, {3, 4});
  WriteFloatCase(second.path(), "test_same", {1, 2}, {2, 1});
  WriteFloatCase(second.path(), "test_only_second", {2}, {2});
  const Catalog catalog = Discover({{first.path(), "--data-dir"}, {second.path(), "--data-dir"}},
                                   {.builtin = false, .select = {}});
  ASSERT_EQ(catalog.cases.size(), 2u);
  EXPECT_EQ(catalog.cases[0].name, "test_same");
  EXPECT_EQ(catalog.cases[0].dir, first.path() / "test_same");
  auto set = LoadCaseDataSet(catalog.cases[0], 0);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->a.dims(), (Dims{2, 3}));
  EXPECT_EQ(catalog.cases[1].name, "test_only_second");
  ASSERT_EQ(catalog.shadowed.size(), 1u);
  EXPECT_EQ(catalog.shadowed[0].dir, second.path() / "test_same");
  EXPECT_EQ(catalog.shadowed[0].winner, (first.path() / "test_same").string());
}

TEST(DiscoverTest, NonMatMulModelsAreSkippedWithTheReason) {
  TempDir root;
  const fs::path dir = WriteFloatCase(root.path(), "test_add", {2}, {2});
  auto model = testing::MatMulModel(onnx::TensorProto::FLOAT, {2}, {2}, {});
  model.mutable_graph()->mutable_node(0)->set_op_type("Add");
  testing::WriteMessage(dir / "model.onnx", model);
  fs::create_directories(root.path() / "test_no_model");
  const Catalog catalog = Discover({{root.path(), "default"}}, {.builtin = false, .select = {}});
  EXPECT_TRUE(catalog.cases.empty());
  ASSERT_EQ(catalog.skipped.size(), 2u);
  EXPECT_EQ(catalog.skipped[0].reason, "not a MatMul case: op Add");
  EXPECT_EQ(catalog.skipped[1].reason, "no model.onnx");
}

TEST(DiscoverTest, ARootMayBeOneCaseDirectory) {
  TempDir root;
  const fs::path dir = WriteFloatCase(root.path(), "test_single", {2, 2}, {2, 2});
  const Catalog catalog = Discover({{dir, "--data-dir"}}, {.builtin = false, .select = {}});
  ASSERT_EQ(catalog.cases.size(), 1u);
  EXPECT_EQ(catalog.cases[0].name, "test_single");
  EXPECT_TRUE(catalog.cases[0].model.has_value()) << catalog.cases[0].error;
}

TEST(DiscoverTest, BuiltinsComeLastAndCanBeLeftOut) {
  TempDir root;
  WriteFloatCase(root.path(), "test_cc_matmul_2d", {1, 1}, {1, 1});  // Shadows a built-in.
  const Catalog with = Discover({{root.path(), "--data-dir"}}, {});
  ASSERT_EQ(with.cases.size(), 9u);  // 1 from the root + 8 remaining built-ins.
  EXPECT_EQ(with.cases[0].source, root.path().string());
  EXPECT_EQ(with.cases[1].source, kBuiltinSource);
  ASSERT_EQ(with.shadowed.size(), 1u);
  EXPECT_EQ(with.shadowed[0].name, "test_cc_matmul_2d");
  EXPECT_EQ(with.shadowed[0].dir, fs::path(kBuiltinSource));

  const Catalog without = Discover({}, {.builtin = false, .select = {}});
  EXPECT_TRUE(without.cases.empty());
}

TEST(DiscoverTest, UnselectedCasesAreNotEvenRead) {
  TempDir root;
  WriteFloatCase(root.path(), "test_good", {2}, {2});
  testing::WriteBytes(root.path() / "test_broken" / "model.onnx", "garbage");
  const Catalog catalog = Discover(
      {{root.path(), "--data-dir"}},
      {.builtin = false, .select = [](const std::string& name) { return name == "test_good"; }});
  ASSERT_EQ(catalog.cases.size(), 1u);
  EXPECT_EQ(catalog.cases[0].name, "test_good");
  EXPECT_TRUE(catalog.skipped.empty());
}

TEST(LocateCaseTest, SamePrecedenceAsDiscover) {
  TempDir first, second;
  WriteFloatCase(second.path(), "test_x", {2}, {2});
  WriteFloatCase(first.path(), "test_x", {2}, {2});
  auto dir = LocateCase({{first.path(), "a"}, {second.path(), "b"}}, "test_x");
  ASSERT_TRUE(dir.has_value());
  EXPECT_EQ(*dir, first.path() / "test_x");
  EXPECT_FALSE(LocateCase({{first.path(), "a"}}, "test_y").has_value());
}

}  // namespace
}  // namespace mm::conformance
