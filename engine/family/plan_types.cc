// The element types each operator's versions take (onnx/onnx v1.22.0, docs/Operators.md and
// docs/Changelog.md: the type constraints of every version).
#include <algorithm>
#include <string>

#include "plan_internal.h"

namespace mm::family::internal {
namespace {

constexpr DType kFloats[] = {DType::kFloat16, DType::kFloat, DType::kDouble};
constexpr DType kFloatsAndInts[] = {DType::kFloat16, DType::kFloat, DType::kDouble, DType::kUInt32,
                                    DType::kUInt64,  DType::kInt32, DType::kInt64};
constexpr DType kMatMul13[] = {DType::kFloat16, DType::kFloat, DType::kDouble, DType::kUInt32,
                               DType::kUInt64,  DType::kInt32, DType::kInt64,  DType::kBFloat16};
constexpr DType kEightBit[] = {DType::kInt8, DType::kUInt8};
constexpr DType kScale10[] = {DType::kFloat};
constexpr DType kScale21[] = {DType::kFloat, DType::kFloat16, DType::kBFloat16};

// onnx.TensorProto.DataType values of the float8 types QLinearMatMul-21 adds.
constexpr int kFloat8Enums[] = {17, 18, 19, 20};

}  // namespace

std::span<const DType> DataTypes(Op op, int version) {
  switch (op) {
    case Op::kMatMul:
      return version >= 13  ? std::span<const DType>(kMatMul13)
             : version >= 9 ? std::span<const DType>(kFloatsAndInts)
                            : std::span<const DType>(kFloats);
    case Op::kGemm:
      return version >= 13  ? std::span<const DType>(kMatMul13)
             : version >= 9 ? std::span<const DType>(kFloatsAndInts)
                            : std::span<const DType>(kFloats);
    case Op::kMatMulInteger:
    case Op::kQLinearMatMul:
      return kEightBit;
  }
  return {};
}

std::span<const DType> ScaleTypes(int version) {
  return version >= 21 ? std::span<const DType>(kScale21) : std::span<const DType>(kScale10);
}

std::string TypeList(std::span<const DType> types) {
  std::string out;
  for (DType t : types) out += (out.empty() ? "" : ", ") + std::string(DTypeName(t));
  return out;
}

bool Contains(std::span<const DType> types, DType dtype) {
  return std::find(types.begin(), types.end(), dtype) != types.end();
}

bool IsScaleInput(Op op, std::string_view input) {
  return op == Op::kQLinearMatMul && input.ends_with("_scale");
}

}  // namespace mm::family::internal

namespace mm::family {

StatusOr<DType> InputElementType(Op op, int version, std::string_view input, int onnx_enum) {
  MM_RETURN_IF_ERROR(CheckOpVersion(op, version));
  const std::string where = std::string(input) + ": ";
  const std::string named = OnnxDataTypeName(onnx_enum) + " (" + std::to_string(onnx_enum) + ")";
  const std::string op_version = std::string(OpName(op)) + "-" + std::to_string(version);
  const bool scale = internal::IsScaleInput(op, input);
  if (op == Op::kQLinearMatMul && version >= 21 && !scale &&
      std::find(std::begin(internal::kFloat8Enums), std::end(internal::kFloat8Enums), onnx_enum) !=
          std::end(internal::kFloat8Enums)) {
    return UnimplementedError(where + named + " is a " + op_version +
                              " type mm does not judge: mm has no float8 element type");
  }
  const std::span<const DType> allowed =
      scale ? internal::ScaleTypes(version) : internal::DataTypes(op, version);
  StatusOr<DType> dtype = ElementTypeFromOnnxEnum(onnx_enum);
  if (!dtype.ok() || !internal::Contains(allowed, *dtype)) {
    return InvalidArgumentError(where + named + " is not a type of " + op_version + " (" +
                                internal::TypeList(allowed) + ")");
  }
  return dtype;
}

}  // namespace mm::family
