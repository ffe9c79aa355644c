// The oracle's per-ISA kernels (kernels/, compiled once per level of mm::CpuIsa, each copy's
// symbols private to it: cmake/IsaKernels.cmake) and the table through which the rest of the
// oracle calls the chosen copy (oracle_dispatch.cc). Private to engine/oracle/.
#ifndef MM_ORACLE_ORACLE_KERNELS_H_
#define MM_ORACLE_ORACLE_KERNELS_H_

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "mm/engine/dtype.h"
#include "mm/engine/machine.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/oracle/exact_matmul.h"

namespace mm::oracle_internal {

// One copy's entry points: oracle_internal.h's functions of the same names, for each type.
struct OracleKernels {
  template <class T>
  using FastFloat = StatusOr<std::int64_t> (*)(const MatMulPlan&, const T*, const T*, OracleResult&,
                                               const std::atomic<bool>*);
  template <class T>
  using FastInteger = Status (*)(const MatMulPlan&, const T*, const T*, T*,
                                 const std::atomic<bool>*);
  template <class T>
  using ExactFloat = Status (*)(const MatMulPlan&, const T*, const T*, OracleResult&,
                                const std::atomic<bool>*);
  template <class T>
  using DecideRounding = bool (*)(double, double, T*);

  CpuIsa isa;  // The level this copy is compiled for.
  FastFloat<float> fast_float;
  FastFloat<float16> fast_float16;
  FastFloat<bfloat16> fast_bfloat16;
  FastFloat<double> fast_double;
  FastInteger<std::int32_t> fast_int32;
  FastInteger<std::int64_t> fast_int64;
  FastInteger<std::uint32_t> fast_uint32;
  FastInteger<std::uint64_t> fast_uint64;
  ExactFloat<float> exact_float;
  ExactFloat<float16> exact_float16;
  ExactFloat<bfloat16> exact_bfloat16;
  ExactFloat<double> exact_double_any;  // ExactFloatMatMul<double>.
  ExactFloat<double> exact_double;      // ExactDoubleMatMul.
  DecideRounding<float> decide_float;
  DecideRounding<float16> decide_float16;
  DecideRounding<bfloat16> decide_bfloat16;
  bool (*decide_double)(double, double, double, double, double*);

  // The entry of T's type among those above.
  template <class T>
  FastFloat<T> Fast() const {
    if constexpr (std::is_same_v<T, float>) {
      return fast_float;
    } else if constexpr (std::is_same_v<T, float16>) {
      return fast_float16;
    } else {
      static_assert(std::is_same_v<T, bfloat16>, "FastFloatMatMul: float types only");
      return fast_bfloat16;
    }
  }
  template <class T>
  FastInteger<T> Integer() const {
    if constexpr (std::is_same_v<T, std::int32_t>) {
      return fast_int32;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      return fast_int64;
    } else if constexpr (std::is_same_v<T, std::uint32_t>) {
      return fast_uint32;
    } else {
      static_assert(std::is_same_v<T, std::uint64_t>, "FastIntegerMatMul: integer types only");
      return fast_uint64;
    }
  }
  template <class T>
  ExactFloat<T> Exact() const {
    if constexpr (std::is_same_v<T, float>) {
      return exact_float;
    } else if constexpr (std::is_same_v<T, float16>) {
      return exact_float16;
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      return exact_bfloat16;
    } else {
      static_assert(std::is_same_v<T, double>, "ExactFloatMatMul: float types only");
      return exact_double_any;
    }
  }
  template <class T>
  DecideRounding<T> Decide() const {
    if constexpr (std::is_same_v<T, float>) {
      return decide_float;
    } else if constexpr (std::is_same_v<T, float16>) {
      return decide_float16;
    } else {
      static_assert(std::is_same_v<T, bfloat16>, "DecideRounding: narrow float types only");
      return decide_bfloat16;
    }
  }
};

// The copy of the level ChosenCpuIsa() names (or the highest compiled below it), or the error of
// an unknown MM_MAX_CPU_ISA.
StatusOr<const OracleKernels*> ChosenOracleKernels();

}  // namespace mm::oracle_internal

// Each copy's entry (cmake/IsaKernels.cmake names it mm_isa_<level>_oracle_kernels): the only
// symbol a copy exports.
extern "C" {
const mm::oracle_internal::OracleKernels* mm_isa_baseline_oracle_kernels();
const mm::oracle_internal::OracleKernels* mm_isa_avx2_oracle_kernels();
const mm::oracle_internal::OracleKernels* mm_isa_avx512_oracle_kernels();
}

#endif  // MM_ORACLE_ORACLE_KERNELS_H_
