// Random problems of MatMul's family beyond MatMul (Gemm, MatMulInteger, QLinearMatMul) for
// differential fuzzing (mm-fuzz --op), with value families aimed at each operator's failure modes:
// saturating uint8 x int8 pairs along K (x86's vpmaddubsw), K past 2^15 and past the int32 range of
// the exact sum, zero points and scales at their extremes, requantization ties and saturation,
// Gemm's C in every broadcast form with alpha and beta 0, 1, negative and not representable.
// Reproducible everywhere, as MatMul's problems (problem.h): problem `index` of `seed` depends only
// on (seed, index, operator, Gemm's element type).
#ifndef MM_CONFORMANCE_FUZZ_FAMILY_PROBLEM_H_
#define MM_CONFORMANCE_FUZZ_FAMILY_PROBLEM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/fuzz/problem.h"
#include "mm/engine/dtype.h"
#include "mm/engine/tensor.h"
#include "mm/family/op.h"
#include "mm/family/problem.h"

namespace mm::fuzz {

// A family problem that owns its tensors: inputs in ONNX's order, by name, and the attributes.
struct FamilyProblem {
  std::uint64_t seed = 0;
  std::int64_t index = 0;
  family::Op op = family::Op::kGemm;
  int version = 13;
  std::string form;    // "2-D", "batched", "transA, C [N]", "large K", ...
  std::string values;  // Value family, e.g. "saturating pairs", "ties", "uniform+specials".
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<family::Attribute> attributes;

  // The problem as family::PlanProblem takes it: views into `inputs`, valid while this lives
  // unchanged.
  family::Problem View() const;
  // The tensor of input `name`, or null when absent.
  const Tensor* Find(std::string_view name) const;
  Tensor* Find(std::string_view name);
  // A's element type (a's for QLinearMatMul): the "dtype" a result is counted under.
  DType dtype() const;
  // The element types of the operator's type constraints, '/'-separated, as an expectations entry
  // names them: Gemm "T" ("float"), MatMulInteger "A/B" ("uint8/int8"), QLinearMatMul
  // "a/b/y/scales" ("uint8/int8/uint8/float16"; y: y_zero_point's type).
  std::string Types() const;
  // The operator at its version and its Types(), "MatMulInteger-10 uint8/int8": what a fair corpus
  // balances (mm-fuzz generate --op OP --cases-per-dtype N).
  std::string Signature() const;
  // "MatMulInteger-10 A uint8 [3,4] B int8 [4,2] a_zero_point [] ...", as family::Problem says it.
  std::string ToString() const { return View().ToString(); }
  // A deep copy (its own tensors).
  FamilyProblem Clone() const;
};

// The operators mm-fuzz --op draws: Gemm, MatMulInteger, QLinearMatMul (MatMul is
// GenerateProblem's).
bool IsFamilyOp(family::Op op);

// Problem `index` of `seed` for `op` (not MatMul). Gemm's element type is picked from
// options.dtypes (every MatMul dtype when empty) by (seed, index) alone, as GenerateProblem picks
// MatMul's, and its version among those that take it; the integer operators take every
// combination of int8 and uint8 and ignore options.dtypes. Sizes respect options.max_elements and
// max_products except in the large-K form, whose operands are K (up to 65,794) by 1 or 2.
// Every Signature() GenerateFamilyProblem draws for `op` (not MatMul), in a fixed order: Gemm's
// versions of each element type of `dtypes` (every MatMul dtype when empty); MatMulInteger-10's
// four pairs of int8 and uint8; QLinearMatMul-10's eight triples of int8 and uint8 with float
// scales and QLinearMatMul-21's with float, float16 and bfloat16 scales.
std::vector<std::string> FamilySignatures(family::Op op, const std::vector<DType>& dtypes);

FamilyProblem GenerateFamilyProblem(std::uint64_t seed, std::int64_t index, family::Op op,
                                    const GeneratorOptions& options);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FAMILY_PROBLEM_H_
