/* test_gemm_small.c - src/backend/small.c, the kernel for float32 products
 * too small for BLAS: which products it takes, and its values over random
 * shapes and every operand layout (A and B row-major, transposed or rows
 * apart; C contiguous, rows apart or columns apart) against float64 sums
 * computed here; what lies around C left alone; each row of C the same
 * bits whatever the rows computed with it; non-finite values kept to their
 * own rows and columns. */
#include "check.h"
#include "backend/backend.h"

static uint64_t rng_state = 88172645463325252ULL;
static double unit(void) { return check_unit(&rng_state); }
static int64_t pick(int64_t lo, int64_t hi) { return check_pick(&rng_state, lo, hi); }

static void test_choice(void) {
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 32, 32, 16), "small") == 0);
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 16, 16, 16), "small") == 0);   /* 4096: the lower bar */
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 64, 64, 16), "small") == 0);   /* 65536: the upper bar */
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 64, 64, 17), "blas") == 0);    /* above it */
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 15, 16, 16), "cpu") == 0);     /* below 4096 */
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 2, 16, 1024), "blas") == 0);   /* B too long to copy */
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 1, 256, 64), "blas") == 0);    /* one row: gemv */
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F64, 32, 32, 16), "blas") == 0);    /* float32 only */
}

/* A rows x cols operand laid out by kind (0 row-major, 1 the transpose of
 * a row-major cols x rows, 2 row-major with rows 3 apart wider): its
 * strides; the floats it spans in *len. */
static void layout(int kind, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs, int64_t *len) {
  if (kind == 1) {
    *rs = 1;
    *cs = rows;
    *len = rows * cols;
  } else {
    *rs = cols + (kind == 2 ? 3 : 0);
    *cs = 1;
    *len = rows * *rs;
  }
}

#define SENTINEL 12345.0f

/* C = A B for one shape and layout, against float64 sums; every float of
 * C's buffer that is not C keeps the sentinel. */
static int check_product(int64_t m, int64_t n, int64_t k, int ka, int kb, int kc) {
  int64_t ars, acs, alen, brs, bcs, blen, crs, ccs, clen;
  layout(ka, m, k, &ars, &acs, &alen);
  layout(kb, k, n, &brs, &bcs, &blen);
  if (kc == 1) { /* columns two apart */
    ccs = 2;
    crs = 2 * n;
  } else {
    ccs = 1;
    crs = n + (kc == 2 ? 5 : 0);
  }
  clen = m * crs;
  float *a = malloc(sizeof(float) * (size_t)alen), *b = malloc(sizeof(float) * (size_t)blen);
  float *c = malloc(sizeof(float) * (size_t)clen);
  int ok = a && b && c;
  for (int64_t i = 0; ok && i < alen; i++) a[i] = (float)unit();
  for (int64_t i = 0; ok && i < blen; i++) b[i] = (float)unit();
  for (int64_t i = 0; ok && i < clen; i++) c[i] = SENTINEL;
  cell_gemm g = {CELL_DTYPE_F32, m, n, k, (const char *)a, ars, acs, (const char *)b, brs, bcs,
                 (char *)c, crs, ccs, 0};
  if (ok) ok = strcmp(cell_backend_for_gemm(&g)->name, "small") == 0 && cell_gemm_run(&g) == CELL_OK;
  for (int64_t i = 0; ok && i < m; i++)
    for (int64_t j = 0; ok && j < n; j++) {
      double s;
      float got = c[i * crs + j * ccs];
      if (!check_gemm_elem(a, ars, acs, b, brs, bcs, k, i, j, 0, got, &s)) {
        fprintf(stderr, "small gemm %ldx%ldx%ld layouts %d%d%d: C[%ld,%ld] = %.9g, want %.9g\n", (long)m, (long)n,
                (long)k, ka, kb, kc, (long)i, (long)j, got, s);
        ok = 0;
      }
      c[i * crs + j * ccs] = SENTINEL; /* checked: what remains must be the sentinel */
    }
  for (int64_t i = 0; ok && i < clen; i++)
    if (c[i] != SENTINEL) {
      fprintf(stderr, "small gemm %ldx%ldx%ld layouts %d%d%d wrote outside C at %ld\n", (long)m, (long)n,
              (long)k, ka, kb, kc, (long)i);
      ok = 0;
    }
  free(a);
  free(b);
  free(c);
  return ok;
}

static void test_values(void) {
  /* the attention heads' products, then random ones in the kernel's range */
  const int64_t fixed[][3] = {{32, 32, 16}, {32, 16, 32}, {16, 32, 32}, {64, 64, 16}, {2, 64, 32}, {17, 33, 9}};
  for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++)
    for (int ka = 0; ka < 3; ka++)
      for (int kb = 0; kb < 3; kb++)
        for (int kc = 0; kc < 3; kc++) CHECK(check_product(fixed[f][0], fixed[f][1], fixed[f][2], ka, kb, kc));
  int done = 0;
  while (done < 200) {
    int64_t m = pick(2, 70), n = pick(2, 70), k = pick(1, 70);
    int64_t w = m * n * k, np = (n + 15) / 16 * 16;
    if (w < 4096 || w > 65536 || k * np > 8192) continue;
    CHECKF(check_product(m, n, k, (int)pick(0, 2), (int)pick(0, 2), (int)pick(0, 2)), "shape %ldx%ldx%ld", (long)m,
           (long)n, (long)k);
    done++;
  }
}

/* Row i of C does not depend on how many rows are computed with it (the
 * four-row blocks and the single rows give the same bits): the first r
 * rows alone against all m. */
static void test_rows_alone(void) {
  int64_t m = 23, n = 37, k = 29;
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *c = malloc(sizeof(float) * (size_t)(m * n)), *d = malloc(sizeof(float) * (size_t)(m * n));
  if (!a || !b || !c || !d) {
    CHECK(!"out of memory");
  } else {
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)unit();
    for (int64_t i = 0; i < k * n; i++) b[i] = (float)unit();
    cell_gemm g = {CELL_DTYPE_F32, m, n, k, (const char *)a, k, 1, (const char *)b, n, 1, (char *)c, n, 1, 0};
    CHECK_OK(cell_gemm_run(&g));
    for (int64_t r = 5; r <= m; r += 6) { /* 5, 11, 17, 23 rows: each ends in single rows */
      cell_gemm h = g;
      h.m = r;
      h.c = (char *)d;
      int same = 1;
      if (strcmp(cell_backend_for_gemm(&h)->name, "small") != 0 || cell_gemm_run(&h) != CELL_OK) same = 0;
      for (int64_t i = 0; same && i < r * n; i++) same = memcmp(&c[i], &d[i], sizeof(float)) == 0;
      CHECKF(same, "%ld rows", (long)r);
    }
  }
  free(a);
  free(b);
  free(c);
  free(d);
}

/* A NaN in B's column 3 and an infinity in A's row 2: C's column 3 NaN,
 * row 2 infinite or NaN, every other element finite. */
static void test_non_finite(void) {
  enum { M = 9, N = 21, K = 30 };
  float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (float)unit();
  for (int i = 0; i < K * N; i++) b[i] = (float)unit();
  b[5 * N + 3] = NAN;
  a[2 * K + 7] = INFINITY;
  cell_gemm g = {CELL_DTYPE_F32, M, N, K, (const char *)a, K, 1, (const char *)b, N, 1, (char *)c, N, 1, 0};
  CHECK(strcmp(cell_backend_for_gemm(&g)->name, "small") == 0);
  CHECK_OK(cell_gemm_run(&g));
  int ok = 1;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float v = c[i * N + j];
      if (j == 3) ok &= isnan(v);
      else if (i == 2) ok &= !isfinite(v);
      else ok &= isfinite(v);
    }
  CHECK(ok);
}

void test_gemm_small_all(void) {
  test_choice();
  test_values();
  test_rows_alone();
  test_non_finite();
}
