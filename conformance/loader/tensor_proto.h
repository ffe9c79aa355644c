// Reading serialized onnx.TensorProto files (the input_K.pb / output_K.pb of an ONNX node test)
// into mm::Tensor, with every check a hostile or broken file needs. Built on libonnx's generated
// classes.
#ifndef MM_CONFORMANCE_LOADER_TENSOR_PROTO_H_
#define MM_CONFORMANCE_LOADER_TENSOR_PROTO_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "engine/status.h"
#include "engine/tensor.h"

namespace onnx {
class TensorProto;
class ModelProto;
}  // namespace onnx

namespace mm::conformance {

// Reads a whole file by io::ReadInputFile's rules (io::kOnnxFile: a regular file of at most
// 1 GiB, a FIFO or device refused at once). Errors name the file: missing, not a regular file
// (saying what it is), empty, too large, unreadable.
StatusOr<std::string> ReadProtoFile(const std::filesystem::path& path);

// Converts a parsed TensorProto to a Tensor. `file_bytes` is the size of the file it came from: a
// proto whose dims claim more data than such a file can hold is refused before anything is
// allocated. Refuses: external data or segments, UNDEFINED / unknown / non-MatMul dtypes, negative
// or overflowing dims, raw_data whose length disagrees with the dims, a typed field with the wrong
// count or the wrong field for the dtype, raw_data and a typed field together, float16/bfloat16
// patterns above 0xFFFF, uint32 values above 0xFFFFFFFF. Messages do not name the file; callers add
// it (see LoadTensorFile).
StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, std::uintmax_t file_bytes);

// A tensor read from a .pb file, with the name stored in the proto (may be empty).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Reads, parses and converts one serialized TensorProto file. Every error message starts with the
// file's path.
StatusOr<NamedTensor> LoadTensorFile(const std::filesystem::path& path);

// Reads and parses a serialized ModelProto file (model.onnx); errors start with the path.
StatusOr<onnx::ModelProto> LoadModelFile(const std::filesystem::path& path);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_TENSOR_PROTO_H_
