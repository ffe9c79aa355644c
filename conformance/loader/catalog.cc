#include "conformance/loader/catalog.h"

#include <algorithm>
#include <map>
#include <system_error>

#include "engine/testdata/onnx_matmul_examples.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;

bool HasModel(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "model.onnx", ec);
}

// The case directories of a root, as (name, dir): the root itself when it holds model.onnx, else
// its sub-directories sorted by name. Sub-directories without model.onnx are returned too (they
// become skipped entries). Paths as text: a root may hold hundreds of thousands of cases.
std::vector<std::pair<std::string, std::string>> CaseDirsOf(const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> dirs;
  if (HasModel(root)) {
    const fs::path canonical = root.has_filename() ? root : root.parent_path();
    dirs.emplace_back(canonical.filename().string(), root.string());
    return dirs;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      dirs.emplace_back(entry.path().filename().string(), entry.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
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
  if (entry.make_data_set) return entry.make_data_set(index);
  if (!entry.builtin()) return LoadDataSet(entry.data_sets[index], *entry.model);
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

StatusOr<std::vector<DataRoot>> ResolveDataRoots(const std::vector<std::string>& cli_dirs,
                                                 const char* env_value,
                                                 const std::vector<fs::path>& defaults) {
  std::vector<DataRoot> roots;
  auto add_explicit = [&](const std::string& dir, const std::string& origin) -> Status {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return NotFoundError(origin + " " + dir + ": no such directory");
    }
    roots.push_back({fs::path(dir), origin});
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
    if (fs::is_directory(dir, ec)) roots.push_back({dir, "default"});
  }
  return roots;
}

std::vector<fs::path> DefaultDataRoots() {
  return {fs::path(kDebianDataRoot),
          fs::path(MM_SOURCE_DIR) / "third_party" / "onnx-testdata" / "node"};
}

Catalog Discover(const std::vector<DataRoot>& roots, const DiscoverOptions& options) {
  Catalog catalog;
  catalog.roots = roots;
  std::map<std::string, std::string> first_seen;  // name -> where it was first found.
  auto selected = [&](const std::string& name) { return !options.select || options.select(name); };

  for (const DataRoot& root : roots) {
    for (auto& [name, dir] : CaseDirsOf(root.path)) {
      if (!selected(name)) continue;
      if (auto it = first_seen.find(name); it != first_seen.end()) {
        catalog.shadowed.push_back({name, dir, it->second});
        continue;
      }
      first_seen.emplace(name, dir);
      auto kind = ClassifyCaseDir(dir);
      CaseEntry entry{name, root.path.string(), dir, std::nullopt, {}, OkStatus()};
      if (!kind.ok() && kind.status().code() == StatusCode::kNotFound) {
        catalog.skipped.push_back({name, dir, "no model.onnx"});
        continue;
      }
      if (!kind.ok()) {
        entry.error = kind.status();
      } else if (!kind->matmul) {
        catalog.skipped.push_back({name, dir, kind->skip_reason});
        continue;
      } else {
        auto sets = ListDataSets(dir, *kind->matmul);
        if (sets.ok()) {
          entry.model = std::move(kind->matmul);
          entry.data_sets = std::move(sets).value();
        } else {
          entry.error = sets.status();
        }
      }
      catalog.cases.push_back(std::move(entry));
    }
  }

  if (options.builtin) {
    auto examples = BuiltinExamples();
    if (!examples.ok()) {
      catalog.cases.push_back({"builtin",
                               std::string(kBuiltinSource),
                               {},
                               std::nullopt,
                               {},
                               examples.status().WithContext("built-in examples")});
      return catalog;
    }
    for (ExampleCase& example : *examples) {
      if (!selected(example.name)) continue;
      if (auto it = first_seen.find(example.name); it != first_seen.end()) {
        catalog.shadowed.push_back({example.name, fs::path(kBuiltinSource), it->second});
        continue;
      }
      first_seen.emplace(example.name, std::string(kBuiltinSource));
      catalog.cases.push_back({example.name,
                               std::string(kBuiltinSource),
                               {},
                               BuiltinModel(example),
                               {{std::string(kBuiltinDataSet), {}, {}, {}}},
                               OkStatus()});
    }
  }
  return catalog;
}

std::optional<fs::path> LocateCase(const std::vector<DataRoot>& roots, const std::string& name) {
  // Same precedence as CaseDirsOf, without listing whole roots (Debian's holds ~900 cases).
  for (const DataRoot& root : roots) {
    std::error_code ec;
    if (HasModel(root.path)) {
      const fs::path canonical = root.path.has_filename() ? root.path : root.path.parent_path();
      if (canonical.filename() == name) return root.path;
    } else if (fs::is_directory(root.path / name, ec)) {
      return root.path / name;
    }
  }
  return std::nullopt;
}

}  // namespace mm::conformance
