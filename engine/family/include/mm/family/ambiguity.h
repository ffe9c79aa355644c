// Where the ONNX standard contradicts itself, mm does not choose: it accepts every reading, says
// which one a result followed, and lists the ambiguity so that reports can show them in one place.
#ifndef MM_FAMILY_AMBIGUITY_H_
#define MM_FAMILY_AMBIGUITY_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace mm::family {

// The known ambiguities of the standard.
//   kGemmBetaZeroNonFiniteC: Gemm with beta = 0 and a NaN or infinite element of C. The
//     specification's formula Y = alpha A'B' + beta C, and ONNX's backend-test generator
//     (alpha * dot(A, B) + beta * C), give NaN (0 * inf and 0 * NaN are NaN); ONNX's reference
//     evaluator (onnx/reference/ops/op_gemm.py adds C only when beta != 0) and every BLAS (beta = 0
//     means C is not read) give the finite product.
//   kGemmAlphaZeroNonFiniteProduct: Gemm with alpha = 0 and a NaN or infinity in the rows of A
//     and columns of B of an element: the formula gives NaN; BLAS (alpha = 0 means A and B are not
//     read) gives beta C.
//   kQLinearMatMulZeroPointBeforeRounding: QLinearMatMul where acc a_scale b_scale / y_scale is
//     an exact half and y_zero_point is odd. The specification's text ("y = saturate((x / y_scale)
//     + y_zero_point). For (x / y_scale), it is rounding to nearest ties to even") rounds and then
//     adds the zero point; ONNX's reference evaluator (onnx/reference/ops/op_qlinear_matmul.py:
//     D += y_zero_point, then np.rint(D)) adds it and then rounds: 0.5 with zero point 1 is 1 by
//     the text, 2 by the evaluator.
enum class Ambiguity : std::uint8_t {
  kGemmBetaZeroNonFiniteC,
  kGemmAlphaZeroNonFiniteProduct,
  kQLinearMatMulZeroPointBeforeRounding,
};
inline constexpr std::array<Ambiguity, 3> kAllAmbiguities = {
    Ambiguity::kGemmBetaZeroNonFiniteC, Ambiguity::kGemmAlphaZeroNonFiniteProduct,
    Ambiguity::kQLinearMatMulZeroPointBeforeRounding};

// What a report says about an ambiguity.
struct AmbiguityInfo {
  std::string_view id;        // Stable name: "gemm-beta-zero-non-finite-c".
  std::string_view question;  // What the standard leaves open.
  std::string_view formula;   // The first reading: the specification's formula, literally.
  std::string_view skipped;   // The second: Gemm's scaled-by-zero term left out, QLinearMatMul's
                              // zero point added before rounding.
};
const AmbiguityInfo& GetAmbiguityInfo(Ambiguity ambiguity);

// Which reading a result followed over the elements where the readings differ.
enum class Reading : std::uint8_t {
  kNotReached,  // No element of the problem is ambiguous.
  kFormula,     // Every ambiguous element as the formula says.
  kSkipped,     // Every ambiguous element as the second reading (AmbiguityInfo::skipped).
  kMixed,       // Some each way.
  kNeither,     // At least one ambiguous element follows neither (judged FAIL).
};
// "not reached", "formula", "skipped", "mixed", "neither".
std::string_view ReadingName(Reading reading);

// One ambiguity as a judged result met it.
struct AmbiguityOutcome {
  Ambiguity ambiguity = Ambiguity::kGemmBetaZeroNonFiniteC;
  std::int64_t elements = 0;  // Elements where the two readings differ.
  std::int64_t formula = 0;   // Of them, results within the formula's answer.
  std::int64_t skipped = 0;   // Within the other reading's answer.
  std::int64_t neither = 0;   // Within neither.

  Reading followed() const;
  // "gemm-beta-zero-non-finite-c: 4 elements; the result followed skipped (C left out when
  // beta = 0: ONNX's reference evaluator, BLAS)".
  std::string Describe() const;
};

}  // namespace mm::family

#endif  // MM_FAMILY_AMBIGUITY_H_
