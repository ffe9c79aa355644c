#include "mm/conformance/self_check/planted_family.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mm/backends/reference/reference_backend.h"
#include "mm/family/backend.h"
#include "mm/family/requantize.h"

namespace mm::self_check {
namespace {

using family::Op;
using family::Plan;
using family::QuantForm;

// Calls fn(index, a_matrix, b_matrix, a_offset, b_offset, i, j) for every element of Y, row-major.
template <class F>
void ForEachElement(const Plan& plan, F fn) {
  const MatMulPlan& p = plan.product;
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_offset, b_offset] = p.BatchOffsets(batch);
    const auto [a_matrix, b_matrix] = plan.OperandMatrices(batch);
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        fn((batch * p.m + i) * p.n + j, a_matrix, b_matrix, a_offset, b_offset, i, j);
      }
    }
  }
}

// uint8 A x int8 B as a vpmaddubsw kernel sums it: raw products added in pairs along K saturated
// to int16, the pairs in int32 (wrapping), then the zero points' terms subtracted:
// sum (a - za)(b - zb) = sum ab - zb sum a - za sum b + K za zb.
std::vector<std::int32_t> SaturatingPairAccumulations(const Plan& plan) {
  const MatMulPlan& p = plan.product;
  const auto* a = plan.a.Data<std::uint8_t>();
  const auto* b = plan.b.Data<std::int8_t>();
  std::vector<std::int32_t> acc(static_cast<std::size_t>(p.y_elements));
  ForEachElement(plan, [&](std::int64_t index, std::int64_t a_matrix, std::int64_t b_matrix,
                           std::int64_t a_offset, std::int64_t b_offset, std::int64_t i,
                           std::int64_t j) {
    const std::int64_t za = plan.a_zero_point.ZeroPoint(plan.a_zero_point.Index(a_matrix, i, p.m));
    const std::int64_t zb = plan.b_zero_point.ZeroPoint(plan.b_zero_point.Index(b_matrix, j, p.n));
    std::uint32_t sum = 0;
    std::int64_t sum_a = 0, sum_b = 0;
    for (std::int64_t kk = 0; kk < p.k; kk += 2) {
      std::int64_t pair = 0;
      for (std::int64_t t = kk; t < std::min(kk + 2, p.k); ++t) {
        const std::int64_t av = a[a_offset + i * p.k + t], bv = b[b_offset + t * p.n + j];
        pair += av * bv;
        sum_a += av;
        sum_b += bv;
      }
      sum += static_cast<std::uint32_t>(std::clamp<std::int64_t>(pair, -32768, 32767));
    }
    sum -= static_cast<std::uint32_t>(zb * sum_a + za * sum_b - p.k * za * zb);
    acc[static_cast<std::size_t>(index)] = static_cast<std::int32_t>(sum);
  });
  return acc;
}

// How a requantization rounds acc * a_scale * b_scale / y_scale.
enum class Rounding { kExact, kHalfAwayFromZero };

// QLinearMatMul's y from the accumulations `acc`.
void WriteRequantized(const Plan& plan, const std::vector<std::int32_t>& acc, Rounding rounding,
                      MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const bool is_signed = plan.y_dtype == DType::kInt8;
  const family::OutputRange range{is_signed ? -128 : 0, is_signed ? 127 : 255};
  const auto y_scale = static_cast<float>(plan.y_scale.Scale(0));
  const std::int64_t zp = plan.y_zero_point.ZeroPoint(0);
  ForEachElement(plan, [&](std::int64_t index, std::int64_t a_matrix, std::int64_t b_matrix,
                           std::int64_t, std::int64_t, std::int64_t i, std::int64_t j) {
    const auto a_scale =
        static_cast<float>(plan.a_scale.Scale(plan.a_scale.Index(a_matrix, i, p.m)));
    const auto b_scale =
        static_cast<float>(plan.b_scale.Scale(plan.b_scale.Index(b_matrix, j, p.n)));
    const std::int32_t a = acc[static_cast<std::size_t>(index)];
    std::int64_t v = 0;
    if (rounding == Rounding::kExact) {
      v = family::RequantizeExact(a, a_scale, b_scale, y_scale, zp, range);
    } else {
      const double scaled = a * (static_cast<double>(a_scale) * b_scale / y_scale);
      v = std::clamp(static_cast<std::int64_t>(std::round(scaled)) + zp, range.lo, range.hi);
    }
    if (is_signed) {
      y.Data<std::int8_t>()[index] = static_cast<std::int8_t>(v);
    } else {
      y.Data<std::uint8_t>()[index] = static_cast<std::uint8_t>(v);
    }
  });
}

bool IsSaturatingPair(const Plan& plan) {
  return (plan.op == Op::kMatMulInteger || plan.op == Op::kQLinearMatMul) &&
         plan.a_dtype == DType::kUInt8 && plan.b_dtype == DType::kInt8;
}

// The reference's family loops with one fault.
class PlantedFamilyKernels final : public family::FamilyBackend {
 public:
  PlantedFamilyKernels(FamilyFault fault, std::string why, family::FamilyBackend& reference)
      : fault_(fault), why_(std::move(why)), reference_(reference) {}

  Support SupportsOp(const family::OpDesc& desc) const override {
    return reference_.SupportsOp(desc);
  }
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override {
    return reference_.DeclaredArithmetic(desc);
  }
  std::string Implementation(const family::OpDesc& desc) const override {
    return reference_.Implementation(desc) + (fault_ == FamilyFault::kNone ? "" : "; " + why_);
  }

  Status Compute(const Plan& plan, MutableTensorView y) override {
    if (!FaultCanShow(fault_, plan)) return reference_.Compute(plan, y);
    if (fault_ == FamilyFault::kWritePastY) return WritePastY(plan, y);
    Plan wrong = plan;
    Tensor bias;  // kBiasWrongAxis's C, per row.
    switch (fault_) {
      case FamilyFault::kNone:
        break;
      case FamilyFault::kSaturatingPairs:
        return Accumulated(plan, SaturatingPairAccumulations(plan), Rounding::kExact, y);
      case FamilyFault::kHalfAwayFromZero: {
        MM_ASSIGN_OR_RETURN(std::vector<std::int32_t> acc, Accumulations(plan));
        return Accumulated(plan, acc, Rounding::kHalfAwayFromZero, y);
      }
      case FamilyFault::kIgnoredBZeroPoint:
        wrong.b_zero_point = {};
        break;
      case FamilyFault::kPerTensorZeroPoint:
        wrong.a_zero_point.form = QuantForm::kPerTensor;
        break;
      case FamilyFault::kIgnoredBeta:
        wrong.gemm.beta = 1;
        break;
      case FamilyFault::kBiasWrongAxis: {
        MM_ASSIGN_OR_RETURN(bias, RowBias(plan));
        wrong.gemm.c = bias.view();
        wrong.gemm.c_row_stride = 1;
        wrong.gemm.c_col_stride = 0;
        break;
      }
      case FamilyFault::kIgnoredTransB:
        wrong.gemm.trans_b = false;
        break;
      case FamilyFault::kWritePastY:
        break;
    }
    return reference_.Compute(wrong, y);
  }

 private:
  // The reference's Y, and the element after it flipped.
  Status WritePastY(const Plan& plan, MutableTensorView y) {
    MM_RETURN_IF_ERROR(reference_.Compute(plan, y));
    // Y sits between the harness's guards, so this write changes a guard byte and nothing else.
    const std::size_t size = DTypeSize(y.dtype);
    auto* past = static_cast<unsigned char*>(y.data) + y.NumElements() * size;
    for (std::size_t i = 0; i < size; ++i) past[i] = static_cast<unsigned char>(~past[i]);
    return OkStatus();
  }

  // The reference's exact int32 accumulations of `plan` (its MatMulInteger).
  StatusOr<std::vector<std::int32_t>> Accumulations(const Plan& plan) {
    Plan twin = plan;
    twin.op = Op::kMatMulInteger;
    twin.y_dtype = DType::kInt32;
    MM_ASSIGN_OR_RETURN(Tensor acc, Tensor::Create(DType::kInt32, plan.y_dims()));
    MM_RETURN_IF_ERROR(reference_.Compute(twin, acc.mutable_view()));
    const auto values = acc.Values<std::int32_t>();
    return std::vector<std::int32_t>(values.begin(), values.end());
  }

  // MatMulInteger's Y, or QLinearMatMul's requantized, from `acc`.
  static Status Accumulated(const Plan& plan, const std::vector<std::int32_t>& acc,
                            Rounding rounding, MutableTensorView y) {
    if (plan.op == Op::kQLinearMatMul) {
      WriteRequantized(plan, acc, rounding, y);
    } else {
      std::copy(acc.begin(), acc.end(), y.Data<std::int32_t>());
    }
    return OkStatus();
  }

  // The [N] bias read per row: element i is C[i mod N].
  static StatusOr<Tensor> RowBias(const Plan& plan) {
    const std::int64_t m = plan.product.m, n = plan.product.n;
    MM_ASSIGN_OR_RETURN(Tensor bias, Tensor::Create(plan.gemm.c.dtype, {m}));
    const std::size_t size = DTypeSize(plan.gemm.c.dtype);
    for (std::int64_t i = 0; i < m; ++i) {
      std::memcpy(static_cast<std::byte*>(bias.raw_data()) + i * size,
                  static_cast<const std::byte*>(plan.gemm.c.data) + (i % n) * size, size);
    }
    return bias;
  }

  FamilyFault fault_;
  std::string why_;
  family::FamilyBackend& reference_;
};

class PlantedFamily final : public Backend {
 public:
  explicit PlantedFamily(PlantedFamilyBackend planted)
      : planted_(std::move(planted)),
        kernels_(planted_.fault, planted_.why, *reference_.family()) {}
  std::string_view name() const override { return planted_.name; }
  Support Supports(const MatMulDesc& desc) const override { return reference_.Supports(desc); }
  Arithmetic DeclaredArithmetic(DType dtype) const override {
    return reference_.DeclaredArithmetic(dtype);
  }
  family::FamilyBackend* family() override { return &kernels_; }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return reference_.Prepare(plan);
  }

 private:
  PlantedFamilyBackend planted_;
  ReferenceBackend reference_;
  PlantedFamilyKernels kernels_;
};

bool AnyNonZeroZeroPoint(const family::QuantParam& zp) {
  if (zp.form == QuantForm::kAbsent) return false;
  for (std::int64_t i = 0; i < zp.tensor.NumElements(); ++i) {
    if (zp.ZeroPoint(i) != 0) return true;
  }
  return false;
}

}  // namespace

const std::vector<PlantedFamilyBackend>& PlantedFamilyBackends() {
  using conformance::Verdict;
  static const std::vector<PlantedFamilyBackend> all = {
      {FamilyFault::kNone, "family_correct",
       "the reference's answer through the same wrapper (the control)", Verdict::kPass, ""},
      {FamilyFault::kSaturatingPairs, "family_saturating_pairs",
       "uint8 x int8 products added in pairs saturated to int16 (vpmaddubsw)", Verdict::kFail, ""},
      {FamilyFault::kIgnoredBZeroPoint, "family_ignored_b_zero_point", "b's zero point taken as 0",
       Verdict::kFail, ""},
      {FamilyFault::kPerTensorZeroPoint, "family_per_tensor_zero_point",
       "a per-row zero point of A applied as per tensor (element 0)", Verdict::kFail, ""},
      {FamilyFault::kHalfAwayFromZero, "family_half_away_from_zero",
       "requantization ties rounded away from zero", Verdict::kFail, ""},
      {FamilyFault::kIgnoredBeta, "family_ignored_beta", "Gemm's beta taken as 1", Verdict::kFail,
       ""},
      {FamilyFault::kBiasWrongAxis, "family_bias_wrong_axis",
       "Gemm's [N] bias broadcast along the wrong axis (C[i] for Y[i, j])", Verdict::kFail, ""},
      {FamilyFault::kIgnoredTransB, "family_ignored_trans_b",
       "Gemm's transB ignored (B read as [K, N])", Verdict::kFail, ""},
      {FamilyFault::kWritePastY, "family_write_past_y",
       "one element written past the end of Y (the right Y before it)", Verdict::kError,
       " past the end of Y"},
  };
  return all;
}

std::unique_ptr<Backend> MakePlantedFamilyBackend(const PlantedFamilyBackend& planted) {
  return std::make_unique<PlantedFamily>(planted);
}

const std::vector<std::string>& ClassesAimedAt(FamilyFault fault) {
  static const std::map<FamilyFault, std::vector<std::string>> targets = {
      {FamilyFault::kNone, {}},
      {FamilyFault::kSaturatingPairs,
       {"matmulinteger/saturating-pairs/K=8", "matmulinteger/saturating-pairs/K=7",
        "matmulinteger/saturating-pairs/a_zero_point=128", "qlinearmatmul/saturating-pairs/K=8",
        "qlinearmatmul/saturating-pairs/K=7", "qlinearmatmul/saturating-pairs/a_zero_point=128"}},
      {FamilyFault::kIgnoredBZeroPoint,
       {"matmulinteger/zero-points/0,128", "qlinearmatmul/zero-points/0,128",
        "matmulinteger/2d/zp-per-column"}},
      {FamilyFault::kPerTensorZeroPoint,
       {"matmulinteger/zero-points/per-row-0,255,128",
        "qlinearmatmul/zero-points/per-row-0,255,128", "matmulinteger/2d/zp-per-row",
        "qlinearmatmul/2d/zp-per-row"}},
      {FamilyFault::kHalfAwayFromZero,
       {"qlinearmatmul/ties/a_scale=0.5", "qlinearmatmul/ties/y_scale=2",
        "qlinearmatmul/ties/per-row,per-column-scales"}},
      {FamilyFault::kIgnoredBeta,
       {"gemm/transB/C[M,N]/alpha-negative,beta-0", "gemm/noTrans/C[N]/alpha-0.1,beta-0",
        "gemm/noTrans/C[N]/alpha-negative,beta-negative/K=0"}},
      {FamilyFault::kBiasWrongAxis, {"gemm/transB/C[N]/alpha-1,beta-negative"}},
      {FamilyFault::kIgnoredTransB, {"gemm/transB/C[N]/alpha-1,beta-negative"}},
      // Classes other plants aim at already, so the self-check runs no more cases for it.
      {FamilyFault::kWritePastY,
       {"gemm/transB/C[N]/alpha-1,beta-negative", "matmulinteger/zero-points/0,128",
        "qlinearmatmul/ties/a_scale=0.5"}},
  };
  return targets.at(fault);
}

bool FaultCanShow(FamilyFault fault, const Plan& plan) {
  const bool empty = plan.product.y_elements == 0;
  switch (fault) {
    case FamilyFault::kNone:
      return false;
    case FamilyFault::kSaturatingPairs:
      return !empty && IsSaturatingPair(plan) && plan.product.k >= 2;
    case FamilyFault::kIgnoredBZeroPoint:
      return !empty && plan.op != Op::kGemm && AnyNonZeroZeroPoint(plan.b_zero_point);
    case FamilyFault::kPerTensorZeroPoint:
      return !empty && plan.op != Op::kGemm && plan.a_zero_point.form == QuantForm::kPerRow;
    case FamilyFault::kHalfAwayFromZero:
      return !empty && plan.op == Op::kQLinearMatMul;
    case FamilyFault::kIgnoredBeta:
      return !empty && plan.op == Op::kGemm && plan.gemm.beta != 1 &&
             plan.gemm.c_form != family::CForm::kAbsent;
    case FamilyFault::kBiasWrongAxis:
      return !empty && plan.op == Op::kGemm && plan.gemm.c_form == family::CForm::kRow;
    case FamilyFault::kIgnoredTransB:
      return !empty && plan.op == Op::kGemm && plan.gemm.trans_b;
    case FamilyFault::kWritePastY:
      return true;
  }
  return false;
}

}  // namespace mm::self_check
