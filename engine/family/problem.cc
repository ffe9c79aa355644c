#include "mm/family/problem.h"

#include <cstdio>

namespace mm::family {
namespace {

constexpr std::string_view kMatMulInputs[] = {"A", "B"};
constexpr std::string_view kGemmInputs[] = {"A", "B", "C"};
constexpr std::string_view kMatMulIntegerInputs[] = {"A", "B", "a_zero_point", "b_zero_point"};
constexpr std::string_view kQLinearMatMulInputs[] = {
    "a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};

}  // namespace

std::span<const std::string_view> InputNames(Op op) {
  switch (op) {
    case Op::kMatMul:
      return kMatMulInputs;
    case Op::kGemm:
      return kGemmInputs;
    case Op::kMatMulInteger:
      return kMatMulIntegerInputs;
    case Op::kQLinearMatMul:
      return kQLinearMatMulInputs;
  }
  return {};
}

Attribute Attribute::Float(std::string name, float value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kFloat;
  a.f = value;
  return a;
}

Attribute Attribute::Int(std::string name, std::int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInt;
  a.i = value;
  return a;
}

std::string Attribute::TypeName() const {
  switch (type) {
    case AttributeType::kFloat:
      return "FLOAT";
    case AttributeType::kInt:
      return "INT";
    case AttributeType::kString:
      return "STRING";
    case AttributeType::kOther:
      break;
  }
  return other_type.empty() ? "UNDEFINED" : other_type;
}

const NamedInput* Problem::FindInput(std::string_view name) const {
  for (const NamedInput& input : inputs) {
    if (input.name == name) return &input;
  }
  return nullptr;
}

const Attribute* Problem::FindAttribute(std::string_view name) const {
  for (const Attribute& attribute : attributes) {
    if (attribute.name == name) return &attribute;
  }
  return nullptr;
}

std::string Problem::ToString() const {
  std::string out = std::string(OpName(op)) + "-" + std::to_string(version);
  for (const NamedInput& input : inputs) {
    out += " " + input.name + " " + std::string(DTypeName(input.tensor.dtype)) +
           DimsToString(input.tensor.dims);
  }
  for (const Attribute& attribute : attributes) {
    out += " " + attribute.name + "=";
    if (attribute.type == AttributeType::kFloat) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.9g", static_cast<double>(attribute.f));
      out += buffer;
    } else if (attribute.type == AttributeType::kInt) {
      out += std::to_string(attribute.i);
    } else {
      out += "(" + attribute.TypeName() + ")";
    }
  }
  return out;
}

}  // namespace mm::family
