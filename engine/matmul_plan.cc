#include "mm/engine/matmul_plan.h"

#include <algorithm>

namespace mm {

std::string MatMulDesc::ToString() const {
  return std::string(DTypeName(dtype)) + " " + DimsToString(a_dims) + " x " + DimsToString(b_dims);
}

std::pair<std::int64_t, std::int64_t> MatMulPlan::BatchOffsets(std::int64_t index) const {
  std::int64_t a_offset = 0;
  std::int64_t b_offset = 0;
  for (std::size_t axis = batch_dims.size(); axis-- > 0;) {
    const std::int64_t extent = batch_dims[axis];
    const std::int64_t i = index % extent;
    index /= extent;
    a_offset += i * a_batch_strides[axis];
    b_offset += i * b_batch_strides[axis];
  }
  return {a_offset, b_offset};
}

namespace {

// An operand is a plain stack when none of its batch axes broadcasts (its padded dims equal Y's).
bool IsPlainStack(const Dims& operand_batch_dims, const Dims& batch_dims) {
  return operand_batch_dims == batch_dims;
}

}  // namespace

bool MatMulPlan::a_batch_contiguous() const { return IsPlainStack(a_batch_dims, batch_dims); }
bool MatMulPlan::b_batch_contiguous() const { return IsPlainStack(b_batch_dims, batch_dims); }
bool MatMulPlan::b_shared_across_batch() const {
  return std::all_of(b_batch_dims.begin(), b_batch_dims.end(),
                     [](std::int64_t d) { return d == 1; });
}

namespace {

// Pads both operands' batch dims to one rank and broadcasts them (numpy.matmul's rule).
Status BroadcastBatch(const Dims& a_full, const Dims& b_full, const std::string& shapes,
                      MatMulPlan& plan) {
  const std::size_t a_rank = a_full.size() - 2;
  const std::size_t b_rank = b_full.size() - 2;
  const std::size_t rank = std::max(a_rank, b_rank);
  plan.batch_dims.assign(rank, 1);
  plan.a_batch_dims.assign(rank, 1);
  plan.b_batch_dims.assign(rank, 1);
  std::copy(a_full.begin(), a_full.end() - 2, plan.a_batch_dims.begin() + (rank - a_rank));
  std::copy(b_full.begin(), b_full.end() - 2, plan.b_batch_dims.begin() + (rank - b_rank));
  for (std::size_t axis = 0; axis < rank; ++axis) {
    const std::int64_t da = plan.a_batch_dims[axis];
    const std::int64_t db = plan.b_batch_dims[axis];
    if (da != db && da != 1 && db != 1) {
      return InvalidArgumentError("batch dims not broadcastable at axis " + std::to_string(axis) +
                                  ": " + std::to_string(da) + " vs " + std::to_string(db) + " (" +
                                  shapes + ")");
    }
    plan.batch_dims[axis] = da == 1 ? db : da;
  }
  return OkStatus();
}

// Element strides of each operand's batch axes; a broadcast axis has stride 0.
void SetBatchStrides(MatMulPlan& plan) {
  const std::size_t rank = plan.batch_dims.size();
  // The operands' sizes were checked before, so these products fit.
  plan.a_batch_strides.assign(rank, 0);
  plan.b_batch_strides.assign(rank, 0);
  std::int64_t a_stride = plan.m * plan.k;
  std::int64_t b_stride = plan.k * plan.n;
  for (std::size_t axis = rank; axis-- > 0;) {
    plan.a_batch_strides[axis] = plan.a_batch_dims[axis] == 1 ? 0 : a_stride;
    plan.b_batch_strides[axis] = plan.b_batch_dims[axis] == 1 ? 0 : b_stride;
    a_stride *= plan.a_batch_dims[axis];
    b_stride *= plan.b_batch_dims[axis];
  }
}

// Y's dims, element count and batch count; refuses a Y whose size overflows.
Status SetOutput(std::size_t elem, const std::string& shapes, MatMulPlan& plan) {
  plan.y_dims = plan.batch_dims;
  if (!plan.a_is_vector) plan.y_dims.push_back(plan.m);
  if (!plan.b_is_vector) plan.y_dims.push_back(plan.n);
  // Y's batch and matrix dims together: a zero anywhere makes it empty, but like numpy we still
  // refuse shapes whose non-zero extents overflow.
  Dims y_full = plan.batch_dims;
  y_full.push_back(plan.m);
  y_full.push_back(plan.n);
  auto y_count = CheckedElementCount(y_full, elem);
  if (!y_count.ok()) {
    return OutOfRangeError("output of MatMul " + shapes + " would have shape " +
                           DimsToString(plan.y_dims) + ", too large: its size overflows int64");
  }
  plan.y_elements = *y_count;
  // Cannot overflow: Y's non-zero extents were checked together just above.
  plan.batch = 1;
  for (std::int64_t d : plan.batch_dims) plan.batch *= d;
  return OkStatus();
}

}  // namespace

StatusOr<MatMulPlan> PlanMatMul(const MatMulDesc& desc) {
  const Dims& a = desc.a_dims;
  const Dims& b = desc.b_dims;
  const std::string shapes = "A " + DimsToString(a) + ", B " + DimsToString(b);
  if (a.empty() || b.empty()) {
    return InvalidArgumentError(std::string("MatMul needs operands of rank >= 1, but ") +
                                (a.empty() ? "A" : "B") + " is a scalar (" + shapes + ")");
  }
  const std::size_t elem = DTypeSize(desc.dtype);
  MatMulPlan plan;
  plan.desc = desc;
  {
    auto count = CheckedElementCount(a, elem);
    if (!count.ok()) return count.status().WithContext("A");
    plan.a_elements = *count;
    count = CheckedElementCount(b, elem);
    if (!count.ok()) return count.status().WithContext("B");
    plan.b_elements = *count;
  }

  plan.a_is_vector = a.size() == 1;
  plan.b_is_vector = b.size() == 1;
  const Dims a_full = plan.a_is_vector ? Dims{1, a[0]} : a;
  const Dims b_full = plan.b_is_vector ? Dims{b[0], 1} : b;
  plan.m = a_full[a_full.size() - 2];
  const std::int64_t a_k = a_full.back();
  const std::int64_t b_k = b_full[b_full.size() - 2];
  plan.n = b_full.back();
  if (a_k != b_k) {
    return InvalidArgumentError("K mismatch: A " + DimsToString(a) +
                                " has K=" + std::to_string(a_k) + ", B " + DimsToString(b) +
                                " has K=" + std::to_string(b_k));
  }
  plan.k = a_k;
  if (Status s = BroadcastBatch(a_full, b_full, shapes, plan); !s.ok()) return s;
  SetBatchStrides(plan);
  if (Status s = SetOutput(elem, shapes, plan); !s.ok()) return s;
  return plan;
}

}  // namespace mm
