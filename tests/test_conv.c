/* test_conv.c - conv2d, max_pool2d and avg_pool2d (src/ops/conv.c,
 * conv_direct.c, pool.c, src/autograd/rules_conv.c) without Lua: forward
 * and every gradient against naive loops in double over a sweep of shapes
 * (strides, asymmetric padding, dilation, groups, batch chunks), through
 * each lowering (im2col + gemm, the direct kernels, the automatic choice);
 * float32 and the half types against float64; the same bits for one thread
 * and two; error messages; interrupts; and failed allocations (the Nth, for
 * N = 1, 2, ... until the op succeeds) with no leak. */
#include "check.h"
#include "autograd/autograd.h"
#include "ops/conv.h"

#define S(...) ((const int64_t[]){__VA_ARGS__})

/* A small deterministic generator: values in [-1, 1). */
static uint64_t lcg_state = 12345;
static double lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(lcg_state >> 11) / 9007199254740992.0 * 2 - 1;
}
static int64_t pick(int64_t lo, int64_t hi) { return lo + (int64_t)((lcg() + 1) / 2 * (double)(hi - lo + 1)) % (hi - lo + 1); }

static double *randv(int64_t n) {
  double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = lcg();
  return v;
}

/* The values of t (any dtype and layout) as a malloc'd double array. */
static double *values(const cell_tensor *t) {
  int64_t n = cell_tensor_numel(t);
  double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  cell_tensor *d = NULL;
  if (cell_tensor_astype(t, CELL_DTYPE_F64, &d) != CELL_OK) {
    for (int64_t i = 0; i < n; i++) v[i] = NAN;
    return v;
  }
  cell_tensor *c = NULL;
  cell_tensor_contiguous(d, &c);
  memcpy(v, cell_tensor_data_ptr(c), sizeof(double) * (size_t)n);
  cell_tensor_release(c);
  cell_tensor_release(d);
  return v;
}

/* The largest |a - b| / (1 + |b|) over n values (NaN-aware: NaN vs NaN is 0). */
static double rel_err(const double *a, const double *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    double e = fabs(a[i] - b[i]) / (1 + fabs(b[i]));
    if (!(e <= m)) m = e;
  }
  return m;
}

/* --- naive conv2d ----------------------------------------------------------------- */

typedef struct {
  int64_t n, c, h, w, o, kh, kw, groups, st[2], pd[4], dl[2], oh, ow;
} cfg;

static void cfg_finish(cfg *k) {
  k->oh = (k->h + k->pd[0] + k->pd[1] - k->dl[0] * (k->kh - 1) - 1) / k->st[0] + 1;
  k->ow = (k->w + k->pd[2] + k->pd[3] - k->dl[1] * (k->kw - 1) - 1) / k->st[1] + 1;
}

/* Calls f(n, o, oh, ow, c, i, j, xi, wi) for every product of the convolution. */
#define CONV_LOOP(k, BODY)                                                                        \
  for (int64_t n = 0; n < (k)->n; n++)                                                            \
    for (int64_t o = 0; o < (k)->o; o++)                                                          \
      for (int64_t oh = 0; oh < (k)->oh; oh++)                                                    \
        for (int64_t ow = 0; ow < (k)->ow; ow++) {                                                \
          int64_t cg = (k)->c / (k)->groups, g0 = o / ((k)->o / (k)->groups) * cg;                \
          int64_t yi = ((n * (k)->o + o) * (k)->oh + oh) * (k)->ow + ow;                          \
          for (int64_t cc = 0; cc < cg; cc++)                                                     \
            for (int64_t i = 0; i < (k)->kh; i++)                                                 \
              for (int64_t j = 0; j < (k)->kw; j++) {                                             \
                int64_t ih = oh * (k)->st[0] - (k)->pd[0] + i * (k)->dl[0];                       \
                int64_t iw = ow * (k)->st[1] - (k)->pd[2] + j * (k)->dl[1];                       \
                if (ih < 0 || ih >= (k)->h || iw < 0 || iw >= (k)->w) continue;                   \
                int64_t xi = ((n * (k)->c + g0 + cc) * (k)->h + ih) * (k)->w + iw;                \
                int64_t wi = ((o * cg + cc) * (k)->kh + i) * (k)->kw + j;                         \
                BODY;                                                                             \
              }                                                                                   \
        }

static void ref_forward(const cfg *k, const double *x, const double *w, const double *b, double *y) {
  int64_t ny = k->n * k->o * k->oh * k->ow;
  for (int64_t q = 0; q < ny; q++) y[q] = b ? b[q / (k->oh * k->ow) % k->o] : 0;
  CONV_LOOP(k, y[yi] += x[xi] * w[wi]);
}

static void ref_backward(const cfg *k, const double *x, const double *w, const double *gy,
                         double *gx, double *gw, double *gb) {
  memset(gx, 0, sizeof(double) * (size_t)(k->n * k->c * k->h * k->w));
  memset(gw, 0, sizeof(double) * (size_t)(k->o * (k->c / k->groups) * k->kh * k->kw));
  memset(gb, 0, sizeof(double) * (size_t)k->o);
  int64_t ny = k->n * k->o * k->oh * k->ow;
  for (int64_t q = 0; q < ny; q++) gb[q / (k->oh * k->ow) % k->o] += gy[q];
  CONV_LOOP(k, {
    gx[xi] += gy[yi] * w[wi];
    gw[wi] += gy[yi] * x[xi];
  });
}

/* Check one configuration through the given lowering in dtype dt against
 * the naive loops. */
static void check_conv(const cfg *k, cell_conv_lowering how, cell_dtype dt, double tol,
                       const char *what) {
  int64_t xs[4] = {k->n, k->c, k->h, k->w}, ws[4] = {k->o, k->c / k->groups, k->kh, k->kw};
  int64_t ys[4] = {k->n, k->o, k->oh, k->ow};
  int64_t nx = cell_shape_numel(4, xs), nw = cell_shape_numel(4, ws), ny = cell_shape_numel(4, ys);
  double *xv = randv(nx), *wv = randv(nw), *bv = randv(k->o), *gyv = randv(ny);
  /* the half types compute from rounded inputs: round the reference's too */
  cell_tensor *x = from(dt, 4, xs, xv), *w = from(dt, 4, ws, wv), *b = from(dt, 1, &k->o, bv);
  cell_tensor *gy = from(dt, 4, ys, gyv);
  double *xr = values(x), *wr = values(w), *br = values(b), *gyr = values(gy);
  double *y = malloc(sizeof(double) * (size_t)ny), *gx = malloc(sizeof(double) * (size_t)nx);
  double *gw = malloc(sizeof(double) * (size_t)nw), *gb = malloc(sizeof(double) * (size_t)k->o);
  ref_forward(k, xr, wr, br, y);
  ref_backward(k, xr, wr, gyr, gx, gw, gb);
  cell_tensor *r = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  CHECKF(cell_k_conv2d_lowered(how, x, w, b, k->st, k->pd, k->dl, k->groups, &r) == CELL_OK,
         "%s forward", what);
  CHECKF(cell_k_conv2d_backward_lowered(how, gy, x, w, k->st, k->pd, k->dl, k->groups, &rx, &rw,
                                        &rb) == CELL_OK, "%s backward", what);
  if (r && rx && rw && rb) {
    CHECKF(cell_tensor_dtype(r) == dt, "%s: output dtype %s", what, cell_dtype_name(cell_tensor_dtype(r)));
    CHECKF(cell_shape_equal(4, cell_tensor_shape(r), 4, ys), "%s: output shape", what);
    double *a = values(r), *ax = values(rx), *aw = values(rw), *ab = values(rb);
    double e0 = rel_err(a, y, ny), e1 = rel_err(ax, gx, nx), e2 = rel_err(aw, gw, nw),
           e3 = rel_err(ab, gb, k->o);
    CHECKF(e0 <= tol && e1 <= tol && e2 <= tol && e3 <= tol,
           "%s %s: N%lld C%lld %lldx%lld O%lld k%lldx%lld g%lld s%lld,%lld p%lld,%lld,%lld,%lld "
           "d%lld,%lld: errors y %g gx %g gw %g gb %g",
           what, cell_dtype_name(dt), (long long)k->n, (long long)k->c, (long long)k->h,
           (long long)k->w, (long long)k->o, (long long)k->kh, (long long)k->kw,
           (long long)k->groups, (long long)k->st[0], (long long)k->st[1], (long long)k->pd[0],
           (long long)k->pd[1], (long long)k->pd[2], (long long)k->pd[3], (long long)k->dl[0],
           (long long)k->dl[1], e0, e1, e2, e3);
    free(a);
    free(ax);
    free(aw);
    free(ab);
  }
  cell_tensor_release(r);
  cell_tensor_release(rx);
  cell_tensor_release(rw);
  cell_tensor_release(rb);
  cell_tensor_release(x);
  cell_tensor_release(w);
  cell_tensor_release(b);
  cell_tensor_release(gy);
  free(xv); free(wv); free(bv); free(gyv); free(xr); free(wr); free(br); free(gyr);
  free(y); free(gx); free(gw); free(gb);
}

static void random_cfg(cfg *k) {
  k->groups = pick(1, 3);
  k->c = k->groups * pick(1, 3);
  /* output channels per group: a multiple of the vector width (8 floats, 4
   * doubles) takes the direct path's channel-vector kernels */
  k->o = k->groups * (pick(0, 3) ? pick(1, 7) : pick(0, 1) ? 8 : 16);
  k->n = pick(1, 3);
  k->kh = pick(1, 4);
  k->kw = pick(1, 4);
  for (int i = 0; i < 2; i++) {
    k->st[i] = pick(0, 2) ? 1 : pick(2, 3); /* mostly stride 1: the direct kernels */
    k->dl[i] = pick(0, 3) ? 1 : 2;
  }
  for (int i = 0; i < 4; i++) k->pd[i] = pick(0, 3) ? pick(0, 2) : 0;
  int64_t ekh = (k->kh - 1) * k->dl[0] + 1, ekw = (k->kw - 1) * k->dl[1] + 1;
  k->h = ekh - k->pd[0] - k->pd[1] + pick(0, 7);
  k->w = ekw - k->pd[2] - k->pd[3] + pick(0, 9);
  if (k->h < 1) k->h = 1;
  if (k->w < 1) k->w = 1;
  /* a padded input still at least as large as the kernel */
  if (k->h + k->pd[0] + k->pd[1] < ekh) k->pd[1] += ekh - (k->h + k->pd[0] + k->pd[1]);
  if (k->w + k->pd[2] + k->pd[3] < ekw) k->pd[3] += ekw - (k->w + k->pd[2] + k->pd[3]);
  cfg_finish(k);
}

static void test_conv_sweep(void) {
  static const cell_conv_lowering hows[] = {CELL_CONV_AUTO, CELL_CONV_IM2COL, CELL_CONV_DIRECT};
  static const char *const names[] = {"auto", "im2col", "direct"};
  for (int t = 0; t < 120; t++) {
    cfg k;
    random_cfg(&k);
    for (int h = 0; h < 3; h++) {
      check_conv(&k, hows[h], CELL_DTYPE_F64, 1e-12, names[h]);
      if (t % 4 == 0) check_conv(&k, hows[h], CELL_DTYPE_F32, 2e-5, names[h]);
    }
    if (t % 10 == 0) {
      check_conv(&k, CELL_CONV_AUTO, CELL_DTYPE_F16, 2e-2, "auto");
      check_conv(&k, CELL_CONV_AUTO, CELL_DTYPE_BF16, 8e-2, "auto");
    }
  }
  /* batches that span several im2col chunks and direct parts; LeNet's layers */
  cfg big[] = {
      {25, 2, 22, 22, 3, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, 0},
      {25, 2, 22, 21, 3, 3, 3, 1, {2, 1}, {1, 0, 2, 1}, {1, 1}, 0, 0},
      {19, 4, 9, 9, 6, 2, 2, 2, {1, 1}, {1, 1, 1, 1}, {2, 1}, 0, 0},
      {8, 1, 28, 28, 6, 5, 5, 1, {1, 1}, {2, 2, 2, 2}, {1, 1}, 0, 0},
      {8, 6, 14, 14, 16, 5, 5, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, 0},
  };
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    cfg_finish(&big[i]);
    check_conv(&big[i], CELL_CONV_IM2COL, CELL_DTYPE_F64, 1e-12, "im2col, large batch");
    check_conv(&big[i], CELL_CONV_DIRECT, CELL_DTYPE_F64, 1e-12, "direct, large batch");
    check_conv(&big[i], CELL_CONV_AUTO, CELL_DTYPE_F32, 2e-5, "auto, large batch");
  }
}

/* --- the public op and its node ------------------------------------------------------ */

static void test_conv_autograd(void) {
  cfg k = {2, 4, 7, 6, 6, 3, 2, 2, {1, 2}, {1, 0, 0, 1}, {2, 1}, 0, 0};
  cfg_finish(&k);
  int64_t xs[4] = {k.n, k.c, k.h, k.w}, ws[4] = {k.o, k.c / k.groups, k.kh, k.kw};
  int64_t ny = k.n * k.o * k.oh * k.ow, nx = cell_shape_numel(4, xs), nw = cell_shape_numel(4, ws);
  double *xv = randv(nx), *wv = randv(nw), *bv = randv(k.o);
  cell_tensor *x = from(CELL_DTYPE_F64, 4, xs, xv), *w = from(CELL_DTYPE_F64, 4, ws, wv);
  cell_tensor *b = from(CELL_DTYPE_F64, 1, &k.o, bv), *y = NULL;
  CHECK_OK(cell_tensor_set_requires_grad(x, 1));
  CHECK_OK(cell_tensor_set_requires_grad(w, 1));
  CHECK_OK(cell_tensor_set_requires_grad(b, 1));
  REQUIRE_OK(cell_op_conv2d(x, w, b, k.st, k.pd, k.dl, k.groups, &y));
  CHECK(cell_tensor_grad_fn_name(y) && strcmp(cell_tensor_grad_fn_name(y), "Conv2dBackward") == 0);
  /* the gradients of sum(y) */
  cell_tensor *in[3] = {x, w, b}, *g[3] = {NULL, NULL, NULL}, *s = NULL;
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, y, 0, NULL, 0, &s));
  CHECK_OK(cell_autograd_grad(s, NULL, 3, in, g));
  double *gyv = malloc(sizeof(double) * (size_t)ny), *gx = malloc(sizeof(double) * (size_t)nx);
  double *gw = malloc(sizeof(double) * (size_t)nw), *gb = malloc(sizeof(double) * (size_t)k.o);
  for (int64_t i = 0; i < ny; i++) gyv[i] = 1;
  ref_backward(&k, xv, wv, gyv, gx, gw, gb);
  if (g[0] && g[1] && g[2]) {
    double *a0 = values(g[0]), *a1 = values(g[1]), *a2 = values(g[2]);
    CHECK(rel_err(a0, gx, nx) < 1e-12 && rel_err(a1, gw, nw) < 1e-12 && rel_err(a2, gb, k.o) < 1e-12);
    free(a0); free(a1); free(a2);
  }
  for (int i = 0; i < 3; i++) cell_tensor_release(g[i]);
  cell_tensor_release(s);
  cell_tensor_release(y);
  /* no grad mode: no node */
  int prev = cell_grad_set_enabled(0);
  REQUIRE_OK(cell_op_conv2d(x, w, NULL, k.st, k.pd, k.dl, k.groups, &y));
  CHECK(cell_tensor_grad_fn_name(y) == NULL);
  cell_grad_set_enabled(prev);
  cell_tensor_release(y);
  cell_tensor_release(x); cell_tensor_release(w); cell_tensor_release(b);
  free(xv); free(wv); free(bv); free(gyv); free(gx); free(gw); free(gb);
}

/* The threaded paths give the bits of the serial ones. */
static void test_conv_threads(void) {
  int threads0 = cell_get_num_threads();
  /* large enough for threads: 160M multiply-adds */
  int64_t xs[4] = {32, 16, 32, 32}, ws[4] = {32, 16, 3, 3}, pd[4] = {1, 1, 1, 1};
  cell_tensor *x = NULL, *w = NULL, *gy = NULL;
  cell_set_seed(11);
  REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 4, xs, &x));
  REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 4, ws, &w));
  REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 4, S(32, 32, 32, 32), &gy));
  cell_tensor *y[2] = {NULL, NULL}, *gx[2] = {NULL, NULL}, *gw[2] = {NULL, NULL};
  cell_tensor *m[2] = {NULL, NULL}, *mg[2] = {NULL, NULL}, *mi = NULL;
  for (int t = 0; t < 2; t++) {
    cell_set_num_threads(t ? 2 : 1);
    CHECK_OK(cell_k_conv2d(x, w, NULL, NULL, pd, NULL, 1, &y[t]));
    CHECK_OK(cell_k_conv2d_backward(gy, x, w, NULL, pd, NULL, 1, &gx[t], &gw[t], NULL));
    CHECK_OK(cell_k_max_pool2d(gy, S(3, 3), S(1, 1), S(1, 1, 1, 1), NULL, 0, &m[t], &mi));
    if (mi) CHECK_OK(cell_k_max_pool2d_backward(m[t], mi, S(32, 32, 32, 32), CELL_DTYPE_F32, &mg[t]));
    cell_tensor_release(mi);
    mi = NULL;
  }
  cell_set_num_threads(threads0);
  if (y[0] && y[1] && gx[0] && gx[1] && gw[0] && gw[1] && m[0] && m[1] && mg[0] && mg[1]) {
    CHECK(memcmp(cell_tensor_data_ptr(y[0]), cell_tensor_data_ptr(y[1]), cell_tensor_nbytes(y[0])) == 0);
    CHECK(memcmp(cell_tensor_data_ptr(gx[0]), cell_tensor_data_ptr(gx[1]), cell_tensor_nbytes(gx[0])) == 0);
    CHECK(memcmp(cell_tensor_data_ptr(gw[0]), cell_tensor_data_ptr(gw[1]), cell_tensor_nbytes(gw[0])) == 0);
    CHECK(memcmp(cell_tensor_data_ptr(m[0]), cell_tensor_data_ptr(m[1]), cell_tensor_nbytes(m[0])) == 0);
    CHECK(memcmp(cell_tensor_data_ptr(mg[0]), cell_tensor_data_ptr(mg[1]), cell_tensor_nbytes(mg[0])) == 0);
  }
  for (int t = 0; t < 2; t++) {
    cell_tensor_release(y[t]); cell_tensor_release(gx[t]); cell_tensor_release(gw[t]);
    cell_tensor_release(m[t]); cell_tensor_release(mg[t]);
  }
  cell_tensor_release(x); cell_tensor_release(w); cell_tensor_release(gy);
}

/* The 16-lane kernels (AVX-512; groups of 16k output channels) give the
 * 8-lane kernels' bits: forward with and without bias, the input and
 * weight gradients, over padding, dilation, groups and odd planes, at 1
 * and 2 threads. Nothing to compare where the CPU lacks AVX-512. */
static void test_conv_wide(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) return;
  int threads0 = cell_get_num_threads();
  static const int64_t cases[][10] = { /* n c h w o kh kw groups pad dil */
      {2, 3, 9, 11, 16, 3, 3, 1, 1, 1}, {3, 8, 13, 7, 32, 3, 3, 1, 2, 2}, {1, 4, 6, 6, 32, 5, 5, 2, 2, 1},
      {4, 5, 17, 19, 48, 1, 3, 1, 0, 1}, {5, 16, 8, 8, 16, 3, 3, 1, 1, 1}, {2, 2, 30, 3, 16, 3, 1, 1, 0, 1}};
  for (size_t f = 0; f < sizeof cases / sizeof cases[0]; f++) {
    const int64_t *c = cases[f];
    int64_t xs[4] = {c[0], c[1], c[2], c[3]}, ws[4] = {c[4], c[1] / c[7], c[5], c[6]};
    int64_t pd[4] = {c[8], c[8], c[8], c[8]}, dl[2] = {c[9], c[9]}, bs[1] = {c[4]};
    cell_tensor *x = NULL, *w = NULL, *b = NULL, *y[2] = {NULL, NULL}, *gx[2] = {NULL, NULL}, *gw[2] = {NULL, NULL};
    cell_set_seed(40 + (uint64_t)f);
    REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 4, xs, &x));
    REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 4, ws, &w));
    REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, bs, &b));
    for (int wide = 0; wide < 2; wide++) {
      int prev = cell_conv_wide_set(wide);
      cell_set_num_threads(f % 2 ? 2 : 1);
      CHECK_OK(cell_k_conv2d_lowered(CELL_CONV_DIRECT, x, w, f % 3 ? b : NULL, NULL, pd, dl, c[7], &y[wide]));
      if (y[wide])
        CHECK_OK(cell_k_conv2d_backward_lowered(CELL_CONV_DIRECT, y[wide], x, w, NULL, pd, dl, c[7], &gx[wide],
                                                &gw[wide], NULL));
      cell_conv_wide_set(prev);
    }
    cell_set_num_threads(threads0);
    if (y[0] && y[1] && gx[0] && gx[1] && gw[0] && gw[1]) {
      CHECKF(memcmp(cell_tensor_data_ptr(y[0]), cell_tensor_data_ptr(y[1]), cell_tensor_nbytes(y[0])) == 0, "cfg %zu y", f);
      CHECKF(memcmp(cell_tensor_data_ptr(gx[0]), cell_tensor_data_ptr(gx[1]), cell_tensor_nbytes(gx[0])) == 0, "cfg %zu gx", f);
      CHECKF(memcmp(cell_tensor_data_ptr(gw[0]), cell_tensor_data_ptr(gw[1]), cell_tensor_nbytes(gw[0])) == 0, "cfg %zu gw", f);
    }
    for (int t = 0; t < 2; t++) {
      cell_tensor_release(y[t]);
      cell_tensor_release(gx[t]);
      cell_tensor_release(gw[t]);
    }
    cell_tensor_release(x);
    cell_tensor_release(w);
    cell_tensor_release(b);
  }
}

/* --- pools ------------------------------------------------------------------------------ */

typedef struct {
  int64_t n, c, h, w, k[2], st[2], pd[4], oh, ow;
  int cip;
} pcfg;

static void ref_pool(const pcfg *p, int is_max, const double *x, const double *gy, double *y,
                     double *gx) {
  memset(gx, 0, sizeof(double) * (size_t)(p->n * p->c * p->h * p->w));
  for (int64_t pl = 0; pl < p->n * p->c; pl++)
    for (int64_t oh = 0; oh < p->oh; oh++)
      for (int64_t ow = 0; ow < p->ow; ow++) {
        int64_t q = (pl * p->oh + oh) * p->ow + ow, cnt = 0, best = -1;
        double acc = is_max ? -INFINITY : 0;
        /* max: the first position holding the maximum, or the last NaN; the
         * window's first position when every value is -inf */
        for (int64_t i = 0; i < p->k[0]; i++)
          for (int64_t j = 0; j < p->k[1]; j++) {
            int64_t ih = oh * p->st[0] - p->pd[0] + i, iw = ow * p->st[1] - p->pd[2] + j;
            if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w) continue;
            int64_t xi = (pl * p->h + ih) * p->w + iw;
            cnt++;
            if (is_max) {
              if (best < 0) best = xi;
              if (x[xi] > acc || isnan(x[xi])) { acc = x[xi]; best = xi; }
            } else {
              acc += x[xi];
            }
          }
        if (is_max) {
          y[q] = acc;
          gx[best] += gy[q];
        } else {
          double div = p->cip ? (double)(p->k[0] * p->k[1]) : (double)cnt;
          y[q] = acc / div;
          for (int64_t i = 0; i < p->k[0]; i++)
            for (int64_t j = 0; j < p->k[1]; j++) {
              int64_t ih = oh * p->st[0] - p->pd[0] + i, iw = ow * p->st[1] - p->pd[2] + j;
              if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w) continue;
              gx[(pl * p->h + ih) * p->w + iw] += gy[q] / div;
            }
        }
      }
}

/* nans: put a NaN at every nans-th input (0: none); ties: round the inputs
 * to few values, so windows hold several maxima. */
static void check_pool(const pcfg *p, int is_max, cell_dtype dt, double tol, int nans, int ties) {
  int64_t xs[4] = {p->n, p->c, p->h, p->w}, ys[4] = {p->n, p->c, p->oh, p->ow};
  int64_t nx = cell_shape_numel(4, xs), ny = cell_shape_numel(4, ys);
  double *xv = randv(nx), *gyv = randv(ny);
  for (int64_t i = 0; i < nx; i++) {
    if (ties) xv[i] = floor(xv[i] * 2);
    if (nans && i % nans == 3) xv[i] = NAN;
  }
  cell_tensor *x = from(dt, 4, xs, xv), *gy = from(dt, 4, ys, gyv);
  double *xr = values(x), *gyr = values(gy);
  double *y = malloc(sizeof(double) * (size_t)ny), *gx = malloc(sizeof(double) * (size_t)nx);
  ref_pool(p, is_max, xr, gyr, y, gx);
  cell_tensor *r = NULL, *idx = NULL, *rx = NULL;
  if (is_max) {
    CHECK_OK(cell_k_max_pool2d(x, p->k, p->st, p->pd, NULL, 0, &r, &idx));
    if (idx) CHECK_OK(cell_k_max_pool2d_backward(gy, idx, xs, dt, &rx));
  } else {
    CHECK_OK(cell_k_avg_pool2d(x, p->k, p->st, p->pd, 0, p->cip, &r));
    CHECK_OK(cell_k_avg_pool2d_backward(gy, xs, p->k, p->st, p->pd, 0, p->cip, dt, &rx));
  }
  if (r && rx) {
    double *a = values(r), *ax = values(rx);
    double e0 = rel_err(a, y, ny), e1 = rel_err(ax, gx, nx);
    CHECKF(cell_tensor_dtype(r) == dt && cell_tensor_dtype(rx) == dt && e0 <= tol && e1 <= tol,
           "%s %s: N%lld C%lld %lldx%lld k%lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld cip %d: "
           "errors y %g gx %g",
           is_max ? "max_pool2d" : "avg_pool2d", cell_dtype_name(dt), (long long)p->n,
           (long long)p->c, (long long)p->h, (long long)p->w, (long long)p->k[0],
           (long long)p->k[1], (long long)p->st[0], (long long)p->st[1], (long long)p->pd[0],
           (long long)p->pd[1], (long long)p->pd[2], (long long)p->pd[3], p->cip, e0, e1);
    free(a);
    free(ax);
  }
  cell_tensor_release(r); cell_tensor_release(idx); cell_tensor_release(rx);
  cell_tensor_release(x); cell_tensor_release(gy);
  free(xv); free(gyv); free(xr); free(gyr); free(y); free(gx);
}

static void test_pool_sweep(void) {
  for (int t = 0; t < 80; t++) {
    pcfg p;
    p.n = pick(1, 3);
    p.c = pick(1, 3);
    for (int i = 0; i < 2; i++) {
      p.k[i] = pick(1, 4);
      p.st[i] = pick(1, 3);
    }
    for (int i = 0; i < 4; i++) p.pd[i] = pick(0, 3) ? 0 : pick(0, p.k[i / 2] / 2);
    p.h = p.k[0] + pick(0, 6);
    p.w = p.k[1] + pick(0, 6);
    p.cip = (int)pick(0, 1);
    p.oh = (p.h + p.pd[0] + p.pd[1] - p.k[0]) / p.st[0] + 1;
    p.ow = (p.w + p.pd[2] + p.pd[3] - p.k[1]) / p.st[1] + 1;
    for (int m = 0; m < 2; m++) {
      check_pool(&p, m, CELL_DTYPE_F64, 1e-12, 0, t % 5 == 0);
      if (t % 4 == 0) check_pool(&p, m, CELL_DTYPE_F32, 1e-6, 0, 0);
      if (t % 8 == 0) check_pool(&p, m, CELL_DTYPE_BF16, 1e-2, 0, 0);
    }
  }
  /* planes wide enough for the vector paths (stride 1, stride 2 and others,
   * windows clipped at both sides), with ties and with NaNs */
  pcfg wide[] = {
      {2, 3, 28, 28, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0, 0, 1},
      {1, 2, 17, 37, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0, 0},
      {2, 1, 9, 40, {2, 3}, {1, 3}, {1, 0, 0, 1}, 0, 0, 1},
      {1, 2, 6, 33, {1, 4}, {1, 1}, {0, 0, 2, 2}, 0, 0, 0},
      {1, 1, 5, 19, {3, 2}, {2, 2}, {1, 1, 1, 0}, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
    pcfg *p = &wide[i];
    p->oh = (p->h + p->pd[0] + p->pd[1] - p->k[0]) / p->st[0] + 1;
    p->ow = (p->w + p->pd[2] + p->pd[3] - p->k[1]) / p->st[1] + 1;
    for (int m = 0; m < 2; m++) {
      check_pool(p, m, CELL_DTYPE_F64, 1e-12, 0, 0);
      check_pool(p, m, CELL_DTYPE_F32, 1e-6, 0, 1);
      check_pool(p, m, CELL_DTYPE_F32, 1e-6, 7, 0);
      check_pool(p, m, CELL_DTYPE_F64, 1e-12, 5, 1);
    }
  }
}

/* --- errors ------------------------------------------------------------------------------ */

static void test_errors(void) {
  cell_tensor *x = NULL, *w = NULL, *r = NULL, *b = NULL, *xi = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 4, S(2, 3, 8, 8), 0, &x));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 4, S(5, 4, 3, 3), 0, &w));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, S(4), 0, &b));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_I32, 4, S(2, 3, 8, 8), 0, &xi));
  CHECK(cell_op_conv2d(x, w, NULL, NULL, NULL, NULL, 1, &r) == CELL_ERR_VALUE && r == NULL);
  CHECK_MSG("conv2d: input has 3 channels but weight expects 4 (groups 1): input (2, 3, 8, 8), "
            "weight (5, 4, 3, 3)");
  CHECK(cell_op_conv2d(x, b, NULL, NULL, NULL, NULL, 1, &r) == CELL_ERR_VALUE);
  CHECK_MSG("conv2d: weight must be 4-D");
  CHECK(cell_op_conv2d(x, w, NULL, S(0, 1), NULL, NULL, 1, &r) == CELL_ERR_VALUE);
  CHECK_MSG("conv2d: stride must be at least 1, got (0, 1)");
  CHECK(cell_op_conv2d(x, w, NULL, NULL, S(0, 0, -1, 0), NULL, 1, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_conv2d(x, w, NULL, NULL, NULL, S(1, 0), 1, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_conv2d(x, w, NULL, NULL, NULL, NULL, 0, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_conv2d(xi, w, NULL, NULL, NULL, NULL, 1, &r) == CELL_ERR_TYPE);
  CHECK_MSG("conv2d: input must be a float tensor, got Int32");
  CHECK(cell_op_conv2d(NULL, w, NULL, NULL, NULL, NULL, 1, &r) == CELL_ERR_VALUE);
  cell_tensor *w3 = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 4, S(5, 3, 3, 3), 0, &w3));
  CHECK(cell_op_conv2d(x, w3, b, NULL, NULL, NULL, 1, &r) == CELL_ERR_VALUE);
  CHECK_MSG("conv2d: bias must have shape (5) to match weight (5, 3, 3, 3), got (4)");
  CHECK(cell_op_conv2d(x, w3, NULL, S(INT64_C(1) << 31, 1), NULL, NULL, 1, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_conv2d(x, w3, NULL, NULL, NULL, S(INT64_C(1) << 30, 1), 1, &r) == CELL_ERR_VALUE);
  CHECK_MSG("is larger than the padded input");
  /* pools */
  CHECK(cell_op_max_pool2d(x, NULL, NULL, NULL, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_max_pool2d(x, S(3, 3), NULL, S(2, 0, 0, 0), &r) == CELL_ERR_VALUE);
  CHECK_MSG("max_pool2d: padding must be at most half the kernel size");
  CHECK(cell_op_avg_pool2d(x, S(9, 1), NULL, NULL, 1, &r) == CELL_ERR_VALUE);
  CHECK_MSG("avg_pool2d: the kernel (9 x 1) is larger than the padded input (8 x 8): input (2, 3, 8, 8)");
  CHECK(cell_op_avg_pool2d(xi, S(2, 2), NULL, NULL, 1, &r) == CELL_ERR_TYPE);
  CHECK(cell_op_max_pool2d(b, S(2, 2), NULL, NULL, &r) == CELL_ERR_VALUE);
  CHECK_MSG("max_pool2d: input must be 4-D (N, C, H, W), got input (4)");
  CHECK(r == NULL);
  cell_tensor_release(x); cell_tensor_release(w); cell_tensor_release(w3);
  cell_tensor_release(b); cell_tensor_release(xi);
}

static void test_interrupt(void) {
  cell_tensor *x = NULL, *w = NULL, *r = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 4, S(2, 3, 8, 8), 1, &x));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 4, S(4, 3, 3, 3), 1, &w));
  long live = cell_alloc_live_blocks();
  for (int how = CELL_CONV_IM2COL; how <= CELL_CONV_DIRECT; how++) {
    cell_interrupt(1);
    CHECK(cell_k_conv2d_lowered((cell_conv_lowering)how, x, w, NULL, NULL, NULL, NULL, 1, &r) ==
          CELL_ERR_INTERRUPT);
    cell_interrupt(0);
    CHECK(r == NULL && cell_alloc_live_blocks() == live);
  }
  CHECK_OK(cell_op_conv2d(x, w, NULL, NULL, NULL, NULL, 1, &r)); /* and works again */
  cell_tensor_release(r);
  cell_tensor_release(x);
  cell_tensor_release(w);
}

/* --- failed allocations ---------------------------------------------------------------------- */

typedef struct {
  cell_dtype dt;
  const int64_t *stride, *kernel;
  int op; /* 0 conv2d, 1 max_pool2d, 2 avg_pool2d */
  int grad;
} af_case;

/* The op on a transposed view of leaf, then (grad) the gradients of the sum
 * of its output with respect to leaf and w. */
static cell_status af_run(const af_case *c, cell_tensor *leaf, cell_tensor *w) {
  cell_tensor *x = NULL, *y = NULL, *s = NULL, *g[2] = {NULL, NULL};
  cell_status st = cell_tensor_transpose(leaf, 2, 3, &x); /* {3, 6, 2, 7}, strided */
  if (st != CELL_OK) {
  } else if (c->op == 0) st = cell_op_conv2d(x, w, NULL, c->stride, S(1, 0, 0, 1), NULL, 1, &y);
  else if (c->op == 1) st = cell_op_max_pool2d(x, c->kernel, c->stride, S(1, 1, 0, 0), &y);
  else st = cell_op_avg_pool2d(x, c->kernel, c->stride, S(0, 1, 1, 0), 0, &y);
  if (st == CELL_OK && c->grad) {
    cell_tensor *in[2] = {leaf, w};
    st = cell_op_reduce(CELL_RED_SUM, y, 0, NULL, 0, &s);
    if (st == CELL_OK) st = cell_autograd_grad(s, NULL, c->op == 0 ? 2 : 1, in, g);
  }
  cell_tensor_release(g[0]);
  cell_tensor_release(g[1]);
  cell_tensor_release(s);
  cell_tensor_release(y);
  cell_tensor_release(x);
  return st;
}

static void test_failed_allocations(void) {
  const af_case cases[] = {
      {CELL_DTYPE_F32, S(1, 1), NULL, 0, 0}, {CELL_DTYPE_F32, S(1, 1), NULL, 0, 1},
      {CELL_DTYPE_F64, S(2, 1), NULL, 0, 1}, {CELL_DTYPE_F16, S(1, 1), NULL, 0, 1},
      {CELL_DTYPE_BF16, S(2, 2), NULL, 0, 1}, {CELL_DTYPE_F32, NULL, S(3, 2), 1, 1},
      {CELL_DTYPE_F16, S(1, 2), S(2, 2), 1, 1}, {CELL_DTYPE_F32, NULL, S(3, 2), 2, 1},
      {CELL_DTYPE_BF16, S(2, 1), S(2, 3), 2, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const af_case *c = &cases[k];
    cell_tensor *w = NULL, *xt = NULL;
    cell_set_seed(3);
    REQUIRE_OK(cell_tensor_randn(c->dt, 4, S(3, 6, 7, 2), &xt));
    REQUIRE_OK(cell_tensor_randn(c->dt, 4, S(4, 6, 2, 2), &w));
    if (c->grad) {
      CHECK_OK(cell_tensor_set_requires_grad(xt, 1));
      CHECK_OK(cell_tensor_set_requires_grad(w, 1));
    }
    CHECK_OK(af_run(c, xt, w)); /* the leaves' gradient accumulators now exist */
    long live = cell_alloc_live_blocks();
    int ok = 0, clean = 1, mem = 1;
    long n;
    for (n = 1; n < 400 && !ok; n++) {
      cell_alloc_fail_after(n);
      cell_status st = af_run(c, xt, w);
      cell_alloc_fail_after(0);
      if (st == CELL_OK) ok = 1;
      else if (st != CELL_ERR_MEMORY) {
        mem = 0;
        fprintf(stderr, "  case %zu, failing allocation %ld: %s\n", k, n, cell_last_error());
      }
      if (cell_alloc_live_blocks() != live) {
        if (clean) fprintf(stderr, "  case %zu: leak after failing allocation %ld\n", k, n);
        clean = 0;
      }
    }
    CHECKF(ok && clean && mem, "failed allocations, case %zu: succeeded %d (after %ld), no leak %d, "
           "MemoryError %d", k, ok, n - 1, clean, mem);
    cell_tensor_release(xt);
    cell_tensor_release(w);
  }
}

void test_conv_all(void) {
  long live0 = cell_alloc_live_blocks();
  test_conv_sweep();
  test_conv_autograd();
  test_conv_threads();
  test_conv_wide();
  test_pool_sweep();
  test_errors();
  test_interrupt();
  test_failed_allocations();
  CHECK(cell_alloc_live_blocks() == live0);
}
