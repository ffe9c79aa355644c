// The pieces PlanProblem is made of, one concern per file: the types of each version
// (plan_types.cc), Gemm (plan_gemm.cc), zero points and scales (plan_quant.cc).
#ifndef MM_FAMILY_PLAN_INTERNAL_H_
#define MM_FAMILY_PLAN_INTERNAL_H_

#include <span>
#include <string>
#include <string_view>

#include "mm/family/plan.h"

namespace mm::family::internal {

// The data types (A, B, C, Y; zero points for the integer operators) `op` takes at `version`.
std::span<const DType> DataTypes(Op op, int version);
// QLinearMatMul's scale types (TS) at `version`: float (10); float, float16, bfloat16 (21).
std::span<const DType> ScaleTypes(int version);
// "float16, float, double".
std::string TypeList(std::span<const DType> types);
bool Contains(std::span<const DType> types, DType dtype);
// True for QLinearMatMul's a_scale, b_scale and y_scale.
bool IsScaleInput(Op op, std::string_view input);

// "Gemm-13".
std::string OpVersion(const Problem& problem);
// An error about input or attribute `name` of `problem`: "Gemm-13 C: <message>".
Status InputError(const Problem& problem, std::string_view name, const std::string& message);

// Gemm's attributes, shapes and C into plan (A and B already typed).
Status PlanGemm(const Problem& problem, Plan& plan);
// The zero points (and for QLinearMatMul the scales) into plan (product already planned).
Status PlanQuantization(const Problem& problem, Plan& plan);

}  // namespace mm::family::internal

#endif  // MM_FAMILY_PLAN_INTERNAL_H_
