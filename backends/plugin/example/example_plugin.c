/*
 * An example mm backend plugin in plain C99: naive loops for all 8 ONNX MatMul dtypes, and
 * MatMulInteger (ABI version 3).
 *
 * Start your own MatMul from this file (docs/plugins.md, "Test your own MatMul"). What it shows:
 *  - the one exported entry function and the table it returns (name, description, functions);
 *  - supports() answering NATIVE, BY_CONVERSION with how, or NO with why;
 *  - prepare() copying what execute() needs into a handle it allocates, release() freeing it;
 *  - execute() walking the batch with the problem's strides (mm has done the broadcasting);
 *  - numbers as ONNX wants them: floats accumulate in double and round once to the output type
 *    (float16/bfloat16 to nearest even), integers wrap modulo 2^bits (computed unsigned);
 *  - arithmetic() (ABI version 2) declaring exactly that, so mm holds every float result to the
 *    tight error bound of double accumulation instead of the loose one of the dtype itself;
 *  - (ABI version 3) one operator of MatMul's family, MatMulInteger: op_supports() taking every
 *    uint8/int8 pair and refusing Gemm and QLinearMatMul with why, op_compute() with every form of
 *    zero point mm plans (absent, per tensor, per row of A, per column of B), exact: products of
 *    widened values summed in int64, wrapped to int32 only where the standard allows it, and
 *    op_describe() saying so (tests/family_plugin.c computes all three operators).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mm/mm_backend_plugin.h"

/* What execute() needs, copied from the problem (which is only valid during prepare). */
typedef struct example_handle {
  int32_t dtype;
  int64_t m, n, k, batch;
  int32_t batch_rank;
  int64_t* batch_dims;      /* batch_rank extents */
  int64_t* a_batch_strides; /* batch_rank element strides of A's matrices (0: broadcast) */
  int64_t* b_batch_strides;
} example_handle;

/* ---- float16 and bfloat16 <-> double ------------------------------------------------------- */

static double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double value;
  if (exponent == 0) {
    value = ldexp((double)mantissa, -24); /* zero or subnormal */
  } else if (exponent == 31) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = ldexp((double)(mantissa + 1024), exponent - 25);
  }
  return sign ? -value : value;
}

static double bfloat16_to_double(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Rounds x to nearest even with `digits` significant bits, the smallest normal exponent
 * `min_exponent` (below it the spacing stays 2^(min_exponent - digits + 1): subnormals). The
 * division and multiplication by a power of two are exact, so only nearbyint rounds (the default
 * rounding mode is to nearest even). */
static double round_to_format(double x, int digits, int min_exponent) {
  int e;
  if (!isfinite(x)) return x;
  frexp(x, &e); /* x = f * 2^e, 0.5 <= |f| < 1, so the leading bit has weight 2^(e-1). */
  if (e - 1 < min_exponent) e = min_exponent + 1;
  const double quantum = ldexp(1.0, e - digits);
  return nearbyint(x / quantum) * quantum;
}

static uint16_t double_to_half(double x) {
  if (isnan(x)) return 0x7e00;
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const double r = fabs(round_to_format(x, 11, -14));
  /* Overflow (and infinity). */
  if (r > 65504.0) return sign | 0x7c00;
  /* Subnormal: r / 2^-24, an integer below 1024. */
  if (r < ldexp(1.0, -14)) return sign | (uint16_t)(r * 16777216.0);
  int e;
  const double f = frexp(r, &e); /* r = f * 2^e, f in [0.5, 1) */
  const uint16_t mantissa = (uint16_t)((f * 2.0 - 1.0) * 1024.0);
  return sign | (uint16_t)((e - 1 + 15) << 10) | mantissa;
}

static uint16_t double_to_bfloat16(double x) {
  if (isnan(x)) return 0x7fc0;
  const double r = round_to_format(x, 8, -126);
  /* r has at most 8 significant bits and a float exponent, so (float)r is exact unless it
   * overflows, where it becomes infinity (the right answer). */
  const float f = (float)r;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

/* ---- The plugin's functions --------------------------------------------------------------- */

static int32_t example_supports(const mm_matmul_problem* problem, char* text, size_t capacity) {
  switch (problem->dtype) {
    case MM_DTYPE_FLOAT:
    case MM_DTYPE_DOUBLE:
    case MM_DTYPE_INT32:
    case MM_DTYPE_INT64:
    case MM_DTYPE_UINT32:
    case MM_DTYPE_UINT64:
      return MM_SUPPORT_NATIVE;
    case MM_DTYPE_FLOAT16:
    case MM_DTYPE_BFLOAT16:
      snprintf(text, capacity, "%s via double accumulation, rounded once to nearest even",
               problem->dtype == MM_DTYPE_FLOAT16 ? "float16" : "bfloat16");
      return MM_SUPPORT_BY_CONVERSION;
    default:
      snprintf(text, capacity, "unknown dtype %d", (int)problem->dtype);
      return MM_SUPPORT_NO;
  }
}

static int64_t* copy_dims(const int64_t* dims, int32_t rank) {
  int64_t* copy = (int64_t*)malloc(sizeof(int64_t) * (size_t)(rank > 0 ? rank : 1));
  if (copy != NULL && rank > 0) memcpy(copy, dims, sizeof(int64_t) * (size_t)rank);
  return copy;
}

static void example_release(void* handle) {
  example_handle* h = (example_handle*)handle;
  if (h == NULL) return;
  free(h->batch_dims);
  free(h->a_batch_strides);
  free(h->b_batch_strides);
  free(h);
}

static int32_t example_prepare(const mm_matmul_problem* problem, void** handle, char* text,
                               size_t capacity) {
  example_handle* h = (example_handle*)calloc(1, sizeof(example_handle));
  if (h != NULL) {
    h->dtype = problem->dtype;
    h->m = problem->m;
    h->n = problem->n;
    h->k = problem->k;
    h->batch = problem->batch;
    h->batch_rank = problem->batch_rank;
    h->batch_dims = copy_dims(problem->batch_dims, problem->batch_rank);
    h->a_batch_strides = copy_dims(problem->a_batch_strides, problem->batch_rank);
    h->b_batch_strides = copy_dims(problem->b_batch_strides, problem->batch_rank);
  }
  if (h == NULL || h->batch_dims == NULL || h->a_batch_strides == NULL ||
      h->b_batch_strides == NULL) {
    example_release(h);
    snprintf(text, capacity, "out of memory for the handle");
    return MM_STATUS_RESOURCE_EXHAUSTED;
  }
  *handle = h;
  return MM_STATUS_OK;
}

/* Element offsets of A's and B's matrices for the flat batch index `index` (row-major over the
 * batch dims, the last axis fastest). */
static void batch_offsets(const example_handle* h, int64_t index, int64_t* a_offset,
                          int64_t* b_offset) {
  int32_t axis;
  *a_offset = 0;
  *b_offset = 0;
  for (axis = h->batch_rank - 1; axis >= 0; --axis) {
    const int64_t i = index % h->batch_dims[axis];
    index /= h->batch_dims[axis];
    *a_offset += i * h->a_batch_strides[axis];
    *b_offset += i * h->b_batch_strides[axis];
  }
}

/* One m x k by k x n product per batch entry. ELEMENT is the stored type, ACC the accumulator,
 * LOAD turns a stored element into ACC, STORE turns ACC back. */
#define EXAMPLE_MATMUL(ELEMENT, ACC, LOAD, STORE)                                              \
  do {                                                                                         \
    const ELEMENT* a_data = (const ELEMENT*)a->data;                                           \
    const ELEMENT* b_data = (const ELEMENT*)b->data;                                           \
    ELEMENT* y_data = (ELEMENT*)y->data;                                                       \
    int64_t entry, i, j, p;                                                                    \
    for (entry = 0; entry < h->batch; ++entry) {                                               \
      int64_t a_offset, b_offset;                                                              \
      batch_offsets(h, entry, &a_offset, &b_offset);                                           \
      {                                                                                        \
        const ELEMENT* am = a_data + a_offset;                                                 \
        const ELEMENT* bm = b_data + b_offset;                                                 \
        ELEMENT* ym = y_data + entry * h->m * h->n;                                            \
        for (i = 0; i < h->m; ++i) {                                                           \
          for (j = 0; j < h->n; ++j) {                                                         \
            ACC sum = 0;                                                                       \
            for (p = 0; p < h->k; ++p) sum += LOAD(am[i * h->k + p]) * LOAD(bm[p * h->n + j]); \
            ym[i * h->n + j] = STORE(sum);                                                     \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  } while (0)

#define AS_DOUBLE(x) ((double)(x))
#define TO_FLOAT(x) ((float)(x))
#define TO_DOUBLE(x) (x)
#define AS_U32(x) ((uint32_t)(x))
#define AS_U64(x) ((uint64_t)(x))
/* Unsigned to signed of the same width: the two's complement bits (numpy's wraparound), without
 * the implementation-defined conversion of an out-of-range value. */
static int32_t u32_to_i32(uint32_t v) {
  int32_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static int64_t u64_to_i64(uint64_t v) {
  int64_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}
#define SAME(x) (x)

static int32_t example_execute(void* handle, const mm_const_tensor* a, const mm_const_tensor* b,
                               const mm_tensor* y, char* text, size_t capacity) {
  const example_handle* h = (const example_handle*)handle;
  switch (h->dtype) {
    case MM_DTYPE_FLOAT:
      EXAMPLE_MATMUL(float, double, AS_DOUBLE, TO_FLOAT);
      break;
    case MM_DTYPE_DOUBLE:
      EXAMPLE_MATMUL(double, double, AS_DOUBLE, TO_DOUBLE);
      break;
    case MM_DTYPE_FLOAT16:
      EXAMPLE_MATMUL(uint16_t, double, half_to_double, double_to_half);
      break;
    case MM_DTYPE_BFLOAT16:
      EXAMPLE_MATMUL(uint16_t, double, bfloat16_to_double, double_to_bfloat16);
      break;
    case MM_DTYPE_INT32:
      EXAMPLE_MATMUL(int32_t, uint32_t, AS_U32, u32_to_i32);
      break;
    case MM_DTYPE_UINT32:
      EXAMPLE_MATMUL(uint32_t, uint32_t, SAME, SAME);
      break;
    case MM_DTYPE_INT64:
      EXAMPLE_MATMUL(int64_t, uint64_t, AS_U64, u64_to_i64);
      break;
    case MM_DTYPE_UINT64:
      EXAMPLE_MATMUL(uint64_t, uint64_t, SAME, SAME);
      break;
    default:
      snprintf(text, capacity, "unknown dtype %d", (int)h->dtype);
      return MM_STATUS_INVALID_ARGUMENT;
  }
  return MM_STATUS_OK;
}

static void example_describe(void* handle, char* text, size_t capacity) {
  const example_handle* h = (const example_handle*)handle;
  snprintf(text, capacity, "naive i-j-p loops, %lld batch entries of %lldx%lldx%lld",
           (long long)h->batch, (long long)h->m, (long long)h->k, (long long)h->n);
}

/* Every float dtype is multiplied and summed in double (EXAMPLE_MATMUL's ACC above) and rounded
 * once; integers keep mm's default (their own type: exact modulo 2^bits). No flushes. */
static void example_arithmetic(int32_t dtype, mm_arithmetic* answer) {
  switch (dtype) {
    case MM_DTYPE_FLOAT:
    case MM_DTYPE_DOUBLE:
    case MM_DTYPE_FLOAT16:
    case MM_DTYPE_BFLOAT16:
      answer->accumulation = MM_DTYPE_DOUBLE;
      answer->flushes_subnormals = 0;
      break;
    default:
      break;
  }
}

/* ---- MatMul's family (ABI version 3): MatMulInteger ----------------------------------------- */

static int32_t example_op_supports(const mm_op_desc* desc, char* text, size_t capacity) {
  if (desc->op == MM_OP_MATMUL_INTEGER) return MM_SUPPORT_NATIVE; /* every uint8/int8 pair */
  snprintf(text, capacity, "the example computes MatMulInteger only of MatMul's family, not %s",
           desc->op == MM_OP_GEMM ? "Gemm" : "QLinearMatMul");
  return MM_SUPPORT_NO;
}

/* Element i of a uint8 or int8 tensor, widened. */
static int64_t int8_value(const mm_const_tensor* t, int64_t i) {
  return t->dtype == MM_DTYPE_UINT8 ? ((const uint8_t*)t->data)[i] : ((const int8_t*)t->data)[i];
}

/* The zero point for row i of A's matrix a_matrix, or column j of B's matrix b_matrix: its form
 * says which (mm_quant_form); 0 when absent. */
static int64_t zero_point(const mm_quant* q, const mm_op_problem* p, int64_t a_matrix, int64_t i,
                          int64_t b_matrix, int64_t j) {
  switch (q->form) {
    case MM_QUANT_PER_TENSOR:
      return int8_value(&q->tensor, 0);
    case MM_QUANT_PER_ROW:
      return int8_value(&q->tensor, a_matrix * p->m + i);
    case MM_QUANT_PER_COLUMN:
      return int8_value(&q->tensor, b_matrix * p->n + j);
    default:
      return 0; /* MM_QUANT_ABSENT */
  }
}

/* Y = (A - a_zero_point)(B - b_zero_point) per batch entry. Each difference lies in [-255, 255], so
 * each product and any sum of fewer than 2^47 of them is exact in int64; the sum is then wrapped
 * to int32, the only overflow the standard allows. */
static int32_t example_op_compute(const mm_op_problem* p, const mm_tensor* y, char* text,
                                  size_t capacity) {
  int32_t* out = (int32_t*)y->data;
  int64_t entry, i, j, q;
  if (p->desc.op != MM_OP_MATMUL_INTEGER) {
    snprintf(text, capacity, "the example computes MatMulInteger only");
    return MM_STATUS_UNIMPLEMENTED;
  }
  for (entry = 0; entry < p->batch; ++entry) {
    int64_t rest = entry, a_offset = 0, b_offset = 0, a_matrix, b_matrix;
    int32_t axis;
    for (axis = p->batch_rank - 1; axis >= 0; --axis) {
      const int64_t index = rest % p->batch_dims[axis];
      rest /= p->batch_dims[axis];
      a_offset += index * p->a_batch_strides[axis];
      b_offset += index * p->b_batch_strides[axis];
    }
    a_matrix = p->m * p->k > 0 ? a_offset / (p->m * p->k) : 0;
    b_matrix = p->k * p->n > 0 ? b_offset / (p->k * p->n) : 0;
    for (i = 0; i < p->m; ++i) {
      for (j = 0; j < p->n; ++j) {
        const int64_t a_zp = zero_point(&p->a_zero_point, p, a_matrix, i, b_matrix, j);
        const int64_t b_zp = zero_point(&p->b_zero_point, p, a_matrix, i, b_matrix, j);
        int64_t sum = 0;
        for (q = 0; q < p->k; ++q) {
          sum += (int8_value(&p->a, a_offset + i * p->k + q) - a_zp) *
                 (int8_value(&p->b, b_offset + q * p->n + j) - b_zp);
        }
        out[(entry * p->m + i) * p->n + j] = u32_to_i32((uint32_t)sum);
      }
    }
  }
  return MM_STATUS_OK;
}

static void example_op_describe(const mm_op_desc* desc, char* text, size_t capacity) {
  (void)desc;
  snprintf(text, capacity,
           "naive loops, widened products summed exactly in int64, wrapped to int32");
}

static const mm_backend_plugin kExamplePlugin = {
    MM_BACKEND_PLUGIN_ABI_VERSION,
    "example",
    "example C99 plugin: naive loops, every dtype (float16/bfloat16 via double accumulation); "
    "MatMulInteger",
    example_supports,
    example_prepare,
    example_execute,
    example_release,
    example_describe,
    example_arithmetic,
    example_op_supports,
    NULL, /* op_arithmetic: no float Gemm to declare; the integer operators are exact */
    example_op_compute,
    example_op_describe,
};

MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void) {
  return &kExamplePlugin;
}
