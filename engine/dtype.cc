#include "mm/engine/dtype.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

namespace mm {
namespace {

constexpr std::array<DTypeInfo, 10> kInfos = {{
    {DType::kFloat, "float", "tensor(float)", 1, 4, true, true},
    {DType::kDouble, "double", "tensor(double)", 11, 8, true, true},
    {DType::kFloat16, "float16", "tensor(float16)", 10, 2, true, true},
    {DType::kBFloat16, "bfloat16", "tensor(bfloat16)", 16, 2, true, true},
    {DType::kInt32, "int32", "tensor(int32)", 6, 4, false, true},
    {DType::kInt64, "int64", "tensor(int64)", 7, 8, false, true},
    {DType::kUInt32, "uint32", "tensor(uint32)", 12, 4, false, false},
    {DType::kUInt64, "uint64", "tensor(uint64)", 13, 8, false, false},
    {DType::kInt8, "int8", "tensor(int8)", 3, 1, false, true},
    {DType::kUInt8, "uint8", "tensor(uint8)", 2, 1, false, false},
}};

constexpr std::string_view kMatMulTakes =
    " (MatMul-13 takes float, double, float16, bfloat16, int32, int64, uint32, uint64)";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const DTypeInfo& GetDTypeInfo(DType dtype) { return kInfos[static_cast<std::size_t>(dtype)]; }

std::string OnnxDataTypeName(int onnx_enum) {
  // onnx.TensorProto.DataType, as of ONNX 1.12 plus the later 8-bit and 4-bit float types.
  static constexpr std::string_view kNames[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
  if (onnx_enum >= 0 && onnx_enum < static_cast<int>(std::size(kNames))) {
    return std::string(kNames[onnx_enum]);
  }
  return "UNKNOWN(" + std::to_string(onnx_enum) + ")";
}

StatusOr<DType> ElementTypeFromOnnxEnum(int onnx_enum) {
  for (const DTypeInfo& info : kInfos) {
    if (info.onnx_enum == onnx_enum) return info.dtype;
  }
  return InvalidArgumentError("element type " + OnnxDataTypeName(onnx_enum) + " (" +
                              std::to_string(onnx_enum) + ") is not an element type mm knows");
}

StatusOr<DType> DTypeFromOnnxEnum(int onnx_enum) {
  StatusOr<DType> dtype = ElementTypeFromOnnxEnum(onnx_enum);
  if (dtype.ok() && IsMatMulDType(*dtype)) return dtype;
  return InvalidArgumentError("element type " + OnnxDataTypeName(onnx_enum) + " (" +
                              std::to_string(onnx_enum) + ") is not a MatMul dtype");
}

StatusOr<DType> ElementTypeFromName(std::string_view name) {
  std::string key = Lower(name);
  if (key.starts_with("tensor(") && key.ends_with(")")) key = key.substr(7, key.size() - 8);
  if (key == "float32" || key == "f32" || key == "fp32") return DType::kFloat;
  if (key == "float64" || key == "f64" || key == "fp64") return DType::kDouble;
  if (key == "f16" || key == "fp16" || key == "half") return DType::kFloat16;
  if (key == "bf16") return DType::kBFloat16;
  for (const DTypeInfo& info : kInfos) {
    if (info.name == key) return info.dtype;
  }
  return InvalidArgumentError("unknown element type '" + std::string(name) +
                              "' (expected one of float, double, float16, bfloat16, int32, int64, "
                              "uint32, uint64, int8, uint8)");
}

Status CheckMatMulDType(DType dtype) {
  if (IsMatMulDType(dtype)) return OkStatus();
  return InvalidArgumentError(std::string(DTypeName(dtype)) + " is not a MatMul dtype" +
                              std::string(kMatMulTakes));
}

StatusOr<DType> DTypeFromName(std::string_view name) {
  StatusOr<DType> dtype = ElementTypeFromName(name);
  if (dtype.ok() && !IsMatMulDType(*dtype)) {
    return InvalidArgumentError("'" + std::string(name) + "' is not a MatMul dtype" +
                                std::string(kMatMulTakes));
  }
  if (dtype.ok()) return dtype;
  return InvalidArgumentError("unknown dtype '" + std::string(name) +
                              "' (expected one of float, double, float16, bfloat16, int32, int64, "
                              "uint32, uint64)");
}

float RoundToOddFloat(double value) {
  // Beyond the float range the cast is undefined; FLT_MAX with its odd last bit is the round-to-odd
  // answer there, and it still rounds to infinity in both 16-bit formats.
  if (std::fabs(value) > std::numeric_limits<float>::max() && std::isfinite(value)) {
    return std::copysign(std::numeric_limits<float>::max(),
                         static_cast<float>(std::signbit(value) ? -1 : 1));
  }
  float nearest = static_cast<float>(value);
  if (!std::isfinite(value) || static_cast<double>(nearest) == value) return nearest;
  // Inexact: take the float below |value| (truncation) and, if its last bit is even, the next one
  // away from zero, which is odd. Both neighbours of an inexact value bracket it, so the result
  // carries a sticky 1 that keeps the next rounding honest.
  float truncated = nearest;
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value)) {
    truncated = std::nextafter(nearest, 0.0f);
  }
  if ((std::bit_cast<std::uint32_t>(truncated) & 1u) == 0) {
    truncated = std::nextafter(truncated, std::copysign(INFINITY, truncated));
  }
  return truncated;
}

float16 RoundToFloat16(double value) { return float16(value); }
bfloat16 RoundToBFloat16(double value) { return bfloat16(value); }

}  // namespace mm
