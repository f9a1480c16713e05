/* blas.c - the OpenBLAS backend: float32/float64 gemm with BLAS layouts. */
#include "backend.h"
#include <cblas.h>
#include <omp.h>
#include "../core/iter.h"
#include <stdlib.h>

/* Below this many multiply-adds the call overhead of BLAS dominates. */
#define BLAS_MIN_WORK 4096

/* A rows x cols operand with element strides (rs, cs) as a row-major BLAS
 * matrix: transposed or not, and its leading dimension. */
static int layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE *tr,
                  int64_t *ld) {
  if (cs == 1 || cols == 1) {
    *tr = CblasNoTrans;
    *ld = rows > 1 ? rs : cols;
    if (*ld < cols) *ld = cols;
    return rows <= 1 || rs >= cols;
  }
  if (rs == 1 || rows == 1) {
    *tr = CblasTrans;
    *ld = cols > 1 ? cs : rows;
    if (*ld < rows) *ld = rows;
    return cols <= 1 || cs >= rows;
  }
  return 0;
}

static int blas_supports(const cell_gemm *g) {
  if (g->dtype != CELL_DTYPE_F32 && g->dtype != CELL_DTYPE_F64) return 0;
  if (g->m * g->n * g->k < BLAS_MIN_WORK) return 0;
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX) return 0;
  CBLAS_TRANSPOSE t;
  int64_t ld;
  if (!layout(g->m, g->k, g->a_rs, g->a_cs, &t, &ld) || ld > INT32_MAX) return 0;
  if (!layout(g->k, g->n, g->b_rs, g->b_cs, &t, &ld) || ld > INT32_MAX) return 0;
  return (g->c_cs == 1 || g->n == 1) && (g->m <= 1 || g->c_rs >= g->n) && g->c_rs <= INT32_MAX;
}

/* One row or one column of output is a matrix-vector product: OpenBLAS's
 * gemm does not forward it to gemv, which is several times faster (a
 * batch-1 Dense layer: 60 us as gemm, 9 us as gemv for 784 x 256). The
 * vector's stride must be positive (BLAS reads negative ones backwards). */
static int gemv(const cell_gemm *g) {
  CBLAS_TRANSPOSE tm;
  int64_t ldm;
  if (g->m == 1 && g->a_cs > 0 && g->c_cs > 0) { /* c^T = B^T a^T */
    layout(g->k, g->n, g->b_rs, g->b_cs, &tm, &ldm);
    CBLAS_TRANSPOSE t = tm == CblasNoTrans ? CblasTrans : CblasNoTrans;
    int rows = (int)(tm == CblasNoTrans ? g->k : g->n), cols = (int)(tm == CblasNoTrans ? g->n : g->k);
    if (g->dtype == CELL_DTYPE_F32)
      cblas_sgemv(CblasRowMajor, t, rows, cols, 1.0f, (const float *)g->b, (int)ldm,
                  (const float *)g->a, (int)g->a_cs, 0.0f, (float *)g->c, (int)g->c_cs);
    else
      cblas_dgemv(CblasRowMajor, t, rows, cols, 1.0, (const double *)g->b, (int)ldm,
                  (const double *)g->a, (int)g->a_cs, 0.0, (double *)g->c, (int)g->c_cs);
    return 1;
  }
  if (g->n == 1 && g->b_rs > 0 && g->c_rs > 0) { /* c = A b */
    layout(g->m, g->k, g->a_rs, g->a_cs, &tm, &ldm);
    int rows = (int)(tm == CblasNoTrans ? g->m : g->k), cols = (int)(tm == CblasNoTrans ? g->k : g->m);
    if (g->dtype == CELL_DTYPE_F32)
      cblas_sgemv(CblasRowMajor, tm, rows, cols, 1.0f, (const float *)g->a, (int)ldm,
                  (const float *)g->b, (int)g->b_rs, 0.0f, (float *)g->c, (int)g->c_rs);
    else
      cblas_dgemv(CblasRowMajor, tm, rows, cols, 1.0, (const double *)g->a, (int)ldm,
                  (const double *)g->b, (int)g->b_rs, 0.0, (double *)g->c, (int)g->c_rs);
    return 1;
  }
  return 0;
}

/* C = A B + beta C as one BLAS call (beta 0: C is only written). */
static void blas_gemm_beta(const cell_gemm *g, double beta) {
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  layout(g->m, g->k, g->a_rs, g->a_cs, &ta, &lda);
  layout(g->k, g->n, g->b_rs, g->b_cs, &tb, &ldb);
  int ldc = (int)(g->m > 1 ? g->c_rs : g->n);
  if (ldc < g->n) ldc = (int)g->n;
  if (g->dtype == CELL_DTYPE_F32)
    cblas_sgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k, 1.0f,
                (const float *)g->a, (int)lda, (const float *)g->b, (int)ldb, (float)beta,
                (float *)g->c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k, 1.0,
                (const double *)g->a, (int)lda, (const double *)g->b, (int)ldb, beta,
                (double *)g->c, ldc);
}

/* OpenBLAS's float32 kernel (the Haswell and Zen one at least) prefetches
 * the next packed panel of B while it computes the last one, past the end
 * of what the call packed, into pages of its own buffer (128 MB of address
 * space per caller, written only as far as products have packed) that no
 * call has written yet. A software prefetch cannot fault a page in: the
 * page walk fails, and is walked again at every such prefetch. Under a
 * hypervisor (nested page tables) the walk costs enough that small products
 * run at a third of their speed: on a 2-vCPU EPYC VM, 1 thread, 64 x 64 x
 * 256 ran at 10 GFLOPS, 33 once the pages were written. The tiny GPT's
 * weight gradients (sums over 512 rows) were all of that kind: 28% of its
 * step's samples sat on the instruction after that prefetch at 1 thread
 * and 24% at 2; 0.1% at both after one 64 x 512 x 512 product of zeros
 * (2 ms, 320 KB of the buffer resident), as after a 1024^3 one.
 * Each thread of a team has its own buffer (OpenBLAS hands concurrent
 * callers distinct ones), so the team runs that product together, the
 * first time a team of that size reaches BLAS from outside a parallel
 * region. */
#define WARM_M 64
#define WARM_NK 512

static int warmed_team; /* the largest team whose buffers are written */

static void blas_warm(void) {
  int nt = (int)cell_ctx()->num_threads;
  if (__atomic_load_n(&warmed_team, __ATOMIC_ACQUIRE) >= nt || omp_in_parallel()) return;
  float *ab = calloc((size_t)WARM_NK * WARM_NK, sizeof(float)); /* A's rows and all of B: zero pages */
  float *c = calloc((size_t)nt * WARM_M * WARM_NK, sizeof(float));
  if (ab && c) {
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#pragma omp barrier
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, WARM_M, WARM_NK, WARM_NK, 1.0f, ab, WARM_NK, ab,
                  WARM_NK, 0.0f, c + (size_t)omp_get_thread_num() * WARM_M * WARM_NK, WARM_NK);
    }
    __atomic_store_n(&warmed_team, nt, __ATOMIC_RELEASE);
  }
  free(ab);
  free(c);
}

static cell_status blas_gemm_one(const cell_gemm *g) {
  if (!gemv(g)) blas_gemm_beta(g, 0.0);
  return CELL_OK;
}

/* Medium products split over the team by the longer of C's two sides,
 * each part one OpenBLAS call (which runs single-threaded inside a
 * parallel region): from 2^18 multiply-adds (OpenBLAS's own bar for
 * threads) to 2^26, where its threaded driver takes over again. Below
 * 2^26 that driver shares packed panels between threads through
 * busy-wait flags and sched_yield, and a thread the OS runs late holds
 * up the other at every panel; split parts share nothing (each packs its
 * own copy of the other operand: at most 1/GEMM_SPLIT_MIN of its work).
 * Each element of C sums its k products in the same blocks as the whole
 * product would; only a part small enough for OpenBLAS's small-matrix
 * kernel (where the whole was not) may round differently. */
#define GEMM_SPLIT_LO ((int64_t)1 << 18)
#define GEMM_SPLIT_HI ((int64_t)1 << 26)
#define GEMM_SPLIT_MIN 32

int64_t cell_gemm_split_parts(const cell_gemm *g, int64_t nt) {
  if (nt < 2 || omp_in_parallel() || cell_backend_for_gemm(g) != &cell_backend_blas) return 1;
  double work = (double)g->m * (double)g->n * (double)g->k; /* each side fits 32 bits, not their product */
  int64_t side = g->m >= g->n ? g->m : g->n;
  if (work < (double)GEMM_SPLIT_LO || work > (double)GEMM_SPLIT_HI || side < GEMM_SPLIT_MIN * nt || g->m < 2 ||
      g->n < 2)
    return 1;
  int64_t part = ((side + nt - 1) / nt + 15) / 16 * 16;
  blas_warm(); /* before the parts' region (the callers fork for them) */
  return (side + part - 1) / part;
}

void cell_gemm_split_part(const cell_gemm *g, int64_t parts, int64_t q, cell_gemm *h, int64_t *lo, int64_t *len) {
  int by_rows = g->m >= g->n;
  int64_t side = by_rows ? g->m : g->n, es = g->dtype == CELL_DTYPE_F32 ? 4 : 8;
  int64_t part = (side + parts - 1) / parts;
  part = (part + 15) / 16 * 16;
  *h = *g;
  *lo = q * part;
  *len = side - *lo < part ? side - *lo : part;
  if (*len < 0) *len = 0;
  if (by_rows) { /* rows lo.. of A and C */
    h->m = *len;
    h->a = g->a + *lo * g->a_rs * es;
    h->c = g->c + *lo * g->c_rs * es;
  } else { /* columns lo.. of B and C */
    h->n = *len;
    h->b = g->b + *lo * g->b_cs * es;
    h->c = g->c + *lo * g->c_cs * es;
  }
}

int cell_blas_gemm_acc_ok(const cell_gemm *g) {
  return g->m >= 2 && g->n >= 2 && cell_backend_for_gemm(g) == &cell_backend_blas &&
         cell_gemm_split_parts(g, cell_ctx()->num_threads) == 1;
}

void cell_blas_gemm_acc(const cell_gemm *g) {
  blas_warm();
  blas_gemm_beta(g, 1.0);
}

static cell_status blas_gemm(const cell_gemm *g) {
  blas_warm();
  int64_t parts = cell_gemm_split_parts(g, cell_ctx()->num_threads);
  if (parts < 2) return blas_gemm_one(g);
  CELL_FOR(1, int64_t, q, parts, {
    cell_gemm h;
    int64_t lo, len;
    cell_gemm_split_part(g, parts, q, &h, &lo, &len);
    if (len > 0) blas_gemm_one(&h);
  });
  return CELL_OK;
}

const cell_backend cell_backend_blas = {"blas", CELL_DEVICE_CPU, blas_supports, blas_gemm};
