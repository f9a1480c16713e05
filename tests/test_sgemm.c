/* test_sgemm.c - src/backend/sgemm.c, cell's own float32 gemm (C += A B),
 * at each vector width the CPU has: its values over random shapes (past
 * the blocks of k, rows and columns) and every operand layout against
 * float64 sums computed here; C's own values kept and added to; what lies
 * around C left alone; the same bits at both widths, and for a row of C
 * whatever rows are computed with it (how products split over threads);
 * non-finite values kept to their own rows and columns; a product through
 * the BLAS backend equal to the kernel's own where the kernel is used. */
#include "check.h"
#include "backend/backend.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static double unit(void) { return check_unit(&rng_state); }
static int64_t pick(int64_t lo, int64_t hi) { return check_pick(&rng_state, lo, hi); }

static int has_isa(int isa) {
  __builtin_cpu_init();
  return isa == 2 ? __builtin_cpu_supports("avx512f") : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* A rows x cols operand laid out by kind: 0 row-major, 1 the transpose of
 * a row-major cols x rows, 2 row-major with rows 3 apart wider, 3 both
 * strides above 1 (columns 2 apart). Its strides; the floats it spans. */
static void layout(int kind, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs, int64_t *len) {
  if (kind == 1) {
    *rs = 1;
    *cs = rows;
  } else if (kind == 3) {
    *cs = 2;
    *rs = 2 * cols + 1;
  } else {
    *rs = cols + (kind == 2 ? 3 : 0);
    *cs = 1;
  }
  *len = (rows - 1) * *rs + (cols - 1) * *cs + 1;
}

#define SENTINEL 12345.0f

/* C += A B for one shape and layout on kernel isa, against float64 sums
 * from C's first values; every float of C's buffer that is not C keeps
 * the sentinel. */
static int check_product(int isa, int64_t m, int64_t n, int64_t k, int ka, int kb, int kc) {
  int64_t ars, acs, alen, brs, bcs, blen, crs, ccs, clen;
  layout(ka, m, k, &ars, &acs, &alen);
  layout(kb, k, n, &brs, &bcs, &blen);
  layout(kc == 1 ? 3 : kc, m, n, &crs, &ccs, &clen); /* 1: columns apart */
  float *a = malloc(sizeof(float) * (size_t)alen), *b = malloc(sizeof(float) * (size_t)blen);
  float *c = malloc(sizeof(float) * (size_t)clen), *c0 = malloc(sizeof(float) * (size_t)(m * n));
  int ok = a && b && c && c0;
  for (int64_t i = 0; ok && i < alen; i++) a[i] = (float)unit();
  for (int64_t i = 0; ok && i < blen; i++) b[i] = (float)unit();
  for (int64_t i = 0; ok && i < clen; i++) c[i] = SENTINEL;
  for (int64_t i = 0; ok && i < m; i++)
    for (int64_t j = 0; j < n; j++) c[i * crs + j * ccs] = c0[i * n + j] = (float)unit();
  cell_gemm g = {CELL_DTYPE_F32, m, n, k, (const char *)a, ars, acs, (const char *)b, brs, bcs, (char *)c, crs, ccs, 0};
  if (ok) ok = cell_sgemm_acc_with(&g, isa) == 1;
  for (int64_t i = 0; ok && i < m; i++)
    for (int64_t j = 0; ok && j < n; j++) {
      double s;
      float got = c[i * crs + j * ccs];
      if (!check_gemm_elem(a, ars, acs, b, brs, bcs, k, i, j, c0[i * n + j], got, &s)) {
        fprintf(stderr, "sgemm isa %d %ldx%ldx%ld layouts %d%d%d: C[%ld,%ld] = %.9g, want %.9g\n", isa, (long)m,
                (long)n, (long)k, ka, kb, kc, (long)i, (long)j, got, s);
        ok = 0;
      }
      c[i * crs + j * ccs] = SENTINEL;
    }
  for (int64_t i = 0; ok && i < clen; i++)
    if (c[i] != SENTINEL) {
      fprintf(stderr, "sgemm isa %d %ldx%ldx%ld layouts %d%d%d wrote outside C at %ld\n", isa, (long)m, (long)n,
              (long)k, ka, kb, kc, (long)i);
      ok = 0;
    }
  free(a);
  free(b);
  free(c);
  free(c0);
  return ok;
}

static void test_values(void) {
  /* edges of the tiles (12 x 32 and 6 x 16), of the blocks (k 256, rows
   * 144, columns 1024), then random shapes and layouts */
  const int64_t fixed[][3] = {{1, 1, 1},   {12, 32, 7},   {13, 33, 256}, {6, 16, 257}, {145, 17, 513},
                              {3, 1030, 9}, {50, 40, 600}, {2, 2, 1},     {37, 5, 300}};
  for (int isa = 1; isa <= 2; isa++) {
    if (!has_isa(isa)) continue;
    for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++)
      for (int ka = 0; ka < 4; ka++)
        for (int kb = 0; kb < 4; kb++)
          CHECKF(check_product(isa, fixed[f][0], fixed[f][1], fixed[f][2], ka, kb, (ka + kb) % 3), "isa %d shape %zu",
                 isa, f);
    for (int t = 0; t < 60; t++) {
      int64_t m = pick(1, 200), n = pick(1, 200), k = pick(1, 400);
      CHECKF(check_product(isa, m, n, k, (int)pick(0, 3), (int)pick(0, 3), (int)pick(0, 2)), "isa %d %ldx%ldx%ld",
             isa, (long)m, (long)n, (long)k);
    }
  }
}

/* The same bits at both widths, and row i of C the same whatever rows are
 * computed with it: rows [0, r) and [r, m) as two products against all m
 * at once, for several r (a split over threads cuts C's rows anywhere). */
static void test_bits(void) {
  int64_t m = 157, n = 75, k = 300;
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *c = calloc((size_t)(m * n), sizeof(float)), *d = calloc((size_t)(m * n), sizeof(float));
  if (!a || !b || !c || !d) {
    CHECK(!"out of memory");
    goto done;
  }
  for (int64_t i = 0; i < m * k; i++) a[i] = (float)unit();
  for (int64_t i = 0; i < k * n; i++) b[i] = (float)unit();
  int top = has_isa(2) ? 2 : 1;
  cell_gemm g = {CELL_DTYPE_F32, m, n, k, (const char *)a, k, 1, (const char *)b, n, 1, (char *)c, n, 1, 0};
  CHECK(cell_sgemm_acc_with(&g, top) == 1);
  if (top == 2 && has_isa(1)) {
    cell_gemm h = g;
    h.c = (char *)d;
    CHECK(cell_sgemm_acc_with(&h, 1) == 1);
    CHECK(memcmp(c, d, sizeof(float) * (size_t)(m * n)) == 0);
  }
  for (int64_t r = 1; r < m; r += 31) {
    memset(d, 0, sizeof(float) * (size_t)(m * n));
    cell_gemm h1 = g, h2 = g;
    h1.m = r;
    h1.c = (char *)d;
    h2.m = m - r;
    h2.a = (const char *)(a + r * k);
    h2.c = (char *)(d + r * n);
    CHECK(cell_sgemm_acc_with(&h1, top) == 1 && cell_sgemm_acc_with(&h2, top) == 1);
    CHECKF(memcmp(c, d, sizeof(float) * (size_t)(m * n)) == 0, "split at row %ld", (long)r);
  }
done:
  free(a);
  free(b);
  free(c);
  free(d);
}

/* A NaN in A's row i and an infinity in B's column j reach only row i and
 * column j of C. */
static void test_nonfinite(void) {
  int64_t m = 20, n = 40, k = 30, ri = 13, cj = 33;
  float a[20 * 30], b[30 * 40], c[20 * 40];
  for (int64_t i = 0; i < m * k; i++) a[i] = (float)unit();
  for (int64_t i = 0; i < k * n; i++) b[i] = (float)unit();
  memset(c, 0, sizeof c);
  a[ri * k + 7] = NAN;
  b[11 * n + cj] = INFINITY;
  cell_gemm g = {CELL_DTYPE_F32, m, n, k, (const char *)a, k, 1, (const char *)b, n, 1, (char *)c, n, 1, 0};
  for (int isa = 1; isa <= 2; isa++) {
    if (!has_isa(isa)) continue;
    memset(c, 0, sizeof c);
    CHECK(cell_sgemm_acc_with(&g, isa) == 1);
    int ok = 1;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) ok &= (i == ri || j == cj) ? !isfinite(c[i * n + j]) : isfinite(c[i * n + j]);
    CHECKF(ok, "isa %d", isa);
  }
}

/* Float64 and a kernel the CPU lacks are declined with nothing done; a
 * float32 product through cell_gemm_run gives the kernel's bits where the
 * kernel is the one in use. */
static void test_choice(void) {
  double x[4] = {1, 2, 3, 4}, y[4] = {0};
  cell_gemm gd = {CELL_DTYPE_F64, 2, 2, 2, (const char *)x, 2, 1, (const char *)x, 2, 1, (char *)y, 2, 1, 0};
  CHECK(cell_sgemm_acc_with(&gd, 2) == 0 && cell_sgemm_acc_with(&gd, 1) == 0 && y[0] == 0);
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[4] = {0};
  cell_gemm g = {CELL_DTYPE_F32, 2, 2, 4, (const char *)a, 4, 1, (const char *)a, 2, 1, (char *)c, 2, 1, 0};
  CHECK(cell_sgemm_acc_with(&g, 0) == 0 && cell_sgemm_acc_with(&g, 3) == 0 && c[0] == 0);
  const char *name = cell_gemm_kernel_name();
  int isa = cell_sgemm_isa();
  CHECK(strcmp(name, isa == 2 ? "cell-avx512" : isa == 1 ? "cell-avx2" : "openblas") == 0);
  if (isa) {
    int64_t m = 96, n = 80, k = 70;
    float *p = malloc(sizeof(float) * (size_t)(m * k + k * n + 2 * m * n));
    if (!p) {
      CHECK(!"out of memory");
      return;
    }
    for (int64_t i = 0; i < m * k + k * n; i++) p[i] = (float)unit();
    float *c1 = p + m * k + k * n, *c2 = c1 + m * n;
    memset(c2, 0, sizeof(float) * (size_t)(m * n));
    cell_gemm h = {CELL_DTYPE_F32, m, n, k, (const char *)p, k, 1, (const char *)(p + m * k), n, 1, (char *)c1, n, 1, 0};
    CHECK(strcmp(cell_backend_for_gemm(&h)->name, "blas") == 0);
    CHECK_OK(cell_gemm_run(&h));
    h.c = (char *)c2;
    CHECK(cell_sgemm_acc_with(&h, isa) == 1);
    CHECK(memcmp(c1, c2, sizeof(float) * (size_t)(m * n)) == 0);
    free(p);
  }
}

/* Through the BLAS backend at 1 and 2 threads (products cut by rows, by
 * columns where wider than tall, or transposed): the same bits. */
static void test_threads(void) {
  if (!cell_sgemm_isa()) return;
  int threads0 = cell_get_num_threads();
  static const int64_t shapes[][3] = {{16, 512, 128}, {64, 256, 784}, {512, 256, 64}, {40, 1000, 70}, {300, 333, 50},
                                       {8, 65, 600}, {3, 97, 1000}}; /* a part of 1 column */
  for (size_t f = 0; f < sizeof shapes / sizeof shapes[0]; f++) {
    int64_t m = shapes[f][0], n = shapes[f][1], k = shapes[f][2];
    float *p = malloc(sizeof(float) * (size_t)(m * k + k * n + 2 * m * n));
    if (!p) {
      CHECK(!"out of memory");
      continue;
    }
    for (int64_t i = 0; i < m * k + k * n; i++) p[i] = (float)unit();
    float *c[2] = {p + m * k + k * n, p + m * k + k * n + m * n};
    for (int t = 0; t < 2; t++) {
      cell_set_num_threads(t + 1);
      cell_gemm g = {CELL_DTYPE_F32, m, n, k, (const char *)p, k, 1, (const char *)(p + m * k), 1, k, (char *)c[t], n, 1, 0};
      CHECK_OK(cell_gemm_run(&g));
    }
    CHECKF(memcmp(c[0], c[1], sizeof(float) * (size_t)(m * n)) == 0, "%ldx%ldx%ld", (long)m, (long)n, (long)k);
    free(p);
  }
  cell_set_num_threads(threads0);
}

void test_sgemm_all(void) {
  test_threads();
  test_values();
  test_bits();
  test_nonfinite();
  test_choice();
}
