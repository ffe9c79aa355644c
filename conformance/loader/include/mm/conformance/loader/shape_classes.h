// The shape-class catalogue: built-in cases covering every numpy.matmul shape class (1-D operands,
// batches equal, broadcast from either or both sides, rank mismatch up to rank 13, K = 0, M = 0,
// N = 0, zero batch dims, K = 1, and sequences of one model with symbolic dims where an empty or
// K = 0 problem follows a non-empty one) for every MatMul-13 dtype. Built in memory, deterministic;
// the expected outputs are the exact oracle's (ExactMatMul), exactly representable in every dtype.
//
// Name rule (reports recover the class from it): "mm_shape_<class>_<dtype>", <class> one of
// ShapeClasses()' names (letters, digits and '_'), <dtype> DTypeName() (no '_').
#ifndef MM_CONFORMANCE_LOADER_SHAPE_CLASSES_H_
#define MM_CONFORMANCE_LOADER_SHAPE_CLASSES_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/loader/matmul_case.h"
#include "mm/engine/dtype.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace mm::conformance {

// What every case name of the catalogue starts with.
inline constexpr std::string_view kShapeCasePrefix = "mm_shape_";

// One problem: A's and B's shapes.
struct ShapePair {
  Dims a;
  Dims b;
};

// A shape class: its name, what it covers, and its problems in order. One problem: a case of
// fixed shapes. Several: a sequence, one model whose dims are all symbolic, run in this order.
struct ShapeClass {
  std::string name;         // "batch_broadcast_both".
  std::string description;  // "batch dims broadcast from both sides".
  std::vector<ShapePair> problems;
  bool sequence() const { return problems.size() > 1; }
};

// Every class, in the order reports show them.
const std::vector<ShapeClass>& ShapeClasses();

// One case of the catalogue: a class in one dtype.
struct ShapeCase {
  std::string name;  // "mm_shape_batch_broadcast_both_float16".
  const ShapeClass* shape_class = nullptr;
  DType dtype = DType::kFloat;
};

// "mm_shape_<class>_<dtype>".
std::string ShapeCaseName(const ShapeClass& shape_class, DType dtype);

// Every case: each class in each dtype of kAllDTypes, class by class.
std::vector<ShapeCase> ShapeCases();

// The case named `name`, if it is one of the catalogue.
std::optional<ShapeCase> FindShapeCase(std::string_view name);

// What the case's model promises: MatMul-13 of its dtype, A, B and Y of the problem's shapes, or
// of its rank with every dim symbolic for a sequence.
MatMulModel ShapeCaseModel(const ShapeCase& shape_case);

// The name of data set `index`: "test_data_set_<index>", as a node test exported from it.
std::string ShapeDataSetName(std::size_t index);

// Data set `index` < problems.size(): A and B filled with small distinct values (both signs where
// the dtype has them), Y the exact product. OUT_OF_RANGE for another index.
StatusOr<DataSet> ShapeCaseDataSet(const ShapeCase& shape_case, std::size_t index);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_SHAPE_CLASSES_H_
