/*
 * A plugin of version 3 of the ABI computing MatMul's family: MatMulInteger (uint8 and int8 on
 * either side, every zero-point form, every numpy.matmul shape), QLinearMatMul with float scales
 * (the multiplier a_scale * b_scale / y_scale formed in double and rounded to float once, acc
 * times it in double, rounded half to even) and float Gemm (every transpose, every form of C), all
 * with plain loops. It computes no MatMul, and says so with a reason.
 * Built once per variant (backends/plugin/CMakeLists.txt, mm_family_plugin_variants):
 *  - MM_FAMILY_CORRECT: exact int32 sums (wrapping as the standard allows), Gemm accumulated in
 *    double and rounded once (declared: double accumulation).
 *  - MM_FAMILY_SATURATES_PAIRS: uint8 x int8 through x86's vpmaddubsw semantics: the raw products
 *    of two adjacent k summed and saturated to int16, the pairs accumulated in int32, zero points
 *    corrected afterwards. 255 * 127 + 255 * 127 = 64770 becomes 32767.
 *  - MM_FAMILY_IGNORES_BETA: Gemm adds C unscaled, as if beta were always 1.
 *  - Malformed plugins, each refused or an ERROR with a clear message:
 *    MM_FAMILY_GEMM_ARITHMETIC_INT (op_arithmetic() declares int32 accumulation for float Gemm),
 *    MM_FAMILY_SUPPORT_OUT_OF_RANGE (op_supports() answers 7 for QLinearMatMul),
 *    MM_FAMILY_SUPPORTS_WITHOUT_COMPUTE (op_supports set, op_compute NULL),
 *    MM_FAMILY_COMPUTE_NO_MESSAGE (op_compute() fails for Gemm without a message: the load
 *    probe, which computes the first operator supported, float Gemm-13, finds it),
 *    MM_FAMILY_COMPUTE_CRASH (op_compute() raises SIGSEGV for Gemm: the load probe dies),
 *    MM_FAMILY_WRITES_PAST_Y (one element written past the end of Y, for MatMulInteger only:
 *    the load probe does not meet it, a run does),
 *    MM_FAMILY_MODIFIES_B (B's first byte changed, for MatMulInteger only),
 *    MM_FAMILY_OP_ARITHMETIC_CRASH (op_arithmetic() raises SIGSEGV at load time).
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mm/mm_backend_plugin.h"

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "family_plugin"
#endif

/* ---- MatMul: not computed ---------------------------------------------------------------------
 */

static int32_t no_supports(const mm_matmul_problem* problem, char* text, size_t capacity) {
  (void)problem;
  snprintf(text, capacity, "computes MatMul's family (Gemm, MatMulInteger), not MatMul");
  return MM_SUPPORT_NO;
}

static int32_t no_prepare(const mm_matmul_problem* problem, void** handle, char* text,
                          size_t capacity) {
  (void)problem;
  (void)handle;
  snprintf(text, capacity, "no MatMul");
  return MM_STATUS_UNIMPLEMENTED;
}

static int32_t no_execute(void* handle, const mm_const_tensor* a, const mm_const_tensor* b,
                          const mm_tensor* y, char* text, size_t capacity) {
  (void)handle, (void)a, (void)b, (void)y;
  snprintf(text, capacity, "no MatMul");
  return MM_STATUS_UNIMPLEMENTED;
}

static void no_release(void* handle) { (void)handle; }

/* ---- The family -------------------------------------------------------------------------------
 */

static int is_eight_bit(int32_t dtype) { return dtype == MM_DTYPE_UINT8 || dtype == MM_DTYPE_INT8; }

static int32_t family_supports(const mm_op_desc* desc, char* text, size_t capacity) {
  if (desc->op == MM_OP_MATMUL_INTEGER && is_eight_bit(desc->a_dtype) &&
      is_eight_bit(desc->b_dtype)) {
    return MM_SUPPORT_NATIVE;
  }
  if (desc->op == MM_OP_GEMM && desc->y_dtype == MM_DTYPE_FLOAT) return MM_SUPPORT_NATIVE;
#if defined(MM_FAMILY_SUPPORT_OUT_OF_RANGE)
  if (desc->op == MM_OP_QLINEAR_MATMUL) return 7;
#endif
  if (desc->op == MM_OP_QLINEAR_MATMUL && desc->scale_dtype == MM_DTYPE_FLOAT) {
    return MM_SUPPORT_NATIVE;
  }
  snprintf(text, capacity, "%s",
           desc->op == MM_OP_GEMM ? "Gemm in float only" : "QLinearMatMul with float scales only");
  return MM_SUPPORT_NO;
}

/* Element `index` of an int8 or uint8 tensor, widened. */
static int32_t eight_bit(const mm_const_tensor* t, int64_t index) {
  return t->dtype == MM_DTYPE_UINT8 ? (int32_t)((const uint8_t*)t->data)[index]
                                    : (int32_t)((const int8_t*)t->data)[index];
}

/* The index of a zero point's or scale's element for Y's element (i, j) of a product of A's
 * matrix `a_matrix` and B's matrix `b_matrix`, as the form says (the header's mm_quant_form). */
static int64_t param_index(const mm_quant* q, const mm_op_problem* p, int64_t a_matrix, int64_t i,
                           int64_t b_matrix, int64_t j) {
  switch (q->form) {
    case MM_QUANT_PER_ROW:
      return a_matrix * p->m + i;
    case MM_QUANT_PER_COLUMN:
      return b_matrix * p->n + j;
  }
  return 0;
}

static int32_t zero_point(const mm_quant* q, const mm_op_problem* p, int64_t a_matrix, int64_t i,
                          int64_t b_matrix, int64_t j) {
  if (q->form == MM_QUANT_ABSENT) return 0;
  return eight_bit(&q->tensor, param_index(q, p, a_matrix, i, b_matrix, j));
}

static double scale(const mm_quant* q, const mm_op_problem* p, int64_t a_matrix, int64_t i,
                    int64_t b_matrix, int64_t j) {
  return ((const float*)q->tensor.data)[param_index(q, p, a_matrix, i, b_matrix, j)];
}

/* v rounded half to even. */
static double round_half_even(double v) {
  double r = floor(v);
  const double rest = v - r;
  if (rest > 0.5 || (rest == 0.5 && fmod(r, 2) != 0)) r += 1;
  return r;
}

/* Where batch entry `entry`'s A and B matrices start. */
static void offsets(const mm_op_problem* p, int64_t entry, int64_t* a_offset, int64_t* b_offset) {
  int64_t rest = entry;
  int32_t axis;
  *a_offset = 0;
  *b_offset = 0;
  for (axis = p->batch_rank - 1; axis >= 0; --axis) {
    const int64_t index = rest % p->batch_dims[axis];
    rest /= p->batch_dims[axis];
    *a_offset += index * p->a_batch_strides[axis];
    *b_offset += index * p->b_batch_strides[axis];
  }
}

/* Sum over k of a * b for row i, column j: exact (int64), or vpmaddubsw's saturating pairs. */
static int64_t raw_dot(const mm_op_problem* p, int64_t ao, int64_t bo, int64_t i, int64_t j) {
  int64_t sum = 0, q;
#if defined(MM_FAMILY_SATURATES_PAIRS)
  if (p->a.dtype == MM_DTYPE_UINT8 && p->b.dtype == MM_DTYPE_INT8) {
    for (q = 0; q < p->k; q += 2) {
      int32_t pair = eight_bit(&p->a, ao + i * p->k + q) * eight_bit(&p->b, bo + q * p->n + j);
      if (q + 1 < p->k) {
        pair += eight_bit(&p->a, ao + i * p->k + q + 1) * eight_bit(&p->b, bo + (q + 1) * p->n + j);
      }
      sum += pair > 32767 ? 32767 : pair < -32768 ? -32768 : pair;
    }
    return sum;
  }
#endif
  for (q = 0; q < p->k; ++q) {
    sum += (int64_t)eight_bit(&p->a, ao + i * p->k + q) * eight_bit(&p->b, bo + q * p->n + j);
  }
  return sum;
}

/* sum (a - a_zp)(b - b_zp) = sum ab - b_zp sum a - a_zp sum b + k a_zp b_zp, wrapped to int32. */
static int32_t matmul_integer_element(const mm_op_problem* p, int64_t ao, int64_t bo, int64_t i,
                                      int64_t j) {
  const int64_t a_matrix = p->m * p->k > 0 ? ao / (p->m * p->k) : 0;
  const int64_t b_matrix = p->k * p->n > 0 ? bo / (p->k * p->n) : 0;
  const int64_t azp = zero_point(&p->a_zero_point, p, a_matrix, i, b_matrix, j);
  const int64_t bzp = zero_point(&p->b_zero_point, p, a_matrix, i, b_matrix, j);
  int64_t sum_a = 0, sum_b = 0, q;
  for (q = 0; q < p->k; ++q) {
    sum_a += eight_bit(&p->a, ao + i * p->k + q);
    sum_b += eight_bit(&p->b, bo + q * p->n + j);
  }
  return (int32_t)(uint32_t)(uint64_t)(raw_dot(p, ao, bo, i, j) - bzp * sum_a - azp * sum_b +
                                       p->k * azp * bzp);
}

/* QLinearMatMul's y for the accumulation `acc` of element (i, j). */
static double requantized(const mm_op_problem* p, int64_t ao, int64_t bo, int64_t i, int64_t j,
                          int32_t acc) {
  const int64_t a_matrix = p->m * p->k > 0 ? ao / (p->m * p->k) : 0;
  const int64_t b_matrix = p->k * p->n > 0 ? bo / (p->k * p->n) : 0;
  const float multiplier = (float)(scale(&p->a_scale, p, a_matrix, i, b_matrix, j) *
                                   scale(&p->b_scale, p, a_matrix, i, b_matrix, j) /
                                   scale(&p->y_scale, p, a_matrix, i, b_matrix, j));
  const double y = round_half_even((double)acc * multiplier) +
                   zero_point(&p->y_zero_point, p, a_matrix, i, b_matrix, j);
  const double low = p->desc.y_dtype == MM_DTYPE_UINT8 ? 0 : -128;
  return y < low ? low : y > low + 255 ? low + 255 : y;
}

/* MatMulInteger into int32, or QLinearMatMul into Y's 8-bit type. */
static void matmul_integer(const mm_op_problem* p, void* y) {
  int64_t entry, i, j;
  for (entry = 0; entry < p->batch; ++entry) {
    int64_t ao, bo;
    offsets(p, entry, &ao, &bo);
    for (i = 0; i < p->m; ++i) {
      for (j = 0; j < p->n; ++j) {
        const int64_t at = (entry * p->m + i) * p->n + j;
        const int32_t acc = matmul_integer_element(p, ao, bo, i, j);
        if (p->desc.op == MM_OP_MATMUL_INTEGER) {
          ((int32_t*)y)[at] = acc;
        } else if (p->desc.y_dtype == MM_DTYPE_UINT8) {
          ((uint8_t*)y)[at] = (uint8_t)requantized(p, ao, bo, i, j, acc);
        } else {
          ((int8_t*)y)[at] = (int8_t)requantized(p, ao, bo, i, j, acc);
        }
      }
    }
  }
}

static void gemm_float(const mm_op_problem* p, float* y) {
  const float* a = (const float*)p->a.data;
  const float* b = (const float*)p->b.data;
  const float* c = (const float*)p->c.data;
  int64_t i, j, q;
  for (i = 0; i < p->m; ++i) {
    for (j = 0; j < p->n; ++j) {
      double sum = 0, bias = 0;
      for (q = 0; q < p->k; ++q) {
        const double av = p->trans_a ? a[q * p->m + i] : a[i * p->k + q];
        const double bv = p->trans_b ? b[j * p->k + q] : b[q * p->n + j];
        sum += av * bv;
      }
      if (c != NULL) {
        bias = c[i * p->c_row_stride + j * p->c_col_stride];
#if !defined(MM_FAMILY_IGNORES_BETA)
        bias *= p->beta;
#endif
      }
      y[i * p->n + j] = (float)((double)p->alpha * sum + bias);
    }
  }
}

static int32_t family_compute(const mm_op_problem* p, const mm_tensor* y, char* text,
                              size_t capacity) {
  int64_t elements = 1;
  int32_t axis;
  for (axis = 0; axis < y->rank; ++axis) elements *= y->dims[axis];
  if (p->struct_size < sizeof(mm_op_problem)) {
    snprintf(text, capacity, "built for a newer mm (problem of %u bytes)", p->struct_size);
    return MM_STATUS_UNIMPLEMENTED;
  }
  if (p->desc.op == MM_OP_MATMUL_INTEGER || p->desc.op == MM_OP_QLINEAR_MATMUL) {
    matmul_integer(p, y->data);
  } else if (p->desc.op == MM_OP_GEMM && p->desc.y_dtype == MM_DTYPE_FLOAT) {
#if defined(MM_FAMILY_COMPUTE_NO_MESSAGE)
    return MM_STATUS_INTERNAL;
#endif
#if defined(MM_FAMILY_COMPUTE_CRASH)
    raise(SIGSEGV);
#endif
    gemm_float(p, (float*)y->data);
  } else {
    snprintf(text, capacity, "op_supports() refused this operator");
    return MM_STATUS_UNIMPLEMENTED;
  }
#if defined(MM_FAMILY_WRITES_PAST_Y)
  if (p->desc.op == MM_OP_MATMUL_INTEGER) memset((int32_t*)y->data + elements, 0x7f, 4);
#endif
#if defined(MM_FAMILY_MODIFIES_B)
  if (p->desc.op == MM_OP_MATMUL_INTEGER && p->k * p->n > 0) ((uint8_t*)p->b.data)[0] ^= 1;
#endif
  (void)elements;
  return MM_STATUS_OK;
}

static void family_arithmetic(const mm_op_desc* desc, mm_arithmetic* answer) {
#if defined(MM_FAMILY_OP_ARITHMETIC_CRASH)
  raise(SIGSEGV);
#endif
#if defined(MM_FAMILY_GEMM_ARITHMETIC_INT)
  if (desc->y_dtype == MM_DTYPE_FLOAT) answer->accumulation = MM_DTYPE_INT32;
#else
  if (desc->y_dtype == MM_DTYPE_FLOAT) answer->accumulation = MM_DTYPE_DOUBLE;
#endif
}

static void family_describe(const mm_op_desc* desc, char* text, size_t capacity) {
  snprintf(text, capacity, "%s",
           desc->op == MM_OP_GEMM ? "loops, double accumulation" : "loops, int64 accumulation");
}

static const mm_backend_plugin kTable = {
    MM_BACKEND_PLUGIN_ABI_VERSION,
    PLUGIN_NAME,
    "a version-3 test plugin: MatMulInteger and float Gemm",
    no_supports,
    no_prepare,
    no_execute,
    no_release,
    NULL,
    NULL,
#if defined(MM_FAMILY_MATMUL_ONLY)
    /* A version-3 table whose family functions are all NULL: it computes MatMul only. */
    NULL,
    NULL,
    NULL,
    NULL,
#else
    family_supports,
    family_arithmetic,
#if defined(MM_FAMILY_SUPPORTS_WITHOUT_COMPUTE)
    NULL,
#else
    family_compute,
#endif
    family_describe,
#endif
};

MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void) { return &kTable; }
