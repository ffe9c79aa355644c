// Checking that a backend wrote only Y: its inputs unchanged and the bytes right around Y intact.
// One guard for MatMul (a prepared primitive) and for MatMul's family (Gemm, MatMulInteger,
// QLinearMatMul: family::ComputeOpInto).
#ifndef MM_CONFORMANCE_RUNNING_WRITE_GUARD_H_
#define MM_CONFORMANCE_RUNNING_WRITE_GUARD_H_

#include "mm/engine/backend.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/plan.h"

namespace mm::conformance {

// Bytes of guard on each side of Y (a multiple of 64, so Y keeps Tensor's 64-byte alignment).
inline constexpr std::size_t kWriteGuardBytes = 64;

// Executes `primitive` on copies of `a` and `b` with Y placed between two guards of known bytes,
// and returns Y. Y is filled with poison pattern `poison_round` (poison.h) before the execute.
// Besides the primitive's own errors, returns DATA_LOSS when the backend wrote where it must not,
// saying where: "wrote 4 bytes past the end of Y", "wrote 8 bytes before the start of Y", "modified
// input A (first changed byte 0 of 24)", "modified input B (...)". The reach of a write is measured
// up to the farthest changed byte within the guard; writes beyond the guard are not seen here
// (AddressSanitizer builds see them).
StatusOr<Tensor> ExecuteWithWriteGuard(MatMulPrimitive& primitive, TensorView a, TensorView b,
                                       int poison_round = 0);

// Computes Y of the family problem `plan` (not MatMul) on `backend` under the same guard: every
// input the plan holds (A, B, C, the zero points and the scales) copied, Y between the guards and
// poisoned with pattern `poison_round`. Besides family::ComputeOpInto's errors (UNIMPLEMENTED
// when `backend` does not compute it; the backend's own, with its name), DATA_LOSS as
// ExecuteWithWriteGuard's, the input named as ONNX names it: "modified input C (first changed
// byte 0 of 12)", "modified input a_zero_point (...)", "modified input b (...)".
StatusOr<Tensor> ComputeWithWriteGuard(Backend& backend, const family::Plan& plan,
                                       int poison_round = 0);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNING_WRITE_GUARD_H_
