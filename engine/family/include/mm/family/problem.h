// A problem of any operator of MatMul's family, as an ONNX node states it: the operator and its
// version, the inputs by their ONNX names, and the attributes with their ONNX types. Nothing here
// is checked; PlanProblem (plan.h) checks everything and says what is wrong, naming the input.
#ifndef MM_FAMILY_PROBLEM_H_
#define MM_FAMILY_PROBLEM_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/tensor.h"
#include "mm/family/op.h"

namespace mm::family {

// The input names of each operator, in ONNX's order (its node's input list):
//   MatMul         A, B
//   Gemm           A, B, C (C optional from version 11)
//   MatMulInteger  A, B, a_zero_point, b_zero_point (both zero points optional)
//   QLinearMatMul  a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
std::span<const std::string_view> InputNames(Op op);

// The type of an attribute, as onnx.AttributeProto.AttributeType names it (the kinds Gemm's
// attributes may be given as; the rest is kOther, named by `other_type`).
enum class AttributeType : std::uint8_t { kFloat, kInt, kString, kOther };

// One attribute of the node: its name, its ONNX type and its value in that type.
struct Attribute {
  std::string name;
  AttributeType type = AttributeType::kFloat;
  float f = 0;             // kFloat (AttributeProto.f is a float32).
  std::int64_t i = 0;      // kInt.
  std::string s;           // kString.
  std::string other_type;  // kOther: the AttributeProto type name ("FLOATS", "TENSOR").

  static Attribute Float(std::string name, float value);
  static Attribute Int(std::string name, std::int64_t value);
  // "FLOAT", "INT", "STRING" or other_type.
  std::string TypeName() const;
};

// One input of the node, by its ONNX name. The view's data must outlive every plan made of it.
struct NamedInput {
  std::string name;
  TensorView tensor;
};

// A problem: the operator at one version, its inputs (an absent optional input is simply not
// listed; ONNX's empty name for a skipped input is the same thing) and its attributes.
struct Problem {
  Op op = Op::kMatMul;
  int version = 13;
  std::vector<NamedInput> inputs;
  std::vector<Attribute> attributes;

  // The input named `name`, or null when absent.
  const NamedInput* FindInput(std::string_view name) const;
  // The attribute named `name`, or null when absent.
  const Attribute* FindAttribute(std::string_view name) const;
  // "Gemm-13 A [3,5] B [5,4] C [1,4] alpha=0.5 transB=1".
  std::string ToString() const;
};

}  // namespace mm::family

#endif  // MM_FAMILY_PROBLEM_H_
