// The operators of MatMul's family that mm judges: their names and the versions of each that the
// ONNX standard defines (onnx/onnx v1.22.0, docs/Operators.md and docs/Changelog.md).
#ifndef MM_FAMILY_OP_H_
#define MM_FAMILY_OP_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "mm/engine/status.h"

namespace mm::family {

// An operator of the family. MatMul is the one every backend computes today; the other three are
// its siblings in deployed models (Gemm: fully connected layers; the two integer ones: quantized
// models).
enum class Op : std::uint8_t { kMatMul, kGemm, kMatMulInteger, kQLinearMatMul };

// Every operator, in declaration order.
inline constexpr std::array<Op, 4> kAllOps = {Op::kMatMul, Op::kGemm, Op::kMatMulInteger,
                                              Op::kQLinearMatMul};

// The ONNX op_type: "MatMul", "Gemm", "MatMulInteger", "QLinearMatMul".
std::string_view OpName(Op op);
// The operator whose ONNX op_type is `name` (exactly, as ONNX spells it); INVALID_ARGUMENT naming
// the four otherwise.
StatusOr<Op> OpFromName(std::string_view name);

// The versions (since_version) the standard defines, oldest first: MatMul 1, 9, 13; Gemm 1, 6, 7,
// 9, 11, 13; MatMulInteger 10; QLinearMatMul 10, 21.
std::span<const int> OpVersions(Op op);
// OK when `version` is one of OpVersions(op); else INVALID_ARGUMENT "Gemm has no version 8
// (versions: 1, 6, 7, 9, 11, 13)".
Status CheckOpVersion(Op op, int version);
// The version in force in default-domain opset `opset`: the newest version <= opset;
// INVALID_ARGUMENT when the operator did not exist yet ("QLinearMatMul does not exist in opset 9;
// it appeared in opset 10").
StatusOr<int> OpVersionAtOpset(Op op, int opset);

}  // namespace mm::family

#endif  // MM_FAMILY_OP_H_
