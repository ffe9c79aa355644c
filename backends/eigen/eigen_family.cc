#include "mm/backends/eigen/eigen_family.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mm/family/requantize.h"

namespace mm::eigen_internal {
namespace {

using family::Op;
using family::OpDesc;
using family::Plan;
using family::QuantParam;

bool IsEightBit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

// Why `desc` names types its operator does not have, or "" when its types are the operator's.
std::string TypeMismatch(const OpDesc& desc) {
  switch (desc.op) {
    case Op::kGemm:
      if (!IsEightBit(desc.y_dtype)) return "";
      break;
    case Op::kMatMulInteger:
      if (IsEightBit(desc.a_dtype) && IsEightBit(desc.b_dtype) && desc.y_dtype == DType::kInt32) {
        return "";
      }
      break;
    case Op::kQLinearMatMul:
      if (IsEightBit(desc.a_dtype) && IsEightBit(desc.b_dtype) && IsEightBit(desc.y_dtype) &&
          (desc.scale_dtype == DType::kFloat || desc.scale_dtype == DType::kFloat16 ||
           desc.scale_dtype == DType::kBFloat16)) {
        return "";
      }
      break;
    case Op::kMatMul:
      return "MatMul is the eigen backend's own Supports";
  }
  return desc.ToString() + " has types its operator does not take";
}

// `t` widened to int32 less its zero point: element `index` of operand matrix index / per_matrix
// at row (or column) `line(index)` of `extent` takes that line's zero point.
template <class Line>
std::vector<std::int32_t> LessZeroPoint(TensorView t, const QuantParam& zero_point,
                                        std::int64_t per_matrix, std::int64_t extent,
                                        const Line& line) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(t.NumElements()));
  VisitElementType(t.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    const T* data = t.Data<T>();
    for (std::int64_t index = 0; index < static_cast<std::int64_t>(out.size()); ++index) {
      const std::int64_t zp =
          zero_point.ZeroPoint(zero_point.Index(index / per_matrix, line(index), extent));
      out[static_cast<std::size_t>(index)] = static_cast<std::int32_t>(data[index] - zp);
    }
  });
  return out;
}

// The int32 accumulations of MatMulInteger and QLinearMatMul into `acc` (Y's elements,
// row-major): each difference is in [-255, 255], so every product is exact in int32, and the
// eigen backend's int32 MatMul sums them modulo 2^32 over the same numpy.matmul plan.
Status Accumulate(Backend& matmul, const Plan& plan, MutableTensorView acc) {
  const MatMulPlan& p = plan.product;
  if (p.y_elements == 0) return OkStatus();
  // A is [..., M, K] (1-D: [K]) and B [..., K, N] (1-D: [K]); a zero-size matrix has no elements.
  const std::int64_t a_matrix = std::max<std::int64_t>(1, p.m * p.k);
  const std::int64_t b_matrix = std::max<std::int64_t>(1, p.k * p.n);
  const std::int64_t k = std::max<std::int64_t>(1, p.k), n = p.n;
  const std::vector<std::int32_t> a = LessZeroPoint(plan.a, plan.a_zero_point, a_matrix, p.m,
                                                    [&](std::int64_t i) { return i / k % p.m; });
  const std::vector<std::int32_t> b =
      LessZeroPoint(plan.b, plan.b_zero_point, b_matrix, n, [&](std::int64_t i) { return i % n; });
  const Dims a_dims(plan.a.dims.begin(), plan.a.dims.end());
  const Dims b_dims(plan.b.dims.begin(), plan.b.dims.end());
  MM_ASSIGN_OR_RETURN(const MatMulPlan int32_plan, PlanMatMul({DType::kInt32, a_dims, b_dims}));
  MM_ASSIGN_OR_RETURN(std::unique_ptr<MatMulPrimitive> product, matmul.Prepare(int32_plan));
  return product->Execute({DType::kInt32, plan.a.dims, a.data()},
                          {DType::kInt32, plan.b.dims, b.data()}, acc);
}

// y = saturate(round_half_even(acc a_scale b_scale / y_scale) + y_zero_point), exactly.
template <class TY>
void Requantize(const Plan& plan, const std::int32_t* acc, MutableTensorView y) {
  const auto y_scale = static_cast<float>(plan.y_scale.Scale(0));
  const std::int64_t y_zp = plan.y_zero_point.ZeroPoint(0);
  const family::OutputRange range{std::numeric_limits<TY>::min(), std::numeric_limits<TY>::max()};
  TY* out = y.Data<TY>();
  family::ForEachScaledElement(plan, [&](std::int64_t index, float a_scale, float b_scale) {
    out[index] = static_cast<TY>(
        family::RequantizeExact(acc[index], a_scale, b_scale, y_scale, y_zp, range));
  });
}

}  // namespace

Support EigenFamily::SupportsOp(const OpDesc& desc) const {
  if (const std::string mismatch = TypeMismatch(desc); !mismatch.empty()) {
    return Support::No(mismatch);
  }
  switch (desc.op) {
    case Op::kGemm:
      switch (desc.y_dtype) {
        case DType::kFloat:
        case DType::kDouble:
          return Support::Native();
        case DType::kFloat16:
        case DType::kBFloat16:
          return Support::ByConversion(
              std::string(DTypeName(desc.y_dtype)) +
              " via float32: A, B and C widened to float32, Eigen's float32 GEMM, Y rounded once");
        case DType::kInt64:
        case DType::kUInt64:
          return Support::ByConversion(std::string(DTypeName(desc.y_dtype)) +
                                       " as uint64 (the same bits): Eigen's uint64 GEMM, "
                                       "wrapping modulo 2^64");
        default:
          return Support::ByConversion(std::string(DTypeName(desc.y_dtype)) +
                                       " via uint64: A, B and C widened, Eigen's uint64 GEMM, Y "
                                       "truncated (exact modulo 2^32)");
      }
    case Op::kMatMulInteger:
      return Support::ByConversion(
          "a - a_zero_point and b - b_zero_point widened to int32, the eigen backend's int32 "
          "MatMul (wrapping modulo 2^32)");
    default:
      return Support::ByConversion(
          "the int32 accumulation of MatMulInteger, then each element requantized exactly (round "
          "half to even of the exact rational)");
  }
}

Arithmetic EigenFamily::DeclaredArithmetic(const OpDesc& desc) const {
  // Source: Eigen 3.4.0 (Debian 3.4.0-4), GeneralMatrixMatrix.h and GeneralBlockPanelKernel.h:
  // the GEMM multiplies and adds in its Scalar, alpha scaling each block's sum as it is added to
  // the destination (`pmadd(alpha, acc, r)`); float16 and bfloat16 are widened exactly to float
  // by this backend and Y rounded once; the integer GEMM runs in uint64, wrapping.
  if (desc.op != Op::kGemm || !IsFloat(desc.y_dtype)) return Arithmetic::OwnType(desc.y_dtype);
  return {desc.y_dtype == DType::kDouble ? DType::kDouble : DType::kFloat, false};
}

Status EigenFamily::Compute(const Plan& plan, MutableTensorView y) {
  switch (plan.op) {
    case Op::kGemm:
      return EigenGemm(plan, y);
    case Op::kMatMulInteger:
      return Accumulate(matmul_, plan, y);
    case Op::kQLinearMatMul: {
      std::vector<std::int32_t> acc(static_cast<std::size_t>(plan.product.y_elements));
      MM_RETURN_IF_ERROR(Accumulate(matmul_, plan, {DType::kInt32, y.dims, acc.data()}));
      if (plan.y_dtype == DType::kInt8) {
        Requantize<std::int8_t>(plan, acc.data(), y);
      } else {
        Requantize<std::uint8_t>(plan, acc.data(), y);
      }
      return OkStatus();
    }
    case Op::kMatMul:
      break;
  }
  return InvalidArgumentError("the eigen backend computes MatMul through Backend::Prepare");
}

std::string EigenFamily::Implementation(const OpDesc& desc) const {
  switch (desc.op) {
    case Op::kGemm:
      if (desc.y_dtype == DType::kFloat || desc.y_dtype == DType::kDouble) {
        return "Eigen GEMM in " + std::string(DTypeName(desc.y_dtype)) +
               ", Y preset to beta C, transposes read in place";
      }
      return IsFloat(desc.y_dtype)
                 ? "Eigen float32 GEMM, Y rounded once to " + std::string(DTypeName(desc.y_dtype))
                 : "Eigen uint64 GEMM, wrapping, truncated to " +
                       std::string(DTypeName(desc.y_dtype));
    case Op::kQLinearMatMul:
      return "eigen int32 MatMul of the zero-point-corrected operands, wrapping; exact "
             "requantization";
    default:
      return "eigen int32 MatMul of the zero-point-corrected operands, wrapping";
  }
}

}  // namespace mm::eigen_internal
