/* test_vmath.c - src/ops/vmath.h's vector transcendentals against libm's
 * float64 functions, on every code path the CPU has (portable, AVX2+FMA,
 * AVX-512): the float32 functions over about a million float32 values
 * spread over all of them (every 4099th bit pattern: negative and positive,
 * subnormal, normal, the extremes) plus the special values, within 0.6 ulp
 * of the float64 reference (measured: 0.500 for exp, log, tanh, erf,
 * sigmoid and SiLU on all three paths: the code computes in float64 to
 * about 1e-10, so results are the reference correctly rounded but for a
 * rare tie); GELU and its gradient, in float32 arithmetic, within the
 * bounds of each of their ranges (gelu_bound); CELL_VMATH_VERBOSE=1 prints
 * the worst case of each. The float64 buffer functions within 1e-9
 * relative (1e-13 for exp) over [-40, 40] and the specials. */
#include "check.h"
#include "ops/vmath.h"
#include <float.h>

/* The float32 ulp at |r| (subnormal spacing below FLT_MIN). */
static double ulp_f32(double r) {
  r = fabs(r);
  if (r < FLT_MIN) return 0x1p-149;
  int e;
  frexp(r, &e);
  return ldexp(1.0, e - 24);
}

/* |y - ref| in float32 ulps of ref; 0 when both are the same NaN/inf. */
static double ulp_err(float y, double ref) {
  if (isnan(ref)) return isnan(y) ? 0 : INFINITY;
  float rf = (float)ref;
  if (isinf(rf) || isinf(y)) return y == rf ? 0 : INFINITY;
  if (y == 0 && rf == 0) return signbit(y) == signbit(rf) ? 0 : INFINITY;
  return fabs((double)y - ref) / ulp_f32(ref);
}

static double r_sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
static double r_exp(double x) { return exp(x); }
static double r_log(double x) { return log(x); }
static double r_tanh(double x) { return tanh(x); }
static double r_erf(double x) { return erf(x); }
static double r_silu(double x) { return x * r_sigmoid(x); }
static double r_gelu(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }

typedef void (*f32_fn)(float *, const float *, int64_t);
static const struct {
  const char *name;
  f32_fn fn;
  double (*ref)(double);
} f32_cases[] = {
    {"exp", cell_vm_exp_f32, r_exp},         {"log", cell_vm_log_f32, r_log},
    {"tanh", cell_vm_tanh_f32, r_tanh},      {"erf", cell_vm_erf_f32, r_erf},
    {"sigmoid", cell_vm_sigmoid_f32, r_sigmoid}, {"silu", cell_vm_silu_f32, r_silu},
};

static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN,
                                 0x1p-149f, -0x1p-149f, 0x1.8p-140f, FLT_MAX, -FLT_MAX, 1.0f, -1.0f,
                                 0.5f, -0.5f, 88.72283f, 88.72284f, 89.0f, -87.33654f, -103.97208f,
                                 -103.98f, -104.0f, -110.0f, 0.01f, -0.01f, 0.0099999f, 9.0f, -9.0f,
                                 20.0f, 3.92f, -3.92f, 0.999999f, 1.000001f, 1e-30f, -1e-30f,
                                 1.4142135f, 0.70710677f, 1e-7f, 5.5f, -5.5f, -10.0f, -13.0f};
#define NSPEC ((int64_t)(sizeof specials / sizeof specials[0]))

#define NSWEEP 1048000
static void check_gelu_f32(int level, const float *x, float *y, int64_t n);
static void check_f32(int level) {
  float *x = malloc(sizeof(float) * (NSWEEP + NSPEC)), *y = malloc(sizeof(float) * (NSWEEP + NSPEC));
  if (!x || !y) {
    free(x);
    free(y);
    CHECK(!"out of memory");
    return;
  }
  int64_t n = 0;
  for (uint64_t b = 0; b < UINT64_C(0x100000000) && n < NSWEEP; b += 4099) {
    uint32_t u = (uint32_t)b;
    memcpy(&x[n++], &u, sizeof u);
  }
  for (int64_t i = 0; i < NSPEC; i++) x[n++] = specials[i];
  for (size_t c = 0; c < sizeof f32_cases / sizeof f32_cases[0]; c++) {
    /* an odd offset and length: the vector loops' unaligned heads and tails */
    f32_cases[c].fn(y + 1, x + 1, n - 1);
    f32_cases[c].fn(y, x, 1);
    double worst = 0;
    float at = 0;
    for (int64_t i = 0; i < n; i++) {
      double e = ulp_err(y[i], f32_cases[c].ref(x[i]));
      if (!(e <= worst)) {
        worst = e;
        at = x[i];
      }
    }
    if (getenv("CELL_VMATH_VERBOSE")) printf("level %d: %s max %.3f ulp at %a\n", level, f32_cases[c].name, worst, at);
    CHECKF(worst <= 0.6, "level %d: %s is %g ulp off at x = %a (%.9g)", level, f32_cases[c].name,
           worst, at, at);
  }
  /* the float32-arithmetic exp: within 2 ulp where exp is normal, 0 where
   * it would be subnormal, inf past the top, NaN for NaN */
  cell_vm_exp_fast_f32(y + 1, x + 1, n - 1);
  cell_vm_exp_fast_f32(y, x, 1);
  double worst = 0;
  float at = 0;
  for (int64_t i = 0; i < n; i++) {
    double ref = exp((double)x[i]);
    double e = ref < FLT_MIN ? (y[i] == 0 || (ref > 0 && fabs(y[i] - ref) <= FLT_MIN) ? 0 : INFINITY)
                             : ulp_err(y[i], ref);
    if (!(e <= worst)) {
      worst = e;
      at = x[i];
    }
  }
  if (getenv("CELL_VMATH_VERBOSE")) printf("level %d: exp_fast max %.3f ulp at %a\n", level, worst, at);
  CHECKF(worst <= 2, "level %d: exp_fast is %g ulp off at x = %a (%.9g)", level, worst, at, at);
  check_gelu_f32(level, x, y, n);
  /* the float32-arithmetic sigmoid and tanh (recurrent gates): within 3
   * ulp where the result is normal, sigmoid 0 where it would be subnormal */
  f32_fn fast[2] = {cell_vm_sigmoid_fast_f32, cell_vm_tanh_fast_f32};
  double (*fref[2])(double) = {r_sigmoid, r_tanh};
  for (int c = 0; c < 2; c++) {
    fast[c](y + 1, x + 1, n - 1);
    fast[c](y, x, 1);
    worst = 0;
    at = 0;
    for (int64_t i = 0; i < n; i++) {
      double ref = fref[c](x[i]);
      double e = fabs(ref) < FLT_MIN && !isnan(ref) ? (y[i] == 0 || fabs(y[i] - ref) <= FLT_MIN ? 0 : INFINITY)
                                                     : ulp_err(y[i], ref);
      if (!(e <= worst)) {
        worst = e;
        at = x[i];
      }
    }
    if (getenv("CELL_VMATH_VERBOSE"))
      printf("level %d: %s_fast max %.3f ulp at %a\n", level, c ? "tanh" : "sigmoid", worst, at);
    CHECKF(worst <= 3, "level %d: %s_fast is %g ulp off at x = %a (%.9g)", level, c ? "tanh" : "sigmoid", worst, at,
           at);
  }
  /* in place */
  float v[3] = {1.0f, -2.0f, 0.5f};
  cell_vm_exp_f32(v, v, 3);
  CHECK(ulp_err(v[0], exp(1.0)) <= 1 && ulp_err(v[1], exp(-2.0)) <= 1 && ulp_err(v[2], exp(0.5)) <= 1);
  free(x);
  free(y);
}

/* GELU's float32 forms (vmath_gelu_impl.h), in ulps: of the result for
 * GELU, of the larger of the gradient's terms Phi(x) and |x phi(x)| for
 * the gradient (they cancel near its root). Measured on every path: GELU
 * 2.40 on the polynomial's range (-0.75, 1.4142), 0.99 on the right tail,
 * 5.23 on the left; the gradient 2.79, 0.84 and 2.96 on the portable and
 * AVX2 paths (4.53, 0.97 and 2.67 before its exponentials took Estrin's
 * scheme). */
static double gelu_bound(float x, bool grad) {
  if (x > -0.75f && x < 1.4142f) return grad ? 5.0 : 3.0;
  if (x >= 1.4142f) return 1.5;
  return grad ? 5.0 : 6.0;
}
static double r_gelu_grad(double x);
static double s_gelu_grad(double x);
/* The worst error of GELU (grad: its gradient, g = 1) over x[0..n) in
 * gelu_bound's units, as a multiple of the bound (at most 1 passes); NaN
 * and infinities must match exactly. */
static double gelu_worst(const float *x, const float *y, int64_t n, bool grad, float *at) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double ref = grad ? r_gelu_grad(x[i]) : r_gelu(x[i]);
    double e;
    if (isnan(ref) || isinf(ref)) e = ulp_err(y[i], ref);
    else if (grad) e = fabs((double)y[i] - ref) / ulp_f32(s_gelu_grad(x[i]));
    else e = ulp_err(y[i], ref);
    e /= gelu_bound(x[i], grad);
    if (!(e <= worst)) {
      worst = e;
      *at = x[i];
    }
  }
  return worst;
}
/* Over check_f32's sweep x[0..n) (y: room for the results). */
static void check_gelu_f32(int level, const float *x, float *y, int64_t n) {
  float *g = malloc(sizeof(float) * (size_t)n);
  if (!g) {
    CHECK(!"out of memory");
    return;
  }
  for (int64_t i = 0; i < n; i++) g[i] = 1.0f;
  for (int grad = 0; grad < 2; grad++) {
    if (grad) {
      cell_vm_gelu_grad_f32(y + 1, g + 1, x + 1, n - 1);
      cell_vm_gelu_grad_f32(y, g, x, 1);
    } else {
      cell_vm_gelu_f32(y + 1, x + 1, n - 1);
      cell_vm_gelu_f32(y, x, 1);
    }
    float at = 0;
    double worst = gelu_worst(x, y, n, grad, &at);
    if (getenv("CELL_VMATH_VERBOSE"))
      printf("level %d: %s max %.3f of its bound (%g) at %a\n", level, grad ? "gelu_grad" : "gelu", worst,
             gelu_bound(at, grad), at);
    CHECKF(worst <= 1, "level %d: %s is %g ulp off at x = %a (%.9g)", level, grad ? "gelu_grad" : "gelu",
           worst * gelu_bound(at, grad), at, at);
  }
  free(g);
}

static double r_gelu_grad(double x) {
  return 0.5 * erfc(-x * 0.70710678118654752440) + x * 0.39894228040143267794 * exp(-0.5 * x * x);
}
/* the size of the terms, for an error bound where the sum cancels */
static double s_gelu_grad(double x) {
  return 0.5 * erfc(-x * 0.70710678118654752440) + fabs(x) * 0.39894228040143267794 * exp(-0.5 * x * x);
}
#define GELU_C 0.79788456080286535587989211986876
#define GELU_K 0.044715
static double r_gelu_tanh(double x) {
  return x * r_sigmoid(2 * GELU_C * (x + GELU_K * x * x * x));
}
/* 0.5 (1 + t) + 0.5 x (1 - t^2) C (1 + 3 K x^2), t = tanh(u), with libm's
 * exp: 1 + t = 2 sigmoid(2u), 1 - t^2 = 4 sigmoid(2u) sigmoid(-2u) (libm's
 * tanh cancels to 0 in the left tail) */
static double r_gelu_tanh_grad(double x) {
  double x2 = x * x, u = GELU_C * (x + GELU_K * x2 * x), sp = r_sigmoid(2 * u), sm = r_sigmoid(-2 * u);
  return sp + 2.0 * x * sp * sm * GELU_C * (1.0 + 3.0 * GELU_K * x2);
}
static double s_gelu_tanh_grad(double x) {
  double x2 = x * x, u = GELU_C * (x + GELU_K * x2 * x), sp = r_sigmoid(2 * u), sm = r_sigmoid(-2 * u);
  return sp + 2.0 * fabs(x) * sp * sm * GELU_C * (1.0 + 3.0 * GELU_K * x2);
}
static double r_silu_grad(double x) {
  double s = r_sigmoid(x);
  return s * (1.0 + x * (1.0 - s));
}
static double s_silu_grad(double x) {
  double s = r_sigmoid(x);
  return s * (1.0 + fabs(x) * (1.0 - s));
}
static double r_erf_grad(double x) { return 1.12837916709551257390 * exp(-x * x); }

typedef void (*grad_fn)(double *, const double *, const double *, int64_t);
static const struct {
  const char *name;
  grad_fn fn;
  double (*ref)(double), (*scale)(double);
} grad_cases[] = {
    {"gelu_grad", cell_vm_gelu_grad_d, r_gelu_grad, s_gelu_grad},
    {"gelu_tanh_grad", cell_vm_gelu_tanh_grad_d, r_gelu_tanh_grad, s_gelu_tanh_grad},
    {"silu_grad", cell_vm_silu_grad_d, r_silu_grad, s_silu_grad},
    {"erf_grad", cell_vm_erf_grad_d, r_erf_grad, r_erf_grad},
};

/* |a - ref| within tol relative to scale; NaN matches NaN. */
static bool close_rel(double a, double ref, double scale, double tol) {
  if (isnan(ref)) return isnan(a);
  if (isinf(ref)) return a == ref;
  return fabs(a - ref) <= tol * fabs(scale) + 1e-300;
}

#define ND 80003
static void check_d(int level) {
  static double x[ND + NSPEC], y[ND + NSPEC], g[ND + NSPEC];
  int64_t n = 0;
  for (int64_t i = 0; i < ND; i++) x[n++] = -40.0 + 80.0 * (double)i / (ND - 1);
  for (int64_t i = 0; i < NSPEC; i++) x[n++] = specials[i];
  for (int64_t i = 0; i < n; i++) g[i] = 1.5;
  cell_vm_exp_d(y, x, n);
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    ok = close_rel(y[i], exp(x[i]), exp(x[i]), 1e-13);
    if (!ok) fprintf(stderr, "level %d: exp_d(%.17g) = %.17g, libm %.17g\n", level, x[i], y[i], exp(x[i]));
  }
  CHECK(ok);
  double big[] = {700.0, 709.7, 709.79, 710.0, -700.0, -708.0, -730.0, -745.0, -746.0, -800.0};
  double yb[10];
  cell_vm_exp_d(yb, big, 10);
  for (int i = 0; i < 10; i++)
    CHECKF(close_rel(yb[i], exp(big[i]), exp(big[i]), big[i] < -708 ? 1e-3 : 1e-13),
           "level %d: exp_d(%g) = %g, libm %g", level, big[i], yb[i], exp(big[i]));
  cell_vm_gelu_tanh_d(y, x, n);
  ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    ok = close_rel(y[i], r_gelu_tanh(x[i]), r_gelu_tanh(x[i]), 1e-9);
    if (!ok) fprintf(stderr, "level %d: gelu_tanh_d(%.17g) = %.17g, ref %.17g\n", level, x[i], y[i], r_gelu_tanh(x[i]));
  }
  CHECK(ok);
  for (size_t c = 0; c < sizeof grad_cases / sizeof grad_cases[0]; c++) {
    grad_cases[c].fn(y, g, x, n);
    ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
      double ref = 1.5 * grad_cases[c].ref(x[i]);
      ok = close_rel(y[i], ref, 1.5 * grad_cases[c].scale(x[i]), 1e-9);
      if (!ok)
        fprintf(stderr, "level %d: %s(%.17g) = %.17g, ref %.17g\n", level, grad_cases[c].name, x[i], y[i], ref);
    }
    CHECKF(ok, "level %d: %s", level, grad_cases[c].name);
  }
  /* SiLU's float32 form: the double form's values rounded once (GELU's
   * computes in float32: check_gelu_f32) */
  static float xf[ND + NSPEC], gf[ND + NSPEC], yf[ND + NSPEC];
  for (int64_t i = 0; i < n; i++) {
    xf[i] = (float)x[i];
    gf[i] = (float)(0.25 + (double)(i % 7));
    x[i] = xf[i];
    g[i] = gf[i];
  }
  cell_vm_silu_grad_f32(yf, gf, xf, n);
  cell_vm_silu_grad_d(y, g, x, n);
  ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    float want = (float)y[i];
    ok = yf[i] == want || (isnan(yf[i]) && isnan(want));
    if (!ok) fprintf(stderr, "level %d: silu_grad f32(%.9g) = %.9g, double %.9g\n", level, (double)xf[i],
                     (double)yf[i], (double)want);
  }
  CHECKF(ok, "level %d: float32 silu_grad", level);
}

/* GELU and its float32 gradient on activations as a network has them
 * (mostly in (-0.75, 1.4142), where the vector code takes erf's
 * polynomial, with tail values and NaN scattered among them in runs of
 * every length): each element's value must not depend on its neighbours
 * (the same as computed alone), and stays within gelu_bound of the
 * float64 reference (the gradient: g times it, g = 1/2 to 9/2). */
#define NMIX 4099
static void check_gelu_mixed(int level) {
  static float x[NMIX], y[NMIX], g[NMIX], r[NMIX], rg[NMIX];
  uint32_t s = 12345u + (uint32_t)level;
  for (int i = 0; i < NMIX; i++) {
    s = s * 1664525u + 1013904223u;
    double u = (double)(s >> 8) / 16777216.0; /* [0, 1) */
    s = s * 1664525u + 1013904223u;
    int kind = (int)(s >> 29);               /* 0..7 */
    double v = kind < 6 ? (u - 0.5) * 2.8 : (u - 0.5) * 40.0;
    x[i] = (float)v;
    g[i] = (float)(0.5 + (i % 5));
    if (i % 997 == 5) x[i] = NAN;
    if (i % 1009 == 7) x[i] = 1.41421f; /* between the float bound and sqrt 2 */
    if (i % 1013 == 9) x[i] = -0.75f;   /* the polynomial's lower bound, a tail value */
  }
  cell_vm_gelu_f32(y + 1, x + 1, NMIX - 1);
  cell_vm_gelu_f32(y, x, 1);
  cell_vm_gelu_grad_f32(r + 3, g + 3, x + 3, NMIX - 3);
  cell_vm_gelu_grad_f32(r, g, x, 3);
  bool ok = true;
  for (int i = 0; i < NMIX && ok; i++) {
    float one, gone;
    cell_vm_gelu_f32(&one, &x[i], 1);
    cell_vm_gelu_grad_f32(&gone, &g[i], &x[i], 1);
    rg[i] = r[i] / g[i]; /* exact: g is a multiple of 1/2 below 8 */
    bool same = (y[i] == one || (isnan(y[i]) && isnan(one))) && (r[i] == gone || (isnan(r[i]) && isnan(gone)));
    if (!same)
      fprintf(stderr, "level %d: gelu mixed at %d x = %a: %a (alone %a), grad %a (alone %a)\n", level, i,
              (double)x[i], (double)y[i], (double)one, (double)r[i], (double)gone);
    ok = same;
  }
  float at = 0;
  ok = ok && gelu_worst(x, y, NMIX, false, &at) <= 1 && gelu_worst(x, rg, NMIX, true, &at) <= 1;
  CHECKF(ok, "level %d: GELU on mixed activations (worst at x = %a)", level, at);
  /* in place, as the op layer may call it */
  memcpy(r, x, sizeof x);
  cell_vm_gelu_f32(r, r, NMIX);
  ok = true;
  for (int i = 0; i < NMIX && ok; i++) ok = r[i] == y[i] || (isnan(r[i]) && isnan(y[i]));
  CHECKF(ok, "level %d: GELU in place", level);
}

void test_vmath_all(void) {
  int best = cell_vm_set_level(-1);
  CHECK(best >= 0 && best <= 2 && cell_vm_level() == best);
  for (int level = 0; level <= best; level++) {
    CHECK(cell_vm_set_level(level) == level && cell_vm_level() == level);
    check_f32(level);
    check_d(level);
    check_gelu_mixed(level);
  }
  CHECK(cell_vm_set_level(99) == best); /* beyond the CPU: the best it has */
  cell_vm_set_level(-1);
}
