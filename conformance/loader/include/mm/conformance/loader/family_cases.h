// The shape-class catalogue of MatMul's family (Gemm, MatMulInteger, QLinearMatMul): built-in
// problems covering each operator's classes, as issue 52 lists them (docs/family.md, "The
// built-in catalogue"):
//  - Gemm: every transA/transB pair x every form of C (absent, [], [1], [N], [1,N], [M,1], [M,N])
//    in every element type of Gemm-13, alpha x beta over 0, 1, a negative value and one the
//    element type does not hold, K = 0, M = 0, N = 0, and the attributes of the older versions
//    (Gemm-1 and Gemm-6 with and without broadcast, 7, 9, 11);
//  - MatMulInteger and QLinearMatMul: every single-problem numpy.matmul class of MatMul's
//    catalogue (shape_classes.h) x every zero-point form (absent, per tensor [] and [1], per row,
//    per column), the four pairs of data types; x86's vpmaddubsw saturating pairs, zero points at
//    0, 128 and the types' ends, K past 2^15 and the first K whose exact sum leaves int32;
//    QLinearMatMul's requantization ties, saturation at both ends of its output type, per-row and
//    per-column scales, float16 and bfloat16 scales (version 21).
// Deterministic (values by formulas), small: judging all of them takes well under a second.
//
// Name rule: "mm_family_<op><version>_<types>_<class>", letters, digits and '_' only.
#ifndef MM_CONFORMANCE_LOADER_FAMILY_CASES_H_
#define MM_CONFORMANCE_LOADER_FAMILY_CASES_H_

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/loader/family_case.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/problem.h"

namespace mm::conformance {

// What every case name of the family catalogue starts with.
inline constexpr std::string_view kFamilyCasePrefix = "mm_family_";

// One case: a problem and the tensors it points into.
//
// Moving a case keeps its problem valid: the deque's elements are never relocated by a move of
// the deque, and a Tensor's storage and dims belong to it wherever the Tensor object is. A case
// is not copyable (its views would point into the original).
struct FamilyCase {
  std::string name;      // "mm_family_gemm13_float_transa_c_n_alpha_negative_beta_0".
  std::string op_class;  // The class, e.g. "gemm/transA/C[N]/alpha-negative,beta-0".
  family::Problem problem;
  std::deque<Tensor> tensors;  // Owned; the problem's views point into them.

  FamilyCase() = default;
  FamilyCase(FamilyCase&&) = default;
  FamilyCase& operator=(FamilyCase&&) = default;
  FamilyCase(const FamilyCase&) = delete;
  FamilyCase& operator=(const FamilyCase&) = delete;
};

// Every case of the catalogue, Gemm's first, then MatMulInteger's, then QLinearMatMul's; the same
// cases in the same order on every call and machine. Every case plans (family::PlanProblem).
std::vector<FamilyCase> BuiltinFamilyCases();

// The cases of BuiltinFamilyCases(), built on the first call and kept for the process (the
// catalogue's entries and a worker's look-ups read them). Thread-safe.
const std::vector<FamilyCase>& BuiltinFamilyCatalogue();

// The case of BuiltinFamilyCatalogue() named `name`; null when there is none.
const FamilyCase* FindBuiltinFamilyCase(std::string_view name);

// The name of a built-in family case's one data set.
inline constexpr std::string_view kFamilyCaseDataSet = "test_data_set_0";

// `family_case` as the harness runs it: data set kFamilyCaseDataSet, its inputs (copied) and
// attributes, and its expected Y (FamilyCaseExpectedY). An error when the case does not plan.
StatusOr<FamilyDataSet> FamilyCaseDataSet(const FamilyCase& family_case);

// The exact answer of `family_case` (family::ExactFamily's Y: the wrapped int32 accumulation,
// the exactly requantized y, Gemm's exact value rounded to nearest even): the expected output its
// node test holds. An error when the case does not plan.
StatusOr<Tensor> FamilyCaseExpectedY(const FamilyCase& family_case);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_LOADER_FAMILY_CASES_H_
