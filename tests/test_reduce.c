/* test_reduce.c - reductions (src/ops/reduce.c): sum, mean, prod, max, min,
 * all, any, argmax/argmin, max_dim, var/std, norm and cumsum. Hand-checked
 * values on contiguous, transposed, expanded and empty inputs; random
 * strided views of every dtype against a naive reference over logical
 * indices (fixed seed); large inputs that take the parallel and column
 * paths; interrupts; failed allocations. */
#include "check.h"

static int same(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs(a - b) <= tol * (1 + fabs(b));
}

/* t has dtype dt, shape sh and values v (row-major, to 1e-6); on a mismatch
 * say what differs and return 0. */
static int expect_(const cell_tensor *t, cell_dtype dt, int nd, const int64_t *sh,
                   const double *v, const char *what) {
  char b1[128], b2[128];
  if (t->dtype != dt) {
    fprintf(stderr, "  %s: dtype %s, want %s\n", what, cell_dtype_name(t->dtype),
            cell_dtype_name(dt));
    return 0;
  }
  if (!cell_shape_equal(t->ndim, t->shape, nd, sh)) {
    fprintf(stderr, "  %s: shape %s, want %s\n", what, cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
            cell_shape_str(nd, sh, b2, sizeof b2));
    return 0;
  }
  int64_t n = cell_tensor_numel(t);
  for (int64_t i = 0; i < n; i++)
    if (!same(flat(t, i), v[i], 1e-6)) {
      fprintf(stderr, "  %s[%lld] = %g, want %g\n", what, (long long)i, flat(t, i), v[i]);
      return 0;
    }
  return 1;
}
/* variadic: the expected values are compound literals, commas and all */
#define EXPECT(...) CHECK(expect_(__VA_ARGS__))

/* ---------- naive reference over logical indices ---------- */
static void ref_reduce(cell_redop op, const cell_tensor *a, const bool *red, double *out,
                       int64_t *outer_n) {
  int nd = a->ndim;
  int64_t n = cell_tensor_numel(a);
  int64_t on = 1;
  for (int d = 0; d < nd; d++)
    if (!red[d]) on *= a->shape[d];
  *outer_n = on;
  double *acc = calloc((size_t)(on ? on : 1), sizeof(double));
  int64_t *cnt = calloc((size_t)(on ? on : 1), sizeof(int64_t));
  if (!acc || !cnt) abort();
  for (int64_t o = 0; o < on; o++) {
    switch (op) {
    case CELL_RED_PROD: case CELL_RED_ALL: acc[o] = 1; break;
    case CELL_RED_MAX: acc[o] = -INFINITY; break;
    case CELL_RED_MIN: acc[o] = INFINITY; break;
    default: acc[o] = 0;
    }
  }
  for (int64_t f = 0; f < n; f++) {
    int64_t q = f, o = 0, mul = 1;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t i = q % a->shape[d];
      q /= a->shape[d];
      if (!red[d]) {
        o += i * mul;
        mul *= a->shape[d];
      }
    }
    double x = flat(a, f);
    cnt[o]++;
    switch (op) {
    case CELL_RED_SUM: case CELL_RED_MEAN: acc[o] += x; break;
    case CELL_RED_PROD: acc[o] *= x; break;
    case CELL_RED_MAX: if (x > acc[o] || isnan(x)) acc[o] = isnan(acc[o]) ? acc[o] : x; break;
    case CELL_RED_MIN: if (x < acc[o] || isnan(x)) acc[o] = isnan(acc[o]) ? acc[o] : x; break;
    case CELL_RED_ALL: acc[o] = acc[o] && x != 0; break;
    case CELL_RED_ANY: acc[o] = acc[o] || x != 0; break;
    default: break;
    }
  }
  for (int64_t o = 0; o < on; o++) out[o] = op == CELL_RED_MEAN ? acc[o] / (double)cnt[o] : acc[o];
  free(acc);
  free(cnt);
}

/* xorshift64 with a fixed seed: the random tests are the same every run. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* A random view (contiguous, transposed, offset or stride-0 expanded) of a
 * random tensor, or NULL when the engine failed (counted as a failure). */
static int big_sizes;
static cell_tensor *random_view(cell_dtype dt, int *ndim_out) {
  int nd = 1 + (int)(rnd() % (big_sizes ? 3 : 4));
  int64_t sh[4];
  for (int d = 0; d < nd; d++) sh[d] = 1 + (int64_t)(rnd() % (big_sizes ? 24 : 5));
  cell_tensor *base = NULL;
  CHECK_OK(cell_tensor_empty(dt, nd, sh, &base));
  if (!base) return NULL;
  int64_t n = cell_tensor_numel(base);
  for (int64_t i = 0; i < n; i++) {
    double v = dt == CELL_DTYPE_BOOL ? (double)(rnd() % 3 != 0)
               : cell_dtype_is_float(dt) ? (double)((int64_t)(rnd() % 17) - 8) / 4.0
               : (double)((int64_t)(rnd() % 11) - (dt == CELL_DTYPE_U8 ? 0 : 5));
    cell_store_f64(dt, (char *)cell_tensor_data_ptr(base) + i * cell_dtype_size(dt), v);
  }
  cell_tensor *t = base;
  cell_status s = CELL_OK;
  int kind = (int)(rnd() % 4);
  if (kind == 1 && nd >= 2) { /* transpose */
    s = cell_tensor_transpose(base, 0, nd - 1, &t);
  } else if (kind == 2) { /* narrow the first dim (offset view) */
    if (sh[0] > 1) s = cell_tensor_narrow(base, 0, 1, sh[0] - 1, &t);
  } else if (kind == 3) { /* expand a leading dim (stride 0) */
    int64_t esh[5];
    esh[0] = 3;
    for (int d = 0; d < nd; d++) esh[d + 1] = sh[d];
    s = cell_tensor_expand(base, nd + 1, esh, &t);
  }
  CHECK(s == CELL_OK);
  if (t != base) cell_tensor_release(base);
  if (s != CELL_OK) return NULL;
  *ndim_out = t->ndim;
  return t;
}

static void random_tests(void) {
  for (int iter = 0; iter < 3000; iter++) {
    cell_dtype dt = all_dtypes[iter % NDT];
    big_sizes = iter >= 2500;
    int nd = 0;
    cell_tensor *t = random_view(dt, &nd);
    if (!t) return;
    cell_redop op = (cell_redop)(rnd() % CELL_REDOP_COUNT);
    int dims[CELL_MAX_DIMS], ndims = 0;
    bool red[CELL_MAX_DIMS] = {false};
    if (rnd() % 4 == 0) {
      for (int d = 0; d < nd; d++) red[d] = true;
    } else {
      for (int d = 0; d < nd; d++)
        if (rnd() % 2) {
          dims[ndims++] = d;
          red[d] = true;
        }
      if (ndims == 0) {
        dims[ndims++] = nd - 1;
        red[nd - 1] = true;
      }
      /* shuffle */
      for (int i = ndims - 1; i > 0; i--) {
        int k = (int)(rnd() % (uint64_t)(i + 1)), tmp = dims[i];
        dims[i] = dims[k];
        dims[k] = tmp;
      }
    }
    int keep = (int)(rnd() % 2);
    cell_tensor *r;
    REQUIRE_OK(cell_op_reduce(op, t, ndims, dims, keep, &r));
    static double want[1 << 16];
    int64_t on;
    ref_reduce(op, t, red, want, &on);
    int isf = cell_dtype_is_float(dt);
    cell_dtype wdt = op == CELL_RED_ALL || op == CELL_RED_ANY ? CELL_DTYPE_BOOL
                     : op == CELL_RED_MAX || op == CELL_RED_MIN ? dt
                     : op == CELL_RED_MEAN ? (isf ? dt : CELL_DTYPE_F32)
                     : (isf ? dt : CELL_DTYPE_I64);
    CHECKF(r->dtype == wdt, "random %d: dtype %s want %s", iter, cell_dtype_name(r->dtype),
          cell_dtype_name(wdt));
    CHECKF(cell_tensor_numel(r) == on, "random %d: numel", iter);
    int64_t expect_nd = 0;
    for (int d = 0; d < nd; d++) expect_nd += !red[d] || keep;
    CHECKF(r->ndim == expect_nd, "random %d: ndim %d want %lld", iter, r->ndim,
          (long long)expect_nd);
    double tol = (dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16) ? 1e-2 : 1e-5;
    if (op == CELL_RED_PROD && (dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16)) tol = 2e-2;
    int64_t bad = -1; /* first mismatching output, -1 if none */
    double badw = 0;
    for (int64_t o = 0; o < on && cell_tensor_numel(r) == on && bad < 0; o++) {
      double w = want[o];
      if (wdt == CELL_DTYPE_F32) w = (float)w;
      if (wdt == CELL_DTYPE_I64 && fabs(w) > 9e15) continue; /* wrapped */
      if (!same(flat(r, o), w, tol)) bad = o, badw = w;
    }
    CHECKF(bad < 0, "random %d op %d dtype %s: out[%lld]=%g want %g", iter, (int)op,
           cell_dtype_name(dt), (long long)bad, flat(r, bad), badw);
    cell_tensor_release(r);

    /* argmax on the same tensor, flattened and along a dim */
    if (op == CELL_RED_MAX || op == CELL_RED_MIN) {
      int is_min = op == CELL_RED_MIN;
      cell_tensor *ix;
      REQUIRE_OK(cell_op_argmax(t, -1, 0, is_min, 1, &ix));
      int64_t n = cell_tensor_numel(t), best = 0;
      for (int64_t f = 1; f < n; f++)
        if (is_min ? flat(t, f) < flat(t, best) : flat(t, f) > flat(t, best)) best = f;
      CHECKF(ix->ndim == 0 && ix->dtype == CELL_DTYPE_I64 && flat(ix, 0) == (double)(best + 1),
            "argmax flat %d: %g want %lld", iter, flat(ix, 0), (long long)best + 1);
      cell_tensor_release(ix);
      int d = (int)(rnd() % (uint64_t)nd);
      cell_tensor *v;
      REQUIRE_OK(cell_op_max_dim(t, d, 1, is_min, 0, &v, &ix));
      /* check against a reference: for each output element */
      int64_t on2 = cell_tensor_numel(v), bado = -1, bi = 0;
      double bv = 0;
      for (int64_t o = 0; o < on2 && bado < 0; o++) {
        int64_t idx[CELL_MAX_DIMS], q = o;
        for (int e = nd - 1; e >= 0; e--) {
          idx[e] = q % v->shape[e];
          q /= v->shape[e];
        }
        bi = 0;
        bv = 0;
        for (int64_t k = 0; k < t->shape[d]; k++) {
          idx[d] = k;
          double x = NAN;
          cell_tensor_get(t, idx, &x);
          if (k == 0 || (is_min ? x < bv : x > bv)) {
            bv = x;
            bi = k;
          }
        }
        if (!(same(flat(v, o), bv, 0) && flat(ix, o) == (double)bi)) bado = o;
      }
      CHECKF(bado < 0, "max_dim %d: out[%lld] = %g@%g want %g@%lld", iter, (long long)bado,
             flat(v, bado), flat(ix, bado), bv, (long long)bi);
      CHECKF(v->dtype == dt, "max_dim dtype");
      cell_tensor_release(v);
      cell_tensor_release(ix);
    }
    /* cumsum along a random dim */
    {
      int d = (int)(rnd() % (uint64_t)nd);
      cell_tensor *c;
      REQUIRE_OK(cell_op_cumsum(t, d, &c));
      CHECKF(c->dtype == (isf ? dt : CELL_DTYPE_I64), "cumsum dtype");
      int64_t n = cell_tensor_numel(t), badf = -1;
      double s = 0, got = 0;
      for (int64_t f = 0; f < n && badf < 0; f++) {
        int64_t idx[CELL_MAX_DIMS], q = f;
        for (int e = nd - 1; e >= 0; e--) {
          idx[e] = q % t->shape[e];
          q /= t->shape[e];
        }
        double x = NAN;
        int64_t last = idx[d];
        s = 0;
        for (int64_t k = 0; k <= last; k++) {
          idx[d] = k;
          cell_tensor_get(t, idx, &x);
          s += x;
        }
        got = NAN;
        cell_tensor_get(c, idx, &got);
        if (!same(got, s, 1e-2)) badf = f;
      }
      CHECKF(badf < 0, "cumsum %d dim %d: [%lld] %g want %g", iter, d, (long long)badf, got, s);
      cell_tensor_release(c);
    }
    cell_tensor_release(t);
  }
}

static void hand_tests(void) {
  double v6[] = {0, 1, 2, 3, 4, 5};
  int64_t s23[] = {2, 3};
  cell_tensor *a = from(CELL_DTYPE_F32, 2, s23, v6), *r, *ix;
  int d0[] = {0}, d1[] = {1}, d01[] = {0, 1}, dup[] = {1, 1}, bad[] = {2};
  int64_t s2[] = {2}, s3[] = {3}, s1x3[] = {1, 3}, s11[] = {1, 1};

  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){15}, "sum all");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 1, &r));
  EXPECT(r, CELL_DTYPE_F32, 2, s11, (double[]){15}, "sum all keepdim");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s3, (double[]){3, 5, 7}, "sum dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 1, d0, 1, &r));
  EXPECT(r, CELL_DTYPE_F32, 2, s1x3, (double[]){3, 5, 7}, "sum dim0 keep");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MEAN, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s2, (double[]){1, 4}, "mean dim1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_PROD, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s2, (double[]){0, 60}, "prod dim1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, a, 2, d01, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){5}, "max dims 0,1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MIN, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s2, (double[]){0, 3}, "min dim1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_ALL, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_BOOL, 1, s2, (double[]){0, 1}, "all dim1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_ANY, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_BOOL, 1, s3, (double[]){1, 1, 1}, "any dim0");
  cell_tensor_release(r);

  /* errors */
  CHECKF(cell_op_reduce(CELL_RED_SUM, a, 2, dup, 0, &r) == CELL_ERR_VALUE, "dup dims");
  CHECK_MSG("dimension 1 appears more than once");
  CHECKF(cell_op_reduce(CELL_RED_SUM, a, 1, bad, 0, &r) == CELL_ERR_INDEX, "bad dim");
  CHECK_MSG("dimension 2 out of range");
  CHECKF(cell_op_max_dim(a, 2, 0, 0, 0, &r, &ix) == CELL_ERR_INDEX, "bad dim max_dim");
  CHECKF(cell_op_norm(a, 0, 0, NULL, 0, &r) == CELL_ERR_VALUE, "norm p=0");
  CHECKF(cell_op_norm(a, NAN, 0, NULL, 0, &r) == CELL_ERR_VALUE, "norm p=nan");
  CHECKF(cell_op_reduce((cell_redop)99, a, 0, NULL, 0, &r) == CELL_ERR_VALUE, "bad op");
  CHECKF(cell_op_cumsum(a, 2, &r) == CELL_ERR_INDEX, "cumsum bad dim");

  /* transposed: t = [[0,3],[1,4],[2,5]] */
  cell_tensor *t;
  REQUIRE_OK(cell_tensor_transpose(a, 0, 1, &t));
  CHECKF(!cell_tensor_is_contiguous(t), "transposed is non-contiguous");
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, t, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s2, (double[]){3, 12}, "T sum dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, t, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s3, (double[]){3, 5, 7}, "T sum dim1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_max_dim(t, 1, 0, 0, 1, &r, &ix));
  EXPECT(r, CELL_DTYPE_F32, 1, s3, (double[]){3, 4, 5}, "T max_dim values");
  EXPECT(ix, CELL_DTYPE_I64, 1, s3, (double[]){2, 2, 2}, "T max_dim indices (base 1)");
  cell_tensor_release(r);
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_argmax(t, -1, 0, 0, 0, &ix)); /* flattened logical: 5 is at t[2][1] = 5 */
  EXPECT(ix, CELL_DTYPE_I64, 0, NULL, (double[]){5}, "T argmax flat");
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_argmax(t, -1, 1, 1, 0, &ix));
  EXPECT(ix, CELL_DTYPE_I64, 2, s11, (double[]){0}, "T argmin flat keepdim");
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_argmax(t, 0, 0, 0, 0, &ix));
  EXPECT(ix, CELL_DTYPE_I64, 1, s2, (double[]){2, 2}, "T argmax dim0");
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_cumsum(t, 0, &r));
  int64_t s32[] = {3, 2};
  EXPECT(r, CELL_DTYPE_F32, 2, s32, (double[]){0, 3, 1, 7, 3, 12}, "T cumsum dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_cumsum(t, 1, &r));
  EXPECT(r, CELL_DTYPE_F32, 2, s32, (double[]){0, 3, 1, 5, 2, 7}, "T cumsum dim1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_var(t, 1, d0, 1, 0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s2, (double[]){1, 1}, "T var dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_var(t, 0, NULL, 0, 0, 1, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){sqrt(17.5 / 6)}, "T std all ddof0");
  cell_tensor_release(r);
  cell_tensor_release(t);
  cell_tensor_release(a);

  /* ties: first extreme */
  double tie[] = {1, 3, 3, -1, -1};
  int64_t s5[] = {5};
  a = from(CELL_DTYPE_F64, 1, s5, tie);
  REQUIRE_OK(cell_op_argmax(a, 0, 0, 0, 0, &ix));
  EXPECT(ix, CELL_DTYPE_I64, 0, NULL, (double[]){1}, "argmax tie");
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_argmax(a, 0, 0, 1, 0, &ix));
  EXPECT(ix, CELL_DTYPE_I64, 0, NULL, (double[]){3}, "argmin tie");
  cell_tensor_release(ix);
  cell_tensor_release(a);

  /* NaN */
  double nanv[] = {1, NAN, 5, NAN};
  int64_t s4[] = {4};
  a = from(CELL_DTYPE_F32, 1, s4, nanv);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, a, 0, NULL, 0, &r));
  CHECKF(isnan(flat(r, 0)), "max with NaN");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_max_dim(a, 0, 0, 1, 0, &r, &ix));
  CHECKF(isnan(flat(r, 0)) && flat(ix, 0) == 1, "min_dim NaN index %g", flat(ix, 0));
  cell_tensor_release(r);
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_norm(a, INFINITY, 0, NULL, 0, &r));
  CHECKF(isnan(flat(r, 0)), "inf-norm NaN");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_ALL, a, 0, NULL, 0, &r));
  CHECKF(flat(r, 0) == 1, "all with NaN is true");
  cell_tensor_release(r);
  cell_tensor_release(a);

  /* norms */
  double nv[] = {3, -4};
  a = from(CELL_DTYPE_F32, 1, s2, nv);
  REQUIRE_OK(cell_op_norm(a, 2, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){5}, "norm2");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_norm(a, 1, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){7}, "norm1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_norm(a, INFINITY, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){4}, "norm inf");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_norm(a, 3, 1, d0, 1, &r));
  int64_t s1[] = {1};
  EXPECT(r, CELL_DTYPE_F32, 1, s1, (double[]){(float)cbrt(91)}, "norm3 keepdim");
  cell_tensor_release(r);
  cell_tensor_release(a);

  /* ints */
  double iv[] = {100, 100, 100, -7};
  int64_t s22[] = {2, 2};
  a = from(CELL_DTYPE_I8, 2, s22, iv);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_I64, 0, NULL, (double[]){293}, "i8 sum (no i8 overflow)");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_PROD, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_I64, 1, s2, (double[]){10000, -700}, "i8 prod");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MEAN, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s2, (double[]){100, 46.5}, "i8 mean");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_I8, 1, s2, (double[]){100, 100}, "i8 max");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_var(a, 0, NULL, 1, 0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){(3 * 26.75 * 26.75 + 80.25 * 80.25) / 3},
         "i8 var");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_norm(a, 1, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){307}, "i8 norm1");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_cumsum(a, 1, &r));
  EXPECT(r, CELL_DTYPE_I64, 2, s22, (double[]){100, 200, 100, 93}, "i8 cumsum");
  cell_tensor_release(r);
  cell_tensor_release(a);

  /* int64 exact extremes, wrap-around sum */
  {
    int64_t big[] = {INT64_MAX, INT64_MAX - 1, 3};
    cell_tensor *b;
    int64_t s3b[] = {3};
    REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_I64, 1, s3b, &b));
    memcpy(cell_tensor_data_ptr(b), big, sizeof big);
    REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, b, 0, NULL, 0, &r));
    CHECKF(*(int64_t *)cell_tensor_data_ptr(r) == INT64_MAX, "i64 max exact");
    cell_tensor_release(r);
    REQUIRE_OK(cell_op_max_dim(b, 0, 0, 0, 0, &r, &ix));
    CHECKF(*(int64_t *)cell_tensor_data_ptr(ix) == 0, "i64 argmax exact");
    cell_tensor_release(r);
    cell_tensor_release(ix);
    REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, b, 0, NULL, 0, &r));
    CHECKF(*(int64_t *)cell_tensor_data_ptr(r) ==
              (int64_t)((uint64_t)INT64_MAX + (uint64_t)(INT64_MAX - 1) + 3u),
          "i64 sum wraps");
    cell_tensor_release(r);
    cell_tensor_release(b);
  }

  /* bool */
  double bv[] = {1, 0, 1, 1, 1, 1};
  a = from(CELL_DTYPE_BOOL, 2, s23, bv);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_I64, 0, NULL, (double[]){5}, "bool sum");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_I64, 1, s3, (double[]){2, 1, 2}, "bool sum dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_ALL, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_BOOL, 1, s2, (double[]){0, 1}, "bool all");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MIN, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_BOOL, 1, s2, (double[]){0, 1}, "bool min");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MEAN, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){(float)(5.0 / 6)}, "bool mean");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_argmax(a, 1, 0, 1, 0, &ix));
  EXPECT(ix, CELL_DTYPE_I64, 1, s2, (double[]){1, 0}, "bool argmin");
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_cumsum(a, 0, &r));
  EXPECT(r, CELL_DTYPE_I64, 2, s23, (double[]){1, 0, 1, 2, 1, 2}, "bool cumsum");
  cell_tensor_release(r);
  cell_tensor_release(a);

  /* float16 */
  double hv[] = {0.5, 1.5, 2.25, -1, 1000, 0.125};
  a = from(CELL_DTYPE_F16, 2, s23, hv);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 1, d1, 0, &r));
  EXPECT(r, CELL_DTYPE_F16, 1, s2, (double[]){4.25, 999}, "f16 sum");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MEAN, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_F16, 1, s3, (double[]){-0.25, 500.75, 1.1875}, "f16 mean");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_max_dim(a, 0, 1, 0, 0, &r, &ix));
  EXPECT(r, CELL_DTYPE_F16, 2, s1x3, (double[]){0.5, 1000, 2.25}, "f16 max_dim values");
  EXPECT(ix, CELL_DTYPE_I64, 2, s1x3, (double[]){0, 1, 0}, "f16 max_dim indices");
  cell_tensor_release(r);
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_norm(a, 2, 1, d1, 0, &r));
  CHECKF(r->dtype == CELL_DTYPE_F16, "f16 norm dtype");
  cell_tensor_release(r);
  REQUIRE_OK(cell_tensor_transpose(a, 0, 1, &t));
  REQUIRE_OK(cell_op_reduce(CELL_RED_PROD, t, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_F16, 1, s2, (double[]){0.5 * 1.5 * 2.25, -125}, "f16 T prod");
  cell_tensor_release(r);
  cell_tensor_release(t);
  cell_tensor_release(a);

  /* empty reductions */
  int64_t s0[] = {0}, s03[] = {0, 3};
  a = from(CELL_DTYPE_F32, 1, s0, NULL);
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){0}, "empty sum");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_PROD, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){1}, "empty prod");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MEAN, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){NAN}, "empty mean");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_ALL, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_BOOL, 0, NULL, (double[]){1}, "empty all");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_ANY, a, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_BOOL, 0, NULL, (double[]){0}, "empty any");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_var(a, 0, NULL, 1, 0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){NAN}, "empty var");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_norm(a, 2, 0, NULL, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){0}, "empty norm");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_cumsum(a, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s0, NULL, "empty cumsum");
  cell_tensor_release(r);
  CHECKF(cell_op_reduce(CELL_RED_MAX, a, 0, NULL, 0, &r) == CELL_ERR_VALUE, "empty max");
  CHECK_MSG("cannot reduce over zero elements");
  CHECKF(cell_op_argmax(a, -1, 0, 0, 0, &r) == CELL_ERR_VALUE, "empty argmax");
  cell_tensor_release(a);
  a = from(CELL_DTYPE_I32, 2, s03, NULL);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, a, 1, d1, 0, &r)); /* 0 outputs of 3 elements: fine */
  EXPECT(r, CELL_DTYPE_I32, 1, s0, NULL, "max over nonempty dim of empty tensor");
  cell_tensor_release(r);
  CHECKF(cell_op_reduce(CELL_RED_MIN, a, 1, d0, 0, &r) == CELL_ERR_VALUE, "min over empty dim");
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_I64, 1, s3, (double[]){0, 0, 0}, "sum over empty dim");
  cell_tensor_release(r);
  cell_tensor_release(a);

  /* 0-d */
  a = from(CELL_DTYPE_F64, 0, NULL, (double[]){2.5});
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 1, d0, 1, &r));
  EXPECT(r, CELL_DTYPE_F64, 0, NULL, (double[]){2.5}, "0-d sum dim 0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_max_dim(a, 0, 0, 0, 1, &r, &ix));
  EXPECT(r, CELL_DTYPE_F64, 0, NULL, (double[]){2.5}, "0-d max_dim");
  EXPECT(ix, CELL_DTYPE_I64, 0, NULL, (double[]){1}, "0-d max_dim index");
  cell_tensor_release(r);
  cell_tensor_release(ix);
  REQUIRE_OK(cell_op_cumsum(a, 0, &r));
  EXPECT(r, CELL_DTYPE_F64, 0, NULL, (double[]){2.5}, "0-d cumsum");
  cell_tensor_release(r);
  CHECKF(cell_op_reduce(CELL_RED_SUM, a, 2, (int[]){0, 0}, 0, &r) == CELL_ERR_VALUE, "0-d dup");
  cell_tensor_release(a);

  /* expanded (stride 0) */
  a = from(CELL_DTYPE_F32, 1, s3, (double[]){1, 2, 3});
  int64_t s43[] = {4, 3};
  REQUIRE_OK(cell_tensor_expand(a, 2, s43, &t));
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, t, 1, d0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s3, (double[]){4, 8, 12}, "expanded sum dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_var(t, 1, d0, 1, 0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 1, s3, (double[]){0, 0, 0}, "expanded var dim0");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_cumsum(t, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 2, s43, (double[]){1, 2, 3, 2, 4, 6, 3, 6, 9, 4, 8, 12},
         "expanded cumsum");
  cell_tensor_release(r);
  cell_tensor_release(t);
  cell_tensor_release(a);
  /* var with ddof >= n */
  a = from(CELL_DTYPE_F32, 1, s2, (double[]){1, 2});
  REQUIRE_OK(cell_op_var(a, 0, NULL, 2, 0, 0, &r));
  EXPECT(r, CELL_DTYPE_F32, 0, NULL, (double[]){INFINITY}, "var dof 0");
  cell_tensor_release(r);
  cell_tensor_release(a);
}

static void big_tests(void) {
  /* large contiguous f32: reduce-all (blocked parallel), last dim, column mode */
  int64_t sh[] = {1000, 600};
  cell_tensor *a;
  REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_F32, 2, sh, &a));
  float *x = cell_tensor_data_ptr(a);
  for (int64_t i = 0; i < 600000; i++) x[i] = (float)((i * 7919) % 1001) / 100.0f - 5.0f;
  cell_tensor *r, *t;
  double want = 0;
  for (int64_t i = 0; i < 600000; i++) want += x[i];
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r));
  CHECKF(same(flat(r, 0), (float)want, 1e-6), "big sum %g want %g", flat(r, 0), want);
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MEAN, a, 0, NULL, 0, &r));
  CHECKF(same(flat(r, 0), (float)(want / 600000), 1e-6), "big mean");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, a, 0, NULL, 0, &r));
  CHECKF(flat(r, 0) == 5.0, "big max %g", flat(r, 0));
  cell_tensor_release(r);
  x[123457] = NAN;
  REQUIRE_OK(cell_op_reduce(CELL_RED_MIN, a, 0, NULL, 0, &r));
  CHECKF(isnan(flat(r, 0)), "big min NaN");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_argmax(a, -1, 0, 0, 0, &r));
  CHECKF(flat(r, 0) == 123457, "big argmax NaN");
  cell_tensor_release(r);
  x[123457] = 0;
  int d0[] = {0}, d1[] = {1};
  for (int k = 0; k < 2; k++) {
    cell_tensor *src = a;
    if (k) REQUIRE_OK(cell_tensor_transpose(a, 0, 1, &src));
    for (int which = 0; which < 2; which++) {
      REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, src, 1, which ? d1 : d0, 0, &r));
      int64_t on = cell_tensor_numel(r);
      int rd = which;
      int64_t rn = src->shape[rd];
      for (int64_t o = 0; o < on; o += 37) {
        double s = 0;
        for (int64_t q = 0; q < rn; q++) {
          int64_t idx[2];
          idx[rd] = q;
          idx[1 - rd] = o;
          double v = NAN;
          cell_tensor_get(src, idx, &v);
          s += v;
        }
        CHECKF(same(flat(r, o), (float)s, 1e-5), "big sum k%d dim%d [%lld] %g want %g", k, which,
              (long long)o, flat(r, o), s);
      }
      cell_tensor_release(r);
    }
    if (k) cell_tensor_release(src);
  }
  /* int32 column mode */
  cell_tensor *ai;
  REQUIRE_OK(cell_tensor_astype(a, CELL_DTYPE_I32, &ai));
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, ai, 1, d0, 0, &r));
  CHECKF(r->dtype == CELL_DTYPE_I64, "i32 col dtype");
  for (int64_t o = 0; o < 600; o += 41) {
    int64_t s = 0;
    for (int64_t q = 0; q < 1000; q++) s += ((int32_t *)cell_tensor_data_ptr(ai))[q * 600 + o];
    CHECKF(((int64_t *)cell_tensor_data_ptr(r))[o] == s, "i32 col sum");
  }
  cell_tensor_release(r);
  cell_tensor_release(ai);
  (void)t;

  /* interrupt */
  long live = cell_alloc_live_blocks();
  cell_interrupt(1);
  CHECKF(cell_op_reduce(CELL_RED_PROD, a, 1, d1, 0, &r) == CELL_ERR_INTERRUPT, "interrupt");
  CHECKF(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r) == CELL_ERR_INTERRUPT, "interrupt fast");
  CHECKF(cell_op_cumsum(a, 0, &r) == CELL_ERR_INTERRUPT, "interrupt cumsum");
  cell_interrupt(0);
  CHECKF(cell_alloc_live_blocks() == live, "no leak after interrupt");
  cell_tensor_release(a);
}

static cell_status af_max_dim(const cell_tensor *a, cell_tensor **o) {
  cell_tensor *ix = NULL;
  cell_status s = cell_op_max_dim(a, 1, 0, 0, 0, o, &ix);
  if (s == CELL_OK) cell_tensor_release(ix);
  return s;
}
static cell_status af_argmax(const cell_tensor *a, cell_tensor **o) {
  return cell_op_argmax(a, 0, 1, 1, 0, o);
}
static cell_status af_sum(const cell_tensor *a, cell_tensor **o) {
  int d1[] = {1};
  return cell_op_reduce(CELL_RED_SUM, a, 1, d1, 0, o);
}
static cell_status af_sum_all(const cell_tensor *a, cell_tensor **o) {
  return cell_op_reduce(CELL_RED_MEAN, a, 0, NULL, 1, o);
}
static cell_status af_cumsum(const cell_tensor *a, cell_tensor **o) { return cell_op_cumsum(a, 1, o); }
static cell_status af_var(const cell_tensor *a, cell_tensor **o) {
  int d0[] = {0};
  return cell_op_var(a, 1, d0, 1, 0, 1, o);
}
static cell_status af_norm(const cell_tensor *a, cell_tensor **o) {
  return cell_op_norm(a, 3, 0, NULL, 0, o);
}

/* Fail the n-th allocation for n = 1, 2, ... until the op succeeds: each
 * failure is a MemoryError that leaves nothing allocated. */
static void alloc_fail_tests(void) {
  typedef cell_status (*op_fn)(const cell_tensor *, cell_tensor **);
  static const op_fn ops[] = {af_max_dim, af_argmax, af_sum, af_sum_all, af_cumsum, af_var, af_norm};
  double v6[] = {0, 1, 2, 3, 4, 5};
  int64_t s23[] = {2, 3};
  cell_tensor *a0 = from(CELL_DTYPE_F32, 2, s23, v6), *a = NULL, *r;
  REQUIRE_OK(cell_tensor_transpose(a0, 0, 1, &a)); /* strided input: the ops copy or iterate */
  long live = cell_alloc_live_blocks();
  for (unsigned k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    int succeeded = 0, clean = 1, mem = 1;
    for (long n = 1; n <= 100 && !succeeded; n++) {
      r = NULL;
      cell_alloc_fail_after(n);
      cell_status s = ops[k](a, &r);
      cell_alloc_fail_after(0);
      if (s == CELL_OK) {
        succeeded = 1;
        cell_tensor_release(r);
      } else if (s != CELL_ERR_MEMORY) {
        mem = 0;
      }
      if (cell_alloc_live_blocks() != live) clean = 0;
    }
    CHECKF(succeeded && clean && mem, "reduce op %u: succeeded %d, no leak %d, MemoryError %d",
           k, succeeded, clean, mem);
  }
  cell_tensor_release(a);
  cell_tensor_release(a0);
  /* column-mode paths allocate scratch */
  int64_t s2020[] = {20, 20};
  REQUIRE_OK(cell_tensor_rand(CELL_DTYPE_F32, 2, s2020, &a));
  live = cell_alloc_live_blocks();
  int d0[] = {0};
  int saw_mem = 0;
  for (long n = 1; n <= 6; n++) {
    cell_alloc_fail_after(n);
    cell_status s = cell_op_reduce(CELL_RED_SUM, a, 1, d0, 0, &r);
    cell_alloc_fail_after(0);
    if (s == CELL_OK) cell_tensor_release(r);
    else saw_mem += s == CELL_ERR_MEMORY;
    CHECKF(cell_alloc_live_blocks() == live, "col alloc fail %ld: leak", n);
    cell_alloc_fail_after(n);
    s = cell_op_cumsum(a, 0, &r);
    cell_alloc_fail_after(0);
    if (s == CELL_OK) cell_tensor_release(r);
    else saw_mem += s == CELL_ERR_MEMORY;
    CHECKF(cell_alloc_live_blocks() == live, "col cumsum alloc fail %ld: leak", n);
  }
  CHECKF(saw_mem >= 6, "col alloc failures seen %d", saw_mem);
  /* NaN in column mode */
  float *x = cell_tensor_data_ptr(a);
  x[5 * 20 + 7] = NAN;
  REQUIRE_OK(cell_op_reduce(CELL_RED_MAX, a, 1, d0, 0, &r));
  CHECKF(isnan(flat(r, 7)) && !isnan(flat(r, 6)) && !isnan(flat(r, 8)), "col max NaN");
  cell_tensor_release(r);
  REQUIRE_OK(cell_op_reduce(CELL_RED_MIN, a, 1, d0, 0, &r));
  CHECKF(isnan(flat(r, 7)) && !isnan(flat(r, 6)), "col min NaN");
  cell_tensor_release(r);
  cell_tensor_release(a);
}

void test_reduce_all(void) {
  long live0 = cell_alloc_live_blocks();
  hand_tests();
  random_tests();
  big_tests();
  alloc_fail_tests();
  CHECKF(cell_alloc_live_blocks() == live0, "live blocks %ld (start %ld)",
         cell_alloc_live_blocks(), live0);
}
