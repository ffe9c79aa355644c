#include "mm/backends/cmd/family_protocol.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mm/family/problem.h"
#include "protocol_internal.h"

namespace mm::runtime {
namespace {

using internal::Field;

constexpr DType kEightBit[] = {DType::kUInt8, DType::kInt8};
constexpr DType kScales[] = {DType::kFloat, DType::kFloat16, DType::kBFloat16};
constexpr family::Op kFamilyOps[] = {family::Op::kGemm, family::Op::kMatMulInteger,
                                     family::Op::kQLinearMatMul};

std::string VersionList(const std::vector<int>& versions) {
  std::string out;
  for (int v : versions) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

// The "versions" of an operator's entry: each one of the operator's, sorted; every version when
// the entry names none.
StatusOr<std::vector<int>> ParseVersions(family::Op op, const Field& entry) {
  const std::span<const int> all = family::OpVersions(op);
  MM_ASSIGN_OR_RETURN(std::optional<Field> field, entry.OptionalMember("versions"));
  if (!field) return std::vector<int>(all.begin(), all.end());
  MM_ASSIGN_OR_RETURN(std::vector<Field> elements, field->Elements());
  if (elements.empty()) return field->Error("no version: refuse the operator instead");
  std::vector<int> versions;
  for (const Field& element : elements) {
    MM_ASSIGN_OR_RETURN(std::int64_t version, element.Int(0, 1000));
    if (const Status known = family::CheckOpVersion(op, static_cast<int>(version)); !known.ok()) {
      return element.Error(known.message());
    }
    versions.push_back(static_cast<int>(version));
  }
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  return versions;
}

// The "types" of an operator's entry: per TypesKey, the arithmetic (Gemm: of its T, by MatMul's
// rules; the integer operators: int32, their exact accumulation) or a refusal.
StatusOr<std::map<std::string, DTypeDeclaration, std::less<>>> ParseTypes(family::Op op,
                                                                          const Field& entry) {
  const std::vector<family::OpDesc> all = AllTypes(op);
  MM_ASSIGN_OR_RETURN(Field field, entry.Member("types"));
  MM_ASSIGN_OR_RETURN(auto members, field.Members());
  std::map<std::string, DTypeDeclaration, std::less<>> types;
  for (const auto& [key, declaration] : members) {
    // clang 14 cannot capture a structured binding in a lambda (C++20, clang 16): named here.
    const std::string& name = key;
    const auto desc = std::find_if(all.begin(), all.end(),
                                   [&](const family::OpDesc& d) { return TypesKey(d) == name; });
    if (desc == all.end()) {
      return declaration.Error("no element types of " + std::string(family::OpName(op)) +
                               " are written so (written as: '" + TypesKey(all.front()) + "')");
    }
    const DType arithmetic_of = op == family::Op::kGemm ? desc->y_dtype : DType::kInt32;
    MM_ASSIGN_OR_RETURN(types[key], internal::ParseDeclaration(arithmetic_of, declaration));
  }
  return types;
}

StatusOr<OperatorDeclaration> ParseOperator(family::Op op, const Field& entry) {
  OperatorDeclaration declaration;
  MM_ASSIGN_OR_RETURN(std::optional<std::string> refused, internal::RefusalOf(entry));
  if (refused) {
    declaration.refused = *std::move(refused);
    return declaration;
  }
  MM_ASSIGN_OR_RETURN(declaration.versions, ParseVersions(op, entry));
  MM_ASSIGN_OR_RETURN(declaration.types, ParseTypes(op, entry));
  return declaration;
}

}  // namespace

Status internal::ParseOperators(const Field& root, Hello& hello) {
  for (family::Op op : kFamilyOps) {
    hello.operators[static_cast<std::size_t>(op)].refused =
        hello.protocol < 2 ? "the driver speaks runtime protocol 1, which carries MatMul only"
                           : "not declared in the driver's hello (it declares MatMul only)";
  }
  // Version 1 had no operators: whatever such a hello holds beside is ignored, as unknown fields.
  if (hello.protocol < 2) return OkStatus();
  MM_ASSIGN_OR_RETURN(std::optional<Field> operators, root.OptionalMember("operators"));
  if (!operators) return OkStatus();
  MM_ASSIGN_OR_RETURN(auto members, operators->Members());
  for (const auto& [name, entry] : members) {
    const StatusOr<family::Op> op = family::OpFromName(name);
    if (!op.ok() || *op == family::Op::kMatMul) {
      return entry.Error(
          "not an operator of MatMul's family beyond MatMul (Gemm, MatMulInteger, "
          "QLinearMatMul; MatMul is declared by \"dtypes\")");
    }
    MM_ASSIGN_OR_RETURN(hello.operators[static_cast<std::size_t>(*op)], ParseOperator(*op, entry));
  }
  return OkStatus();
}

std::string TypesKey(const family::OpDesc& desc) {
  const std::string text = desc.ToString();
  return text.substr(text.find(' ') + 1);
}

std::vector<family::OpDesc> AllTypes(family::Op op) {
  std::vector<family::OpDesc> all;
  const int newest = family::OpVersions(op).back();
  if (op == family::Op::kGemm) {
    for (DType t : kAllDTypes) all.push_back({op, newest, t, t, t});
  } else if (op == family::Op::kMatMulInteger) {
    for (DType a : kEightBit) {
      for (DType b : kEightBit) all.push_back({op, newest, a, b, DType::kInt32});
    }
  } else if (op == family::Op::kQLinearMatMul) {
    for (DType a : kEightBit) {
      for (DType b : kEightBit) {
        for (DType y : kEightBit) {
          for (DType s : kScales) all.push_back({op, newest, a, b, y, s});
        }
      }
    }
  }
  return all;
}

Support OperatorSupport(const Hello& hello, const family::OpDesc& desc) {
  if (desc.op == family::Op::kMatMul) {
    return Support::No("MatMul is declared per dtype, with its shapes");
  }
  const OperatorDeclaration& declared = hello.Of(desc.op);
  const std::string op(family::OpName(desc.op));
  if (!declared.refused.empty()) return Support::No(op + ": " + declared.refused);
  if (std::find(declared.versions.begin(), declared.versions.end(), desc.version) ==
      declared.versions.end()) {
    return Support::No(op + "-" + std::to_string(desc.version) + ": the driver computes versions " +
                       VersionList(declared.versions));
  }
  const auto types = declared.types.find(TypesKey(desc));
  if (types == declared.types.end()) {
    return Support::No(desc.ToString() + ": not declared in the driver's hello");
  }
  if (!types->second.supported) return Support::No(desc.ToString() + ": " + types->second.refused);
  if (!types->second.conversion.empty()) return Support::ByConversion(types->second.conversion);
  return Support::Native();
}

Arithmetic OperatorArithmetic(const Hello& hello, const family::OpDesc& desc) {
  if (desc.op != family::Op::kMatMul) {
    const auto& types = hello.Of(desc.op).types;
    const auto found = types.find(TypesKey(desc));
    if (found != types.end() && found->second.supported) return found->second.arithmetic;
  }
  return Arithmetic::OwnType(desc.y_dtype);
}

std::vector<NamedView> RequestInputs(const family::Plan& plan) {
  using family::Plan;
  using family::QuantParam;
  static constexpr std::pair<std::string_view, QuantParam Plan::*> kQuantInputs[] = {
      {"a_zero_point", &Plan::a_zero_point}, {"b_zero_point", &Plan::b_zero_point},
      {"a_scale", &Plan::a_scale},           {"b_scale", &Plan::b_scale},
      {"y_scale", &Plan::y_scale},           {"y_zero_point", &Plan::y_zero_point}};
  std::vector<NamedView> inputs;
  for (std::string_view name : family::InputNames(plan.op)) {
    if (name == "A" || name == "a") {
      inputs.push_back({name, plan.a});
    } else if (name == "B" || name == "b") {
      inputs.push_back({name, plan.b});
    } else if (name == "C") {
      if (plan.gemm.c_form != family::CForm::kAbsent) inputs.push_back({name, plan.gemm.c});
    } else {
      for (const auto& [quant_name, member] : kQuantInputs) {
        const QuantParam& param = plan.*member;
        if (quant_name == name && param.form != family::QuantForm::kAbsent) {
          inputs.push_back({name, param.tensor});
        }
      }
    }
  }
  return inputs;
}

namespace {

std::span<const std::byte> BytesOf(const TensorView& view) {
  return std::span(static_cast<const std::byte*>(view.data),
                   static_cast<std::size_t>(view.NumElements()) * DTypeSize(view.dtype));
}

// Gemm's attributes as planned; versions 1 and 6 also say whether C broadcasts.
nlohmann::json Attributes(const family::Plan& plan) {
  nlohmann::json attributes = nlohmann::json::object();
  if (plan.op != family::Op::kGemm) return attributes;
  attributes["transA"] = plan.gemm.trans_a ? 1 : 0;
  attributes["transB"] = plan.gemm.trans_b ? 1 : 0;
  // A float32 is a double exactly, and JSON's shortest round-trip form gives it back exactly.
  attributes["alpha"] = static_cast<double>(plan.gemm.alpha);
  attributes["beta"] = static_cast<double>(plan.gemm.beta);
  if (plan.version < 7) {
    attributes["broadcast"] = plan.gemm.c_form == family::CForm::kMByN ? 0 : 1;
  }
  return attributes;
}

}  // namespace

StatusOr<OperatorRequest> MakeOperatorRequest(std::uint64_t id, const family::Plan& plan) {
  if (plan.op == family::Op::kMatMul) {
    return InvalidArgumentError("MatMul is requested by a matmul request, not an operator one");
  }
  nlohmann::json inputs = nlohmann::json::array();
  std::uint64_t bytes =
      static_cast<std::uint64_t>(plan.product.y_elements) * DTypeSize(plan.y_dtype);
  for (const NamedView& input : RequestInputs(plan)) {
    inputs.push_back({{"name", input.name},
                      {"dtype", DTypeName(input.view.dtype)},
                      {"shape", Dims(input.view.dims.begin(), input.view.dims.end())}});
    bytes += BytesOf(input.view).size();
  }
  if (bytes > std::numeric_limits<std::uint32_t>::max()) {
    return OutOfRangeError("the inputs and Y of " + plan.ToString() + " are " +
                           std::to_string(bytes) +
                           " bytes; the runtime protocol carries at most 4 GiB per frame");
  }
  const nlohmann::json header = {
      {"type", "operator"},
      {"id", id},
      {"op", family::OpName(plan.op)},
      {"version", plan.version},
      {"inputs", std::move(inputs)},
      {"attributes", Attributes(plan)},
      {"y", {{"dtype", DTypeName(plan.y_dtype)}, {"shape", plan.y_dims()}}}};
  return OperatorRequest{internal::Frame(header, static_cast<std::uint32_t>(bytes)),
                         Expected{id, plan.y_dtype, plan.y_dims()}};
}

StatusOr<Reply> ExchangeOperator(ByteChannel& driver, const OperatorRequest& request,
                                 const family::Plan& plan, std::span<std::byte> y) {
  MM_RETURN_IF_ERROR(driver.Write(std::as_bytes(std::span(request.start))));
  for (const NamedView& input : RequestInputs(plan)) {
    MM_RETURN_IF_ERROR(driver.Write(BytesOf(input.view)));
  }
  MM_RETURN_IF_ERROR(driver.Write(y));
  return ReadReply(driver, request.expected, y);
}

}  // namespace mm::runtime
