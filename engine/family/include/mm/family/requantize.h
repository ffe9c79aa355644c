// QLinearMatMul's requantization, exactly: y = saturate(round_half_even(acc * a_scale * b_scale /
// y_scale) + y_zero_point), computed as an exact rational (every scale is a float32 value, so a
// dyadic rational m * 2^e), and the range of y a float32 evaluation of the multiplier can give
// (the one-unit rule, docs/family.md).
#ifndef MM_FAMILY_REQUANTIZE_H_
#define MM_FAMILY_REQUANTIZE_H_

#include <cstdint>

#include "mm/family/plan.h"

namespace mm::family {

// The integer range of QLinearMatMul's output type: [-128, 127] (int8) or [0, 255] (uint8).
struct OutputRange {
  std::int64_t lo = 0, hi = 255;
};

// Where y_zero_point is added. ONNX's specification rounds x / y_scale half to even and then adds
// y_zero_point; its reference evaluator (onnx/reference/ops/op_qlinear_matmul.py, v1.22.0) adds it
// and then rounds. They differ at an exact half with an odd zero point (ambiguity.h:
// kQLinearMatMulZeroPointBeforeRounding).
enum class ZeroPointOrder : bool { kAfterRounding, kBeforeRounding };

// round_half_even(acc * a_scale * b_scale / y_scale) + zero_point (kAfterRounding), or
// round_half_even(acc * a_scale * b_scale / y_scale + zero_point) (kBeforeRounding), saturated to
// `range`, with the product and quotient exact (no float rounding anywhere). The scales must be
// positive finite values of float32 (float16 and bfloat16 values are float32 values).
std::int64_t RequantizeExact(std::int64_t acc, float a_scale, float b_scale, float y_scale,
                             std::int64_t zero_point, OutputRange range,
                             ZeroPointOrder order = ZeroPointOrder::kAfterRounding);

// The outputs a float32 evaluation of the multiplier can give for the same element, as [lo, hi]
// (lo <= RequantizeExact <= hi). The evaluations (docs/family.md, "The one-unit rule"):
// the multiplier M in each order a*b/y, a*(b/y) and (a/y)*b, each operation rounded to float32,
// or computed in double and rounded to float32 once;
// acc converted to float32 (fa); then fa*M rounded to float32, fa*M exact, acc*M rounded to
// double, or acc*M exact; each rounded to nearest and plus zero_point in `order` (kBeforeRounding
// also: the zero point added in double, then rounded), saturated. A NaN evaluation (0 * infinity,
// when a multiplier overflows float32) is none and is left out.
struct RequantizedRange {
  std::int64_t lo = 0, hi = 0;
};
RequantizedRange RequantizeFloat32Range(std::int64_t acc, float a_scale, float b_scale,
                                        float y_scale, std::int64_t zero_point, OutputRange range,
                                        ZeroPointOrder order = ZeroPointOrder::kAfterRounding);

// Calls visit(index, a_scale, b_scale) for every element of Y of a planned QLinearMatMul, row-major
// (index into Y), with the scales of its own row of a and column of b as float (every scale type
// is a float32 value, so exactly).
template <class Visit>
void ForEachScaledElement(const Plan& plan, const Visit& visit) {
  const MatMulPlan& p = plan.product;
  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    const auto [a_matrix, b_matrix] = plan.OperandMatrices(batch);
    for (std::int64_t i = 0; i < p.m; ++i) {
      const auto a_scale =
          static_cast<float>(plan.a_scale.Scale(plan.a_scale.Index(a_matrix, i, p.m)));
      for (std::int64_t j = 0; j < p.n; ++j) {
        const auto b_scale =
            static_cast<float>(plan.b_scale.Scale(plan.b_scale.Index(b_matrix, j, p.n)));
        visit((batch * p.m + i) * p.n + j, a_scale, b_scale);
      }
    }
  }
}

}  // namespace mm::family

#endif  // MM_FAMILY_REQUANTIZE_H_
