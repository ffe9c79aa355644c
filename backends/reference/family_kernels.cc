#include "family_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace mm::reference {
namespace {

using family::Op;
using family::Plan;

// Every element of `t` widened exactly: integers to int64, floats to double.
template <class W>
std::vector<W> Widened(TensorView t) {
  std::vector<W> out(static_cast<std::size_t>(t.NumElements()));
  if (out.empty()) return out;
  VisitElementType(t.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    const T* data = t.Data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_integral_v<T> && std::is_integral_v<W>) {
        out[i] = static_cast<W>(data[i]);
      } else {
        out[i] = static_cast<W>(ToDouble(data[i]));
      }
    }
  });
  return out;
}

// The int32 accumulations of MatMulInteger and QLinearMatMul, row-major over Y.
std::vector<std::int32_t> IntegerAccumulations(const Plan& plan) {
  const MatMulPlan& p = plan.product;
  const std::vector<std::int64_t> a = Widened<std::int64_t>(plan.a);
  const std::vector<std::int64_t> b = Widened<std::int64_t>(plan.b);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(p.y_elements));
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_offset, b_offset] = p.BatchOffsets(batch);
    const auto [a_matrix, b_matrix] = plan.OperandMatrices(batch);
    for (std::int64_t i = 0; i < p.m; ++i) {
      const std::int64_t a_zp =
          plan.a_zero_point.ZeroPoint(plan.a_zero_point.Index(a_matrix, i, p.m));
      for (std::int64_t j = 0; j < p.n; ++j) {
        const std::int64_t b_zp =
            plan.b_zero_point.ZeroPoint(plan.b_zero_point.Index(b_matrix, j, p.n));
        std::uint32_t sum = 0;  // Wraps modulo 2^32, as the standard allows.
        for (std::int64_t kk = 0; kk < p.k; ++kk) {
          const auto product = static_cast<std::int32_t>((a[a_offset + i * p.k + kk] - a_zp) *
                                                         (b[b_offset + kk * p.n + j] - b_zp));
          sum += static_cast<std::uint32_t>(product);
        }
        acc[(batch * p.m + i) * p.n + j] = static_cast<std::int32_t>(sum);
      }
    }
  }
  return acc;
}

void MatMulInteger(const Plan& plan, MutableTensorView y) {
  const std::vector<std::int32_t> acc = IntegerAccumulations(plan);
  std::copy(acc.begin(), acc.end(), y.Data<std::int32_t>());
}

// acc * a_scale * b_scale / y_scale rounded half to even, exactly, or a value beyond every output
// (|q| > 1024) where it saturates. Each scale is m * 2^e with m an integer below 2^24, so the value
// is (acc * m_a * m_b) / m_y * 2^(e_a + e_b - e_y): integer division with the power of two on
// the side where it is a left shift. The double estimate only decides the saturated and the
// tiny values (its relative error is below 2^-50); rounding it would cross exact ties (a y_scale
// of 98 makes 147 / 98 = 1.5 come out 1.4999999999999998).
std::int64_t Requantized(std::int32_t acc, double a_scale, double b_scale, double y_scale) {
  const double estimate = acc * (a_scale * b_scale / y_scale);
  if (std::abs(estimate) > 1024) return estimate > 0 ? 1025 : -1025;
  if (std::abs(estimate) < 0.25) return 0;
  int ea = 0, eb = 0, ey = 0;
  const auto mantissa = [](double scale, int& exponent) {
    return static_cast<__int128>(std::ldexp(std::frexp(scale, &exponent), 24));
  };
  __int128 numerator = static_cast<__int128>(acc) * mantissa(a_scale, ea) * mantissa(b_scale, eb);
  __int128 denominator = mantissa(y_scale, ey);
  // Both shifts are small here: the value lies in [1/4, 1024] and |numerator| < 2^80.
  const int shift = (ea - 24) + (eb - 24) - (ey - 24);
  if (shift >= 0) {
    numerator <<= shift;
  } else {
    denominator <<= -shift;
  }
  const bool negative = numerator < 0;
  const __int128 magnitude = negative ? -numerator : numerator;
  __int128 q = magnitude / denominator;
  const __int128 twice_r = 2 * (magnitude % denominator);
  if (twice_r > denominator || (twice_r == denominator && (q & 1) != 0)) ++q;
  return static_cast<std::int64_t>(negative ? -q : q);
}

void QLinearMatMul(const Plan& plan, MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const std::vector<std::int32_t> acc = IntegerAccumulations(plan);
  const double y_scale = plan.y_scale.Scale(0);
  const std::int64_t y_zp = plan.y_zero_point.ZeroPoint(0);
  const bool is_signed = plan.y_dtype == DType::kInt8;
  const std::int64_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_matrix, b_matrix] = plan.OperandMatrices(batch);
    for (std::int64_t i = 0; i < p.m; ++i) {
      const double a_scale = plan.a_scale.Scale(plan.a_scale.Index(a_matrix, i, p.m));
      for (std::int64_t j = 0; j < p.n; ++j) {
        const double b_scale = plan.b_scale.Scale(plan.b_scale.Index(b_matrix, j, p.n));
        const std::int64_t index = (batch * p.m + i) * p.n + j;
        const std::int64_t q = Requantized(acc[index], a_scale, b_scale, y_scale) + y_zp;
        const std::int64_t v = std::clamp(q, lo, hi);
        if (is_signed) {
          y.Data<std::int8_t>()[index] = static_cast<std::int8_t>(v);
        } else {
          y.Data<std::uint8_t>()[index] = static_cast<std::uint8_t>(v);
        }
      }
    }
  }
}

// Gemm in W (double for float types, the unsigned type of Y's width for integers), rounded or
// wrapped once into T.
template <class T, bool kIntegral = std::is_integral_v<T>>
struct GemmAccumulator {
  using type = double;
};
template <class T>
struct GemmAccumulator<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <class T>
void Gemm(const Plan& plan, MutableTensorView y) {
  using W = typename GemmAccumulator<T>::type;
  using Read = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
  const MatMulPlan& p = plan.product;
  const family::GemmPlan& g = plan.gemm;
  const std::vector<Read> a = Widened<Read>(plan.a), b = Widened<Read>(plan.b);
  const std::vector<Read> c = g.c.data != nullptr ? Widened<Read>(g.c) : std::vector<Read>{};
  const W alpha = static_cast<W>(static_cast<Read>(g.alpha));
  const W beta = static_cast<W>(static_cast<Read>(g.beta));
  T* out = y.Data<T>();
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      W sum = 0;
      for (std::int64_t kk = 0; kk < p.k; ++kk) {
        const std::int64_t ai = g.trans_a ? kk * p.m + i : i * p.k + kk;
        const std::int64_t bi = g.trans_b ? j * p.k + kk : kk * p.n + j;
        sum += static_cast<W>(a[ai]) * static_cast<W>(b[bi]);
      }
      W value = alpha * sum;
      if (!c.empty()) value += beta * static_cast<W>(c[g.CIndex(i, j)]);
      if constexpr (std::is_integral_v<T>) {
        out[i * p.n + j] = static_cast<T>(value);  // Modulo 2^bits (two's complement, C++20).
      } else {
        out[i * p.n + j] = RoundFromDouble<T>(value);
      }
    }
  }
}

}  // namespace

Support FamilyKernels::SupportsOp(const family::OpDesc& desc) const {
  if (desc.op == Op::kMatMul) return Support::No("MatMul is the backend's own Supports");
  return Support::Native();
}

Arithmetic FamilyKernels::DeclaredArithmetic(const family::OpDesc& desc) const {
  if (IsFloat(desc.y_dtype)) return {DType::kDouble, false};
  return Arithmetic::OwnType(desc.y_dtype);
}

Status FamilyKernels::Compute(const Plan& plan, MutableTensorView y) {
  switch (plan.op) {
    case Op::kMatMulInteger:
      MatMulInteger(plan, y);
      return OkStatus();
    case Op::kQLinearMatMul:
      QLinearMatMul(plan, y);
      return OkStatus();
    case Op::kGemm:
      VisitDType(plan.y_dtype, [&](auto tag) { Gemm<CppType<decltype(tag)::value>>(plan, y); });
      return OkStatus();
    case Op::kMatMul:
      break;
  }
  return InvalidArgumentError("the reference computes MatMul through Backend::Prepare");
}

std::string FamilyKernels::Implementation(const family::OpDesc& desc) const {
  switch (desc.op) {
    case Op::kGemm:
      return IsFloat(desc.y_dtype) ? "reference loops, double accumulation, one rounding to " +
                                         std::string(DTypeName(desc.y_dtype))
                                   : "reference loops, wrap-around modulo 2^" +
                                         std::to_string(8 * DTypeSize(desc.y_dtype));
    case Op::kQLinearMatMul:
      return "reference loops, int32 wrap-around accumulation, requantized exactly (integer "
             "quotient, ties to even)";
    default:
      return "reference loops, int32 wrap-around accumulation";
  }
}

}  // namespace mm::reference
