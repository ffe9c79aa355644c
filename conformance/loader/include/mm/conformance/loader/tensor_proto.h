// Reading serialized onnx.TensorProto files (the input_K.pb / output_K.pb of an ONNX node test)
// into mm::Tensor, with every check a hostile or broken file needs. Built on libonnx's generated
// classes.
#ifndef MM_CONFORMANCE_LOADER_TENSOR_PROTO_H_
#define MM_CONFORMANCE_LOADER_TENSOR_PROTO_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace onnx {
class TensorProto;
class ModelProto;
}  // namespace onnx

namespace mm::conformance {

// Reads a whole file by io::ReadInputFile's rules (io::kOnnxFile: a regular file of at most
// 1 GiB, a FIFO or device refused at once). Errors name the file: missing, not a regular file
// (saying what it is), empty, too large, unreadable.
StatusOr<std::string> ReadProtoFile(const std::filesystem::path& path);

// The one wording of a tensor whose data disagrees with its shape, wherever it is found: "Y has 18
// values for shape [3,2,3,2] (36)" (`bytes` of data, `element_bytes` per value; a partial value
// is said: "Y has 18 values and 2 bytes for shape ...").
std::string ValueCountMismatch(std::string_view tensor, std::uint64_t bytes,
                               std::size_t element_bytes, const Dims& dims);

// Converts a parsed TensorProto to a Tensor. `name` is what messages call it (default: the proto's
// name, else "the tensor"). Values are counted against the dims before anything is allocated, so
// a forged header cannot reserve more than the file holds. Refuses: external data or segments,
// UNDEFINED / unknown / non-MatMul dtypes, negative or overflowing dims, raw_data or a typed field
// whose value count disagrees with the dims (ValueCountMismatch), the wrong field for the dtype,
// raw_data and a typed field together, float16/bfloat16 patterns above 0xFFFF, uint32 values
// above 0xFFFFFFFF. Messages do not name the file; callers add it (see LoadTensorFile).
// `types` kAll also takes int8 and uint8 (MatMul's family; values in raw_data or int32_data, each
// in the type's range).
enum class TensorTypes : std::uint8_t { kMatMul, kAll };
StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, std::string_view name = {},
                                 TensorTypes types = TensorTypes::kMatMul);

// A tensor read from a .pb file, with the name stored in the proto (may be empty).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Reads, parses and converts one serialized TensorProto file; `name` as for TensorFromProto. Every
// error message starts with the file's path.
StatusOr<NamedTensor> LoadTensorFile(const std::filesystem::path& path, std::string_view name = {},
                                     TensorTypes types = TensorTypes::kMatMul);

// Reads and parses a serialized ModelProto file (model.onnx); errors start with the path.
StatusOr<onnx::ModelProto> LoadModelFile(const std::filesystem::path& path);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_TENSOR_PROTO_H_
