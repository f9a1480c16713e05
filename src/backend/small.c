/* small.c - float32 products too small for BLAS's call to pay: a register-
 * blocked kernel, four rows by sixteen columns of C at a time.
 *
 * An attention head of the tiny GPT multiplies 32 x 16 by 16 x 32 and back
 * again, six products a head a step, 768 in all: OpenBLAS took 1.7-2.2 us
 * for each (its checks, its buffers, packing both operands; measured warm),
 * this kernel 1.2-1.6 us, on the same products. Up to 64 x 64 x 16 it is
 * as fast as OpenBLAS or faster (measured up to 512 x 64 x 64, 31 against
 * 29 GFLOP/s on one Zen core); above SMALL_MAX_WORK, where products are
 * split over threads, BLAS keeps them.
 *
 * B is copied into rows of whole vectors (its columns padded with zeros to
 * a multiple of 16, on the stack), so any layout of B costs one pass over
 * it; A is read an element at a time with its strides. Each element of C
 * is the sum over p of A[i,p] B[p,j] in order of p, one multiply-add each
 * (where the machine has them): the same value whatever the thread count
 * or the rows around it. */
#include "backend.h"
#include "../core/iter.h"
#include <string.h>

#define SMALL_MIN_WORK 4096  /* below: the portable backend (as BLAS's lower bar) */
#define SMALL_MAX_WORK 65536 /* above: BLAS */
#define SMALL_PACK 8192      /* floats of packed B at most (32 KB, on the stack) */
#define SMALL_W 16           /* columns of C a block */

typedef float small_v8 __attribute__((vector_size(32)));

static int64_t padded(int64_t n) { return (n + SMALL_W - 1) / SMALL_W * SMALL_W; }

static int small_supports(const cell_gemm *g) {
  if (g->dtype != CELL_DTYPE_F32 || g->part || g->m < 2 || g->n < 2 || g->k < 1) return 0;
  if (g->m > SMALL_MAX_WORK || g->n > SMALL_MAX_WORK || g->k > SMALL_MAX_WORK) return 0; /* no overflow below */
  int64_t work = g->m * g->n * g->k;
  return work >= SMALL_MIN_WORK && work <= SMALL_MAX_WORK && g->k * padded(g->n) <= SMALL_PACK;
}

#define SMALL_LOAD(v, p) memcpy(&(v), (p), sizeof(small_v8))
#define SMALL_STORE(p, v) memcpy((p), &(v), sizeof(small_v8))

/* Columns j0 .. j0 + w of rows i .. i + rows (rows 4 or 1) of C from t;
 * whole blocks of a contiguous row are stored as vectors by the caller. */
static void put_rows(const cell_gemm *g, int64_t i, int rows, int64_t j0, int64_t w, float t[4][SMALL_W]) {
  float *c = (float *)(void *)g->c;
  for (int r = 0; r < rows; r++) {
    float *cr = c + (i + r) * g->c_rs + j0 * g->c_cs;
    for (int64_t j = 0; j < w; j++) cr[j * g->c_cs] = t[r][j];
  }
}

/* C from A and bp, B's rows of whole blocks of SMALL_W columns (zeros past
 * n), ldb floats apart. */
CELL_CLONES_V3
static void small_blocks(const cell_gemm *g, const float *bp, int64_t ldb) {
  const float *a = (const float *)(const void *)g->a;
  float *c = (float *)(void *)g->c;
  int64_t m = g->m, n = g->n, k = g->k, ars = g->a_rs, acs = g->a_cs, crs = g->c_rs;
  int vec = g->c_cs == 1; /* whole blocks stored straight into C */
  float t[4][SMALL_W];
  for (int64_t j0 = 0; j0 < n; j0 += SMALL_W) {
    int64_t w = n - j0 < SMALL_W ? n - j0 : SMALL_W;
    int direct = vec && w == SMALL_W;
    const float *bj = bp + j0;
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      small_v8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
      const float *a0 = a + i * ars, *a1 = a0 + ars, *a2 = a1 + ars, *a3 = a2 + ars;
      for (int64_t p = 0; p < k; p++) {
        small_v8 b0, b1;
        SMALL_LOAD(b0, bj + p * ldb);
        SMALL_LOAD(b1, bj + p * ldb + 8);
        float x0 = a0[p * acs], x1 = a1[p * acs], x2 = a2[p * acs], x3 = a3[p * acs];
        c00 += x0 * b0;
        c01 += x0 * b1;
        c10 += x1 * b0;
        c11 += x1 * b1;
        c20 += x2 * b0;
        c21 += x2 * b1;
        c30 += x3 * b0;
        c31 += x3 * b1;
      }
      if (direct) {
        float *c0 = c + i * crs + j0;
        SMALL_STORE(c0, c00);
        SMALL_STORE(c0 + 8, c01);
        SMALL_STORE(c0 + crs, c10);
        SMALL_STORE(c0 + crs + 8, c11);
        SMALL_STORE(c0 + 2 * crs, c20);
        SMALL_STORE(c0 + 2 * crs + 8, c21);
        SMALL_STORE(c0 + 3 * crs, c30);
        SMALL_STORE(c0 + 3 * crs + 8, c31);
        continue;
      }
      SMALL_STORE(t[0], c00);
      SMALL_STORE(t[0] + 8, c01);
      SMALL_STORE(t[1], c10);
      SMALL_STORE(t[1] + 8, c11);
      SMALL_STORE(t[2], c20);
      SMALL_STORE(t[2] + 8, c21);
      SMALL_STORE(t[3], c30);
      SMALL_STORE(t[3] + 8, c31);
      put_rows(g, i, 4, j0, w, t);
    }
    for (; i < m; i++) {
      small_v8 c0 = {0}, c1 = {0};
      const float *a0 = a + i * ars;
      for (int64_t p = 0; p < k; p++) {
        small_v8 b0, b1;
        SMALL_LOAD(b0, bj + p * ldb);
        SMALL_LOAD(b1, bj + p * ldb + 8);
        float x0 = a0[p * acs];
        c0 += x0 * b0;
        c1 += x0 * b1;
      }
      if (direct) {
        SMALL_STORE(c + i * crs + j0, c0);
        SMALL_STORE(c + i * crs + j0 + 8, c1);
        continue;
      }
      SMALL_STORE(t[0], c0);
      SMALL_STORE(t[0] + 8, c1);
      put_rows(g, i, 1, j0, w, t);
    }
  }
}

static cell_status small_gemm(const cell_gemm *g) {
  const float *b = (const float *)(const void *)g->b;
  int64_t n = g->n, np = padded(n);
  if (g->b_cs == 1 && n == np) { /* B's rows are whole blocks already */
    small_blocks(g, b, g->b_rs);
    return CELL_OK;
  }
  float bp[SMALL_PACK] __attribute__((aligned(32)));
  for (int64_t p = 0; p < g->k; p++) {
    float *d = bp + p * np;
    const float *src = b + p * g->b_rs;
    int64_t bcs = g->b_cs;
    for (int64_t j = 0; j < n; j++) d[j] = src[j * bcs];
    for (int64_t j = n; j < np; j++) d[j] = 0;
  }
  small_blocks(g, bp, np);
  return CELL_OK;
}

const cell_backend cell_backend_small = {"small", CELL_DEVICE_CPU, small_supports, small_gemm};
