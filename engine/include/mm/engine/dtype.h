// The element types of ONNX MatMul-13 and of its family's 8-bit integer operands (MatMulInteger,
// QLinearMatMul), their ONNX names and enum values, their C++ types, and the one correctly rounded
// conversion from double that every float backend and the oracle share.
#ifndef MM_ENGINE_DTYPE_H_
#define MM_ENGINE_DTYPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mm/engine/float16.h"
#include "mm/engine/status.h"

namespace mm {

// The 8 MatMul-13 element types, then the 8-bit integers of MatMulInteger and QLinearMatMul, which
// MatMul-13 does not take. The first 8 values are MatMul's (their numbers are wire codes).
enum class DType : std::uint8_t {
  kFloat,
  kDouble,
  kFloat16,
  kBFloat16,
  kInt32,
  kInt64,
  kUInt32,
  kUInt64,
  kInt8,
  kUInt8,
};

// MatMul-13's 8 element types, in declaration order, for iteration and parameterised tests: every
// MatMul path iterates these and refuses the others.
inline constexpr std::array<DType, 8> kAllDTypes = {
    DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
    DType::kInt32, DType::kInt64,  DType::kUInt32,  DType::kUInt64};

// Every element type mm knows, MatMul's 8 and the two 8-bit integers, in declaration order.
inline constexpr std::array<DType, 10> kAllElementTypes = {
    DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt32,
    DType::kInt64, DType::kUInt32, DType::kUInt64,  DType::kInt8,     DType::kUInt8};

// True for MatMul-13's 8 element types (kAllDTypes); false for int8 and uint8.
constexpr bool IsMatMulDType(DType dtype) { return dtype < DType::kInt8; }

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

// Maps an onnx.TensorProto.DataType value to a MatMul DType; NOT_FOUND-style INVALID_ARGUMENT error
// naming the ONNX type for values that are not MatMul types (e.g. "INT8 (3) is not a MatMul
// dtype").
StatusOr<DType> DTypeFromOnnxEnum(int onnx_enum);
// Parses a MatMul dtype's short name ("float", "float32", "fp16", "bf16", "int32", ...) or ONNX
// type string; "int8" and "uint8" are refused as not MatMul dtypes.
StatusOr<DType> DTypeFromName(std::string_view name);
// The same two over every element type (kAllElementTypes): int8 (3) and uint8 (2) too.
StatusOr<DType> ElementTypeFromOnnxEnum(int onnx_enum);
StatusOr<DType> ElementTypeFromName(std::string_view name);
// OK for a MatMul dtype; else INVALID_ARGUMENT "int8 is not a MatMul dtype (MatMul-13 takes float,
// ...)": what every MatMul entry that receives a DType directly answers.
Status CheckMatMulDType(DType dtype);
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
template <>
struct DTypeTraits<DType::kInt8> {
  using Type = std::int8_t;
};
template <>
struct DTypeTraits<DType::kUInt8> {
  using Type = std::uint8_t;
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
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return DType::kInt8;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return DType::kUInt8;
  else {
    static_assert(std::is_same_v<T, std::uint64_t>, "not an mm storage type");
    return DType::kUInt64;
  }
}

// Calls `f` with a value of std::integral_constant<DType, dtype>, so that
// `decltype(tag)::value` is a constant expression: the one switch over MatMul's DTypes that
// templated code needs. Returns what `f` returns. `dtype` must be a MatMul dtype (IsMatMulDType):
// every entry of a MatMul path refuses int8 and uint8 first (PlanMatMul, the loaders, the names);
// one reaching here anyway is a programming error and aborts rather than reading the wrong type.
template <class F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUInt8:
      std::fputs("mm: VisitDType called with an 8-bit integer type, not a MatMul dtype\n", stderr);
      std::abort();
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

// VisitDType over every element type (kAllElementTypes), int8 and uint8 included: for the code of
// MatMul's family, whose operands may be 8-bit integers.
template <class F>
decltype(auto) VisitElementType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kInt8:
      return f(std::integral_constant<DType, DType::kInt8>{});
    case DType::kUInt8:
      return f(std::integral_constant<DType, DType::kUInt8>{});
    default:
      return VisitDType(dtype, std::forward<F>(f));
  }
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
