// What the oneDNN backend computes of MatMul's family, and the refusals (onednn_family.h).
#include "onednn_family.h"

#include <string>

namespace mm::onednn_internal {
namespace {

using family::Op;

// The exact shifts to oneDNN's one exact pairing, u8 x s8, said in a by-conversion note; empty for
// uint8 x int8 itself.
std::string ShiftNote(const family::OpDesc& desc) {
  std::string note;
  if (desc.a_dtype == DType::kInt8) note = "int8 A shifted to uint8 (+128)";
  if (desc.b_dtype == DType::kUInt8) {
    note += std::string(note.empty() ? "" : ", ") + "uint8 B shifted to int8 (-128)";
  }
  if (note.empty()) return note;
  return note +
         ", the zero points with them: exact; oneDNN 2.6's matmul takes s8 weights only, "
         "and its s8 x s8 passes results through f32";
}

}  // namespace

Support OneDnnFamily::SupportsOp(const family::OpDesc& desc) const {
  switch (desc.op) {
    case Op::kMatMul:
      return Support::No("MatMul is the backend's own Supports");
    case Op::kGemm:
      return GemmSupport(desc);
    case Op::kMatMulInteger:
    case Op::kQLinearMatMul:
      break;
  }
  return Int8Support(desc);
}

Support OneDnnFamily::GemmSupport(const family::OpDesc& desc) const {
  const DType dtype = desc.y_dtype;
  if (dtype == DType::kDouble || !IsFloat(dtype)) {
    return Support::No("oneDNN has no " + std::string(DTypeName(dtype)) +
                       " matmul (its CPU matmul computes f32, bf16, f16 and int8 x int8 -> "
                       "int32 only; integer Gemm wraps modulo 2^bits in its own type)");
  }
  // The MatMul path's answer for the type: native, via f32 (with the reason), or no.
  return backend_.Supports(MatMulDesc{dtype, {1, 1}, {1, 1}});
}

Support OneDnnFamily::Int8Support(const family::OpDesc& desc) const {
  if (int8_.implementation.empty()) {
    return Support::No("oneDNN has no u8 x s8 -> s32 matmul on this CPU (ISA " + isa_ + ")");
  }
  if (!int8_.vnni) {
    return Support::No(
        "oneDNN runs its int8 matmul without VNNI on this CPU (ISA " + isa_ + ": " +
        int8_.implementation +
        "), with VPMADDUBSW, which adds pairs of u8 x s8 products into a saturating int16 "
        "(oneDNN's \"Nuances of int8 computations\", 1.1; s8 x s8 is shifted to u8 x s8 first, "
        "2.): 255*127 + 255*127 gives 32767, not 64770, where MatMulInteger forbids any overflow "
        "below 32 bits");
  }
  const std::string note = ShiftNote(desc);
  return note.empty() ? Support::Native() : Support::ByConversion(note);
}

Arithmetic OneDnnFamily::DeclaredArithmetic(const family::OpDesc& desc) const {
  if (desc.op == Op::kGemm) return backend_.DeclaredArithmetic(desc.y_dtype);
  return Arithmetic::OwnType(desc.y_dtype);
}

family::IntegerAccumulation OneDnnFamily::DeclaredIntegerAccumulation(
    const family::OpDesc& /*desc*/) const {
  // Accepted only on VNNI (or AMX) kernels: VPDPBUSD sums four u8 x s8 products into int32
  // without saturation (oneDNN's "Nuances of int8 computations", 1.2), and oneDNN is given no
  // attribute that takes its result through f32 (onednn_int8.cc).
  return family::IntegerAccumulation::kExact;
}

Status OneDnnFamily::Compute(const family::Plan& plan, MutableTensorView y) {
  const Support support = SupportsOp(family::DescOf(plan));
  if (!support.supported()) {
    return UnimplementedError("onednn cannot compute " + plan.ToString() + ": " + support.note);
  }
  switch (plan.op) {
    case Op::kGemm:
      return gemm_runner_.Compute(plan, !backend_.native(plan.y_dtype), y);
    case Op::kMatMulInteger:
      return int8_runner_.Accumulate(plan, y.Data<std::int32_t>());
    default:
      break;
  }
  acc_.resize(static_cast<std::size_t>(plan.product.y_elements));
  MM_RETURN_IF_ERROR(int8_runner_.Accumulate(plan, acc_.data()));
  RequantizeInto(plan, acc_.data(), y);
  return OkStatus();
}

std::string OneDnnFamily::Implementation(const family::OpDesc& desc) const {
  if (!SupportsOp(desc).supported()) return {};
  if (desc.op == Op::kGemm) {
    const bool native = backend_.native(desc.y_dtype);
    const DType runs = native ? desc.y_dtype : DType::kFloat;
    const std::string impl = gemm_runner_.implementation().empty()
                                 ? backend_.probe(runs).implementation
                                 : gemm_runner_.implementation();
    std::string how = "oneDNN " + impl + " " + ShortName(runs) + " matmul (ISA " + isa_ +
                      "): alpha as its output scale, beta C as a sum post-op over C broadcast "
                      "into Y (beta = 0: C unread), transposes as strides, f32 accumulation";
    if (!native) {
      how = std::string(ShortName(desc.y_dtype)) +
            " via f32: A, B and C converted exactly, Y rounded once; " + how;
    }
    return how;
  }
  std::string how = "oneDNN " + int8_.implementation + " u8 x s8 -> s32 matmul (ISA " + isa_ +
                    ") without attributes, zero points subtracted in mm modulo 2^32, " +
                    std::string(family::IntegerAccumulationName(DeclaredIntegerAccumulation(desc)));
  if (desc.op == Op::kQLinearMatMul) how += "; requantized exactly in mm (RequantizeExact)";
  return how;
}

}  // namespace mm::onednn_internal
