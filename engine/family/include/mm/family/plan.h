// A family problem planned once, as PlanMatMul plans MatMul: every input, attribute, type, shape
// and scale checked against the operator's version of the ONNX standard, and the broadcasting
// decided (numpy.matmul for MatMulInteger and QLinearMatMul, Gemm's transposes and the
// unidirectional broadcast of C to [M, N], the forms of zero points and scales). Every malformed
// problem is an error that names the input or attribute at fault.
#ifndef MM_FAMILY_PLAN_H_
#define MM_FAMILY_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/op.h"
#include "mm/family/problem.h"

namespace mm::family {

// How a zero point or a scale applies (MatMulInteger-10, QLinearMatMul-10/21):
//   kAbsent     MatMulInteger's optional zero point not given: 0.
//   kPerTensor  one value: a scalar [] or a 1-element vector [1].
//   kPerRow     one value per row of A: [M] or [M, 1] for a 2-D A [M, K]; [D1, ..., M, 1] for an
//               N-D A [D1, ..., M, K] (A's own batch dims, exactly).
//   kPerColumn  one value per column of B: [N] or [1, N] for a 2-D B [K, N]; [D1, ..., 1, N] for
//               an N-D B [D1, ..., K, N].
// A 1-D A or B has no rows or columns to speak of: per tensor only.
enum class QuantForm : std::uint8_t { kAbsent, kPerTensor, kPerRow, kPerColumn };
// "absent", "per tensor", "per row", "per column".
std::string_view QuantFormName(QuantForm form);

// A checked zero point or scale.
struct QuantParam {
  QuantForm form = QuantForm::kAbsent;
  TensorView tensor;  // The input as given (unset when absent).

  // The element of `tensor` for row (kPerRow) or column (kPerColumn) `i` of the operand's matrix
  // `matrix` (its own batch entry, row-major over its own batch dims), `extent` rows or columns
  // per matrix; 0 per tensor.
  std::int64_t Index(std::int64_t matrix, std::int64_t i, std::int64_t extent) const {
    return form == QuantForm::kPerRow || form == QuantForm::kPerColumn ? matrix * extent + i : 0;
  }
  // The zero point at `index` (0 when absent), widened exactly.
  std::int64_t ZeroPoint(std::int64_t index) const;
  // The scale at `index`, widened exactly to double (float, float16 or bfloat16).
  double Scale(std::int64_t index) const;
};

// The form of Gemm's C, unidirectionally broadcast to [M, N] (ONNX's Broadcasting.md: C's shape
// aligned to [M, N] from the right, each of its dims equal to the target's or 1, rank <= 2).
enum class CForm : std::uint8_t {
  kAbsent,    // No C (versions 11 and 13): computed as if C were a scalar 0.
  kScalar,    // []
  kOne,       // [1]
  kRow,       // [N]
  kOneByOne,  // [1, 1]
  kOneByN,    // [1, N]
  kMByOne,    // [M, 1]
  kMByN,      // [M, N]
};
// "absent", "[]", "[1]", "[N]", "[1,1]", "[1,N]", "[M,1]", "[M,N]".
std::string_view CFormName(CForm form);

// Gemm's part of a plan.
struct GemmPlan {
  bool trans_a = false;  // transA != 0: A is [K, M].
  bool trans_b = false;  // transB != 0: B is [N, K].
  float alpha = 1;
  float beta = 1;
  CForm c_form = CForm::kAbsent;
  TensorView c;  // Unset when absent.
  // C's element for Y[i, j] is c[i * c_row_stride + j * c_col_stride] (0 where C broadcasts).
  std::int64_t c_row_stride = 0;
  std::int64_t c_col_stride = 0;
  std::int64_t CIndex(std::int64_t i, std::int64_t j) const {
    return i * c_row_stride + j * c_col_stride;
  }
};

// A planned problem. Views point into the problem's tensors, which must outlive the plan.
struct Plan {
  Op op = Op::kMatMul;
  int version = 0;
  DType a_dtype = DType::kFloat;  // A's (a's) element type.
  DType b_dtype = DType::kFloat;  // B's (b's).
  DType y_dtype = DType::kFloat;  // Y's: MatMul's and Gemm's T; int32 (MatMulInteger); T3.
  TensorView a;                   // A as given (Gemm: before any transpose).
  TensorView b;
  // The product's shapes: numpy.matmul of A and B (MatMul, MatMulInteger, QLinearMatMul; its
  // desc.dtype is A's type), or Gemm's [M, K] x [K, N] of A' and B'. m, k, n, batch from here.
  MatMulPlan product;
  GemmPlan gemm;            // Gemm only.
  QuantParam a_zero_point;  // MatMulInteger (maybe absent), QLinearMatMul.
  QuantParam b_zero_point;  // MatMulInteger (maybe absent), QLinearMatMul.
  QuantParam a_scale;       // QLinearMatMul only, and the three below.
  QuantParam b_scale;
  QuantParam y_scale;                 // Per tensor.
  QuantParam y_zero_point;            // Per tensor.
  DType scale_dtype = DType::kFloat;  // QLinearMatMul's TS.

  const Dims& y_dims() const { return product.y_dims; }
  // A's and B's own matrix index (row-major over each operand's own batch dims) for Y's batch
  // entry `index`; 0 when the operand's matrices are empty.
  std::pair<std::int64_t, std::int64_t> OperandMatrices(std::int64_t index) const;
  // "QLinearMatMul-21 a uint8 [2,4] x b int8 [4,3] -> y uint8 [2,3], a_zero_point per row, ...".
  std::string ToString() const;
};

// Checks `problem` against its operator's version and plans it. Errors (INVALID_ARGUMENT unless
// said), each naming the input or attribute:
//  - a version the operator does not have; an input the operator does not have, given twice, or
//    missing (Gemm's C before version 11, any of QLinearMatMul's eight); an input without data;
//  - an attribute the version does not have (Gemm's `broadcast` after version 6, any attribute of
//    MatMul, MatMulInteger, QLinearMatMul), or of the wrong ONNX type (alpha given as INT);
//  - an element type the version does not take (Gemm-7 int32, Gemm-11 bfloat16, MatMulInteger
//    float), operands of different types where the version ties them, a zero point of another type
//    than its input, scales of different types (QLinearMatMul-21's TS) or of a type the version
//    does not take (float16 scales in QLinearMatMul-10);
//  - shapes: numpy.matmul's errors (PlanMatMul's), Gemm's A or B not 2-D, K mismatch, a C that
//    does not broadcast to [M, N] (or, in versions 1 and 6 with broadcast = 0, is not [M, N]);
//    a zero point or scale of a shape that is none of its forms, a scale and its zero point of
//    different shapes, y's scale or zero point not per tensor;
//  - values: a scale that is zero, negative, NaN or infinite (QLinearMatMul's multiplier
//    a_scale * b_scale / y_scale must be a positive real);
//  - not judged by mm (UNIMPLEMENTED, with the reason): alpha or beta NaN or infinite; integer
//    Gemm with an alpha or beta that is not an integer (the standard gives no rounding for it).
StatusOr<Plan> PlanProblem(const Problem& problem);

// The element type an ONNX tensor of type `onnx_enum` is for input `input` of `op` at `version`:
// INVALID_ARGUMENT when the version does not take it, UNIMPLEMENTED with the reason for the float8
// types QLinearMatMul-21 takes and mm does not judge ("a: FLOAT8E4M3FN (17) is a QLinearMatMul-21
// type mm does not judge: mm has no float8 element type").
StatusOr<DType> InputElementType(Op op, int version, std::string_view input, int onnx_enum);

}  // namespace mm::family

#endif  // MM_FAMILY_PLAN_H_
