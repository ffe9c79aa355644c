// The element types of ONNX MatMul-13, their ONNX names and enum values, their C++ types, and the
// one correctly rounded conversion from double that every float backend and the oracle share.
#ifndef MM_ENGINE_DTYPE_H_
#define MM_ENGINE_DTYPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "mm/engine/float16.h"
#include "mm/engine/status.h"

namespace mm {

// The 8 MatMul-13 element types.
enum class DType : std::uint8_t {
  kFloat,
  kDouble,
  kFloat16,
  kBFloat16,
  kInt32,
  kInt64,
  kUInt32,
  kUInt64,
};

// Every DType, in declaration order, for iteration and parameterised tests.
inline constexpr std::array<DType, 8> kAllDTypes = {
    DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
    DType::kInt32, DType::kInt64,  DType::kUInt32,  DType::kUInt64};

// C++ storage types: float, double, the integer types, and mm's float16 and bfloat16
// (mm/engine/float16.h), which round to nearest even.

// Static facts about one DType.
struct DTypeInfo {
  DType dtype;
  std::string_view name;  // Short name used in reports and benchmark names: "float", "float16".
  std::string_view onnx_name;  // ONNX type string: "tensor(float)".
  int onnx_enum;               // onnx.TensorProto.DataType value: FLOAT = 1, ...
  std::size_t size;            // Bytes per element.
  bool is_float;               // True for the 4 floating-point types.
  bool is_signed;              // True for floats and signed integers.
};

// Returns the facts about `dtype`.
const DTypeInfo& GetDTypeInfo(DType dtype);
// Short name, e.g. "bfloat16".
inline std::string_view DTypeName(DType dtype) { return GetDTypeInfo(dtype).name; }
inline std::size_t DTypeSize(DType dtype) { return GetDTypeInfo(dtype).size; }
inline bool IsFloat(DType dtype) { return GetDTypeInfo(dtype).is_float; }

// Maps an onnx.TensorProto.DataType value to a DType; NOT_FOUND-style INVALID_ARGUMENT error naming
// the ONNX type for values that are not MatMul types (e.g. "INT8 (3) is not a MatMul dtype").
StatusOr<DType> DTypeFromOnnxEnum(int onnx_enum);
// Parses a short name ("float", "float32", "fp16", "bf16", "int32", ...) or an ONNX type string.
StatusOr<DType> DTypeFromName(std::string_view name);
// Name of any onnx.TensorProto.DataType value, for error messages ("INT8", "STRING";
// "UNKNOWN(42)").
std::string OnnxDataTypeName(int onnx_enum);

// Maps a DType to its C++ storage type: CppType<DType::kFloat16> is mm::float16.
template <DType D>
struct DTypeTraits;
template <>
struct DTypeTraits<DType::kFloat> {
  using Type = float;
};
template <>
struct DTypeTraits<DType::kDouble> {
  using Type = double;
};
template <>
struct DTypeTraits<DType::kFloat16> {
  using Type = float16;
};
template <>
struct DTypeTraits<DType::kBFloat16> {
  using Type = bfloat16;
};
template <>
struct DTypeTraits<DType::kInt32> {
  using Type = std::int32_t;
};
template <>
struct DTypeTraits<DType::kInt64> {
  using Type = std::int64_t;
};
template <>
struct DTypeTraits<DType::kUInt32> {
  using Type = std::uint32_t;
};
template <>
struct DTypeTraits<DType::kUInt64> {
  using Type = std::uint64_t;
};
template <DType D>
using CppType = typename DTypeTraits<D>::Type;

// The DType of a C++ storage type: DTypeOf<float>() == DType::kFloat.
template <class T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::kFloat;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kDouble;
  else if constexpr (std::is_same_v<T, float16>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return DType::kUInt32;
  else {
    static_assert(std::is_same_v<T, std::uint64_t>, "not a MatMul storage type");
    return DType::kUInt64;
  }
}

// Calls `f` with a value of std::integral_constant<DType, dtype>, so that
// `decltype(tag)::value` is a constant expression: the one switch over DTypes that templated code
// needs. Returns what `f` returns.
template <class F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat:
      return f(std::integral_constant<DType, DType::kFloat>{});
    case DType::kDouble:
      return f(std::integral_constant<DType, DType::kDouble>{});
    case DType::kFloat16:
      return f(std::integral_constant<DType, DType::kFloat16>{});
    case DType::kBFloat16:
      return f(std::integral_constant<DType, DType::kBFloat16>{});
    case DType::kInt32:
      return f(std::integral_constant<DType, DType::kInt32>{});
    case DType::kInt64:
      return f(std::integral_constant<DType, DType::kInt64>{});
    case DType::kUInt32:
      return f(std::integral_constant<DType, DType::kUInt32>{});
    case DType::kUInt64:
      break;
  }
  return f(std::integral_constant<DType, DType::kUInt64>{});
}

// Rounds a double to the nearest float16 / bfloat16, ties to even, with ONE rounding. Converting
// double -> float -> half rounds twice and can land on the wrong neighbour when the float lands on
// a half-way point (1 + 2^-11 + 2^-40 must give 1 + 2^-10, not 1): float16(double) rounds the
// double's bits directly.
float16 RoundToFloat16(double value);
bfloat16 RoundToBFloat16(double value);
// Rounds a double to float with the sticky bit kept in the last place (round to odd): rounding
// its result once more to a format at least two bits narrower gives the double's correct rounding
// (the tests' second route to RoundToFloat16's answer).
float RoundToOddFloat(double value);

// Converts an accumulated double to storage type T with one correct rounding (nearest even).
template <class T>
T RoundFromDouble(double value) {
  if constexpr (std::is_same_v<T, float16>)
    return RoundToFloat16(value);
  else if constexpr (std::is_same_v<T, bfloat16>)
    return RoundToBFloat16(value);
  else
    return static_cast<T>(value);
}

// Widens a float storage value to double exactly.
template <class T>
double ToDouble(T value) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

}  // namespace mm

#endif  // MM_ENGINE_DTYPE_H_
