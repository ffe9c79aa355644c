// Where cases come from: the data roots (in their order of precedence) and the built-in cases
// and the catalog discovered over them: MatMul cases, skipped models, shadowed names.
#ifndef MM_CONFORMANCE_LOADER_CATALOG_H_
#define MM_CONFORMANCE_LOADER_CATALOG_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/loader/family_case.h"
#include "mm/conformance/loader/matmul_case.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// Debian's copy of ONNX's node tests (package libonnx-testdata): the first default data root.
inline constexpr std::string_view kDebianDataRoot = "/usr/share/libonnx-testdata/data/node";
// Name shown as the source of built-in cases.
inline constexpr std::string_view kBuiltinSource = "built-in";

// A source of cases: a folder of case directories (like ONNX's data/node) or one case directory.
struct DataRoot {
  std::filesystem::path path;
  std::string origin;  // "--data-dir", "MM_ONNX_DATA" or "default".
};

// Picks the data roots, first wins: every `cli_dirs` entry; when there is none, the
// colon-separated directories of `env_value` (MM_ONNX_DATA; nullptr when unset, empty entries
// ignored); when that is unset or empty too, each of `defaults` that exists. Explicit roots
// (command line or MM_ONNX_DATA) must be existing directories: NOT_FOUND otherwise, so a typo
// never silently runs nothing. A root in the working directory or in mm's source tree is named
// relative to the working directory (io::ReportedPath), as every report then names it and its
// cases. That is safe from a backend's chdir: the run's own process never changes directory, a
// worker whose backend did is replaced, and --no-isolate puts the directory back after the call
// (process_state.h).
StatusOr<std::vector<DataRoot>> ResolveDataRoots(
    const std::vector<std::string>& cli_dirs, const char* env_value,
    const std::vector<std::filesystem::path>& defaults);

// The default roots of this build: kDebianDataRoot and <source tree>/third_party/onnx-testdata/node
// (where scripts/fetch-onnx-testdata.sh puts the official cases).
std::vector<std::filesystem::path> DefaultDataRoots();

// The data sets of a case. Those that follow ONNX's layout (test_data_set_0 .. test_data_set_{N-1},
// each holding input_K.pb and output_0.pb, as every generated corpus does) are kept as their count
// and their paths rebuilt when one is loaded; any other list is kept in full. A catalog holds one
// per case: a few hundred thousand lists of full paths would cost more than the rest of the run.
class DataSetList {
 public:
  DataSetList() = default;
  // The answer of ListDataSets(case_dir, model), kept as a count when it follows the layout.
  DataSetList(std::vector<DataSetFiles> sets, const std::string& case_dir,
              const MatMulModel& model);

  // Appends a data set kept in full (built-in and in-memory cases: a name without files).
  void push_back(DataSetFiles set);
  std::size_t size() const { return standard_ != 0 ? standard_ : full_.size(); }
  bool empty() const { return size() == 0; }
  // The name of data set `index` < size(): "test_data_set_0".
  std::string name(std::size_t index) const;
  // The files of data set `index` < size() of the case in `case_dir` declared by `model`.
  DataSetFiles files(std::size_t index, const std::string& case_dir,
                     const MatMulModel& model) const;

 private:
  std::uint32_t standard_ = 0;  // How many data sets follow the layout (then full_ is empty).
  std::vector<DataSetFiles> full_;
};

// A MatMulModel kept as a few dozen bytes (a catalog holds one per case, and a MatMulModel costs
// several allocations). Reads like a std::optional<MatMulModel>: each read decodes a copy, equal
// field for field to the model stored.
class CompactModel {
 public:
  CompactModel() = default;
  CompactModel& operator=(const MatMulModel& model);
  CompactModel& operator=(const std::optional<MatMulModel>& model);

  bool has_value() const { return !bytes_.empty(); }
  // The stored form, and a model made from it: how a case travels to a worker process. Bytes
  // other than those encoded() gave are not checked.
  const std::string& encoded() const { return bytes_; }
  static CompactModel FromEncoded(std::string bytes) {
    CompactModel model;
    model.bytes_ = std::move(bytes);
    return model;
  }
  explicit operator bool() const { return has_value(); }
  // The model; has_value() must hold.
  MatMulModel operator*() const;
  MatMulModel value() const { return **this; }
  // `entry.model->opset`: a decoded copy that lives until the end of the full expression.
  class Arrow {
   public:
    explicit Arrow(MatMulModel model) : model_(std::move(model)) {}
    const MatMulModel* operator->() const { return &model_; }

   private:
    MatMulModel model_;
  };
  Arrow operator->() const { return Arrow(**this); }

 private:
  std::string bytes_;  // Empty when there is no model.
};

// Makes data set `index` of a case built in memory (the self-check's).
using DataSetMaker = std::function<StatusOr<DataSet>(std::size_t index)>;

// Makes data set `index` of a family case built in memory (the built-in family catalogue's).
using FamilyDataSetMaker = std::function<StatusOr<FamilyDataSet>(std::size_t index)>;

// A MatMul case found in a source: classified and its data sets listed, or invalid with the reason
// (it is then an ERROR). No tensor is read by discovery: LoadCaseDataSet reads one data set when
// it runs, so memory does not grow with the corpus. A catalog holds one per case, so what every
// case of a source has in common is shared, and the directory is rebuilt from the source.
struct CaseEntry {
  // Where the case directory is.
  enum class DirIs : std::uint8_t {
    kNone,             // No directory (built-in and in-memory cases).
    kSource,           // The source itself (a data root that is one case directory).
    kSourceSlashName,  // source / name (a case of a folder of cases).
  };

  std::string name;
  // The data root's path, or kBuiltinSource: one string for every case of the source.
  std::shared_ptr<const std::string> shared_source;
  DirIs dir_is = DirIs::kNone;
  CompactModel model;     // Set when the case is valid (built-ins: MatMul-13).
  DataSetList data_sets;  // Set when valid; built-ins have one without files.
  Status error;           // Why it is invalid, when `model` is empty.
  // A case built in memory (the self-check's): makes its data sets; null for every other case.
  std::shared_ptr<const DataSetMaker> make_data_set;
  // The operator of the case (its results name it): MatMul, or one of its family's, for a family
  // case whether valid or not.
  family::Op op = family::Op::kMatMul;
  // A case of MatMul's family (Gemm, MatMulInteger, QLinearMatMul) that is valid; `model` is then
  // empty. Its data sets are named in `data_sets` without files (test_data_set_N under the case
  // directory) and read by LoadFamilyCaseDataSet.
  std::shared_ptr<const FamilyModel> family;
  // A family case built in memory (with `family` set: its operator, version and attributes):
  // makes its data sets; null for every other case.
  std::shared_ptr<const FamilyDataSetMaker> make_family_data_set;

  // Whether the case can run: a MatMul model or a family model.
  bool valid() const { return model.has_value() || family != nullptr; }

  // The data root's path, or kBuiltinSource ("" when unset).
  const std::string& source() const;
  // The case directory as text: empty for built-ins.
  std::string dir() const;
  bool builtin() const { return source() == kBuiltinSource; }
};

// Reads data set `index` of the valid case `entry`: its tensor files (checked against the model),
// the embedded example for a built-in, or what make_data_set makes. Errors name the file.
StatusOr<DataSet> LoadCaseDataSet(const CaseEntry& entry, std::size_t index);

// A catalogue entry of a family case built in memory: `name`, from `source` (kBuiltinSource for the
// built-in ones), its model (FamilyModelOf), its data sets' names and `make`, which makes data set
// `index` (named data_set_names[index]). Runs in process and in forked workers (which hold the
// catalogue); a launcher's workers find built-in cases again by name (LoadFamilyCaseDataSet).
CaseEntry InMemoryFamilyCase(std::string name, std::shared_ptr<const std::string> source,
                             FamilyModel model, const std::vector<std::string>& data_set_names,
                             FamilyDataSetMaker make);

// Whether a worker process without the catalogue finds `entry` again from its name alone: a case
// of the built-in family catalogue (family_cases.h), whose maker need not travel.
bool FoundByNameInWorkers(const CaseEntry& entry);

// Reads data set `index` of the valid family case `entry` (`family` set): its tensor files checked
// against the model, or what make_family_data_set makes; a built-in case without its maker (in a
// worker of a launcher) is found again by name in the built-in family catalogue (NOT_FOUND naming
// it when there is none). Errors name the file.
StatusOr<FamilyDataSet> LoadFamilyCaseDataSet(const CaseEntry& entry, std::size_t index);

// A model found in a data root that is not a MatMul case: listed, never run, never passed.
struct SkippedModel {
  std::string name;
  std::filesystem::path dir;
  std::string reason;
};

// A case name found again in a later source: the first source wins.
struct ShadowedCase {
  std::string name;
  std::filesystem::path dir;  // The losing copy.
  std::string winner;         // Where the winning copy is (a directory or kBuiltinSource).
};

// Everything discovered over the sources.
struct Catalog {
  std::vector<DataRoot> roots;
  std::vector<CaseEntry> cases;  // In source order, then by name within a root.
  std::vector<SkippedModel> skipped;
  std::vector<ShadowedCase> shadowed;
};

struct DiscoverOptions {
  bool builtin = true;  // Append the built-in cases after the data roots.
  // With `builtin`: the shape-class catalogues after the examples, MatMul's
  // (conformance/loader/shape_classes.h) then its family's (family_cases.h: Gemm, MatMulInteger,
  // QLinearMatMul).
  bool shape_classes = true;
  // Names for which this returns false are ignored entirely (not loaded, not listed). Applied
  // before any file of the case is read, so a filtered run reads only what it runs.
  std::function<bool(const std::string&)> select;
};

// Scans `roots` in order, then the built-ins. Never fails: unreadable or invalid MatMul cases are
// entries with an error.
Catalog Discover(const std::vector<DataRoot>& roots, const DiscoverOptions& options);

// The directory of the first case named `name` in `roots` (same precedence as Discover), if any.
std::optional<std::filesystem::path> LocateCase(const std::vector<DataRoot>& roots,
                                                const std::string& name);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_CATALOG_H_
