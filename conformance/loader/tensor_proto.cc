#include "mm/conformance/loader/tensor_proto.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include "mm/engine/io/input_file.h"
#include "onnx/onnx_pb.h"

namespace mm::conformance {
namespace {

static_assert(std::endian::native == std::endian::little,
              "raw_data is little-endian; a big-endian host would need byte swapping");

std::string Quoted(const std::filesystem::path& path) { return path.string(); }

// The typed field that carries `dtype` in a TensorProto, as ONNX's onnx.proto defines it.
enum class Field { kFloat, kDouble, kInt32, kInt64, kUInt64 };

Field FieldFor(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return Field::kFloat;
    case DType::kDouble:
      return Field::kDouble;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt32:
    case DType::kInt8:
    case DType::kUInt8:
      return Field::kInt32;
    case DType::kInt64:
      return Field::kInt64;
    case DType::kUInt32:
    case DType::kUInt64:
      break;
  }
  return Field::kUInt64;
}

const char* FieldName(Field field) {
  switch (field) {
    case Field::kFloat:
      return "float_data";
    case Field::kDouble:
      return "double_data";
    case Field::kInt32:
      return "int32_data";
    case Field::kInt64:
      return "int64_data";
    case Field::kUInt64:
      break;
  }
  return "uint64_data";
}

std::int64_t FieldSize(const onnx::TensorProto& proto, Field field) {
  switch (field) {
    case Field::kFloat:
      return proto.float_data_size();
    case Field::kDouble:
      return proto.double_data_size();
    case Field::kInt32:
      return proto.int32_data_size();
    case Field::kInt64:
      return proto.int64_data_size();
    case Field::kUInt64:
      break;
  }
  return proto.uint64_data_size();
}

template <class T>
Status FillFromTyped(const onnx::TensorProto& proto, Tensor& tensor) {
  T* out = tensor.Data<T>();
  const std::int64_t n = tensor.NumElements();
  if constexpr (std::is_same_v<T, float>) {
    std::copy_n(proto.float_data().begin(), n, out);
  } else if constexpr (std::is_same_v<T, double>) {
    std::copy_n(proto.double_data().begin(), n, out);
  } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t bits = proto.int32_data(static_cast<int>(i));
      if (bits < 0 || bits > 0xFFFF) {
        return InvalidArgumentError("int32_data[" + std::to_string(i) +
                                    "] = " + std::to_string(bits) + " is not a 16-bit " +
                                    std::string(DTypeName(DTypeOf<T>())) +
                                    " bit pattern (must be 0..65535)");
      }
      const auto u = static_cast<std::uint16_t>(bits);
      std::memcpy(static_cast<void*>(&out[i]), &u, sizeof(u));
    }
  } else if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t>) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t v = proto.int32_data(static_cast<int>(i));
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
        return InvalidArgumentError("int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
                                    " does not fit in " + std::string(DTypeName(DTypeOf<T>())));
      }
      out[i] = static_cast<T>(v);
    }
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    std::copy_n(proto.int32_data().begin(), n, out);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    std::copy_n(proto.int64_data().begin(), n, out);
  } else if constexpr (std::is_same_v<T, std::uint32_t>) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint64_t v = proto.uint64_data(static_cast<int>(i));
      if (v > 0xFFFFFFFFu) {
        return InvalidArgumentError("uint64_data[" + std::to_string(i) +
                                    "] = " + std::to_string(v) + " does not fit in uint32");
      }
      out[i] = static_cast<std::uint32_t>(v);
    }
  } else {
    std::copy_n(proto.uint64_data().begin(), n, out);
  }
  return OkStatus();
}

// Refuses what a node test's tensor never is: external data, a segment of a larger tensor.
Status CheckStorage(const onnx::TensorProto& proto) {
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    return UnimplementedError(
        "tensor uses external data (data_location = EXTERNAL); mm-conformance refuses external "
        "data: node tests keep their values inside the .pb file");
  }
  if (proto.has_segment()) {
    return UnimplementedError("tensor is a segment of a larger tensor; segments are not supported");
  }
  return OkStatus();
}

// The tensor's shape, every dim at least 0.
StatusOr<Dims> ProtoDims(const onnx::TensorProto& proto) {
  Dims dims(proto.dims().begin(), proto.dims().end());
  for (std::size_t axis = 0; axis < dims.size(); ++axis) {
    if (dims[axis] < 0) {
      return InvalidArgumentError("negative dim " + std::to_string(dims[axis]) + " at axis " +
                                  std::to_string(axis) + " in dims " + DimsToString(dims));
    }
  }
  return dims;
}

// Exactly one place may hold the values: raw_data or the dtype's own typed field `field`.
Status CheckOneValueField(const onnx::TensorProto& proto, DType dtype, Field field) {
  for (Field other :
       {Field::kFloat, Field::kDouble, Field::kInt32, Field::kInt64, Field::kUInt64}) {
    if (other != field && FieldSize(proto, other) > 0) {
      return InvalidArgumentError(std::string(FieldName(other)) + " holds " +
                                  std::to_string(FieldSize(proto, other)) + " values, but a " +
                                  std::string(DTypeName(dtype)) +
                                  " tensor keeps its values in raw_data or " + FieldName(field));
    }
  }
  if (proto.string_data_size() > 0) {
    return InvalidArgumentError("string_data is set, but " + std::string(DTypeName(dtype)) +
                                " is not a string type");
  }
  const std::int64_t typed = FieldSize(proto, field);
  if (proto.has_raw_data() && typed > 0) {
    return InvalidArgumentError("both raw_data (" + std::to_string(proto.raw_data().size()) +
                                " bytes) and " + FieldName(field) + " (" + std::to_string(typed) +
                                " values) are set; a tensor must use exactly one");
  }
  return OkStatus();
}

// The values in raw_data or `field` are exactly `count` elements of `elem` bytes for `dims`.
// Checked before allocating (the values are in the file, so a forged header cannot make us
// reserve more than the file holds), and in one wording whichever field holds the values.
Status CheckValueCount(const onnx::TensorProto& proto, std::string_view name, const Dims& dims,
                       std::int64_t count, std::size_t elem, Field field) {
  const bool has_raw = proto.has_raw_data();
  const std::int64_t typed = FieldSize(proto, field);
  if (!has_raw && typed == 0 && count > 0) {
    return InvalidArgumentError("no values: dims " + DimsToString(dims) + " need " +
                                std::to_string(count) + " elements but neither raw_data nor " +
                                FieldName(field) + " is set");
  }
  const std::string tensor_name = !name.empty()           ? std::string(name)
                                  : !proto.name().empty() ? proto.name()
                                                          : "the tensor";
  if (has_raw && proto.raw_data().size() != static_cast<std::uint64_t>(count) * elem) {
    return InvalidArgumentError(
        ValueCountMismatch(tensor_name, proto.raw_data().size(), elem, dims) + " in raw_data");
  }
  if (!has_raw && typed != count) {
    return InvalidArgumentError(
        ValueCountMismatch(tensor_name, static_cast<std::uint64_t>(typed) * elem, elem, dims) +
        " in " + FieldName(field));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::string> ReadProtoFile(const std::filesystem::path& path) {
  // One open and one fstat per file: a scan of Debian's data root reads ~930 models.
  MM_ASSIGN_OR_RETURN(io::InputFile file, io::OpenInputFile(path, io::kOnnxFile));
  if (file.size() == 0) return InvalidArgumentError(Quoted(path) + ": file is empty");
  return file.ReadAll();
}

std::string ValueCountMismatch(std::string_view tensor, std::uint64_t bytes,
                               std::size_t element_bytes, const Dims& dims) {
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  const std::uint64_t rest = bytes % element_bytes;
  const std::uint64_t values = bytes / element_bytes;
  return std::string(tensor) + " has " + std::to_string(values) +
         (values == 1 ? " value" : " values") +
         (rest ? " and " + std::to_string(rest) + " byte" + (rest == 1 ? "" : "s") : "") +
         " for shape " + DimsToString(dims) + " (" + std::to_string(count) + ")";
}

StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, std::string_view name,
                                 TensorTypes types) {
  MM_RETURN_IF_ERROR(CheckStorage(proto));
  const int onnx_type = proto.data_type();
  if (onnx_type == onnx::TensorProto::UNDEFINED) {
    return InvalidArgumentError("data_type is UNDEFINED (0); a MatMul tensor needs a dtype");
  }
  MM_ASSIGN_OR_RETURN(const DType dtype, types == TensorTypes::kAll
                                             ? ElementTypeFromOnnxEnum(onnx_type)
                                             : DTypeFromOnnxEnum(onnx_type));
  const std::size_t elem = DTypeSize(dtype);
  MM_ASSIGN_OR_RETURN(Dims dims, ProtoDims(proto));
  MM_ASSIGN_OR_RETURN(const std::int64_t count, CheckedElementCount(dims, elem));
  const Field field = FieldFor(dtype);
  MM_RETURN_IF_ERROR(CheckOneValueField(proto, dtype, field));
  MM_RETURN_IF_ERROR(CheckValueCount(proto, name, dims, count, elem, field));

  MM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(dtype, std::move(dims)));
  if (proto.has_raw_data()) {
    if (count > 0) std::memcpy(tensor.raw_data(), proto.raw_data().data(), tensor.NumBytes());
    return tensor;
  }
  MM_RETURN_IF_ERROR(VisitElementType(dtype, [&](auto tag) {
    return FillFromTyped<CppType<decltype(tag)::value>>(proto, tensor);
  }));
  return tensor;
}

StatusOr<NamedTensor> LoadTensorFile(const std::filesystem::path& path, std::string_view name,
                                     TensorTypes types) {
  MM_ASSIGN_OR_RETURN(const std::string bytes, ReadProtoFile(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return InvalidArgumentError(Quoted(path) +
                                ": cannot parse as onnx.TensorProto (truncated or not a tensor)");
  }
  if (!proto.unknown_fields().empty()) {
    return InvalidArgumentError(Quoted(path) +
                                ": holds fields onnx.TensorProto does not define (not a tensor?)");
  }
  auto tensor = TensorFromProto(proto, name, types);
  if (!tensor.ok()) return tensor.status().WithContext(Quoted(path));
  return NamedTensor{proto.name(), std::move(tensor).value()};
}

StatusOr<onnx::ModelProto> LoadModelFile(const std::filesystem::path& path) {
  MM_ASSIGN_OR_RETURN(const std::string bytes, ReadProtoFile(path));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return InvalidArgumentError(Quoted(path) +
                                ": cannot parse as onnx.ModelProto (truncated or not a model)");
  }
  return model;
}

}  // namespace mm::conformance
