/* cpu.c - the portable backend: a strided gemm for every dtype. */
#include "backend.h"
#include "../core/iter.h"

static int cpu_supports(const cell_gemm *g) {
  (void)g;
  return 1;
}

/* Row i of C accumulates A[i,p] * B[p,:]; the inner loop runs along B's row
 * so contiguous operands vectorise. */
#define GEMM_NATIVE(T)                                                              \
  do {                                                                              \
    const T *A = (const T *)g->a, *B = (const T *)g->b;                             \
    T *C = (T *)g->c;                                                               \
    CELL_FOR(g->m * g->n * g->k > 1000000 && cell_ctx()->num_threads > 1, int64_t, i, g->m, { \
      T *crow = C + i * g->c_rs;                                                    \
      for (int64_t j = 0; j < g->n; j++) crow[j * g->c_cs] = 0;                     \
      for (int64_t p = 0; p < g->k; p++) {                                          \
        T av = A[i * g->a_rs + p * g->a_cs];                                        \
        const T *brow = B + p * g->b_rs;                                            \
        if (g->b_cs == 1 && g->c_cs == 1)                                           \
          for (int64_t j = 0; j < g->n; j++) crow[j] += av * brow[j];               \
        else                                                                        \
          for (int64_t j = 0; j < g->n; j++) crow[j * g->c_cs] += av * brow[j * g->b_cs]; \
      }                                                                             \
    });                                                                             \
  } while (0)

static cell_status cpu_gemm(const cell_gemm *g) {
  if (g->dtype == CELL_DTYPE_F32) {
    GEMM_NATIVE(float);
    return CELL_OK;
  }
  if (g->dtype == CELL_DTYPE_F64) {
    GEMM_NATIVE(double);
    return CELL_OK;
  }
  /* Other dtypes: accumulate in double (floats) or int64 (integers). */
  int es = cell_dtype_size(g->dtype);
  bool fl = cell_dtype_is_float(g->dtype);
  for (int64_t i = 0; i < g->m; i++)
    for (int64_t j = 0; j < g->n; j++) {
      double accf = 0;
      uint64_t acci = 0;
      for (int64_t p = 0; p < g->k; p++) {
        const char *pa = g->a + (i * g->a_rs + p * g->a_cs) * es;
        const char *pb = g->b + (p * g->b_rs + j * g->b_cs) * es;
        if (fl)
          accf += cell_load_f64(g->dtype, pa) * cell_load_f64(g->dtype, pb);
        else
          acci += (uint64_t)cell_load_i64(g->dtype, pa) * (uint64_t)cell_load_i64(g->dtype, pb);
      }
      char *pc = g->c + (i * g->c_rs + j * g->c_cs) * es;
      if (fl)
        cell_store_f64(g->dtype, pc, accf);
      else
        cell_store_i64(g->dtype, pc, (int64_t)acci);
    }
  return CELL_OK;
}

const cell_backend cell_backend_cpu = {"cpu", CELL_DEVICE_CPU, cpu_supports, cpu_gemm};
