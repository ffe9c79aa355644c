/* A fake BLAS for the BLAS backend's tests: naive column-major GEMMs (transposes, alpha and beta
 * as the interface defines them; the fake sbgemm_ beta = 0 only, as mm calls it) and, with
 * MM_FAKE_OPENBLAS, OpenBLAS's thread and information functions and a bfloat16 sbgemm_ (bf16 in,
 * float32 out). With MM_FAKE_NO_DGEMM it lacks dgemm_, which the loader must refuse. Every call is
 * counted (fake_blas_calls), so a test can tell how many GEMMs one MatMul took. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static int calls = 0;
static int threads = 1;

int fake_blas_calls(void) { return calls; }

#define FAKE_GEMM(NAME, T)                                                                         \
  void NAME(const char* ta, const char* tb, const int* m, const int* n, const int* k,              \
            const T* alpha, const T* a, const int* lda, const T* b, const int* ldb, const T* beta, \
            T* c, const int* ldc, size_t la, size_t lb) {                                          \
    (void)la;                                                                                      \
    (void)lb;                                                                                      \
    ++calls;                                                                                       \
    for (int j = 0; j < *n; ++j) {                                                                 \
      for (int i = 0; i < *m; ++i) {                                                               \
        T sum = 0;                                                                                 \
        for (int p = 0; p < *k; ++p) {                                                             \
          const T x = *ta == 'N' ? a[i + (ptrdiff_t)p * *lda] : a[p + (ptrdiff_t)i * *lda];        \
          const T y = *tb == 'N' ? b[p + (ptrdiff_t)j * *ldb] : b[j + (ptrdiff_t)p * *ldb];        \
          sum += x * y;                                                                            \
        }                                                                                          \
        T* out = &c[i + (ptrdiff_t)j * *ldc];                                                      \
        /* beta = 0: C is not read, as the BLAS interface says. */                                 \
        *out = *alpha * sum + (*beta == 0 ? 0 : *beta * *out);                                     \
      }                                                                                            \
    }                                                                                              \
  }

FAKE_GEMM(sgemm_, float)
#ifndef MM_FAKE_NO_DGEMM
FAKE_GEMM(dgemm_, double)
#endif

#ifdef MM_FAKE_OPENBLAS
static float FromBf16(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof value);
  return value;
}

void sbgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
             const float* alpha, const uint16_t* a, const int* lda, const uint16_t* b,
             const int* ldb, const float* beta, float* c, const int* ldc, size_t la, size_t lb) {
  (void)ta;
  (void)tb;
  (void)beta;
  (void)la;
  (void)lb;
  ++calls;
  for (int j = 0; j < *n; ++j) {
    for (int i = 0; i < *m; ++i) {
      float sum = 0;
      for (int p = 0; p < *k; ++p) {
        sum += FromBf16(a[i + (ptrdiff_t)p * *lda]) * FromBf16(b[p + (ptrdiff_t)j * *ldb]);
      }
      c[i + (ptrdiff_t)j * *ldc] = *alpha * sum;
    }
  }
}

void openblas_set_num_threads(int n) { threads = n; }
int openblas_get_num_threads(void) { return threads; }
char* openblas_get_config(void) { return (char*)"OpenBLAS 9.8.7 FAKE"; }
char* openblas_get_corename(void) { return (char*)"FakeCore"; }
#endif
