// Where cases come from: the data roots (in their order of precedence) and the built-in examples,
// and the catalog discovered over them: MatMul cases, skipped models, shadowed names.
#ifndef MM_CONFORMANCE_LOADER_CATALOG_H_
#define MM_CONFORMANCE_LOADER_CATALOG_H_

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conformance/loader/matmul_case.h"
#include "engine/status.h"

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
// never silently runs nothing.
StatusOr<std::vector<DataRoot>> ResolveDataRoots(
    const std::vector<std::string>& cli_dirs, const char* env_value,
    const std::vector<std::filesystem::path>& defaults);

// The default roots of this build: kDebianDataRoot and <source tree>/third_party/onnx-testdata/node
// (where scripts/fetch-onnx-testdata.sh puts the official cases).
std::vector<std::filesystem::path> DefaultDataRoots();

// A MatMul case found in a source: classified and its data sets listed, or invalid with the reason
// (it is then an ERROR). No tensor is read by discovery: LoadCaseDataSet reads one data set when
// it runs, so memory does not grow with the corpus.
struct CaseEntry {
  std::string name;
  std::string source;  // The data root's path, or kBuiltinSource.
  // The case directory (empty for built-ins), as text: a catalog holds one per case, and a
  // std::filesystem::path costs an allocation per component.
  std::string dir;
  std::optional<MatMulModel> model;     // Set when the case is valid (built-ins: MatMul-13).
  std::vector<DataSetFiles> data_sets;  // Set when valid; built-ins have one without files.
  Status error;                         // Why it is invalid, when `model` is empty.
  // A case built in memory (the self-check's): makes data set `index`; empty for every other case.
  std::function<StatusOr<DataSet>(std::size_t index)> make_data_set;

  bool builtin() const { return source == kBuiltinSource; }
};

// Reads data set `index` of the valid case `entry`: its tensor files (checked against the model),
// the embedded example for a built-in, or what make_data_set makes. Errors name the file.
StatusOr<DataSet> LoadCaseDataSet(const CaseEntry& entry, std::size_t index);

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
  bool builtin = true;  // Append the built-in examples after the data roots.
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
