// How a backend computes MatMul's family beyond MatMul: what it supports per operator, version and
// element types (with the reason when it does not), the arithmetic it declares, and the
// computation of a planned problem. A backend offers it through Backend::family(); one that does
// not is refused with a reason by SupportOf, never asked to compute, and never stands in for
// another engine.
#ifndef MM_FAMILY_BACKEND_H_
#define MM_FAMILY_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "mm/engine/arithmetic.h"
#include "mm/engine/backend.h"
#include "mm/engine/dtype.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/op.h"
#include "mm/family/plan.h"

namespace mm::family {

// What a backend is asked about: the operator at its version and the element types of its
// operands, its output and (QLinearMatMul) its scales. The forms of zero points, scales and C are
// the plan's; a backend that cannot do one of them refuses the call with a conformance gap
// (ConformanceGapError), as it does for a MatMul shape class it cannot do.
struct OpDesc {
  Op op = Op::kGemm;
  int version = 13;
  DType a_dtype = DType::kFloat;
  DType b_dtype = DType::kFloat;
  DType y_dtype = DType::kFloat;
  DType scale_dtype = DType::kFloat;  // QLinearMatMul only.

  // "Gemm-13 float", "MatMulInteger-10 uint8 x int8 -> int32",
  // "QLinearMatMul-21 uint8 x int8 -> uint8, float scales".
  std::string ToString() const;
  friend bool operator==(const OpDesc&, const OpDesc&) = default;
};

// The description of a planned problem.
OpDesc DescOf(const Plan& plan);

// How a backend sums the products of MatMulInteger and QLinearMatMul, as it declares it: a promise
// about its kernel with its source (the library's documentation), never a measurement.
enum class IntegerAccumulation : std::uint8_t {
  // Every product widened and summed in int32 modulo 2^32: the standard's value.
  kExact,
  // uint8 x int8 products added in adjacent pairs along K into a saturating int16, then in int32
  // (x86's vpmaddubsw, used without VNNI: oneDNN's "Nuances of int8 computations", ONNX Runtime's
  // U8S8 kernels): wrong wherever a pair's sum leaves int16. The judgement stays exact; a backend
  // declaring it FAILs there, and the declaration says why (an XFAIL's reason).
  kPairSums16,
};
// "exact int32 accumulation", "16-bit pair sums (saturating)".
std::string_view IntegerAccumulationName(IntegerAccumulation accumulation);

// The family's operators as one backend computes them. Not thread-safe unless the backend says so.
class FamilyBackend {
 public:
  virtual ~FamilyBackend() = default;

  // Whether the backend computes `desc` (never Op::kMatMul: Backend::Supports answers for it),
  // and how; the reason when not. Cheap; never computes.
  virtual Support SupportsOp(const OpDesc& desc) const = 0;
  // The arithmetic by which Gemm's float results are judged (the bound's accumulation type and
  // flushes); integer results are exact whatever is declared. Default: Y's own type.
  virtual Arithmetic DeclaredArithmetic(const OpDesc& desc) const {
    return Arithmetic::OwnType(desc.y_dtype);
  }
  // How the products of MatMulInteger and QLinearMatMul are summed for `desc` (not asked for
  // Gemm), on every CPU where SupportsOp accepts `desc`. Implementation() names it for the
  // integer operators, so that every result shows it. Default: kExact.
  virtual IntegerAccumulation DeclaredIntegerAccumulation(const OpDesc& /*desc*/) const {
    return IntegerAccumulation::kExact;
  }
  // Computes Y of `plan`, whose description SupportsOp accepted, into `y` (Y's type and shape,
  // not aliasing an input), writing every element: `y` arrives poisoned (ComputeOp), never
  // zero-filled, so an element left unwritten is wrong. The plan's views hold the inputs. Every
  // degenerate problem (K = 0: Gemm's Y is beta * C; an empty Y) comes here too: the backend's
  // answer to it is judged.
  virtual Status Compute(const Plan& plan, MutableTensorView y) = 0;
  // What computes `desc` here, as precisely as the backend knows ("reference loops, int32
  // wrap-around accumulation"); empty when it does not say. Asked right after Compute, it may
  // name what ran that problem (a kernel chosen per shape).
  virtual std::string Implementation(const OpDesc& /*desc*/) const { return {}; }
};

// `backend`'s support of `desc` (Gemm, MatMulInteger, QLinearMatMul): its FamilyBackend's answer,
// or kNo "<name> computes MatMul only, not Gemm" when it has none. Op::kMatMul is kNo too: MatMul
// is asked through Backend::Supports, with its shapes.
Support SupportOf(Backend& backend, const OpDesc& desc);

// Computes Y of `plan` (not Op::kMatMul) on `backend`: UNIMPLEMENTED with SupportOf's reason
// when it does not support it, else a new tensor of Y's type and shape, every byte `poison`
// before FamilyBackend::Compute writes it (its error, with the backend's name, when it fails).
// The default 0xFF is NaN in every float type and -1 or the largest value of the integer ones; a
// caller judging integer outputs computes again with another byte when an element still holds
// the first (conformance/running/poison.h), so that an unwritten element cannot pass by luck.
StatusOr<Tensor> ComputeOp(Backend& backend, const Plan& plan, unsigned char poison = 0xFF);

// ComputeOp into a Y the caller placed and poisoned (the conformance harness puts it between
// guards): UNIMPLEMENTED with SupportOf's reason when `backend` does not support `plan`,
// INVALID_ARGUMENT when `y` is not of Y's type and shape, else FamilyBackend::Compute's status
// (its error with the backend's name).
Status ComputeOpInto(Backend& backend, const Plan& plan, MutableTensorView y);

}  // namespace mm::family

#endif  // MM_FAMILY_BACKEND_H_
