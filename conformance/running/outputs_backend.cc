#include "mm/conformance/running/outputs_backend.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <system_error>

#include "mm/conformance/loader/tensor_proto.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/paths.h"

namespace mm::conformance {
namespace fs = std::filesystem;
namespace {

// Said of an output or record of a case the run does not have: a tree written for more cases than
// the run's data holds is judged in part by narrowing the run, as a case left out is not looked at.
constexpr std::string_view kNarrowTheRun =
    "; to judge only part of a tree, narrow the run with --case NAME or --filter REGEX: the "
    "outputs of cases it leaves out are not looked at";

// The data set folder of a built-in example (its one data set "example", as mm-fuzz export-builtin
// writes it); the shape-class cases' data sets already have their folders' names.
constexpr std::string_view kBuiltinDataSetDir = "test_data_set_0";
constexpr std::string_view kBuiltinExampleDataSet = "example";

// The suffix of an arithmetic item declaring flushed subnormals.
constexpr std::string_view kFlushSuffix = "+flush";

StatusOr<DType> FloatDType(std::string_view name, std::string_view item) {
  auto dtype = DTypeFromName(name);
  if (!dtype.ok() || !IsFloat(*dtype)) {
    return InvalidArgumentError("'" + std::string(item) + "': '" + std::string(name) +
                                "' is not a float dtype (float16, bfloat16, float32, float64)");
  }
  return *dtype;
}

std::string Quoted(const fs::path& path) { return "'" + path.string() + "'"; }

}  // namespace

StatusOr<std::pair<std::string, std::string>> SplitNameValue(std::string_view text,
                                                             std::string_view option) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgumentError(std::string(option) + " '" + std::string(text) +
                                "': expected NAME=VALUE with both non-empty");
  }
  return std::pair<std::string, std::string>(text.substr(0, eq), text.substr(eq + 1));
}

Status ParseArithmeticSpec(std::string_view text, std::map<DType, Arithmetic>& arithmetic) {
  if (text.empty()) return InvalidArgumentError("empty arithmetic declaration");
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string_view item = text.substr(begin, end - begin);
    const std::string_view whole = item;
    const bool flushes = item.ends_with(kFlushSuffix);
    if (flushes) item.remove_suffix(kFlushSuffix.size());
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      MM_ASSIGN_OR_RETURN(DType acc, FloatDType(item, whole));
      for (DType d : kAllDTypes) {
        if (!IsFloat(d)) continue;
        // Narrower (a larger unit roundoff) than the accumulation type: summed in it.
        arithmetic[d] = {UnitRoundoff(d) > UnitRoundoff(acc) ? acc : d, flushes};
      }
    } else {
      MM_ASSIGN_OR_RETURN(DType dtype, FloatDType(item.substr(0, colon), whole));
      MM_ASSIGN_OR_RETURN(DType acc, FloatDType(item.substr(colon + 1), whole));
      arithmetic[dtype] = {acc, flushes};
    }
    begin = end + 1;
  }
  return OkStatus();
}

StatusOr<OutputsManifest> ParseOutputsManifest(std::string_view text, std::string_view source) {
  using Field = io::JsonField<nlohmann::json>;
  MM_ASSIGN_OR_RETURN(const nlohmann::json j, io::ParseJson(text, source));
  const Field root(j, std::string(source));
  MM_RETURN_IF_ERROR(root.OnlyKeys({"runtime", "records"}));
  OutputsManifest manifest;
  MM_ASSIGN_OR_RETURN(std::optional<Field> runtime, root.OptionalMember("runtime"));
  if (runtime) {
    MM_ASSIGN_OR_RETURN(manifest.runtime, runtime->String());
  }
  MM_ASSIGN_OR_RETURN(std::optional<Field> records, root.OptionalMember("records"));
  if (!records) return manifest;
  MM_ASSIGN_OR_RETURN(std::vector<Field> list, records->Elements());
  for (const Field& r : list) {
    MM_RETURN_IF_ERROR(r.OnlyKeys({"case", "data_set", "status", "message"}));
    MM_ASSIGN_OR_RETURN(std::string case_name, r.StringAt("case"));
    MM_ASSIGN_OR_RETURN(std::string data_set, r.StringAt("data_set"));
    MM_ASSIGN_OR_RETURN(std::string status, r.StringAt("status"));
    OutputsManifest::Record record;
    MM_ASSIGN_OR_RETURN(record.message, r.StringAt("message"));
    if (status == "error") {
      record.kind = OutputsManifest::Kind::kError;
    } else if (status == "unsupported") {
      record.kind = OutputsManifest::Kind::kUnsupported;
    } else {
      return r.Error("status '" + io::Printable(status) +
                     "' is neither \"error\" nor \"unsupported\"");
    }
    auto key = std::make_pair(std::move(case_name), std::move(data_set));
    if (!manifest.records.emplace(key, std::move(record)).second) {
      return r.Error("a second record for case '" + io::Printable(key.first) + "', data set '" +
                     io::Printable(key.second) + "'");
    }
  }
  return manifest;
}

StatusOr<OutputsTree> LoadOutputsTree(OutputsSpec spec) {
  MM_RETURN_IF_ERROR(io::CheckName(spec.name, "--outputs NAME"));
  std::error_code ec;
  if (!fs::is_directory(spec.dir, ec)) {
    return NotFoundError("outputs of '" + spec.name + "': " + Quoted(spec.dir) +
                         " is not a directory");
  }
  OutputsTree tree{std::move(spec), {}};
  const fs::path manifest_path = tree.spec.dir / kOutputsManifest;
  if (!fs::exists(fs::symlink_status(manifest_path, ec))) return tree;
  MM_RETURN_IF_ERROR(io::RootDir(tree.spec.dir).Check(manifest_path, "the outputs tree"));
  MM_ASSIGN_OR_RETURN(const std::string text,
                      io::ReadInputFile(manifest_path, io::kOutputsManifestFile));
  MM_ASSIGN_OR_RETURN(tree.manifest, ParseOutputsManifest(text, Quoted(manifest_path)));
  return tree;
}

std::string OutputsDataSetDir(std::string_view source, std::string_view data_set) {
  return std::string(source == kBuiltinSource && data_set == kBuiltinExampleDataSet
                         ? kBuiltinDataSetDir
                         : data_set);
}

std::string OutputsBackend::RunsOn() const {
  std::string text =
      "outputs written by " + tree_->spec.name + " under " + tree_->spec.dir.string();
  if (!tree_->manifest.runtime.empty()) text += " (" + tree_->manifest.runtime + ")";
  return text;
}

StatusOr<std::optional<Tensor>> OutputsBackend::Recorded(const Result& about,
                                                         const MatMulPlan& plan, Support& support,
                                                         std::string& implementation) const {
  const std::string data_set_dir = OutputsDataSetDir(about.source, about.data_set);
  const fs::path file = tree_->spec.dir / about.case_name / data_set_dir / kOutputFile;
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(file, ec));
  const auto record = tree_->manifest.records.find({about.case_name, data_set_dir});
  const std::string manifest = (tree_->spec.dir / kOutputsManifest).string();
  support = Support::Native();
  if (record != tree_->manifest.records.end()) {
    implementation = "record in " + manifest;
    if (exists) {
      return InvalidArgumentError(Quoted(file) + " exists, but " + manifest +
                                  " also records that the runtime wrote no output for it");
    }
    if (record->second.kind == OutputsManifest::Kind::kUnsupported) {
      support = Support::No("the runtime refused it (" + manifest + "): " + record->second.message);
      return std::optional<Tensor>();
    }
    return InternalError("the runtime failed (" + manifest + "): " + record->second.message);
  }
  if (!exists) {
    return NotFoundError("missing output file " + Quoted(file) +
                         ": the runtime wrote none and recorded no error for this data set" +
                         (about.source == kBuiltinSource
                              ? " (a built-in case: 'mm-fuzz export-builtin' writes it as a node "
                                "test for the runtime)"
                              : ""));
  }
  implementation = "output written by " + tree_->spec.name + ": " + file.string();
  MM_RETURN_IF_ERROR(io::RootDir(tree_->spec.dir).Check(file, "the outputs tree"));
  // Whatever the file's own name for it, it is the runtime's Y that is broken.
  auto loaded = LoadTensorFile(file, "Y");
  if (!loaded.ok()) return loaded.status().WithContext("the runtime's output is wrong");
  NamedTensor y = std::move(loaded).value();
  if (y.tensor.dtype() != plan.desc.dtype) {
    return InvalidArgumentError(Quoted(file) + ": dtype " +
                                std::string(DTypeName(y.tensor.dtype())) +
                                ", but the case's Y is " + std::string(DTypeName(plan.desc.dtype)));
  }
  if (y.tensor.dims() != plan.y_dims) {
    return InvalidArgumentError(Quoted(file) + ": shape " + DimsToString(y.tensor.dims()) +
                                ", but MatMul of " + DimsToString(plan.desc.a_dims) + " and " +
                                DimsToString(plan.desc.b_dims) + " gives " +
                                DimsToString(plan.y_dims));
  }
  return std::optional<Tensor>(std::move(y.tensor));
}

Arithmetic OutputsBackend::DeclaredArithmetic(DType dtype) const {
  const auto it = tree_->spec.arithmetic.find(dtype);
  return IsFloat(dtype) && it != tree_->spec.arithmetic.end() ? it->second
                                                              : Arithmetic::OwnType(dtype);
}

StatusOr<std::unique_ptr<MatMulPrimitive>> OutputsBackend::PrepareProduct(const MatMulPlan&) {
  return UnimplementedError("'" + tree_->spec.name +
                            "' is an outputs tree: it computes nothing, its recorded outputs are "
                            "read by the conformance runner");
}

Status RegisterOutputsBackend(BackendRegistry& registry, const OutputsTree& tree) {
  auto shared = std::make_shared<const OutputsTree>(tree);
  return registry.Register(
      tree.spec.name, "outputs written by " + tree.spec.name + " under " + tree.spec.dir.string(),
      [shared]() -> StatusOr<std::unique_ptr<Backend>> {
        return std::unique_ptr<Backend>(std::make_unique<OutputsBackend>(shared));
      });
}

namespace {

// A file or record of an outputs tree that no data set of the run reads, and why.
struct Extra {
  std::string case_name;
  std::string data_set;
  std::string message;
};

// The folder names of `entry`'s data sets in an outputs tree.
std::set<std::string> DataSetDirs(const CaseEntry& entry) {
  std::set<std::string> dirs;
  for (std::size_t d = 0; d < entry.data_sets.size(); ++d) {
    dirs.insert(OutputsDataSetDir(entry.source(), entry.data_sets.name(d)));
  }
  return dirs;
}

// The entries of `dir` in name order (none when it cannot be read).
std::vector<fs::directory_entry> SortedEntries(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return entries;
}

// The search of ExtraOutputResults: the tree walked in name order, then the manifest's records.
class ExtraSearch {
 public:
  ExtraSearch(const OutputsTree& tree, const Catalog& catalog,
              const std::function<bool(const std::string&)>& selected)
      : tree_(tree), checked_root_(tree.spec.dir), selected_(selected) {
    for (std::size_t i = 0; i < catalog.cases.size(); ++i) {
      cases_.emplace(catalog.cases[i].name, &catalog.cases[i]);
      case_index_.emplace(catalog.cases[i].name, static_cast<std::int64_t>(i));
    }
  }

  // Every entry at the tree's root: the manifest, case folders (WalkCase), anything else extra.
  void WalkTree() {
    for (const auto& entry : SortedEntries(tree_.spec.dir)) {
      const std::string name = entry.path().filename().string();
      std::error_code ec;
      if (!fs::is_directory(entry.path(), ec)) {
        if (name != kOutputsManifest) {
          AddFiles(entry.path(), name, "",
                   "only case folders and " + std::string(kOutputsManifest) + " belong here");
        }
        continue;
      }
      const auto found = cases_.find(name);
      if (found == cases_.end()) {
        if (selected_ && !selected_(name)) continue;
        AddFiles(entry.path(), name, "",
                 "no case named '" + name + "' is in the corpus" + std::string(kNarrowTheRun));
        continue;
      }
      const CaseEntry& c = *found->second;
      if (c.family && !LeadsOutside(entry)) {
        AddFiles(entry.path(), name, "",
                 "an outputs tree is judged for MatMul's cases only; '" + name + "' is a " +
                     std::string(family::OpName(c.op)) + " case");
        continue;
      }
      if (!c.model || LeadsOutside(entry)) continue;
      WalkCase(entry.path(), name, DataSetDirs(c));
    }
  }

  // Every record of the manifest for a case and data set the run does not have.
  void CheckRecords() {
    const std::string manifest = (tree_.spec.dir / kOutputsManifest).string();
    for (const auto& [key, record] : tree_.manifest.records) {
      const auto found = cases_.find(key.first);
      if (found == cases_.end()) {
        if (selected_ && !selected_(key.first)) continue;
      } else if (!found->second->model || DataSetDirs(*found->second).count(key.second)) {
        continue;
      }
      extras_.push_back({key.first, key.second,
                         "extra record in " + manifest + " for case '" + key.first +
                             "', data set '" + key.second +
                             "': it belongs to no case and data set of this run" +
                             (found == cases_.end() ? std::string(kNarrowTheRun) : "")});
    }
  }

  // The extras found, those of `shard`'s cases, as ERROR results in catalog order.
  std::vector<Result> Results(std::size_t catalog_size, const Shard& shard) && {
    // Names the catalog does not have go after its last case, in name order.
    std::set<std::string> unknown;
    for (const Extra& e : extras_) {
      if (!case_index_.count(e.case_name)) unknown.insert(e.case_name);
    }
    std::vector<Result> results;
    for (Extra& e : extras_) {
      if (!InShard(e.case_name, shard)) continue;
      Result r;
      r.case_name = e.case_name;
      const auto it = case_index_.find(e.case_name);
      r.case_index = it != case_index_.end()
                         ? it->second
                         : static_cast<std::int64_t>(catalog_size) +
                               std::distance(unknown.begin(), unknown.find(e.case_name));
      r.source = tree_.spec.dir.string();
      r.data_set = e.data_set;
      r.backend = tree_.spec.name;
      r.verdict = Verdict::kError;
      r.message = std::move(e.message);
      r.vs_reference = kExtraOutputReference;
      results.push_back(std::move(r));
    }
    std::stable_sort(results.begin(), results.end(),
                     [](const Result& a, const Result& b) { return a.case_index < b.case_index; });
    return results;
  }

 private:
  // The data set folders of case `name` (at `dir`): those not in `dirs`, and any file in one but
  // output_0.pb, are extra.
  void WalkCase(const fs::path& dir, const std::string& name, const std::set<std::string>& dirs) {
    std::error_code ec;
    for (const auto& ds : SortedEntries(dir)) {
      const std::string ds_name = ds.path().filename().string();
      if (!fs::is_directory(ds.path(), ec) || !dirs.count(ds_name)) {
        AddFiles(ds.path(), name, "", "case '" + name + "' has no data set '" + ds_name + "'");
        continue;
      }
      if (LeadsOutside(ds)) continue;
      for (const auto& f : SortedEntries(ds.path())) {
        if (f.path().filename() == kOutputFile) continue;
        AddFiles(f.path(), name, ds_name,
                 "a data set folder holds only " + std::string(kOutputFile));
      }
    }
  }

  // A case or data set folder that is a link leading outside the tree is never walked: each of
  // its data sets is an ERROR saying so where it is read (Recorded).
  bool LeadsOutside(const fs::directory_entry& entry) const {
    std::error_code ec;
    return entry.is_symlink(ec) && !checked_root_.Check(entry.path(), "the outputs tree").ok();
  }

  // Every file at or under `path` (a directory's files, depth first in name order). Case and data
  // set folders may be symbolic links leading inside the tree, followed as the reader follows them;
  // below an extra folder links are not followed, so a link loop cannot recur.
  void AddFiles(const fs::path& path, const std::string& case_name, const std::string& data_set,
                const std::string& why) {
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(path, ec))) {
      for (const auto& e : SortedEntries(path)) AddFiles(e.path(), case_name, data_set, why);
      return;
    }
    extras_.push_back({case_name, data_set,
                       "extra output file " + Quoted(path) +
                           ": it belongs to no case and data set of this run (" + why + ")"});
  }

  const OutputsTree& tree_;
  const io::RootDir checked_root_;
  const std::function<bool(const std::string&)>& selected_;
  std::map<std::string, const CaseEntry*> cases_;
  std::map<std::string, std::int64_t> case_index_;
  std::vector<Extra> extras_;
};

}  // namespace

std::vector<Result> ExtraOutputResults(const OutputsTree& tree, const Catalog& catalog,
                                       const std::function<bool(const std::string&)>& selected,
                                       const Shard& shard) {
  ExtraSearch search(tree, catalog, selected);
  search.WalkTree();
  search.CheckRecords();
  return std::move(search).Results(catalog.cases.size(), shard);
}

}  // namespace mm::conformance
