// The 9 worked examples of the ONNX MatMul operator page, shipped inside mm as test data (embedded
// at build time from onnx_matmul_examples.txt), and the parser of that small text format.
#ifndef MM_ENGINE_TESTDATA_ONNX_MATMUL_EXAMPLES_H_
#define MM_ENGINE_TESTDATA_ONNX_MATMUL_EXAMPLES_H_

#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace mm {

// One example: Y = MatMul(A, B) with its expected Y.
struct ExampleCase {
  std::string name;  // "test_cc_matmul_2d".
  Tensor a;
  Tensor b;
  Tensor y;
};

// Parses the format (see onnx_matmul_examples.txt): "case NAME", then tensors "a", "b", "y",
// each a header "NAME DTYPE [d0,...]" followed by exactly its element count of values, then "end".
// Values are parsed as double and rounded once to the dtype (integers must be exact and in range).
// Errors name `source` and the line.
StatusOr<std::vector<ExampleCase>> ParseExamples(std::string_view text, std::string_view source);

// The text of onnx_matmul_examples.txt as embedded in this build.
std::string_view BuiltinExamplesText();

// The built-in examples, parsed from the embedded text.
StatusOr<std::vector<ExampleCase>> BuiltinExamples();

}  // namespace mm

#endif  // MM_ENGINE_TESTDATA_ONNX_MATMUL_EXAMPLES_H_
