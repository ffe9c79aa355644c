#include "mm/backends/blas/blas_family.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "mm/backends/blas/blas_backend.h"

namespace mm::blas {
namespace {

using family::CForm;
using family::GemmPlan;
using family::Op;
using family::Plan;

// Y [m, n] = C broadcast (the plan's strides), to be scaled by the GEMM's beta: row by row, C's
// row or its one value, rows C repeats copied from the first.
template <class T>
void CopyC(const GemmPlan& g, std::int64_t m, std::int64_t n, T* y) {
  const T* c = g.c.Data<T>();
  for (std::int64_t i = 0; i < m; ++i) {
    T* row = y + i * n;
    if (i > 0 && g.c_row_stride == 0) {
      std::copy(y, y + n, row);
    } else if (g.c_col_stride == 0) {
      std::fill(row, row + n, c[i * g.c_row_stride]);
    } else {
      std::copy(c + i * g.c_row_stride, c + i * g.c_row_stride + n, row);
    }
  }
}

// One GEMM of the column-major interface for the row-major Gemm of `plan`: Y^T (n x m) =
// alpha op(B)^T (n x k) op(A)^T (k x m) + beta Y^T. A row-major [K, N] B is B^T column-major
// with leading dimension N ('N'); a transposed B, given [N, K], is read column-major [K, N] with
// leading dimension K and transposed ('T'); A likewise. Leading dimensions are at least 1, as
// the interface requires even where K = 0.
template <class T, class Fn>
void CallGemm(Fn gemm, const Plan& plan, T beta, T* y) {
  const MatMulPlan& p = plan.product;
  const GemmPlan& g = plan.gemm;
  const char trans_b = g.trans_b ? 'T' : 'N', trans_a = g.trans_a ? 'T' : 'N';
  const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  const int ldb = std::max(1, g.trans_b ? k : n), lda = std::max(1, g.trans_a ? m : k);
  const int ldy = std::max(1, n);
  const T alpha = g.alpha;
  gemm(&trans_b, &trans_a, &n, &m, &k, &alpha, plan.b.Data<T>(), &ldb, plan.a.Data<T>(), &lda,
       &beta, y, &ldy, 1, 1);
}

template <class T>
void TypedGemm(const BlasLibrary& library, const Plan& plan, MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  const GemmPlan& g = plan.gemm;
  T* out = y.Data<T>();
  T beta = 0;  // Without C, Y is not read.
  if (g.c_form != CForm::kAbsent) {
    CopyC(g, p.m, p.n, out);
    beta = g.beta;
  }
  if constexpr (std::is_same_v<T, float>) {
    CallGemm(library.sgemm(), plan, beta, out);
  } else {
    CallGemm(library.dgemm(), plan, beta, out);
  }
}

}  // namespace

Support BlasFamily::SupportsOp(const family::OpDesc& desc) const {
  const std::string& label = backend_.library().description().label;
  switch (desc.op) {
    case Op::kGemm:
      if (desc.y_dtype == DType::kFloat || desc.y_dtype == DType::kDouble) {
        return Support::Native();
      }
      return Support::No("BLAS Gemm is sgemm_/dgemm_ (float, double); " + label + " has no " +
                         std::string(DTypeName(desc.y_dtype)) + " Gemm here");
    case Op::kMatMulInteger:
    case Op::kQLinearMatMul:
      return Support::No("the BLAS interface has no 8-bit integer GEMM (" +
                         std::string(OpName(desc.op)) + ")");
    case Op::kMatMul:
      break;
  }
  return Support::No("MatMul is the BLAS backend's own Supports");
}

Arithmetic BlasFamily::DeclaredArithmetic(const family::OpDesc& desc) const {
  // Source: the BLAS interface, reference BLAS 3.11's SGEMM/DGEMM: alpha times an element of B,
  // times A, added to C scaled by beta, every operation in REAL / DOUBLE PRECISION, which every
  // library implements in the operands' precision (as for MatMul).
  if (desc.op == Op::kGemm && desc.y_dtype == DType::kFloat) return {DType::kFloat, false};
  if (desc.op == Op::kGemm && desc.y_dtype == DType::kDouble) return {DType::kDouble, false};
  return Arithmetic::OwnType(desc.y_dtype);
}

Status BlasFamily::Compute(const Plan& plan, MutableTensorView y) {
  const MatMulPlan& p = plan.product;
  if (plan.op != Op::kGemm) {
    return InvalidArgumentError("the BLAS backends compute Gemm only, not " +
                                std::string(OpName(plan.op)));
  }
  for (const std::int64_t extent : {p.m, p.n, p.k}) {
    if (extent > INT_MAX) {
      return ConformanceGapError(plan.ToString() +
                                 ": a dimension exceeds the 32-bit Fortran integer of the BLAS "
                                 "interface (2^31 - 1)");
    }
  }
  if (p.y_elements == 0) return OkStatus();
  backend_.library().SetThreads(backend_.RequestedThreads());
  if (plan.y_dtype == DType::kFloat) {
    TypedGemm<float>(backend_.library(), plan, y);
  } else {
    TypedGemm<double>(backend_.library(), plan, y);
  }
  return OkStatus();
}

std::string BlasFamily::Implementation(const family::OpDesc& desc) const {
  const BlasLibrary& library = backend_.library();
  const std::string core = library.Core();
  return library.description().label + (desc.y_dtype == DType::kDouble ? " dgemm_" : " sgemm_") +
         (core.empty() ? std::string() : " (" + core + " kernel)") +
         ", alpha, beta and the transposes passed through, C copied into Y";
}

}  // namespace mm::blas
