// MatMulInteger's and QLinearMatMul's exact answers: the accumulation in int64 (every product of
// two differences of 8-bit values is below 2^16 in magnitude, so 2^47 of them fit), wrapped to
// int32 where it leaves it, and QLinearMatMul's exact requantization.
#include <cstdint>
#include <limits>
#include <vector>

#include "exact_internal.h"
#include "mm/family/requantize.h"

namespace mm::family::internal {
namespace {

// The exact sum of (a - a_zp)(b - b_zp) of every element of Y, row-major.
template <class TA, class TB>
std::vector<std::int64_t> Accumulate(const Plan& plan) {
  const MatMulPlan& p = plan.product;
  std::vector<std::int64_t> acc(static_cast<std::size_t>(p.y_elements), 0);
  if (p.y_elements == 0 || p.k == 0) return acc;
  const TA* a = plan.a.Data<TA>();
  const TB* b = plan.b.Data<TB>();
  std::vector<std::int64_t> b_zero(static_cast<std::size_t>(p.n));
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_offset, b_offset] = p.BatchOffsets(batch);
    const auto [a_matrix, b_matrix] = plan.OperandMatrices(batch);
    for (std::int64_t j = 0; j < p.n; ++j) {
      b_zero[j] = plan.b_zero_point.ZeroPoint(plan.b_zero_point.Index(b_matrix, j, p.n));
    }
    std::int64_t* y = acc.data() + batch * p.m * p.n;
    for (std::int64_t i = 0; i < p.m; ++i) {
      const std::int64_t a_zero =
          plan.a_zero_point.ZeroPoint(plan.a_zero_point.Index(a_matrix, i, p.m));
      for (std::int64_t kk = 0; kk < p.k; ++kk) {
        const std::int64_t da = a[a_offset + i * p.k + kk] - a_zero;
        const TB* b_row = b + b_offset + kk * p.n;
        for (std::int64_t j = 0; j < p.n; ++j) y[i * p.n + j] += da * (b_row[j] - b_zero[j]);
      }
    }
  }
  return acc;
}

std::vector<std::int64_t> AccumulateAny(const Plan& plan) {
  const bool a_signed = plan.a_dtype == DType::kInt8, b_signed = plan.b_dtype == DType::kInt8;
  if (a_signed && b_signed) return Accumulate<std::int8_t, std::int8_t>(plan);
  if (a_signed) return Accumulate<std::int8_t, std::uint8_t>(plan);
  if (b_signed) return Accumulate<std::uint8_t, std::int8_t>(plan);
  return Accumulate<std::uint8_t, std::uint8_t>(plan);
}

// acc modulo 2^32 as int32 (two's complement), marking `flags` where it differs from acc.
std::int32_t Wrap(std::int64_t acc, FamilyOracle& out, std::size_t index) {
  const auto wrapped = static_cast<std::int32_t>(static_cast<std::uint32_t>(acc));
  if (wrapped != acc) {
    if (out.outside_int32.empty()) out.outside_int32.resize(out.y.NumElements(), 0);
    out.outside_int32[index] = 1;
    ++out.outside_int32_count;
  }
  return wrapped;
}

// QLinearMatMul's requantization of every element, with its float32 range, and where the zero
// point's order changes them, the other reading's.
template <class TY>
void Requantize(const Plan& plan, const std::vector<std::int64_t>& acc, FamilyOracle& out) {
  const OutputRange range{std::numeric_limits<TY>::min(), std::numeric_limits<TY>::max()};
  const auto y_scale = static_cast<float>(plan.y_scale.Scale(0));
  const std::int64_t y_zero = plan.y_zero_point.ZeroPoint(0);
  TY* y = out.y.Data<TY>();
  out.y_low.resize(acc.size());
  out.y_high.resize(acc.size());
  ForEachScaledElement(plan, [&](std::int64_t element, float a_scale, float b_scale) {
    const auto index = static_cast<std::size_t>(element);
    const std::int32_t wrapped = Wrap(acc[index], out, index);
    const std::int64_t exact = RequantizeExact(wrapped, a_scale, b_scale, y_scale, y_zero, range);
    const RequantizedRange r =
        RequantizeFloat32Range(wrapped, a_scale, b_scale, y_scale, y_zero, range);
    y[index] = static_cast<TY>(exact);
    out.y_low[index] = static_cast<std::int16_t>(r.lo);
    out.y_high[index] = static_cast<std::int16_t>(r.hi);
    // An even zero point keeps a half's even neighbour even: the readings agree.
    if ((y_zero & 1) == 0) return;
    constexpr auto kBefore = ZeroPointOrder::kBeforeRounding;
    const std::int64_t other =
        RequantizeExact(wrapped, a_scale, b_scale, y_scale, y_zero, range, kBefore);
    const RequantizedRange o =
        RequantizeFloat32Range(wrapped, a_scale, b_scale, y_scale, y_zero, range, kBefore);
    if (other == exact && o.lo == r.lo && o.hi == r.hi) return;
    out.ambiguous.push_back({.index = static_cast<std::int64_t>(index),
                             .ambiguity = Ambiguity::kQLinearMatMulZeroPointBeforeRounding,
                             .skipped = {},
                             .other_y = other,
                             .other_low = o.lo,
                             .other_high = o.hi});
  });
}

}  // namespace

StatusOr<FamilyOracle> ExactInteger(const Plan& plan) {
  FamilyOracle out;
  MM_ASSIGN_OR_RETURN(out.y, Tensor::Create(plan.y_dtype, plan.y_dims()));
  const std::vector<std::int64_t> acc = AccumulateAny(plan);
  if (plan.op == Op::kMatMulInteger) {
    std::int32_t* y = out.y.Data<std::int32_t>();
    for (std::size_t i = 0; i < acc.size(); ++i) y[i] = Wrap(acc[i], out, i);
  } else if (plan.y_dtype == DType::kInt8) {
    Requantize<std::int8_t>(plan, acc, out);
  } else {
    Requantize<std::uint8_t>(plan, acc, out);
  }
  return out;
}

}  // namespace mm::family::internal
