/*
 * A plugin as written for version 1 of the plugin ABI, before arithmetic() existed: its table is
 * version 1's layout (copied here, field by field, as version 1's header declared it), so it ends
 * after describe. What follows it in memory is a trap: a non-NULL pointer where version 2's
 * arithmetic() would be. A loader that read past version 1's table would call it and crash; mm
 * must load this plugin and judge it by version 1's meaning (each dtype accumulates in itself).
 *
 * Built with MM_V2_LAYOUT, it is the same plugin written for version 2: version 2's table (ending
 * after arithmetic(), which declares float accumulated in double), then the trap where version 3's
 * op_supports() would be. Both compute MatMul only: mm refuses them every problem of the family,
 * naming their ABI version.
 *
 * It computes float only: naive loops accumulating in double, rounded once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mm/mm_backend_plugin.h"

/* Version 1's mm_backend_plugin. */
typedef struct v1_table {
  uint32_t abi_version;
  const char* name;
  const char* description;
  int32_t (*supports)(const mm_matmul_problem* problem, char* text, size_t capacity);
  int32_t (*prepare)(const mm_matmul_problem* problem, void** handle, char* text, size_t capacity);
  int32_t (*execute)(void* handle, const mm_const_tensor* a, const mm_const_tensor* b,
                     const mm_tensor* y, char* text, size_t capacity);
  void (*release)(void* handle);
  void (*describe)(void* handle, char* text, size_t capacity);
#if defined(MM_V2_LAYOUT)
  void (*arithmetic)(int32_t dtype, mm_arithmetic* answer); /* Version 2's addition. */
#endif
} v1_table;

typedef struct handle {
  int64_t m, n, k, batch;
  int32_t batch_rank;
  int64_t batch_dims[16], a_strides[16], b_strides[16];
} handle;

static int32_t v1_supports(const mm_matmul_problem* problem, char* text, size_t capacity) {
  if (problem->dtype == MM_DTYPE_FLOAT) return MM_SUPPORT_NATIVE;
  snprintf(text, capacity, "float only");
  return MM_SUPPORT_NO;
}

static int32_t v1_prepare(const mm_matmul_problem* problem, void** out, char* text,
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

static int32_t v1_execute(void* opaque, const mm_const_tensor* a, const mm_const_tensor* b,
                          const mm_tensor* y, char* text, size_t capacity) {
  const handle* h = (const handle*)opaque;
  const float* ad = (const float*)a->data;
  const float* bd = (const float*)b->data;
  float* yd = (float*)y->data;
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
        double sum = 0;
        for (p = 0; p < h->k; ++p) {
          sum += (double)ad[a_offset + i * h->k + p] * bd[b_offset + p * h->n + j];
        }
        yd[entry * h->m * h->n + i * h->n + j] = (float)sum;
      }
    }
  }
  return MM_STATUS_OK;
}

static void v1_release(void* opaque) { free(opaque); }

#if defined(MM_V2_LAYOUT)
static void v2_arithmetic(int32_t dtype, mm_arithmetic* answer) {
  if (dtype == MM_DTYPE_FLOAT) answer->accumulation = MM_DTYPE_DOUBLE;
}

/* Version 2's table, then the trap where version 3 has op_supports(). */
static const struct {
  v1_table table;
  uintptr_t trap;
} kPlugin = {
    {2, "v2_plugin", "a plugin written for ABI version 2: float, naive loops", v1_supports,
     v1_prepare, v1_execute, v1_release, NULL, v2_arithmetic},
    1,
};
#else
/* Version 1's table, then the trap where version 2 has arithmetic(). */
static const struct {
  v1_table table;
  uintptr_t trap;
} kPlugin = {
    {1, "v1_plugin", "a plugin written for ABI version 1: float, naive loops", v1_supports,
     v1_prepare, v1_execute, v1_release, NULL},
    1,
};
#endif

MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void) {
  return (const mm_backend_plugin*)(const void*)&kPlugin.table;
}
