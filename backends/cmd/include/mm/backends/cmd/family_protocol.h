// The runtime protocol's operators of MatMul's family (protocol version 2,
// docs/runtime-protocol.md): what a driver's hello declares per operator (Gemm, MatMulInteger,
// QLinearMatMul), whether that covers a problem, and the request of a planned family problem.
// What the messages hold is this file's and runtime_protocol.h's alone.
#ifndef MM_BACKENDS_CMD_FAMILY_PROTOCOL_H_
#define MM_BACKENDS_CMD_FAMILY_PROTOCOL_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mm/backends/cmd/runtime_protocol.h"
#include "mm/engine/arithmetic.h"
#include "mm/engine/backend.h"
#include "mm/family/backend.h"
#include "mm/family/plan.h"

namespace mm::runtime {

// The key of `desc`'s element types in a hello's "types": its description without the operator
// and version (family::OpDesc::ToString): "float" (Gemm's T), "uint8 x int8 -> int32"
// (MatMulInteger), "uint8 x int8 -> uint8, float scales" (QLinearMatMul).
std::string TypesKey(const family::OpDesc& desc);

// Every element-type combination of `op` (Gemm, MatMulInteger, QLinearMatMul) some version takes:
// the keys a hello may declare. Versions are left at the newest.
std::vector<family::OpDesc> AllTypes(family::Op op);

// Whether `hello` declares `desc` computed: native, by conversion (the declared "conversion"), or
// not, with why ("Gemm: the driver declares MatMul only", "Gemm-7: the driver computes versions
// 11, 13", "MatMulInteger-10 uint8 x uint8 -> int32: not declared in the driver's hello").
Support OperatorSupport(const Hello& hello, const family::OpDesc& desc);

// The arithmetic `hello` declares for `desc` (Y's own type when it declares none).
Arithmetic OperatorArithmetic(const Hello& hello, const family::OpDesc& desc);

// The inputs of `plan` as the request carries them: ONNX's names in the node's order
// (family::InputNames), absent optional ones left out.
struct NamedView {
  std::string_view name;
  TensorView view;
};
std::vector<NamedView> RequestInputs(const family::Plan& plan);

// An operator request ready to be sent: its prefix and header, and what its reply must be.
struct OperatorRequest {
  std::string start;
  Expected expected;
};

// The request `id` for `plan` (not MatMul): the header names the operator, its version, each input
// (RequestInputs: name, dtype, shape), the attributes (Gemm's transA, transB, alpha, beta, and
// broadcast for versions 1 and 6) and Y (dtype, shape); the data is each input's bytes in that
// order, then the Y buffer mm offers. OUT_OF_RANGE when the data does not fit a frame.
StatusOr<OperatorRequest> MakeOperatorRequest(std::uint64_t id, const family::Plan& plan);

// One request: `request` with the inputs' bytes of `plan` and the Y buffer's, then its reply
// (ReadReply) with Y read into `y` (exactly Y's bytes).
StatusOr<Reply> ExchangeOperator(ByteChannel& driver, const OperatorRequest& request,
                                 const family::Plan& plan, std::span<std::byte> y);

}  // namespace mm::runtime

#endif  // MM_BACKENDS_CMD_FAMILY_PROTOCOL_H_
