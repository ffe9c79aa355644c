// Writing a MatMul problem as an ONNX node-test directory, the layout ONNX's own backend test
// runner, onnxruntime's and mm-conformance read: model.onnx and test_data_set_0/{input_0,input_1,
// output_0}.pb, each a serialized onnx.TensorProto with raw_data.
#ifndef MM_CONFORMANCE_FUZZ_NODE_TEST_WRITER_H_
#define MM_CONFORMANCE_FUZZ_NODE_TEST_WRITER_H_

#include <filesystem>
#include <string>

#include "engine/dtype.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace mm::fuzz {

// The opset a MatMul of `dtype` needs: 7 for float16/float/double (MatMul-1), 9 for the integers
// (MatMul-9), 13 for bfloat16 (MatMul-13).
int OpsetFor(DType dtype);

// Writes `case_dir` (created; existing files replaced) holding a one-node MatMul model with inputs
// "a", "b" and output "y" of a's dtype and the given shapes, and data set 0 with a, b and the
// expected y. Errors name the file that could not be written.
Status WriteNodeTest(const std::filesystem::path& case_dir, const Tensor& a, const Tensor& b,
                     const Tensor& y);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_NODE_TEST_WRITER_H_
