/*
 * A float16 and bfloat16 plugin whose kernel sums in the dtype itself: every product and every
 * partial sum is rounded to float16 or bfloat16 (a kernel that was meant to widen to float32 and
 * did not). Its results are within the error bound of their own type's accumulation and far
 * outside that of float32 accumulation.
 * Built twice (backends/plugin/CMakeLists.txt):
 *  - MM_HALF_SUM_UNDECLARED: this ABI version without arithmetic(), so judged by its own type,
 *    float16 accumulation: what every version-1 plugin gets. It passes: the slip goes unseen.
 *  - MM_HALF_SUM_DECLARES_FLOAT32: arithmetic() declares float32 accumulation for both dtypes
 *    (what it was meant to do). mm holds it to that bound and the slip is caught.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mm/mm_backend_plugin.h"

typedef struct handle {
  int32_t dtype;
  int64_t m, n, k, batch;
  int32_t batch_rank;
  int64_t batch_dims[16], a_strides[16], b_strides[16];
} handle;

static double half_to_double(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double value;
  if (exponent == 0) {
    value = ldexp((double)mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = ldexp((double)(mantissa + 1024), exponent - 25);
  }
  return (h & 0x8000) ? -value : value;
}

/* x rounded to the nearest value of a binary format with `precision` significand bits, smallest
 * normal exponent `min_exponent` and largest finite value `largest` (ties to even), as a double;
 * overflow gives infinity. */
static double round_to(double x, int precision, int min_exponent, double largest) {
  int e;
  double quantum, r;
  if (!isfinite(x) || x == 0) return x;
  frexp(x, &e);
  if (e - 1 < min_exponent) e = min_exponent + 1;
  quantum = ldexp(1.0, e - precision);
  r = nearbyint(x / quantum) * quantum;
  return fabs(r) > largest ? copysign(INFINITY, r) : r;
}

static double round_to_half(double x) { return round_to(x, 11, -14, 65504.0); }

static double round_to_bfloat16(double x) { return round_to(x, 8, -126, 0x1.fep127); }

static double bfloat16_to_double(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

/* Exact: every bfloat16 value is a float, whose upper half it is. */
static uint16_t double_to_bfloat16(double x) {
  float f;
  uint32_t bits;
  if (isnan(x)) return 0x7fc0;
  f = (float)round_to_bfloat16(x);
  memcpy(&bits, &f, sizeof(bits));
  return (uint16_t)(bits >> 16);
}

static uint16_t double_to_half(double x) {
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  double r;
  int e;
  if (isnan(x)) return 0x7e00;
  r = fabs(round_to_half(x));
  if (isinf(r)) return sign | 0x7c00;
  if (r < ldexp(1.0, -14)) return sign | (uint16_t)(r * 16777216.0);
  {
    const double f = frexp(r, &e);
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((f * 2.0 - 1.0) * 1024.0);
  }
}

static int32_t half_supports(const mm_matmul_problem* problem, char* text, size_t capacity) {
  if (problem->dtype == MM_DTYPE_FLOAT16 || problem->dtype == MM_DTYPE_BFLOAT16) {
    return MM_SUPPORT_NATIVE;
  }
  snprintf(text, capacity, "float16 and bfloat16 only");
  return MM_SUPPORT_NO;
}

static int32_t half_prepare(const mm_matmul_problem* problem, void** out, char* text,
                            size_t capacity) {
  handle* h;
  int32_t axis;
  if (problem->batch_rank > 16) {
    snprintf(text, capacity, "more than 16 batch axes");
    return MM_STATUS_UNIMPLEMENTED;
  }
  h = (handle*)calloc(1, sizeof(handle));
  if (h == NULL) {
    snprintf(text, capacity, "out of memory");
    return MM_STATUS_RESOURCE_EXHAUSTED;
  }
  h->dtype = problem->dtype;
  h->m = problem->m;
  h->n = problem->n;
  h->k = problem->k;
  h->batch = problem->batch;
  h->batch_rank = problem->batch_rank;
  for (axis = 0; axis < problem->batch_rank; ++axis) {
    h->batch_dims[axis] = problem->batch_dims[axis];
    h->a_strides[axis] = problem->a_batch_strides[axis];
    h->b_strides[axis] = problem->b_batch_strides[axis];
  }
  *out = h;
  return MM_STATUS_OK;
}

static int32_t half_execute(void* opaque, const mm_const_tensor* a, const mm_const_tensor* b,
                            const mm_tensor* y, char* text, size_t capacity) {
  const handle* h = (const handle*)opaque;
  const uint16_t* ad = (const uint16_t*)a->data;
  const uint16_t* bd = (const uint16_t*)b->data;
  uint16_t* yd = (uint16_t*)y->data;
  const int bf16 = h->dtype == MM_DTYPE_BFLOAT16;
  double (*to_double)(uint16_t) = bf16 ? bfloat16_to_double : half_to_double;
  double (*round_to_type)(double) = bf16 ? round_to_bfloat16 : round_to_half;
  uint16_t (*from_double)(double) = bf16 ? double_to_bfloat16 : double_to_half;
  int64_t entry, i, j, p;
  (void)text;
  (void)capacity;
  for (entry = 0; entry < h->batch; ++entry) {
    int64_t rest = entry, a_offset = 0, b_offset = 0;
    int32_t axis;
    for (axis = h->batch_rank - 1; axis >= 0; --axis) {
      const int64_t index = rest % h->batch_dims[axis];
      rest /= h->batch_dims[axis];
      a_offset += index * h->a_strides[axis];
      b_offset += index * h->b_strides[axis];
    }
    for (i = 0; i < h->m; ++i) {
      for (j = 0; j < h->n; ++j) {
        double sum = 0; /* Always a value of the dtype. */
        for (p = 0; p < h->k; ++p) {
          const double product = round_to_type(to_double(ad[a_offset + i * h->k + p]) *
                                               to_double(bd[b_offset + p * h->n + j]));
          sum = round_to_type(sum + product);
        }
        yd[entry * h->m * h->n + i * h->n + j] = from_double(sum);
      }
    }
  }
  return MM_STATUS_OK;
}

static void half_release(void* opaque) { free(opaque); }

#if defined(MM_HALF_SUM_DECLARES_FLOAT32)
/* The promise: float16 and bfloat16 inputs, float32 products and sums. */
static void half_arithmetic(int32_t dtype, mm_arithmetic* answer) {
  if (dtype == MM_DTYPE_FLOAT16 || dtype == MM_DTYPE_BFLOAT16)
    answer->accumulation = MM_DTYPE_FLOAT;
}
#define HALF_ARITHMETIC half_arithmetic
#else
#define HALF_ARITHMETIC NULL
#endif

static const mm_backend_plugin kTable = {
    MM_BACKEND_PLUGIN_ABI_VERSION,
    PLUGIN_NAME,
    "float16 and bfloat16, sums in their own type (a planted slip for tests)",
    half_supports,
    half_prepare,
    half_execute,
    half_release,
    NULL,
    HALF_ARITHMETIC,
};

MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void) { return &kTable; }
