#include "mm/conformance/loader/catalog.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <system_error>

#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/testdata/onnx_matmul_examples.h"
#include "mm/family/plan.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;

bool HasModel(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "model.onnx", ec);
}

// The name of a root that is itself a case: its directory's name, also when the root is named
// relative to the working directory ("." for the working directory itself, io::ReportedPath).
std::string RootCaseName(const fs::path& root) {
  std::error_code ec;
  fs::path normal = fs::absolute(root, ec).lexically_normal();
  if (ec) normal = root;
  return (normal.has_filename() ? normal : normal.parent_path()).filename().string();
}

// The case directories of a root, by name: the root itself when it holds model.onnx (then
// `*is_root` is set), else its sub-directories sorted by name, each root / name. Sub-directories
// without model.onnx are returned too (they become skipped entries). Names only: a root may hold
// hundreds of thousands of cases, and each directory is rebuilt from the root when needed.
std::vector<std::string> CaseNamesOf(const fs::path& root, bool* is_root) {
  std::vector<std::string> names;
  *is_root = HasModel(root);
  if (*is_root) {
    names.push_back(RootCaseName(root));
    return names;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The name of a built-in example's one data set.
constexpr std::string_view kBuiltinDataSet = "example";

// What a built-in example promises, as if it were a MatMul-13 model (the examples are from the
// MatMul-13 page) declaring its tensors' exact dtypes and shapes.
MatMulModel BuiltinModel(const ExampleCase& example) {
  MatMulModel model;
  model.opset = 13;
  model.matmul_version = 13;
  model.allowed_dtypes = {example.a.dtype()};
  auto declare = [](const char* name, const Tensor& t) {
    DeclaredTensor d{name, t.dtype(), true, {}};
    for (std::int64_t dim : t.dims()) d.dims.emplace_back(dim);
    return d;
  };
  model.a = declare("a", example.a);
  model.b = declare("b", example.b);
  model.y = declare("y", example.y);
  return model;
}

}  // namespace

StatusOr<DataSet> LoadCaseDataSet(const CaseEntry& entry, std::size_t index) {
  if (!entry.model) return FailedPreconditionError(entry.name + ": not a valid case");
  if (index >= entry.data_sets.size()) {
    return OutOfRangeError(entry.name + ": no data set " + std::to_string(index));
  }
  if (entry.make_data_set) return (*entry.make_data_set)(index);
  if (!entry.builtin()) {
    const MatMulModel model = *entry.model;
    return LoadDataSet(entry.data_sets.files(index, entry.dir(), model), model);
  }
  if (auto shape_case = FindShapeCase(entry.name)) return ShapeCaseDataSet(*shape_case, index);
  // The examples are a few hundred bytes of embedded text: parsing them again is cheaper than
  // keeping their tensors for the whole run.
  MM_ASSIGN_OR_RETURN(std::vector<ExampleCase> examples, BuiltinExamples());
  for (ExampleCase& example : examples) {
    if (example.name == entry.name) {
      return DataSet{std::string(kBuiltinDataSet), std::move(example.a), std::move(example.b),
                     std::move(example.y)};
    }
  }
  return NotFoundError(entry.name + ": no such built-in example");
}

CaseEntry InMemoryFamilyCase(std::string name, std::shared_ptr<const std::string> source,
                             FamilyModel model, const std::vector<std::string>& data_set_names,
                             FamilyDataSetMaker make) {
  CaseEntry entry;
  entry.name = std::move(name);
  entry.shared_source = std::move(source);
  entry.op = model.op;
  entry.family = std::make_shared<const FamilyModel>(std::move(model));
  for (const std::string& set : data_set_names) entry.data_sets.push_back({set, {}, {}, {}});
  entry.make_family_data_set = std::make_shared<const FamilyDataSetMaker>(std::move(make));
  return entry;
}

StatusOr<FamilyDataSet> LoadFamilyCaseDataSet(const CaseEntry& entry, std::size_t index) {
  if (!entry.family) return FailedPreconditionError(entry.name + ": not a valid family case");
  if (index >= entry.data_sets.size()) {
    return OutOfRangeError(entry.name + ": no data set " + std::to_string(index));
  }
  if (entry.make_family_data_set) return (*entry.make_family_data_set)(index);
  if (entry.builtin()) {
    const FamilyCase* found = FindBuiltinFamilyCase(entry.name);
    if (found == nullptr) {
      return NotFoundError(entry.name + ": no built-in family case of that name in this build (" +
                           std::to_string(BuiltinFamilyCatalogue().size()) + " cases)");
    }
    return FamilyCaseDataSet(*found);
  }
  return LoadFamilyDataSet(entry.dir(), entry.data_sets.name(index), *entry.family);
}

bool FoundByNameInWorkers(const CaseEntry& entry) {
  return entry.family != nullptr && entry.builtin() && FindBuiltinFamilyCase(entry.name) != nullptr;
}

StatusOr<std::vector<DataRoot>> ResolveDataRoots(const std::vector<std::string>& cli_dirs,
                                                 const char* env_value,
                                                 const std::vector<fs::path>& defaults) {
  std::vector<DataRoot> roots;
  auto add_explicit = [&](const std::string& dir, const std::string& origin) -> Status {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return NotFoundError(origin + " " + dir + ": no such directory");
    }
    roots.push_back({io::ReportedPath(dir, MM_SOURCE_DIR), origin});
    return OkStatus();
  };
  if (!cli_dirs.empty()) {
    for (const auto& dir : cli_dirs) MM_RETURN_IF_ERROR(add_explicit(dir, "--data-dir"));
    return roots;
  }
  if (env_value != nullptr && *env_value != '\0') {
    std::string_view rest = env_value;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (!dir.empty()) MM_RETURN_IF_ERROR(add_explicit(dir, "MM_ONNX_DATA"));
    }
    if (!roots.empty()) return roots;
  }
  for (const auto& dir : defaults) {
    std::error_code ec;
    if (fs::is_directory(dir, ec))
      roots.push_back({io::ReportedPath(dir, MM_SOURCE_DIR), "default"});
  }
  return roots;
}

std::vector<fs::path> DefaultDataRoots() {
  return {fs::path(kDebianDataRoot),
          fs::path(MM_SOURCE_DIR) / "third_party" / "onnx-testdata" / "node"};
}

namespace {

// Builds a catalog source by source: a name met in an earlier source wins, and later copies are
// recorded as shadowed.
class CatalogBuilder {
 public:
  CatalogBuilder(const std::vector<DataRoot>& roots, const DiscoverOptions& options)
      : options_(options) {
    catalog_.roots = roots;
  }

  // Adds the cases of `root`, the `position`-th data root.
  void AddRoot(const DataRoot& root, std::size_t position) {
    if (position > 0) IndexSeen();
    bool is_root = false;
    std::vector<std::string> names = CaseNamesOf(root.path, &is_root);
    catalog_.cases.reserve(catalog_.cases.size() + names.size());
    const auto source = std::make_shared<const std::string>(root.path.string());
    const io::RootDir root_dir(root.path);
    for (std::string& name : names) {
      if (!Selected(name)) continue;
      const std::string dir = is_root ? *source : (root.path / name).string();
      if (auto first = Winner(name)) {
        catalog_.shadowed.push_back({name, dir, *first});
        continue;
      }
      AddCaseDir(std::move(name), dir, root, root_dir, source, is_root);
    }
  }

  // Adds the built-in examples (and shape-class cases when asked), unless a data root has a case
  // of the same name (that copy wins).
  void AddBuiltins() {
    source_ = std::make_shared<const std::string>(kBuiltinSource);
    IndexSeen();
    auto examples = BuiltinExamples();
    if (!examples.ok()) {
      CaseEntry entry;
      entry.name = "builtin";
      entry.shared_source = source_;
      entry.error = examples.status().WithContext("built-in examples");
      catalog_.cases.push_back(std::move(entry));
      return;
    }
    for (ExampleCase& example : *examples) {
      AddBuiltin(example.name, BuiltinModel(example), {std::string(kBuiltinDataSet)});
    }
    if (!options_.shape_classes) return;
    for (const ShapeCase& shape_case : ShapeCases()) {
      std::vector<std::string> sets;
      for (std::size_t i = 0; i < shape_case.shape_class->problems.size(); ++i) {
        sets.push_back(ShapeDataSetName(i));
      }
      AddBuiltin(shape_case.name, ShapeCaseModel(shape_case), sets);
    }
    for (const FamilyCase& family_case : BuiltinFamilyCatalogue()) AddBuiltinFamily(family_case);
  }

  Catalog Take() && { return std::move(catalog_); }

 private:
  // A name found in an earlier source, as an index into catalog_.cases (kind 0) or
  // catalog_.skipped (kind 1): the sorted list is rebuilt before each source after the first, so
  // discovery keeps no map of names and paths beside the catalog.
  struct Seen {
    std::uint32_t kind : 1;
    std::uint32_t index : 31;
  };

  const std::string& SeenName(const Seen& s) const {
    return s.kind == 0 ? catalog_.cases[s.index].name : catalog_.skipped[s.index].name;
  }

  void IndexSeen() {
    seen_.clear();
    seen_.reserve(catalog_.cases.size() + catalog_.skipped.size());
    for (std::size_t i = 0; i < catalog_.cases.size(); ++i) {
      seen_.push_back({0, static_cast<std::uint32_t>(i)});
    }
    for (std::size_t i = 0; i < catalog_.skipped.size(); ++i) {
      seen_.push_back({1, static_cast<std::uint32_t>(i)});
    }
    std::sort(seen_.begin(), seen_.end(),
              [&](const Seen& x, const Seen& y) { return SeenName(x) < SeenName(y); });
  }

  // Where the first copy of `name` is, when an earlier source has one.
  std::optional<std::string> Winner(const std::string& name) const {
    auto it =
        std::lower_bound(seen_.begin(), seen_.end(), name,
                         [&](const Seen& x, const std::string& n) { return SeenName(x) < n; });
    if (it == seen_.end() || SeenName(*it) != name) return std::nullopt;
    return it->kind == 0 ? catalog_.cases[it->index].dir()
                         : catalog_.skipped[it->index].dir.string();
  }

  bool Selected(const std::string& name) const { return !options_.select || options_.select(name); }

  // A case folder or model that is a link must not lead out of the root.
  static Status InsideRoot(const std::string& dir, const io::RootDir& root_dir) {
    for (const fs::path& path : {fs::path(dir), fs::path(dir) / "model.onnx"}) {
      std::error_code link_ec;
      if (fs::is_symlink(fs::symlink_status(path, link_ec))) {
        MM_RETURN_IF_ERROR(root_dir.Check(path, "the data root"));
      }
    }
    return OkStatus();
  }

  void AddCaseDir(std::string name, const std::string& dir, const DataRoot& root,
                  const io::RootDir& root_dir, const std::shared_ptr<const std::string>& source,
                  bool is_root) {
    Status inside = InsideRoot(dir, root_dir);
    auto kind = inside.ok() ? ClassifyCaseDirWithFamily(dir) : StatusOr<CaseDirKind>(inside);
    if (!kind.ok() && kind.status().code() == StatusCode::kNotFound) {
      catalog_.skipped.push_back({name, dir, "no model.onnx"});
      return;
    }
    if (kind.ok() && !kind->matmul && !kind->family_op) {
      catalog_.skipped.push_back({name, dir, kind->skip_reason});
      return;
    }
    CaseEntry entry;
    entry.shared_source = source;
    entry.dir_is = is_root ? CaseEntry::DirIs::kSource : CaseEntry::DirIs::kSourceSlashName;
    if (!kind.ok()) {
      entry.error = kind.status();
    } else if (kind->family_op) {
      AddFamilyCaseDir(*kind, dir, root, entry);
    } else if (auto sets = ListDataSets(dir, *kind->matmul, root.path); sets.ok()) {
      entry.data_sets = DataSetList(std::move(sets).value(), dir, *kind->matmul);
      entry.model = std::move(kind->matmul);
    } else {
      entry.error = sets.status();
    }
    entry.name = std::move(name);
    catalog_.cases.push_back(std::move(entry));
  }

  // A family case: its model and data sets' names, or why it is invalid, into `entry`.
  static void AddFamilyCaseDir(CaseDirKind& kind, const std::string& dir, const DataRoot& root,
                               CaseEntry& entry) {
    entry.op = *kind.family_op;
    if (!kind.family) {
      entry.error = kind.family_error;
      return;
    }
    auto sets = ListDataSetFolders(dir, static_cast<int>(kind.family->inputs.size()), root.path);
    if (!sets.ok()) {
      entry.error = sets.status();
      return;
    }
    for (ListedDataSet& set : *sets) entry.data_sets.push_back({std::move(set.name), {}, {}, {}});
    entry.family = std::make_shared<const FamilyModel>(std::move(*kind.family));
  }

  // Whether the built-in case `name` is selected and not shadowed (then recorded as shadowed).
  bool TakeBuiltin(const std::string& name) {
    if (!Selected(name)) return false;
    if (auto first = Winner(name)) {
      catalog_.shadowed.push_back({name, fs::path(kBuiltinSource), *first});
      return false;
    }
    return true;
  }

  // A case of the built-in family catalogue, made in memory (found by name in a launcher's
  // workers); an ERROR entry naming the reason should it not plan.
  void AddBuiltinFamily(const FamilyCase& family_case) {
    if (!TakeBuiltin(family_case.name)) return;
    const auto plan = family::PlanProblem(family_case.problem);
    if (!plan.ok()) {
      CaseEntry entry;
      entry.name = family_case.name;
      entry.shared_source = source_;
      entry.op = family_case.problem.op;
      entry.error = plan.status().WithContext("built-in family case " + family_case.name);
      catalog_.cases.push_back(std::move(entry));
      return;
    }
    catalog_.cases.push_back(InMemoryFamilyCase(
        family_case.name, source_,
        FamilyModelOf(family_case.problem, plan->y_dtype, plan->y_dims()),
        {std::string(kFamilyCaseDataSet)},
        [found = &family_case](std::size_t) { return FamilyCaseDataSet(*found); }));
  }

  void AddBuiltin(const std::string& name, const MatMulModel& model,
                  const std::vector<std::string>& data_sets) {
    if (!TakeBuiltin(name)) return;
    CaseEntry entry;
    entry.name = name;
    entry.shared_source = source_;
    entry.model = model;
    for (const std::string& set : data_sets) entry.data_sets.push_back({set, {}, {}, {}});
    catalog_.cases.push_back(std::move(entry));
  }

  const DiscoverOptions& options_;
  Catalog catalog_;
  std::vector<Seen> seen_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace

Catalog Discover(const std::vector<DataRoot>& roots, const DiscoverOptions& options) {
  CatalogBuilder builder(roots, options);
  for (std::size_t r = 0; r < roots.size(); ++r) builder.AddRoot(roots[r], r);
  if (options.builtin) builder.AddBuiltins();
  return std::move(builder).Take();
}

std::optional<fs::path> LocateCase(const std::vector<DataRoot>& roots, const std::string& name) {
  // Same precedence as CaseNamesOf, without listing whole roots (Debian's holds ~900 cases).
  for (const DataRoot& root : roots) {
    std::error_code ec;
    if (HasModel(root.path)) {
      if (RootCaseName(root.path) == name) return root.path;
    } else if (fs::is_directory(root.path / name, ec)) {
      return root.path / name;
    }
  }
  return std::nullopt;
}

}  // namespace mm::conformance
