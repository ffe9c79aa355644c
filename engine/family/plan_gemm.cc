// Gemm's part of PlanProblem: attributes, 2-D A and B with their transposes, C broadcast to [M, N].
#include <cmath>
#include <string>

#include "plan_internal.h"

namespace mm::family {
namespace {

using internal::InputError;
using internal::OpVersion;

float FloatAttribute(const Problem& problem, std::string_view name, float fallback) {
  const Attribute* attribute = problem.FindAttribute(name);
  return attribute == nullptr ? fallback : attribute->f;
}

std::int64_t IntAttribute(const Problem& problem, std::string_view name, std::int64_t fallback) {
  const Attribute* attribute = problem.FindAttribute(name);
  return attribute == nullptr ? fallback : attribute->i;
}

// alpha and beta: finite (mm judges no other), integers for an integer T (the standard's formula
// has no rounding rule for 0.5 * an int32 product).
Status CheckScalings(const Problem& problem, const Plan& plan) {
  for (const auto& [name, value] : {std::pair<std::string_view, float>{"alpha", plan.gemm.alpha},
                                    std::pair<std::string_view, float>{"beta", plan.gemm.beta}}) {
    if (!std::isfinite(value)) {
      return UnimplementedError(OpVersion(problem) + " " + std::string(name) + ": " +
                                std::to_string(value) +
                                " is a valid attribute, but mm judges finite alpha and beta only");
    }
    if (!IsFloat(plan.a_dtype) && (value != std::trunc(value) || std::fabs(value) >= 0x1p63f)) {
      return UnimplementedError(
          OpVersion(problem) + " " + std::string(name) + ": " + std::to_string(value) +
          " scales an " + std::string(DTypeName(plan.a_dtype)) +
          " Gemm, but the standard gives no rounding for a non-integer scaling of integers; mm "
          "judges integer Gemm with integer alpha and beta only");
    }
  }
  return OkStatus();
}

// C's form for Y [m, n], or why it does not broadcast unidirectionally to it.
StatusOr<CForm> ClassifyC(const Problem& problem, std::span<const std::int64_t> c, std::int64_t m,
                          std::int64_t n, bool legacy_no_broadcast) {
  const std::string target = DimsToString(Dims{m, n});
  if (legacy_no_broadcast && !(c.size() == 2 && c[0] == m && c[1] == n)) {
    return InputError(problem, "C",
                      DimsToString(c) + " is not [M,N] = " + target + ", and " +
                          OpVersion(problem) + "'s broadcast attribute is 0 (not broadcast)");
  }
  const std::string no = DimsToString(c) +
                         " does not broadcast unidirectionally to [M,N] = " + target +
                         " (C's dims, aligned from the right, must each be 1 or equal)";
  if (c.empty()) return CForm::kScalar;
  if (c.size() == 1) {
    if (c[0] == n) return n == 1 ? CForm::kOne : CForm::kRow;
    if (c[0] == 1) return CForm::kOne;
    return InputError(problem, "C", no);
  }
  if (c.size() > 2) return InputError(problem, "C", no);
  const bool rows_ok = c[0] == m || c[0] == 1, cols_ok = c[1] == n || c[1] == 1;
  if (!rows_ok || !cols_ok) return InputError(problem, "C", no);
  // Named by what broadcasts: with M = 1, a [1, N] C is the row bias [1, N].
  const bool rows_broadcast = c[0] == 1, cols_broadcast = c[1] == 1;
  if (rows_broadcast && cols_broadcast) return CForm::kOneByOne;
  if (rows_broadcast) return CForm::kOneByN;
  if (cols_broadcast) return CForm::kMByOne;
  return CForm::kMByN;
}

}  // namespace

std::string_view CFormName(CForm form) {
  switch (form) {
    case CForm::kAbsent:
      return "absent";
    case CForm::kScalar:
      return "[]";
    case CForm::kOne:
      return "[1]";
    case CForm::kRow:
      return "[N]";
    case CForm::kOneByOne:
      return "[1,1]";
    case CForm::kOneByN:
      return "[1,N]";
    case CForm::kMByOne:
      return "[M,1]";
    case CForm::kMByN:
      return "[M,N]";
  }
  return "?";
}

namespace internal {

Status PlanGemm(const Problem& problem, Plan& plan) {
  GemmPlan& gemm = plan.gemm;
  gemm.alpha = FloatAttribute(problem, "alpha", 1.0f);
  gemm.beta = FloatAttribute(problem, "beta", 1.0f);
  gemm.trans_a = IntAttribute(problem, "transA", 0) != 0;
  gemm.trans_b = IntAttribute(problem, "transB", 0) != 0;
  MM_RETURN_IF_ERROR(CheckScalings(problem, plan));
  for (const auto& [name, view] : {std::pair<std::string_view, TensorView>{"A", plan.a},
                                   std::pair<std::string_view, TensorView>{"B", plan.b}}) {
    if (view.dims.size() != 2) {
      return InputError(problem, name,
                        DimsToString(view.dims) + " is not 2-D; Gemm multiplies matrices");
    }
  }
  const std::int64_t m = gemm.trans_a ? plan.a.dims[1] : plan.a.dims[0];
  const std::int64_t k = gemm.trans_a ? plan.a.dims[0] : plan.a.dims[1];
  const std::int64_t kb = gemm.trans_b ? plan.b.dims[1] : plan.b.dims[0];
  const std::int64_t n = gemm.trans_b ? plan.b.dims[0] : plan.b.dims[1];
  if (k != kb) {
    return InputError(problem, "B",
                      "K mismatch: A " + DimsToString(plan.a.dims) +
                          (gemm.trans_a ? " (transA)" : "") + " has K=" + std::to_string(k) +
                          ", B " + DimsToString(plan.b.dims) + (gemm.trans_b ? " (transB)" : "") +
                          " has K=" + std::to_string(kb));
  }
  auto product = PlanMatMul(MatMulDesc{plan.a_dtype, Dims{m, k}, Dims{k, n}});
  if (!product.ok()) return product.status().WithContext(OpVersion(problem));
  plan.product = *std::move(product);
  const NamedInput* c = problem.FindInput("C");
  if (c == nullptr) {
    gemm.c_form = CForm::kAbsent;
    return OkStatus();
  }
  if (c->tensor.dtype != plan.a_dtype) {
    return InputError(problem, "C",
                      std::string(DTypeName(c->tensor.dtype)) + " but A and B are " +
                          std::string(DTypeName(plan.a_dtype)) + "; " + OpVersion(problem) +
                          " takes one type T for A, B, C and Y");
  }
  const bool legacy_no_broadcast =
      problem.version < 7 && IntAttribute(problem, "broadcast", 0) == 0;
  MM_ASSIGN_OR_RETURN(gemm.c_form, ClassifyC(problem, c->tensor.dims, m, n, legacy_no_broadcast));
  gemm.c = c->tensor;
  const std::span<const std::int64_t> cd = c->tensor.dims;
  // Strides of C's [rows, cols] seen as [M, N]; a dim of extent 1 broadcasts (stride 0).
  const std::int64_t c_rows = cd.size() == 2 ? cd[0] : 1;
  const std::int64_t c_cols = cd.empty() ? 1 : cd.back();
  gemm.c_col_stride = c_cols == 1 ? 0 : 1;
  gemm.c_row_stride = c_rows == 1 ? 0 : c_cols;
  return OkStatus();
}

}  // namespace internal
}  // namespace mm::family
