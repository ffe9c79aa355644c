// The entry points of one copy of the kernels (oracle_internal.h's functions of the same names),
// defined by the path sources and gathered into the copy's table by kernel_table.cc.
// Part of the per-ISA kernels: included only by their sources, inside MM_ISA_NAMESPACE
// (cmake/IsaKernels.cmake).
#ifndef MM_ORACLE_KERNELS_KERNELS_H_
#define MM_ORACLE_KERNELS_KERNELS_H_

#include <atomic>
#include <cstdint>

#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/oracle/exact_matmul.h"

namespace mm::oracle_internal {
namespace MM_ISA_NAMESPACE {

// float_path.cc, for float, float16 and bfloat16.
template <class T>
StatusOr<std::int64_t> FastFloatMatMul(const MatMulPlan& plan, const T* a, const T* b,
                                       OracleResult& out, const std::atomic<bool>* cancel);

// double_path.cc.
StatusOr<std::int64_t> FastDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                                        OracleResult& out, const std::atomic<bool>* cancel);

// integer_path.cc, for the four integer types.
template <class T>
Status FastIntegerMatMul(const MatMulPlan& plan, const T* a, const T* b, T* y,
                         const std::atomic<bool>* cancel);

// exact_path.cc, for the four float types.
template <class T>
Status ExactFloatMatMul(const MatMulPlan& plan, const T* a, const T* b, OracleResult& out,
                        const std::atomic<bool>* cancel);
Status ExactDoubleMatMul(const MatMulPlan& plan, const double* a, const double* b,
                         OracleResult& out, const std::atomic<bool>* cancel);

}  // namespace MM_ISA_NAMESPACE
}  // namespace mm::oracle_internal

#endif  // MM_ORACLE_KERNELS_KERNELS_H_
