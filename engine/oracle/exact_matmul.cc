// ExactMatMul (mm/oracle/exact_matmul.h): the result's arrays, the integer loop of the slow path,
// and the choice between the fast and exact paths of the kernels chosen for this CPU.
#include "mm/oracle/exact_matmul.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "mm/engine/dtype.h"
#include "oracle_internal.h"
#include "oracle_kernels.h"

namespace mm {
namespace {

// The integer oracle one element at a time, in the unsigned type of the same width: defined
// wraparound, then reinterpreted. Stops between rows once `cancel` is true (false then).
template <class T>
bool IntegerLoop(const MatMulPlan& plan, const T* a, const T* b, T* y,
                 const std::atomic<bool>* cancel) {
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const std::int64_t m = plan.m, k = plan.k, n = plan.n;
  for (std::int64_t batch = 0; batch < plan.batch; ++batch) {
    const auto [a_offset, b_offset] = plan.BatchOffsets(batch);
    for (std::int64_t i = 0; i < m; ++i) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
      for (std::int64_t j = 0; j < n; ++j) {
        U sum = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          sum += static_cast<U>(a[a_offset + i * k + p]) * static_cast<U>(b[b_offset + p * n + j]);
        }
        y[(batch * m + i) * n + j] = static_cast<T>(sum);
      }
    }
  }
  return true;
}

template <class T>
Status OracleLoop(const MatMulPlan& plan, const T* a, const T* b, const OracleOptions& options,
                  OracleResult& out) {
  using namespace oracle_internal;
  const std::atomic<bool>* cancel = options.cancel;
  if constexpr (std::is_integral_v<T>) {
    if (!options.fast) {
      if (!IntegerLoop(plan, a, b, out.y.Data<T>(), cancel)) {
        return CancelledError("ExactMatMul: cancelled");
      }
      return OkStatus();
    }
    return FastIntegerMatMul(plan, a, b, out.y.Data<T>(), cancel);
  } else {
    if (!options.fast || plan.k == 0) {
      out.exact_fallbacks = plan.y_elements;
      return ExactFloatMatMul(plan, a, b, out, cancel);
    }
    if constexpr (std::is_same_v<T, double>) {
      MM_ASSIGN_OR_RETURN(out.exact_fallbacks, FastDoubleMatMul(plan, a, b, out, cancel));
    } else {
      MM_ASSIGN_OR_RETURN(out.exact_fallbacks, FastFloatMatMul(plan, a, b, out, cancel));
    }
    return OkStatus();
  }
}

// Whether one of the first `count` values of `x` (a float dtype) is subnormal in its dtype or,
// widened, in double (below MinNormal, which is at least double's smallest normal, and not 0):
// what ExactDot counts in a subnormal sum. In blocks without branches, so that they vectorise.
bool AnySubnormalInput(TensorView x, std::int64_t count) {
  const double min_normal = oracle_internal::MinNormal(x.dtype);
  bool any = false;
  VisitDType(x.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
      const T* data = x.Data<T>();
      constexpr std::int64_t kBlock = 4096;
      for (std::int64_t start = 0; start < count && !any; start += kBlock) {
        int found = 0;
        for (std::int64_t i = start; i < std::min(count, start + kBlock); ++i) {
          const double magnitude = std::fabs(ToDouble(data[i]));
          found |= static_cast<int>(magnitude < min_normal) & static_cast<int>(magnitude != 0);
        }
        any = found != 0;
      }
    }
  });
  return any;
}

}  // namespace

StatusOr<OracleResult> ExactMatMul(const MatMulPlan& plan, TensorView a, TensorView b,
                                   const OracleOptions& options) {
  if (a.dtype != plan.desc.dtype || b.dtype != plan.desc.dtype) {
    return InvalidArgumentError("ExactMatMul: A and B must be " +
                                std::string(DTypeName(plan.desc.dtype)));
  }
  // An unknown MM_MAX_CPU_ISA is an error here rather than a cap silently ignored.
  MM_RETURN_IF_ERROR(oracle_internal::ChosenOracleKernels().status());
  OracleResult out;
  MM_ASSIGN_OR_RETURN(out.y, Tensor::Create(plan.desc.dtype, plan.y_dims));
  if (IsFloat(plan.desc.dtype)) {
    const auto size = static_cast<std::size_t>(plan.y_elements);
    // Small pages: written once, in order, the arrays gain nothing from huge pages, whose first
    // touch can cost a guest more (docs/notes/2026-12-05-avx2-only-epyc.md).
    out.exact.assign(size, 0.0);
    out.abs_sum.assign(size, 0.0);
    // Only the fast path of the narrower float types leaves an error of its own.
    if (options.fast && plan.k > 0 && plan.desc.dtype != DType::kDouble) {
      out.exact_error.assign(size, 0.0);
    }
    if (AnySubnormalInput(a, plan.a_elements) || AnySubnormalInput(b, plan.b_elements)) {
      out.subnormal_abs_sum.assign(size, 0.0);
    }
    out.special.assign(size, 0);
  }
  // An empty Y has nothing to compute (its batch or M may still be huge: no loop over them).
  if (plan.y_elements == 0) return out;
  Status status;
  VisitDType(plan.desc.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    status = OracleLoop<T>(plan, a.Data<T>(), b.Data<T>(), options, out);
  });
  MM_RETURN_IF_ERROR(status);
  return out;
}

}  // namespace mm
