// numpy.matmul shape semantics, decided once by the engine for every backend: no backend
// re-derives broadcasting.
#ifndef MM_ENGINE_MATMUL_PLAN_H_
#define MM_ENGINE_MATMUL_PLAN_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace mm {

// What is asked: Y = MatMul(A, B) for A of shape a_dims and B of shape b_dims, all of type dtype.
struct MatMulDesc {
  DType dtype = DType::kFloat;
  Dims a_dims;
  Dims b_dims;

  // "float [2,3,4] x [4,5]".
  std::string ToString() const;
  friend bool operator==(const MatMulDesc&, const MatMulDesc&) = default;
};

// How Y = MatMul(A, B) is computed, numpy.matmul exactly:
//  - A 1-D A of shape [K] is treated as [1, K] and that 1 is removed from Y; a 1-D B of shape [K]
//  is
//    treated as [K, 1] and that 1 is removed from Y. 1-D x 1-D gives a rank-0 Y.
//  - The dims before the last two are batch dims; they broadcast numpy-style (aligned from the
//    right, a 1 or a missing dim stretches) on both operands.
//  - Every matrix is dense row-major: A's batch entry is m x k, B's is k x n, Y's is m x n.
// Zero-size dims are legal: k == 0 gives zeros, m, n or a batch dim of 0 gives an empty Y.
struct MatMulPlan {
  MatMulDesc desc;
  Dims y_dims;               // Y's shape, after removing promoted 1-D axes.
  std::int64_t m = 0;        // Rows of each A matrix and Y matrix.
  std::int64_t k = 0;        // Contraction length.
  std::int64_t n = 0;        // Columns of each B matrix and Y matrix.
  bool a_is_vector = false;  // A was 1-D (promoted to [1, K]).
  bool b_is_vector = false;  // B was 1-D (promoted to [K, 1]).

  // Broadcast batch shape of Y (without m and n), and each operand's batch dims left-padded with 1s
  // to the same rank. batch == product of batch_dims (1 when there are none).
  Dims batch_dims;
  Dims a_batch_dims;
  Dims b_batch_dims;
  std::int64_t batch = 1;
  // Element strides of A's and B's matrices along each batch axis; 0 where the operand broadcasts.
  std::vector<std::int64_t> a_batch_strides;
  std::vector<std::int64_t> b_batch_strides;

  std::int64_t a_elements = 0;
  std::int64_t b_elements = 0;
  std::int64_t y_elements = 0;

  // Element offset of A's and B's matrix for flat batch index `index` in [0, batch) (row-major over
  // batch_dims). Y's matrix for that index starts at index * m * n.
  std::pair<std::int64_t, std::int64_t> BatchOffsets(std::int64_t index) const;
  // True when A's (B's) batch entries are all distinct, contiguous and in Y's batch order, so A (B)
  // is one stack of `batch` matrices with no broadcasting.
  bool a_batch_contiguous() const;
  bool b_batch_contiguous() const;
  // True when every batch index maps to the same B matrix (B has no batch dims that vary), so the
  // batch can fold into M: Y[batch*m, n] = A[batch*m, k] x B[k, n].
  bool b_shared_across_batch() const;
};

// Plans Y = MatMul(A, B) for `desc` (shapes only: any element type, so MatMul's family reuses it;
// Backend::Prepare refuses a dtype MatMul does not take), or explains why it is not a valid MatMul:
// rank-0 operands, negative dims, K mismatch ("K mismatch: A [2,3,4] has K=4, B [5,6] has K=5"),
// batch dims that do not broadcast ("batch dims not broadcastable at axis 1: 3 vs 2 (A [..], B
// [..])"), or element or byte counts of A, B or Y that overflow int64.
StatusOr<MatMulPlan> PlanMatMul(const MatMulDesc& desc);

}  // namespace mm

#endif  // MM_ENGINE_MATMUL_PLAN_H_
