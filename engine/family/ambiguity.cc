#include "mm/family/ambiguity.h"

namespace mm::family {
namespace {

constexpr AmbiguityInfo kInfos[] = {
    {"gemm-beta-zero-non-finite-c",
     "Gemm with beta = 0 and a NaN or infinite C: is beta * C NaN, or is C not added?",
     "NaN, the formula alpha A'B' + beta C as written (ONNX's specification and its backend-test "
     "generator)",
     "C left out when beta = 0 (ONNX's reference evaluator op_gemm.py, every BLAS)"},
    {"gemm-alpha-zero-non-finite-product",
     "Gemm with alpha = 0 and a NaN or infinity in A or B: is alpha * A'B' NaN, or is it left out?",
     "NaN, the formula alpha A'B' + beta C as written (ONNX's specification)",
     "A'B' left out when alpha = 0 (every BLAS)"},
    {"qlinearmatmul-zero-point-before-rounding",
     "QLinearMatMul at an exact half with an odd y_zero_point: is y_zero_point added after "
     "rounding half to even, or before?",
     "round_half_even(acc a_scale b_scale / y_scale) + y_zero_point, saturated (ONNX's "
     "specification: x / y_scale rounded ties to even, then y_zero_point added)",
     "round_half_even(acc a_scale b_scale / y_scale + y_zero_point), saturated (ONNX's reference "
     "evaluator op_qlinear_matmul.py: D += y_zero_point, then np.rint)"},
};

}  // namespace

const AmbiguityInfo& GetAmbiguityInfo(Ambiguity ambiguity) {
  return kInfos[static_cast<std::size_t>(ambiguity)];
}

std::string_view ReadingName(Reading reading) {
  switch (reading) {
    case Reading::kNotReached:
      return "not reached";
    case Reading::kFormula:
      return "formula";
    case Reading::kSkipped:
      return "skipped";
    case Reading::kMixed:
      return "mixed";
    case Reading::kNeither:
      return "neither";
  }
  return "?";
}

Reading AmbiguityOutcome::followed() const {
  if (elements == 0) return Reading::kNotReached;
  if (neither > 0) return Reading::kNeither;
  if (formula == elements) return Reading::kFormula;
  if (skipped == elements) return Reading::kSkipped;
  return Reading::kMixed;
}

std::string AmbiguityOutcome::Describe() const {
  const AmbiguityInfo& info = GetAmbiguityInfo(ambiguity);
  std::string out = std::string(info.id) + ": " + std::to_string(elements) + " element" +
                    (elements == 1 ? "" : "s");
  switch (followed()) {
    case Reading::kNotReached:
      return out;
    case Reading::kFormula:
      return out + "; the result followed the formula: " + std::string(info.formula);
    case Reading::kSkipped:
      return out + "; the result followed the other reading: " + std::string(info.skipped);
    case Reading::kMixed:
      return out + "; the result followed the formula in " + std::to_string(formula) +
             " and the other reading in " + std::to_string(skipped);
    case Reading::kNeither:
      return out + "; " + std::to_string(neither) + " followed neither reading";
  }
  return out;
}

}  // namespace mm::family
