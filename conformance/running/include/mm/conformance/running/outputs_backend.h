// Judging a runtime that cannot be loaded as a plugin (another language, a GPU or web runtime, a
// remote device) from the outputs it wrote: an outputs tree mirroring the cases,
//   <root>/<case>/test_data_set_N/output_0.pb   (a serialized onnx.TensorProto, Y of data set N)
// (a built-in case's one data set is test_data_set_0, as `mm-fuzz export-builtin` writes it), and
// optionally <root>/mm_outputs.json, the runtime's manifest:
//   {"runtime": "what ran (free text)",
//    "records": [{"case": NAME, "data_set": "test_data_set_N",
//                 "status": "error" | "unsupported", "message": "what the runtime said"}]}
// A record stands for a data set the runtime wrote no output for: "error" is an ERROR (the runtime
// failed), "unsupported" an UNSUPPORTED (the runtime refused the dtype or shape, by its own word).
// The tree is judged as a backend of the user's name, like any other: a missing, malformed, wrongly
// typed or shaped output is an ERROR naming the file, and a file or record that belongs to no case
// and data set of the run is an ERROR naming it (ExtraOutputResults). Symbolic links inside the
// tree are followed only when they lead inside it: an output reached through a link leading out
// is an ERROR naming the link's path and where it leads.
#ifndef MM_CONFORMANCE_RUNNING_OUTPUTS_BACKEND_H_
#define MM_CONFORMANCE_RUNNING_OUTPUTS_BACKEND_H_

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/arithmetic.h"
#include "mm/engine/dtype.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// The manifest's file name, directly under the outputs root.
inline constexpr std::string_view kOutputsManifest = "mm_outputs.json";
// The one file a data set folder of an outputs tree holds.
inline constexpr std::string_view kOutputFile = "output_0.pb";

// What the user declared for one outputs tree (mm-conformance --outputs NAME=DIR and
// --outputs-arithmetic NAME=SPEC).
struct OutputsSpec {
  std::string name;           // The backend name it is judged as.
  std::filesystem::path dir;  // The outputs root.
  // Declared arithmetic per float dtype; a dtype absent accumulates in itself and flushes nothing
  // (the loosest bound that is still a correct implementation's).
  std::map<DType, Arithmetic> arithmetic;
};

// Splits "NAME=VALUE" (both non-empty); the error quotes `text` and names `option`.
StatusOr<std::pair<std::string, std::string>> SplitNameValue(std::string_view text,
                                                             std::string_view option);

// Parses an arithmetic declaration into `arithmetic`: comma-separated items, each "ACC" (every
// float dtype narrower than ACC accumulates in ACC, the others in themselves: "float32" is
// float16 and bfloat16 in float32, float in float32, double in double) or "DTYPE:ACC" (that float
// dtype in ACC), either ending in "+flush" to declare what plugin ABI v2's flushes_subnormals does
// for the dtypes of the item: subnormal inputs may be read as zero and subnormal partial sums
// flushed to zero ("bfloat16:float32+flush", an AVX512-BF16 dot product). Later items override
// earlier ones. Dtype names as DTypeFromName takes them; only float dtypes. INVALID_ARGUMENT
// quoting the bad item.
Status ParseArithmeticSpec(std::string_view text, std::map<DType, Arithmetic>& arithmetic);

// The runtime's manifest; empty (no records) when the tree has none.
struct OutputsManifest {
  enum class Kind { kError, kUnsupported };
  struct Record {
    Kind kind = Kind::kError;
    std::string message;
  };
  std::string runtime;  // Free text: what produced the outputs.
  // By (case, data set folder).
  std::map<std::pair<std::string, std::string>, Record> records;
};

// An outputs tree, checked and with its manifest read.
struct OutputsTree {
  OutputsSpec spec;
  OutputsManifest manifest;
};

// Parses the text of a manifest (never throws); `source` names it in messages. INVALID_ARGUMENT
// naming the source and the field for: invalid JSON (with its byte offset), nesting deeper than
// io::kMaxJsonDepth, a value of the wrong type, an unknown key or status, a record twice.
StatusOr<OutputsManifest> ParseOutputsManifest(std::string_view text, std::string_view source);

// Checks spec.name (io::CheckName: [A-Za-z0-9_-], at most 64 characters, as plugin names), that
// spec.dir is a directory, and reads its manifest by io::ReadInputFile's rules
// (io::kOutputsManifestFile: a regular file, no FIFO or device, at most 256 MiB; a link leading
// outside the tree is refused). Errors name the option, the directory or the manifest and what is
// wrong with it.
StatusOr<OutputsTree> LoadOutputsTree(OutputsSpec spec);

// The data set folder of an outputs tree that holds the output of data set `data_set` of a case
// from `source`: the data set's own name; test_data_set_0 for a built-in example ("example").
std::string OutputsDataSetDir(std::string_view source, std::string_view data_set);

// The backend an outputs tree is judged as. Computes nothing: Prepare is UNIMPLEMENTED.
class OutputsBackend final : public RecordedBackend {
 public:
  explicit OutputsBackend(std::shared_ptr<const OutputsTree> tree) : tree_(std::move(tree)) {}

  std::string_view name() const override { return tree_->spec.name; }
  // Always native: what the runtime did with a dtype is known only per data set (Recorded).
  Support Supports(const MatMulDesc&) const override { return Support::Native(); }
  // "outputs written by NAME under DIR" and the manifest's runtime, when it names one.
  std::string RunsOn() const override;
  StatusOr<std::optional<Tensor>> Recorded(const Result& about, const MatMulPlan& plan,
                                           Support& support,
                                           std::string& implementation) const override;
  Arithmetic DeclaredArithmetic(DType dtype) const override;

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  std::shared_ptr<const OutputsTree> tree_;
};

// Registers `tree` in `registry` as backend tree.spec.name, described as "outputs written by NAME
// under DIR"; ALREADY_EXISTS when the name is taken.
Status RegisterOutputsBackend(BackendRegistry& registry, const OutputsTree& tree);

// The vs_reference of an extra output's result: what tells it from the results of the selection.
inline constexpr std::string_view kExtraOutputReference = "n/a (extra output)";

// One ERROR result (backend tree.spec.name) per file under the tree, and per manifest record, that
// no data set of `catalog` reads: a case folder of no case (when `selected` accepts its name: a
// case left out by --case, --filter or --exclude is not looked at), a data set folder the case does
// not have, anything else beside output_0.pb. Each message names the file or record. Only entries
// whose case name is in `shard`; each carries its case's catalog index, or, for a name the catalog
// does not have, one past the catalog's last case in name order, so shard reports merge in the
// unsharded order. Files of invalid cases are not looked at (the case is an ERROR itself). A case
// or data set folder that is a symbolic link leading outside the tree is never walked (its data
// sets are ERRORs saying so where they are read); any other link is one extra file, never
// followed.
std::vector<Result> ExtraOutputResults(const OutputsTree& tree, const Catalog& catalog,
                                       const std::function<bool(const std::string&)>& selected,
                                       const Shard& shard);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNING_OUTPUTS_BACKEND_H_
