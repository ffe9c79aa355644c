#include "mm/conformance/loader/matmul_case.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <system_error>

#include "mm/conformance/loader/tensor_proto.h"
#include "mm/engine/io/paths.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;

std::string DTypeList(const std::vector<DType>& dtypes) {
  std::string out;
  for (DType d : dtypes) {
    if (!out.empty()) out += ", ";
    out += DTypeName(d);
  }
  return out;
}

std::string DeclaredShapeString(const DeclaredTensor& t) {
  if (!t.has_shape) return "(no shape)";
  std::string out = "[";
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    if (i) out += ",";
    out += t.dims[i] ? std::to_string(*t.dims[i]) : "?";
  }
  return out + "]";
}

}  // namespace

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

StatusOr<DeclaredTensor> DeclareTensor(const onnx::ValueInfoProto& info, std::string_view role,
                                       bool family_types) {
  DeclaredTensor out;
  out.name = info.name();
  const std::string what = std::string(role) + " '" + info.name() + "'";
  if (!info.has_type() || !info.type().has_tensor_type()) {
    return InvalidArgumentError(what + " does not declare a tensor type");
  }
  const auto& tensor_type = info.type().tensor_type();
  if (!tensor_type.has_elem_type() || tensor_type.elem_type() == onnx::TensorProto::UNDEFINED) {
    return InvalidArgumentError(what + " declares no element type (UNDEFINED)");
  }
  auto dtype = family_types ? ElementTypeFromOnnxEnum(tensor_type.elem_type())
                            : DTypeFromOnnxEnum(tensor_type.elem_type());
  if (!dtype.ok()) return dtype.status().WithContext(what);
  out.dtype = *dtype;
  if (tensor_type.has_shape()) {
    out.has_shape = true;
    for (const auto& dim : tensor_type.shape().dim()) {
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) {
          return InvalidArgumentError(what + " declares a negative dim " +
                                      std::to_string(dim.dim_value()));
        }
        out.dims.emplace_back(dim.dim_value());
      } else {
        out.dims.emplace_back(std::nullopt);  // dim_param or unknown: matches any extent.
      }
    }
  }
  return out;
}

namespace {

StatusOr<DeclaredTensor> Declare(const onnx::ValueInfoProto& info, std::string_view role,
                                 const MatMulModel& model) {
  MM_ASSIGN_OR_RETURN(DeclaredTensor out, DeclareTensor(info, role, false));
  const std::string what = std::string(role) + " '" + info.name() + "'";
  if (std::find(model.allowed_dtypes.begin(), model.allowed_dtypes.end(), out.dtype) ==
      model.allowed_dtypes.end()) {
    return InvalidArgumentError(what + " has dtype " + std::string(DTypeName(out.dtype)) +
                                ", which MatMul-" + std::to_string(model.matmul_version) +
                                " (selected by opset " + std::to_string(model.opset) +
                                ") does not allow; allowed: " + DTypeList(model.allowed_dtypes));
  }
  return out;
}

}  // namespace

Status CheckAgainstDeclared(const Tensor& tensor, const DeclaredTensor& declared) {
  if (tensor.dtype() != declared.dtype) {
    return InvalidArgumentError("dtype " + std::string(DTypeName(tensor.dtype())) +
                                " disagrees with the model, which declares '" + declared.name +
                                "' as " + std::string(DTypeName(declared.dtype)));
  }
  if (!declared.has_shape) return OkStatus();
  bool match = tensor.dims().size() == declared.dims.size();
  for (std::size_t i = 0; match && i < declared.dims.size(); ++i) {
    match = !declared.dims[i] || *declared.dims[i] == tensor.dims()[i];
  }
  if (!match) {
    return InvalidArgumentError("shape " + DimsToString(tensor.dims()) +
                                " disagrees with the model, which declares '" + declared.name +
                                "' as " + DeclaredShapeString(declared));
  }
  return OkStatus();
}

namespace {

// "input_12.pb" -> ("input", 12). Anything else -> nullopt.
std::optional<std::pair<std::string, int>> ParseTensorFileName(const std::string& file) {
  for (const char* prefix : {"input_", "output_"}) {
    const std::string p = prefix;
    if (file.size() > p.size() + 3 && file.compare(0, p.size(), p) == 0 &&
        file.compare(file.size() - 3, 3, ".pb") == 0) {
      const std::string digits = file.substr(p.size(), file.size() - p.size() - 3);
      int index = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::pair{p.substr(0, p.size() - 1), index};
      }
    }
  }
  return std::nullopt;
}

std::optional<int> DataSetIndex(const std::string& dir_name) {
  static constexpr std::string_view kPrefix = "test_data_set_";
  if (dir_name.size() <= kPrefix.size() || dir_name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return std::nullopt;
  }
  const std::string digits = dir_name.substr(kPrefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int index = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return index;
}

StatusOr<Tensor> LoadChecked(const fs::path& file, const DeclaredTensor& declared) {
  MM_ASSIGN_OR_RETURN(NamedTensor loaded, LoadTensorFile(file));
  Status status = CheckAgainstDeclared(loaded.tensor, declared);
  if (!status.ok()) return status.WithContext(file.string());
  return std::move(loaded.tensor);
}

}  // namespace

namespace {

// Why a model is not a MatMul case (a skip reason), "" when its graph is one MatMul node; an
// error when it is a MatMul node ONNX would refuse.
StatusOr<std::string> NotAMatMulCase(const onnx::ModelProto& model) {
  if (!model.has_graph()) return std::string("model has no graph");
  const auto& graph = model.graph();
  if (graph.node_size() != 1) {
    return "graph has " + std::to_string(graph.node_size()) +
           " nodes; a MatMul case has exactly one MatMul node";
  }
  const auto& node = graph.node(0);
  if (node.op_type() != "MatMul") {
    std::string reason = "not a MatMul case: op " + node.op_type();
    if (!node.domain().empty()) reason += " (domain " + node.domain() + ")";
    return reason;
  }
  if (!IsDefaultDomain(node.domain())) {
    return InvalidArgumentError("MatMul node is in domain '" + node.domain() +
                                "', not the default ONNX domain; its semantics are not ONNX's");
  }
  if (node.input_size() != 2) {
    return InvalidArgumentError("MatMul node has " + std::to_string(node.input_size()) +
                                " inputs; MatMul takes exactly 2 (A, B)");
  }
  if (node.output_size() != 1) {
    return InvalidArgumentError("MatMul node has " + std::to_string(node.output_size()) +
                                " outputs; MatMul produces exactly 1 (Y)");
  }
  return std::string();
}

// The opset the model imports for the default domain, the MatMul version it selects and that
// version's dtypes, into `out`.
Status ReadOpset(const onnx::ModelProto& model, MatMulModel& out) {
  bool found_opset = false;
  for (const auto& import : model.opset_import()) {
    if (IsDefaultDomain(import.domain())) {
      out.opset = static_cast<int>(import.version());
      found_opset = true;
    }
  }
  if (!found_opset) {
    return InvalidArgumentError(
        "model has no opset import for the default ONNX domain; the opset decides the MatMul "
        "version and so the allowed dtypes");
  }
  if (out.opset < 1) {
    return InvalidArgumentError("model imports opset " + std::to_string(out.opset) +
                                " of the default domain; opsets start at 1");
  }
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema("MatMul", out.opset, "");
  if (schema == nullptr) {
    return InvalidArgumentError("ONNX's schema registry has no MatMul for opset " +
                                std::to_string(out.opset));
  }
  out.matmul_version = schema->since_version();
  for (const auto& constraint : schema->typeConstraintParams()) {
    if (constraint.type_param_str != "T") continue;
    for (const std::string& type : constraint.allowed_type_strs) {
      auto dtype = DTypeFromName(type);
      if (dtype.ok()) out.allowed_dtypes.push_back(*dtype);
    }
  }
  if (out.allowed_dtypes.empty()) {
    return InternalError("ONNX's MatMul-" + std::to_string(out.matmul_version) +
                         " schema lists no dtype mm knows");
  }
  return OkStatus();
}

// The node's inputs must be exactly the graph's inputs, each fed by one input_K.pb: their
// positions among the graph's inputs, into `out`.
Status ReadInputs(const onnx::GraphProto& graph, MatMulModel& out) {
  const auto& node = graph.node(0);
  std::map<std::string, int> graph_inputs;
  for (int i = 0; i < graph.input_size(); ++i) {
    if (!graph_inputs.emplace(graph.input(i).name(), i).second) {
      return InvalidArgumentError("graph declares input '" + graph.input(i).name() + "' twice");
    }
  }
  for (const auto& init : graph.initializer()) {
    if (graph_inputs.count(init.name()) || init.name() == node.input(0) ||
        init.name() == node.input(1)) {
      return InvalidArgumentError("input '" + init.name() +
                                  "' comes from an initializer; a node test feeds every input "
                                  "from input_K.pb");
    }
  }
  int* indices[] = {&out.a_input_index, &out.b_input_index};
  for (int k = 0; k < 2; ++k) {
    auto it = graph_inputs.find(node.input(k));
    if (node.input(k).empty() || it == graph_inputs.end()) {
      return InvalidArgumentError("MatMul input " + std::string(k == 0 ? "A" : "B") + " '" +
                                  node.input(k) +
                                  "' is not a graph input (undefined input reference)");
    }
    *indices[k] = it->second;
  }
  for (const auto& [name, index] : graph_inputs) {
    if (name != node.input(0) && name != node.input(1)) {
      return InvalidArgumentError("graph input '" + name +
                                  "' is not used by the MatMul node (extra input)");
    }
  }
  return OkStatus();
}

// The graph's one output is the node's; A, B and Y declared with one type T, into `out`.
Status ReadDeclarations(const onnx::GraphProto& graph, MatMulModel& out) {
  if (graph.output_size() != 1) {
    return InvalidArgumentError("graph has " + std::to_string(graph.output_size()) +
                                " outputs; a MatMul case has exactly 1");
  }
  if (graph.output(0).name() != graph.node(0).output(0)) {
    return InvalidArgumentError("graph output '" + graph.output(0).name() +
                                "' is not the MatMul node's output '" + graph.node(0).output(0) +
                                "'");
  }
  MM_ASSIGN_OR_RETURN(out.a, Declare(graph.input(out.a_input_index), "input", out));
  MM_ASSIGN_OR_RETURN(out.b, Declare(graph.input(out.b_input_index), "input", out));
  MM_ASSIGN_OR_RETURN(out.y, Declare(graph.output(0), "output", out));
  if (out.a.dtype != out.b.dtype || out.a.dtype != out.y.dtype) {
    return InvalidArgumentError("MatMul's A, B and Y share one type T, but the model declares " +
                                std::string(DTypeName(out.a.dtype)) + ", " +
                                std::string(DTypeName(out.b.dtype)) + " and " +
                                std::string(DTypeName(out.y.dtype)));
  }
  return OkStatus();
}

}  // namespace

StatusOr<ModelKind> ClassifyModel(const onnx::ModelProto& model) {
  ModelKind kind;
  MM_ASSIGN_OR_RETURN(kind.skip_reason, NotAMatMulCase(model));
  if (!kind.skip_reason.empty()) return kind;
  MatMulModel out;
  MM_RETURN_IF_ERROR(ReadOpset(model, out));
  MM_RETURN_IF_ERROR(ReadInputs(model.graph(), out));
  MM_RETURN_IF_ERROR(ReadDeclarations(model.graph(), out));
  kind.matmul = std::move(out);
  return kind;
}

StatusOr<ModelKind> ClassifyCaseDir(const std::filesystem::path& case_dir) {
  const fs::path model_path = case_dir / "model.onnx";
  MM_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModelFile(model_path));
  auto kind = ClassifyModel(model);
  if (!kind.ok()) return kind.status().WithContext(model_path.string());
  return kind;
}

StatusOr<std::vector<ListedDataSet>> ListDataSetFolders(const std::filesystem::path& case_dir,
                                                        int num_inputs,
                                                        const std::filesystem::path& data_root) {
  // A link is resolved and checked only when met (the listing's d_type says so for free).
  const fs::path& root = data_root.empty() ? case_dir : data_root;
  auto leads_outside = [&root](const fs::directory_entry& entry) {
    std::error_code type_ec;
    return entry.is_symlink(type_ec) ? io::RootDir(root).Check(entry.path(), "the data root")
                                     : OkStatus();
  };
  std::error_code ec;
  std::vector<std::pair<int, fs::path>> set_dirs;
  for (const auto& entry : fs::directory_iterator(case_dir, ec)) {
    std::error_code type_ec;
    if (!entry.is_directory(type_ec)) continue;
    MM_RETURN_IF_ERROR(leads_outside(entry));
    if (auto index = DataSetIndex(entry.path().filename().string())) {
      set_dirs.emplace_back(*index, entry.path());
    }
  }
  if (ec) return DataLossError(case_dir.string() + ": cannot list: " + ec.message());
  if (set_dirs.empty()) {
    return InvalidArgumentError(case_dir.string() +
                                ": no test_data_set_N folder; a case needs at least one data set");
  }
  std::sort(set_dirs.begin(), set_dirs.end());

  std::vector<ListedDataSet> sets;
  for (const auto& [index, dir] : set_dirs) {
    std::map<int, fs::path> inputs, outputs;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string file = entry.path().filename().string();
      auto parsed = ParseTensorFileName(file);
      if (!parsed) continue;
      MM_RETURN_IF_ERROR(leads_outside(entry));
      auto& bucket = parsed->first == "input" ? inputs : outputs;
      const int limit = parsed->first == "input" ? num_inputs : 1;
      if (parsed->second >= limit) {
        return InvalidArgumentError(entry.path().string() + ": extra " + parsed->first +
                                    "; the model has " + std::to_string(limit) + " " +
                                    parsed->first + (limit == 1 ? "" : "s"));
      }
      bucket[parsed->second] = entry.path();
    }
    if (ec) return DataLossError(dir.string() + ": cannot list: " + ec.message());
    ListedDataSet set{dir.filename().string(), {}, {}};
    for (int k = 0; k < num_inputs; ++k) {
      if (!inputs.count(k)) {
        return InvalidArgumentError(dir.string() + ": missing input_" + std::to_string(k) +
                                    ".pb (the model has " + std::to_string(num_inputs) +
                                    " inputs)");
      }
      set.inputs.push_back(inputs[k].string());
    }
    if (!outputs.count(0)) {
      return InvalidArgumentError(dir.string() + ": missing output_0.pb (the expected Y)");
    }
    set.output = outputs[0].string();
    sets.push_back(std::move(set));
  }
  return sets;
}

StatusOr<std::vector<DataSetFiles>> ListDataSets(const std::filesystem::path& case_dir,
                                                 const MatMulModel& model,
                                                 const std::filesystem::path& data_root) {
  const int num_inputs = std::max(model.a_input_index, model.b_input_index) + 1;
  MM_ASSIGN_OR_RETURN(std::vector<ListedDataSet> listed,
                      ListDataSetFolders(case_dir, num_inputs, data_root));
  std::vector<DataSetFiles> sets;
  sets.reserve(listed.size());
  for (ListedDataSet& set : listed) {
    sets.push_back({std::move(set.name), std::move(set.inputs[model.a_input_index]),
                    std::move(set.inputs[model.b_input_index]), std::move(set.output)});
  }
  return sets;
}

StatusOr<DataSet> LoadDataSet(const DataSetFiles& files, const MatMulModel& model) {
  DataSet set;
  set.name = files.name;
  MM_ASSIGN_OR_RETURN(set.a, LoadChecked(files.a, model.a));
  MM_ASSIGN_OR_RETURN(set.b, LoadChecked(files.b, model.b));
  MM_ASSIGN_OR_RETURN(set.y, LoadChecked(files.y, model.y));
  return set;
}

StatusOr<MatMulCase> LoadMatMulCase(const std::filesystem::path& case_dir, std::string name,
                                    const MatMulModel& model) {
  MatMulCase out;
  out.name = std::move(name);
  out.opset = model.opset;
  out.matmul_version = model.matmul_version;
  out.dtype = model.a.dtype;
  MM_ASSIGN_OR_RETURN(std::vector<DataSetFiles> sets, ListDataSets(case_dir, model));
  for (const DataSetFiles& files : sets) {
    MM_ASSIGN_OR_RETURN(DataSet set, LoadDataSet(files, model));
    out.data_sets.push_back(std::move(set));
  }
  return out;
}

std::string LoaderVersions() {
  const int v = GOOGLE_PROTOBUF_VERSION;
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = ranges.find("");
  return "protobuf " + std::to_string(v / 1000000) + "." + std::to_string(v / 1000 % 1000) + "." +
         std::to_string(v % 1000) + ", ONNX schemas up to opset " +
         (it == ranges.end() ? std::string("?") : std::to_string(it->second.second));
}

}  // namespace mm::conformance
