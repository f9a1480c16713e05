/* test_optim.c - the fused optimizer steps (include/cell_optim.h) against
 * the formulas computed here element by element in double: SGD with every
 * option, Adam and AdamW, on contiguous, strided and threaded tensors;
 * that they allocate nothing and bump versions; and every argument error. */
#include "check.h"

#define N 6

static cell_tensor *vec(cell_dtype dt, const double *v, int64_t n) {
  int64_t s[1] = {n};
  return from(dt, 1, s, v);
}

/* The reference SGD step, element by element. */
static void ref_sgd(double *p, const double *g, double *buf, const cell_sgd_config *c, int n) {
  for (int i = 0; i < n; i++) {
    double d = g[i] * c->grad_scale + c->weight_decay * p[i];
    if (c->momentum != 0) {
      buf[i] = c->first_step ? d : c->momentum * buf[i] + (1 - c->dampening) * d;
      d = c->nesterov ? d + c->momentum * buf[i] : buf[i];
    }
    p[i] -= c->lr * d;
  }
}

static void ref_adam(double *p, const double *g, double *m, double *v, const cell_adam_config *c, int n) {
  double bc1 = 1 - pow(c->beta1, (double)c->step), bc2 = 1 - pow(c->beta2, (double)c->step);
  for (int i = 0; i < n; i++) {
    double gi = g[i] * c->grad_scale;
    if (c->decoupled) p[i] *= 1 - c->lr * c->weight_decay;
    else gi += c->weight_decay * p[i];
    m[i] = c->beta1 * m[i] + (1 - c->beta1) * gi;
    v[i] = c->beta2 * v[i] + (1 - c->beta2) * gi * gi;
    p[i] -= c->lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + c->eps);
  }
}

static const double P0[N] = {0.5, -1.25, 2.0, 0.0, -0.75, 1.5};

static void grad_at(int t, double *g) {
  for (int i = 0; i < N; i++) g[i] = ((i * 7 + t * 3) % 11 - 5) / 4.0;
}

static int close_to(const cell_tensor *t, const double *ref, int n, double tol) {
  for (int i = 0; i < n; i++)
    if (!NEAR(flat(t, i), ref[i], tol)) {
      fprintf(stderr, "  element %d: got %.17g, expected %.17g\n", i, flat(t, i), ref[i]);
      return 0;
    }
  return 1;
}

static void test_sgd_formula(void) {
  static const cell_sgd_config cfgs[] = {
      {0.1, 0, 0, 0, 1, 0, 0},       {0.05, 0.9, 0, 0, 1, 0, 0},   {0.05, 0.9, 0.3, 0, 1, 0, 0},
      {0.05, 0.8, 0, 0.01, 1, 1, 0}, {0.1, 0, 0, 0.05, 0.5, 0, 0},
  };
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
    for (int f32 = 0; f32 < 2; f32++) {
      cell_dtype dt = f32 ? CELL_DTYPE_F32 : CELL_DTYPE_F64;
      double p[N], buf[N] = {0}, g[N];
      memcpy(p, P0, sizeof p);
      cell_tensor *tp = vec(dt, p, N), *tb = vec(dt, buf, N);
      int ok = 1;
      for (int t = 1; t <= 4; t++) {
        cell_sgd_config c = cfgs[k];
        c.first_step = t == 1;
        grad_at(t, g);
        cell_tensor *tg = vec(dt, g, N);
        CHECK_OK(cell_optim_sgd_step(tp, tg, c.momentum != 0 ? tb : NULL, &c));
        ref_sgd(p, g, buf, &c, N);
        cell_tensor_release(tg);
        ok = ok && close_to(tp, p, N, f32 ? 1e-6 : 1e-15);
        if (c.momentum != 0) ok = ok && close_to(tb, buf, N, f32 ? 1e-6 : 1e-15);
      }
      CHECKF(ok, "sgd config %zu, %s", k, f32 ? "float32" : "float64");
      cell_tensor_release(tp);
      cell_tensor_release(tb);
    }
  }
}

static void test_adam_formula(void) {
  static const cell_adam_config cfgs[] = {
      {0.01, 0.9, 0.999, 1e-8, 0, 1, 1, 0},
      {0.01, 0.8, 0.95, 1e-6, 0.1, 1, 1, 0},
      {0.01, 0.9, 0.999, 1e-8, 0.1, 1, 1, 1},
      {0.02, 0.5, 0.9, 1e-7, 0.05, 0.25, 1, 1},
  };
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
    for (int f32 = 0; f32 < 2; f32++) {
      cell_dtype dt = f32 ? CELL_DTYPE_F32 : CELL_DTYPE_F64;
      double p[N], m[N] = {0}, v[N] = {0}, g[N];
      memcpy(p, P0, sizeof p);
      cell_tensor *tp = vec(dt, p, N), *tm = vec(dt, m, N), *tv = vec(dt, v, N);
      int ok = 1;
      for (int t = 1; t <= 5; t++) {
        cell_adam_config c = cfgs[k];
        c.step = t;
        grad_at(t, g);
        cell_tensor *tg = vec(dt, g, N);
        CHECK_OK(cell_optim_adam_step(tp, tg, tm, tv, &c));
        ref_adam(p, g, m, v, &c, N);
        cell_tensor_release(tg);
        ok = ok && close_to(tp, p, N, f32 ? 1e-5 : 1e-14) && close_to(tm, m, N, f32 ? 1e-6 : 1e-15) &&
             close_to(tv, v, N, f32 ? 1e-6 : 1e-15);
      }
      CHECKF(ok, "adam config %zu, %s", k, f32 ? "float32" : "float64");
      cell_tensor_release(tp);
      cell_tensor_release(tm);
      cell_tensor_release(tv);
    }
  }
}

/* A transposed (strided) parameter and state, and a broadcast gradient,
 * give what the contiguous step gives. */
static void test_strided(void) {
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s1[1] = {2};
  double pv[6] = {1, 2, 3, 4, 5, 6}, gv[6] = {0.5, -1, 0.25, 2, -0.5, 1}, row[2] = {0.5, -1};
  cell_tensor *base = from(CELL_DTYPE_F32, 2, s23, pv), *pt = NULL;
  cell_tensor *mbase = NULL, *vbase = NULL, *mt = NULL, *vt = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 2, s23, 0, &mbase));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 2, s23, 0, &vbase));
  CHECK_OK(cell_tensor_transpose(base, 0, 1, &pt));
  CHECK_OK(cell_tensor_transpose(mbase, 0, 1, &mt));
  CHECK_OK(cell_tensor_transpose(vbase, 0, 1, &vt));
  CHECK(!cell_tensor_is_contiguous(pt));
  /* the contiguous twin: same values in {3, 2} order */
  double pc[6], gc[6];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) pc[i * 2 + j] = pv[j * 3 + i], gc[i * 2 + j] = gv[i * 2 + j];
  cell_tensor *p2 = from(CELL_DTYPE_F32, 2, s32, pc), *g2 = from(CELL_DTYPE_F32, 2, s32, gc);
  cell_tensor *m2 = NULL, *v2 = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 2, s32, 0, &m2));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 2, s32, 0, &v2));
  cell_adam_config c = {0.1, 0.9, 0.999, 1e-8, 0.01, 1, 1, 1};
  for (int t = 1; t <= 3; t++) {
    c.step = t;
    CHECK_OK(cell_optim_adam_step(pt, g2, mt, vt, &c));
    CHECK_OK(cell_optim_adam_step(p2, g2, m2, v2, &c));
  }
  int same = 1;
  for (int i = 0; i < 6; i++) same = same && flat(pt, i) == flat(p2, i) && flat(mt, i) == flat(m2, i);
  CHECK(same);
  /* SGD with a gradient broadcast along the rows (stride 0 is fine to read) */
  cell_tensor *grow = from(CELL_DTYPE_F32, 1, s1, row), *gb = NULL, *gfull = NULL;
  CHECK_OK(cell_tensor_expand(grow, 2, s32, &gb));
  CHECK_OK(cell_tensor_contiguous(gb, &gfull));
  CHECK(!cell_tensor_is_contiguous(gb));
  cell_sgd_config sc = {0.1, 0, 0, 0, 1, 0, 0};
  CHECK_OK(cell_optim_sgd_step(pt, gb, NULL, &sc));
  CHECK_OK(cell_optim_sgd_step(p2, gfull, NULL, &sc));
  same = 1;
  for (int i = 0; i < 6; i++) same = same && flat(pt, i) == flat(p2, i);
  CHECK(same);
  cell_tensor *ts[] = {base, pt, mbase, vbase, mt, vt, p2, g2, m2, v2, grow, gb, gfull};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

/* Past the parallel grain, threads give the one-thread result exactly. */
static void test_threads(void) {
  int64_t sh[1] = {(1 << 20) + 77};
  cell_tensor *p1 = NULL, *p2 = NULL, *g = NULL, *m1 = NULL, *m2 = NULL, *v1 = NULL, *v2 = NULL;
  cell_set_seed(11);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, sh, &p1));
  CHECK_OK(cell_tensor_clone(p1, &p2));
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, sh, &g));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &m1));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &m2));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &v1));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &v2));
  cell_adam_config c = {0.01, 0.9, 0.999, 1e-8, 0, 1, 1, 0};
  int prev = cell_get_num_threads();
  cell_set_num_threads(1);
  CHECK_OK(cell_optim_adam_step(p1, g, m1, v1, &c));
  cell_set_num_threads(4);
  CHECK_OK(cell_optim_adam_step(p2, g, m2, v2, &c));
  cell_set_num_threads(prev);
  CHECK(memcmp(cell_tensor_data_ptr(p1), cell_tensor_data_ptr(p2), cell_tensor_nbytes(p1)) == 0);
  CHECK(memcmp(cell_tensor_data_ptr(v1), cell_tensor_data_ptr(v2), cell_tensor_nbytes(v1)) == 0);
  cell_tensor *ts[] = {p1, p2, g, m1, m2, v1, v2};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

/* A step allocates nothing (it succeeds with every allocation failing) and
 * bumps the versions of what it writes. */
static void test_no_allocation(void) {
  double g[N];
  grad_at(1, g);
  cell_tensor *p = vec(CELL_DTYPE_F32, P0, N), *tg = vec(CELL_DTYPE_F32, g, N);
  cell_tensor *b = NULL, *m = NULL, *v = NULL;
  int64_t sh[1] = {N};
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &b));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &m));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 0, &v));
  unsigned vp = cell_tensor_version(p), vb = cell_tensor_version(b), vg = cell_tensor_version(tg);
  cell_alloc_stats s0, s1;
  cell_alloc_get_stats(&s0);
  cell_sgd_config sc = {0.1, 0.9, 0, 0, 1, 0, 1};
  cell_adam_config ac = {0.1, 0.9, 0.999, 1e-8, 0, 1, 1, 0};
  cell_alloc_fail_after(1);
  cell_status s_sgd = cell_optim_sgd_step(p, tg, b, &sc);
  cell_status s_adam = cell_optim_adam_step(p, tg, m, v, &ac);
  cell_alloc_fail_after(0);
  cell_alloc_get_stats(&s1);
  CHECK(s_sgd == CELL_OK && s_adam == CELL_OK);
  CHECK(s1.n_alloc == s0.n_alloc);
  CHECK(cell_tensor_version(p) == vp + 2 && cell_tensor_version(b) == vb + 1);
  CHECK(cell_tensor_version(tg) == vg);
  cell_tensor *ts[] = {p, tg, b, m, v};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

static void test_errors(void) {
  int64_t s6[1] = {N}, s5[1] = {5}, s23[2] = {2, 3};
  cell_tensor *p = NULL, *g = NULL, *g5 = NULL, *h = NULL, *gd = NULL, *b = NULL, *pv = NULL, *one = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, s6, 1, &p));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, s6, 1, &g));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, s5, 1, &g5));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F16, 1, s6, 1, &h));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F64, 1, s6, 1, &gd));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, s6, 0, &b));
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 0, NULL, 1, &one));
  CHECK_OK(cell_tensor_expand(one, 2, s23, &pv));
  cell_sgd_config sc = {0.1, 0.9, 0, 0, 1, 0, 0};
  CHECK(cell_optim_sgd_step(h, h, NULL, &sc) == CELL_ERR_TYPE);
  CHECK_MSG("Float16");
  CHECK(cell_optim_sgd_step(p, g5, b, &sc) == CELL_ERR_VALUE);
  CHECK_MSG("[5]");
  CHECK_MSG("[6]");
  CHECK(cell_optim_sgd_step(p, gd, b, &sc) == CELL_ERR_TYPE);
  CHECK_MSG("gradient");
  CHECK(cell_optim_sgd_step(p, g, NULL, &sc) == CELL_ERR_VALUE);
  CHECK_MSG("momentum buffer");
  CHECK(cell_optim_sgd_step(p, g, p, &sc) == CELL_ERR_VALUE);
  CHECK_MSG("shares storage");
  CHECK(cell_optim_sgd_step(pv, g, NULL, &sc) == CELL_ERR_VALUE);
  CHECK_MSG("broadcast view");
  CHECK(cell_optim_sgd_step(NULL, g, b, &sc) == CELL_ERR_VALUE);
  CHECK(cell_optim_sgd_step(p, g, b, NULL) == CELL_ERR_VALUE);
  cell_sgd_config bad = sc;
  bad.lr = -1;
  CHECK(cell_optim_sgd_step(p, g, b, &bad) == CELL_ERR_VALUE);
  CHECK_MSG("lr");
  bad = sc;
  bad.momentum = 0;
  bad.nesterov = 1;
  CHECK(cell_optim_sgd_step(p, g, b, &bad) == CELL_ERR_VALUE);
  CHECK_MSG("nesterov");
  bad = sc;
  bad.weight_decay = NAN;
  CHECK(cell_optim_sgd_step(p, g, b, &bad) == CELL_ERR_VALUE);
  CHECK_MSG("weight_decay");
  cell_adam_config ac = {0.1, 0.9, 0.999, 1e-8, 0, 1, 1, 0};
  cell_adam_config abad = ac;
  abad.beta1 = 1;
  CHECK(cell_optim_adam_step(p, g, b, g, &abad) == CELL_ERR_VALUE);
  CHECK_MSG("beta1");
  abad = ac;
  abad.step = 0;
  CHECK(cell_optim_adam_step(p, g, b, g, &abad) == CELL_ERR_VALUE);
  CHECK_MSG("step");
  CHECK(cell_optim_adam_step(p, g, b, b, &ac) == CELL_ERR_VALUE);
  CHECK_MSG("exp_avg and exp_avg_sq share storage");
  CHECK(cell_optim_adam_step(p, g, g5, b, &ac) == CELL_ERR_VALUE);
  CHECK_MSG("exp_avg has shape [5]");
  abad = ac;
  abad.decoupled = 1;
  abad.eps = -1;
  CHECK(cell_optim_adam_step(p, g, b, g, &abad) == CELL_ERR_VALUE);
  CHECK_MSG("adamw_step: eps");
  /* nothing was changed by the failed calls */
  CHECK(flat(p, 0) == 1 && flat(b, 0) == 0);
  cell_tensor *ts[] = {p, g, g5, h, gd, b, pv, one};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

/* cell_optim_step: Lion and Adadelta against the formulas, a transposed
 * parameter against a contiguous one, and its argument errors. */
static void test_optim_step(void) {
  for (int f32 = 0; f32 < 2; f32++) {
    cell_dtype dt = f32 ? CELL_DTYPE_F32 : CELL_DTYPE_F64;
    double p[N], q[N], m[N] = {0}, a[N] = {0}, au[N] = {0}, g[N], zero[N] = {0};
    memcpy(p, P0, sizeof p);
    memcpy(q, P0, sizeof q);
    cell_tensor *tp = vec(dt, p, N), *tm = vec(dt, zero, N), *tq = vec(dt, q, N), *ta = vec(dt, zero, N),
                *tau = vec(dt, zero, N);
    int ok = 1;
    for (int t = 1; t <= 4; t++) {
      grad_at(t, g);
      cell_tensor *tg = vec(dt, g, N);
      cell_optim_config lion = {CELL_OPTIM_LION, 0.01, 0.1, 1.0, {0.9, 0.99, 0, 0}, t, 0};
      cell_optim_config ada = {CELL_OPTIM_ADADELTA, 1.0, 0.01, 0.5, {0.9, 1e-6, 0, 0}, t, 0};
      CHECK_OK(cell_optim_step(tp, tg, tm, NULL, NULL, &lion));
      CHECK_OK(cell_optim_step(tq, tg, ta, tau, NULL, &ada));
      for (int i = 0; i < N; i++) {
        double c = 0.9 * m[i] + 0.1 * g[i];
        p[i] = p[i] * (1 - 0.01 * 0.1) - 0.01 * (c > 0 ? 1 : (c < 0 ? -1 : 0));
        m[i] = 0.99 * m[i] + 0.01 * g[i];
        double d = g[i] * 0.5 + 0.01 * q[i];
        a[i] = 0.9 * a[i] + 0.1 * d * d;
        double u = sqrt(au[i] + 1e-6) / sqrt(a[i] + 1e-6) * d;
        au[i] = 0.9 * au[i] + 0.1 * u * u;
        q[i] -= u;
      }
      cell_tensor_release(tg);
      ok = ok && close_to(tp, p, N, f32 ? 1e-6 : 1e-15) && close_to(tm, m, N, f32 ? 1e-6 : 1e-15) &&
           close_to(tq, q, N, f32 ? 1e-5 : 1e-14) && close_to(tau, au, N, f32 ? 1e-6 : 1e-15);
    }
    CHECKF(ok, "optim_step lion/adadelta, %s", f32 ? "float32" : "float64");
    cell_tensor *ts[] = {tp, tm, tq, ta, tau};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
  }
  /* a transposed (strided) parameter and state step as the contiguous ones */
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  double v[6] = {0.3, -0.2, 0.9, -1.1, 0.4, 0.05}, gv[6] = {0.25, -0.5, 0.0, 1.0, -0.75, 0.5}, z6[6] = {0};
  cell_tensor *base = from(CELL_DTYPE_F64, 2, s23, v), *pt = NULL, *sbase = from(CELL_DTYPE_F64, 2, s23, z6),
              *st = NULL;
  int perm[2] = {1, 0};
  CHECK_OK(cell_tensor_permute(base, perm, &pt));
  CHECK_OK(cell_tensor_permute(sbase, perm, &st));
  double pc[6];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) pc[i * 2 + j] = v[j * 3 + i];
  cell_tensor *p2 = from(CELL_DTYPE_F64, 2, s32, pc), *g2 = from(CELL_DTYPE_F64, 2, s32, gv),
              *s2 = from(CELL_DTYPE_F64, 2, s32, z6);
  cell_optim_config rp = {CELL_OPTIM_RPROP, 0.01, 0, 1, {0.5, 1.2, 1e-6, 50}, 1, 0};
  cell_tensor *prev = NULL, *prev2 = from(CELL_DTYPE_F64, 2, s32, z6);
  CHECK_OK(cell_tensor_contiguous(st, &prev));
  for (int t = 1; t <= 3; t++) {
    rp.step = t;
    CHECK_OK(cell_optim_step(pt, g2, prev, st, NULL, &rp));
    CHECK_OK(cell_optim_step(p2, g2, prev2, s2, NULL, &rp));
  }
  int same = 1;
  for (int i = 0; i < 6; i++) same = same && flat(pt, i) == flat(p2, i) && flat(st, i) == flat(s2, i);
  CHECK(same);
  /* errors */
  cell_optim_config bad = {99, 0.1, 0, 1, {0, 0, 0, 0}, 1, 0};
  CHECK(cell_optim_step(p2, g2, s2, prev2, NULL, &bad) == CELL_ERR_VALUE);
  CHECK(cell_optim_step(p2, g2, s2, prev2, NULL, NULL) == CELL_ERR_VALUE);
  cell_optim_config ftrl = {CELL_OPTIM_FTRL, 0, 0, 1, {0, 0, -0.5, 0}, 1, 0};
  CHECK(cell_optim_step(p2, g2, s2, prev2, NULL, &ftrl) == CELL_ERR_VALUE);
  cell_optim_config lion0 = {CELL_OPTIM_LION, 0.1, 0, 1, {0.9, 0.99, 0, 0}, 0, 0};
  CHECK(cell_optim_step(p2, g2, s2, NULL, NULL, &lion0) == CELL_ERR_VALUE);
  lion0.step = 1;
  CHECK(cell_optim_step(p2, g2, NULL, NULL, NULL, &lion0) == CELL_ERR_VALUE);
  CHECK(cell_optim_step(p2, g2, p2, NULL, NULL, &lion0) == CELL_ERR_VALUE);
  cell_optim_config ada2 = {CELL_OPTIM_ADADELTA, 1, 0, 1, {0.9, 1e-6, 0, 0}, 1, 0};
  CHECK(cell_optim_step(p2, g2, s2, s2, NULL, &ada2) == CELL_ERR_VALUE);
  cell_tensor *ts[] = {base, pt, sbase, st, p2, g2, s2, prev, prev2};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

void test_optim_all(void) {
  test_sgd_formula();
  test_adam_formula();
  test_strided();
  test_threads();
  test_no_allocation();
  test_errors();
  test_optim_step();
}
