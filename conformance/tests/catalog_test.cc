// Data roots and discovery: precedence, shadowing, skipped models, built-ins, name selection.
#include "mm/conformance/loader/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "onnx_fixtures.h"

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
  EXPECT_EQ(catalog.cases[0].dir(), first.path() / "test_same");
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
  const Catalog with = Discover({{root.path(), "--data-dir"}},
                                {.builtin = true, .shape_classes = false, .select = {}});
  ASSERT_EQ(with.cases.size(), 9u);  // 1 from the root + 8 remaining built-ins.
  EXPECT_EQ(with.cases[0].source(), root.path().string());
  EXPECT_EQ(with.cases[1].source(), kBuiltinSource);
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

// A case of a folder of cases and a root that is one case: the directory, rebuilt from the
// source, is the path the files are under, and each data set loads from its own files.
TEST(DiscoverTest, CaseDirectoriesAndDataSetFilesAreRebuiltExactly) {
  TempDir root;
  const fs::path dir = WriteFloatCase(root.path(), "test_two_sets", {2, 3}, {3, 2});
  fs::copy(dir / "test_data_set_0", dir / "test_data_set_1");
  for (const fs::path& source : {root.path(), dir}) {
    const Catalog catalog = Discover({{source, "--data-dir"}}, {.builtin = false, .select = {}});
    ASSERT_EQ(catalog.cases.size(), 1u);
    const CaseEntry& entry = catalog.cases[0];
    ASSERT_TRUE(entry.model) << entry.error;
    EXPECT_EQ(entry.dir(), dir.string());
    ASSERT_EQ(entry.data_sets.size(), 2u);
    EXPECT_EQ(entry.data_sets.name(1), "test_data_set_1");
    const DataSetFiles files = entry.data_sets.files(1, entry.dir(), *entry.model);
    EXPECT_EQ(files.a, (dir / "test_data_set_1" / "input_0.pb").string());
    EXPECT_EQ(files.b, (dir / "test_data_set_1" / "input_1.pb").string());
    EXPECT_EQ(files.y, (dir / "test_data_set_1" / "output_0.pb").string());
    auto loaded = LoadCaseDataSet(entry, 1);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->name, "test_data_set_1");
    EXPECT_EQ(loaded->y.dims(), (Dims{2, 2}));
  }
}

// Data sets off ONNX's numbering (a gap) are kept in full, names and paths as listed.
TEST(DataSetListTest, ListsOffTheLayoutAreKeptInFull) {
  MatMulModel model;
  const std::vector<DataSetFiles> sets = {{"test_data_set_0", "/c/0/a", "/c/0/b", "/c/0/y"},
                                          {"test_data_set_2", "/c/2/a", "/c/2/b", "/c/2/y"}};
  const DataSetList list(sets, "/c", model);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list.name(1), "test_data_set_2");
  EXPECT_EQ(list.files(1, "/c", model).y, "/c/2/y");
  // A B fed by input_0 (a_input_index 1): the rebuilt paths follow the model.
  model.a_input_index = 1;
  model.b_input_index = 0;
  const DataSetList swapped({{"test_data_set_0", "/c/test_data_set_0/input_1.pb",
                              "/c/test_data_set_0/input_0.pb", "/c/test_data_set_0/output_0.pb"}},
                            "/c", model);
  EXPECT_EQ(swapped.files(0, "/c", model).a, "/c/test_data_set_0/input_1.pb");
  EXPECT_EQ(swapped.files(0, "/c", model).b, "/c/test_data_set_0/input_0.pb");
}

// Every field of a model survives its compact form, the extremes of each integer included.
TEST(CompactModelTest, ReadsBackTheModelStored) {
  MatMulModel model;
  model.opset = 21;
  model.matmul_version = 13;
  model.allowed_dtypes = {DType::kFloat, DType::kBFloat16, DType::kInt64};
  model.a = {"input with a long name, longer than any short string buffer",
             DType::kBFloat16,
             true,
             {std::nullopt, INT64_MAX, 0}};
  model.b = {"", DType::kInt64, true, {INT64_MIN, -1, 1, std::nullopt}};
  model.y = {"y", DType::kDouble, false, {}};
  model.a_input_index = 1;
  model.b_input_index = 0;
  CompactModel compact;
  EXPECT_FALSE(compact);
  compact = model;
  ASSERT_TRUE(compact);
  const MatMulModel back = *compact;
  EXPECT_EQ(back.opset, 21);
  EXPECT_EQ(back.matmul_version, 13);
  EXPECT_EQ(back.allowed_dtypes, model.allowed_dtypes);
  for (auto [got, want] :
       {std::pair{&back.a, &model.a}, {&back.b, &model.b}, {&back.y, &model.y}}) {
    EXPECT_EQ(got->name, want->name);
    EXPECT_EQ(got->dtype, want->dtype);
    EXPECT_EQ(got->has_shape, want->has_shape);
    EXPECT_EQ(got->dims, want->dims);
  }
  EXPECT_EQ(back.a_input_index, 1);
  EXPECT_EQ(back.b_input_index, 0);
  EXPECT_EQ(compact->b.dims[0], INT64_MIN);
  compact = std::optional<MatMulModel>();
  EXPECT_FALSE(compact);
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
